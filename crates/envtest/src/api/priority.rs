//! The Priority admission plugin (on by default in kube-apiserver v1.32): a
//! Pod's `priorityClassName` (or else the class marked `globalDefault`)
//! gives its `priority` and `preemptionPolicy`; a class that does not exist,
//! or a priority the client set that differs, is refused with 403.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::app::App;
use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::store::ResKey;

const PRIORITY_CLASSES: &str = "scheduling.k8s.io/priorityclasses";

/// The class marked `globalDefault` (the oldest, should there be several).
fn global_default(app: &App) -> Option<Arc<Value>> {
    let key: ResKey = Arc::from(PRIORITY_CLASSES);
    let (classes, _) = app.store.list(&key, None, None);
    classes
        .into_iter()
        .map(|(_, class)| class)
        .filter(|c| c.get("globalDefault").and_then(Value::as_bool) == Some(true))
        .min_by(|a, b| {
            meta::meta_str(a, "creationTimestamp").cmp(meta::meta_str(b, "creationTimestamp"))
        })
}

/// Resolves the Pod's priority on create (see the module documentation).
pub(crate) fn admit(app: &App, pod: &mut Value) -> ApiResult<()> {
    let pod_name = match meta::name(pod) {
        "" => meta::meta_str(pod, "generateName").to_string(),
        named => named.to_string(),
    };
    let forbidden = |message: String| ApiError::forbidden("", "pods", &pod_name, &message);
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let name = spec
        .get("priorityClassName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let class = if name.is_empty() {
        global_default(app)
    } else {
        let key: ResKey = Arc::from(PRIORITY_CLASSES);
        match app.store.get(&key, "", &name) {
            Some(class) => Some(class),
            None => {
                return Err(forbidden(format!(
                    "no PriorityClass with name {name} was found"
                )));
            }
        }
    };
    let priority = class
        .as_ref()
        .and_then(|c| c.get("value"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if let Some(given) = spec.get("priority").and_then(Value::as_i64)
        && given != priority
    {
        return Err(forbidden(format!(
            "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {priority} from the given PriorityClass name"
        )));
    }
    spec.insert("priority".into(), json!(priority));
    let Some(class) = class else {
        return Ok(());
    };
    spec.insert("priorityClassName".into(), json!(meta::name(&class)));
    if let Some(policy) = class.get("preemptionPolicy").and_then(Value::as_str) {
        if let Some(given) = spec.get("preemptionPolicy").and_then(Value::as_str)
            && given != policy
        {
            return Err(forbidden(format!(
                "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"
            )));
        }
        spec.insert("preemptionPolicy".into(), json!(policy));
    }
    Ok(())
}
