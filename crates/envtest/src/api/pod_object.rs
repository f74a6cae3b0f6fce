//! Helpers on a stored Pod: the preconditions a subresource request names,
//! and its status conditions. Shared by the binding (pods.rs) and eviction
//! (disruption.rs) subresources.

use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::registry::Resource;

/// The uid and resourceVersion a Binding or an Eviction names must be the Pod's.
pub(crate) fn check_preconditions(
    pods: &Resource,
    name: &str,
    pod: &Value,
    uid: &str,
    rv: &str,
) -> ApiResult<()> {
    let (pod_uid, pod_rv) = (meta::uid(pod), meta::resource_version(pod));
    let failed = if !uid.is_empty() && uid != pod_uid {
        format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {pod_uid}")
    } else if !rv.is_empty() && rv != pod_rv {
        format!(
            "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {pod_rv}"
        )
    } else {
        return Ok(());
    };
    Err(ApiError::conflict(&pods.group, &pods.plural, name, &failed))
}

/// `UpdatePodCondition`: adds or replaces the condition of its type; the
/// transition time is now unless the status stays the same.
pub(crate) fn set_pod_condition(pod: &mut Value, mut condition: Value) {
    let now = json!(meta::now_rfc3339());
    condition["lastProbeTime"] = Value::Null;
    condition["lastTransitionTime"] = now;
    let kind = condition["type"].clone();
    if !pod.get("status").is_some_and(Value::is_object) {
        pod["status"] = json!({});
    }
    let conditions = &mut pod["status"]["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(list) = conditions.as_array_mut() else {
        return;
    };
    match list.iter_mut().find(|c| c["type"] == kind) {
        Some(existing) => {
            if existing["status"] == condition["status"] {
                condition["lastTransitionTime"] = existing["lastTransitionTime"].clone();
            }
            *existing = condition;
        }
        None => list.push(condition),
    }
}
