//! kube-controller-manager's ttl-after-finished controller: a Job that
//! finished (`Complete` or `Failed`) and has `ttlSecondsAfterFinished` is
//! deleted that long after the finishing condition's `lastTransitionTime`,
//! with foreground propagation and its uid as precondition (its Pods go
//! first).

use std::time::Duration;

use serde_json::Value;

use super::client::{self, JOBS};
use crate::app::App;
use crate::error::ApiResult;
use crate::meta;
use crate::request::query::{DeleteOptions, Propagation};

/// When the finished Job `ns/name` is due to go; deletes it once it is.
pub(crate) fn reconcile(app: &App, ns: &str, name: &str) -> ApiResult<Option<Duration>> {
    let Some(job) = client::get(app, JOBS, ns, name) else {
        return Ok(None);
    };
    let Some(ttl) = client::int_at(&job, &["spec", "ttlSecondsAfterFinished"]) else {
        return Ok(None);
    };
    if meta::is_deleting(&job) {
        return Ok(None);
    }
    let finished_at = client::conditions(&job)
        .iter()
        .filter(|c| {
            matches!(client::str_at(c, &["type"]), "Complete" | "Failed")
                && client::str_at(c, &["status"]) == "True"
        })
        .filter_map(|c| {
            c.get("lastTransitionTime")
                .and_then(Value::as_str)
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        })
        .max();
    let Some(finished_at) = finished_at else {
        return Ok(None);
    };
    let expires = finished_at + jiff::SignedDuration::from_secs(ttl.max(0));
    let left = expires.duration_since(jiff::Timestamp::now());
    if left.is_positive() {
        return Ok(Some(left.unsigned_abs() + Duration::from_millis(10)));
    }
    let res = client::resource(app, JOBS)?;
    let opts = DeleteOptions {
        propagation: Some(Propagation::Foreground),
        precondition_uid: Some(meta::uid(&job).to_string()),
        ..Default::default()
    };
    match crate::api::delete::delete_internal(app, &res, ns, name, &opts) {
        Ok(_) => Ok(None),
        Err(e) if e.code == 404 || e.code == 409 => Ok(None),
        Err(e) => Err(e),
    }
}
