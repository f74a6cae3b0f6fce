//! The Scale (`autoscaling/v1`) view of an object with a `/scale`
//! subresource: where its replicas and selector live, read and written in
//! place. Pure functions of the object, used by the subresource's requests
//! (scale.rs) and by admission, which shows webhooks the Scale.

use serde_json::{Map, Value, json};

use crate::error::{ApiError, ApiResult};
use crate::jsonpath::JsonPath;
use crate::meta;
use crate::registry::{Resource, ScalePaths};

fn path_keys(path: &str) -> Vec<String> {
    path.trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn read_path(obj: &Value, path: &str) -> Option<Value> {
    JsonPath::compile(path)
        .ok()
        .and_then(|p| p.find(obj).into_iter().next().cloned())
}

pub(super) fn write_path(obj: &mut Value, path: &str, value: Value) {
    let keys = path_keys(path);
    let mut cur = obj;
    for (i, k) in keys.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let Value::Object(map) = cur else { return };
        if i + 1 == keys.len() {
            map.insert(k.clone(), value);
            return;
        }
        cur = map
            .entry(k.clone())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

/// A LabelSelector object as apimachinery prints a selector (`a=b,c in
/// (d)`, sorted by key), as the Scale's `status.selector` shows it; empty
/// when it selects everything or does not convert.
fn selector_string(sel: &Value) -> String {
    crate::selectors::LabelSelector::from_object(Some(sel))
        .map(|selector| selector.to_string())
        .unwrap_or_default()
}

pub(super) fn scale_paths(res: &Resource) -> ApiResult<&ScalePaths> {
    res.scale.as_ref().ok_or_else(ApiError::not_found_path)
}

/// Writes `replicas` where the Scale's `spec.replicas` lives in the object.
pub(crate) fn set_replicas(res: &Resource, obj: &mut Value, replicas: i64) -> ApiResult<()> {
    let paths = scale_paths(res)?;
    write_path(obj, &paths.spec_replicas, json!(replicas));
    Ok(())
}

/// The Scale view of an object.
pub(crate) fn to_scale(res: &Resource, obj: &Value) -> ApiResult<Value> {
    let paths = scale_paths(res)?;
    let spec = read_path(obj, &paths.spec_replicas)
        .and_then(|v| v.as_i64())
        .unwrap_or(0);
    let status = read_path(obj, &paths.status_replicas)
        .and_then(|v| v.as_i64())
        .unwrap_or(0);
    let selector = if paths.selector_from_spec {
        match obj.pointer("/spec/selector") {
            // A ReplicationController's selector is a plain label map.
            Some(labels) if res.group.is_empty() => {
                selector_string(&json!({"matchLabels": labels}))
            }
            Some(selector) => selector_string(selector),
            None => String::new(),
        }
    } else {
        paths
            .label_selector
            .as_deref()
            .and_then(|p| read_path(obj, p))
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    };
    let m = meta::metadata(obj).cloned().unwrap_or_default();
    let mut metadata = Map::new();
    for k in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = m.get(k) {
            metadata.insert(k.into(), v.clone());
        }
    }
    let mut status_doc = json!({"replicas": status});
    if !selector.is_empty() {
        status_doc["selector"] = json!(selector);
    }
    Ok(json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": spec},
        "status": status_doc,
    }))
}
