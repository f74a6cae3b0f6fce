//! Where the shared parts of built-in kinds live: the Pod spec of a workload,
//! its template, and small helpers to read and fill JSON objects.

use serde_json::{Map, Value};

use super::KindInfo;

/// JSON pointer to the pod template of a workload kind.
pub(crate) fn template_pointer(kind: &KindInfo) -> Option<&'static str> {
    match (kind.group, kind.kind) {
        ("", "PodTemplate") => Some("/template"),
        ("", "ReplicationController") => Some("/spec/template"),
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet") | ("batch", "Job") => {
            Some("/spec/template")
        }
        ("batch", "CronJob") => Some("/spec/jobTemplate/spec/template"),
        _ => None,
    }
}

/// JSON pointer to the PodSpec of a kind (a Pod's own spec or a template's).
pub(crate) fn pod_spec_pointer(kind: &KindInfo) -> Option<String> {
    if (kind.group, kind.kind) == ("", "Pod") {
        return Some("/spec".to_string());
    }
    template_pointer(kind).map(|t| format!("{t}/spec"))
}

/// The object at `key` of `obj`, created empty when absent or not an object.
pub(crate) fn object_at<'a>(obj: &'a mut Value, key: &str) -> Option<&'a mut Map<String, Value>> {
    let map = obj.as_object_mut()?;
    let entry = map
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut()
}

/// Sets `key` to `value` when it is absent.
pub(crate) fn ensure(map: &mut Map<String, Value>, key: &str, value: Value) {
    if !map.contains_key(key) {
        map.insert(key.to_string(), value);
    }
}

/// Sets `key` when absent, `null` or an empty string (Go's zero value).
pub(crate) fn default_str(map: &mut Map<String, Value>, key: &str, value: &str) {
    match map.get(key) {
        Some(Value::String(s)) if !s.is_empty() => {}
        _ => {
            map.insert(key.to_string(), Value::String(value.to_string()));
        }
    }
}

/// Sets `key` when absent or `null` (a nil pointer in Go).
pub(crate) fn default_value(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_string(), value);
    }
}

/// A string field, `""` when absent.
pub(crate) fn str_of<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The objects of the list at `key` (non-objects skipped).
pub(crate) fn objects_mut<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    map.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flat_map(|items| items.iter_mut())
        .filter_map(Value::as_object_mut)
}
