//! The ServiceAccount admission plugin: the account a Pod runs as must
//! exist. Used before the webhooks (create) and again for what a mutating
//! webhook changed (admit).

use std::sync::Arc;

use serde_json::Value;

use crate::app::App;
use crate::builtin;
use crate::error::{ApiError, ApiResult};
use crate::meta;

/// The ServiceAccount admission plugin's lookup of a Pod's account: 403
/// Forbidden when the Pod names one that does not exist. A namespace's
/// `default` account may trail the namespace by a moment (the serviceaccount
/// controller makes it, and kube-apiserver waits for it), so a missing
/// `default` counts as one with no settings.
pub(crate) fn pod_service_account(
    app: &App,
    kind: &builtin::KindInfo,
    ns: &str,
    pod: &Value,
) -> ApiResult<Option<Arc<Value>>> {
    if (kind.group, kind.kind) != ("", "Pod") {
        return Ok(None);
    }
    let name = builtin::pod_service_account_name(pod);
    let key: crate::store::ResKey = Arc::from("serviceaccounts");
    match app.store.get(&key, ns, name) {
        Some(account) => Ok(Some(account)),
        None if name == "default" => Ok(None),
        None => {
            // As admission names the object: its name, else its generateName.
            let pod_name = match meta::name(pod) {
                "" => meta::meta_str(pod, "generateName"),
                named => named,
            };
            Err(ApiError::forbidden(
                "",
                "pods",
                pod_name,
                &format!(
                    "error looking up service account {ns}/{name}: serviceaccount {name:?} not found"
                ),
            ))
        }
    }
}
