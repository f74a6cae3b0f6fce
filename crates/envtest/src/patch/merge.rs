//! RFC 7386 JSON merge patch, with the details of the Go implementation
//! kube-apiserver uses (nulls inside new values are dropped, also inside
//! objects nested in lists).

use serde_json::{Map, Value};

use crate::error::{ApiError, ApiResult};
use crate::gofmt;

pub(super) fn apply(doc: &Value, body: &[u8]) -> ApiResult<Value> {
    let patch = gofmt::parse_json(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    let patch = match patch {
        Value::Object(map) => map,
        // Decodes into the (nil) map, which the merge then refuses.
        Value::Null => return Err(ApiError::bad_request("Invalid JSON Patch")),
        other => {
            return Err(ApiError::bad_request(format!(
                "error decoding patch: {}",
                gofmt::unmarshal_type_error(&other, "map[string]interface {}")
            )));
        }
    };
    let mut out = match doc {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    merge_objects(&mut out, patch);
    let out = Value::Object(out);
    if super::exceeds_depth(&out) {
        return Err(ApiError::bad_request(format!(
            "error decoding patch: the patched object nests deeper than {} levels",
            super::MAX_DEPTH
        )));
    }
    Ok(out)
}

fn merge_objects(doc: &mut Map<String, Value>, patch: Map<String, Value>) {
    for (key, value) in patch {
        if value.is_null() {
            doc.remove(&key);
            continue;
        }
        match doc.get_mut(&key) {
            Some(current) if !current.is_null() => merge_value(current, value),
            _ => {
                doc.insert(key, pruned(value));
            }
        }
    }
}

fn merge_value(current: &mut Value, patch: Value) {
    match (current.as_object_mut(), patch) {
        (Some(cur), Value::Object(p)) => merge_objects(cur, p),
        // An object replaced by a non-object keeps the patch value as sent.
        (Some(_), p) => *current = p,
        (None, p) => *current = pruned(p),
    }
}

/// Drops null members of objects, recursively (also inside lists).
fn pruned(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, pruned(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(pruned).collect()),
        other => other,
    }
}
