//! Small readers and cause builders shared by the Pod validation modules.

use serde_json::Value;

use crate::error::{Cause, go_value};
use crate::name_rules::is_dns1123_label;

pub(super) fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

pub(super) fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

pub(super) fn present(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|x| !x.is_null())
}

pub(super) fn not_found(field: String, value: &str) -> Cause {
    Cause::new(
        "FieldValueNotFound",
        field,
        format!("Not found: {}", go_value(&Value::String(value.to_string()))),
    )
}

pub(super) fn dns_label(value: &str, field: &str) -> Vec<Cause> {
    is_dns1123_label(value)
        .into_iter()
        .map(|m| Cause::invalid(field, &Value::String(value.to_string()), &m))
        .collect()
}

pub(super) fn nonnegative(v: &Value, key: &str, field: String) -> Option<Cause> {
    let n = v.get(key).and_then(Value::as_i64)?;
    (n < 0).then(|| Cause::invalid(field, &Value::from(n), "must be greater than or equal to 0"))
}
