//! The API errors the operations share, worded as kube-apiserver's.

use crate::error::{ApiError, Cause, Details};
use crate::registry::Resource;

pub(crate) fn not_found(res: &Resource, name: &str) -> ApiError {
    ApiError::not_found(&res.group, &res.plural, name)
}

/// 422 for `causes`. Like apimachinery's aggregate error, the message lists
/// each distinct cause once while `details.causes` keeps them all.
pub(crate) fn invalid(res: &Resource, name: &str, causes: Vec<Cause>) -> ApiError {
    let mut distinct: Vec<Cause> = Vec::new();
    for c in &causes {
        if !distinct.iter().any(|d| d.summary() == c.summary()) {
            distinct.push(c.clone());
        }
    }
    // An events.k8s.io Event is validated as the core Event it is stored as.
    let group = res.stored_as().map_or(res.group.as_str(), |s| s.group());
    let mut err = ApiError::invalid(group, &res.kind, name, distinct);
    if let Some(d) = &mut err.details {
        d.causes = causes;
    }
    err
}

/// `Operation cannot be fulfilled ...` for stale writes.
pub(crate) fn conflict(res: &Resource, name: &str) -> ApiError {
    ApiError::stale(&res.group, &res.plural, name)
}

/// `details` naming an object.
pub(crate) fn object_details(res: &Resource, name: &str, uid: &str) -> Details {
    Details {
        name: name.to_string(),
        group: res.group.clone(),
        kind: res.plural.clone(),
        uid: uid.to_string(),
        ..Details::default()
    }
}
