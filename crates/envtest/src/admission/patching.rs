//! Applying a mutating webhook's JSONPatch, in two steps as kube-apiserver
//! does: decoding (a failure is a webhook call failure, subject to the
//! failure policy) and applying (a failure is an internal error of the
//! request). Application messages imitate evanphx/json-patch's; they are
//! close, not byte-for-byte.

use serde_json::Value;

/// Decodes the patch bytes: a JSON array of operations (`jsonpatch.DecodePatch`).
pub(crate) fn decode(patch: &[u8]) -> Result<Vec<Value>, String> {
    match serde_json::from_slice::<Value>(patch) {
        Ok(Value::Array(ops)) => {
            if let Some(bad) = ops.iter().find(|op| !op.is_object() && !op.is_null()) {
                return Err(format!(
                    "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
                    kind_name(bad)
                ));
            }
            Ok(ops)
        }
        Ok(other) => Err(format!(
            "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
            kind_name(&other)
        )),
        Err(e) if e.is_eof() => Err("unexpected end of JSON input".to_string()),
        Err(e) => Err(e.to_string()),
    }
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

const KNOWN_OPS: [&str; 6] = ["add", "remove", "replace", "move", "copy", "test"];

/// Applies decoded operations to `object`, returning the patched object.
pub(crate) fn apply(object: &Value, ops: &[Value]) -> Result<Value, String> {
    for op in ops {
        let name = op.get("op").and_then(Value::as_str).unwrap_or("");
        if !KNOWN_OPS.contains(&name) {
            return Err(format!("Unexpected kind: {name}"));
        }
    }
    let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops.to_vec()))
        .map_err(|e| format!("invalid patch operation: {e}"))?;
    let mut patched = object.clone();
    json_patch::patch(&mut patched, &patch).map_err(|e| {
        let op = ops
            .get(e.operation)
            .and_then(|o| o.get("op"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let from = ops
            .get(e.operation)
            .and_then(|o| o.get("from"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let path = e.path.to_string();
        match e.kind {
            json_patch::PatchErrorKind::TestFailed => {
                format!("testing value {path} failed: test failed")
            }
            json_patch::PatchErrorKind::InvalidFromPointer => {
                format!(
                    "{op} operation does not apply: doc is missing from path: {from}: missing value"
                )
            }
            json_patch::PatchErrorKind::CannotMoveInsideItself => {
                format!(
                    "{op} operation does not apply: cannot move {from} into its own child {path}"
                )
            }
            _ if op == "replace" => {
                format!(
                    "replace operation does not apply: doc is missing key: {path}: missing value"
                )
            }
            _ => format!(
                "{op} operation does not apply: doc is missing path: \"{path}\": missing value"
            ),
        }
    })?;
    Ok(patched)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decode_accepts_arrays_of_objects_only() {
        assert_eq!(decode(b"[]").unwrap(), Vec::<Value>::new());
        assert!(decode(b"{}").unwrap_err().contains("jsonpatch.Patch"));
        assert!(decode(b"[1]").unwrap_err().contains("jsonpatch.Operation"));
        assert_eq!(decode(b"[").unwrap_err(), "unexpected end of JSON input");
    }

    #[test]
    fn apply_reports_failures() {
        let obj = json!({"spec": {"a": 1}});
        let ok = apply(&obj, &[json!({"op": "add", "path": "/spec/b", "value": 2})]).unwrap();
        assert_eq!(ok, json!({"spec": {"a": 1, "b": 2}}));
        assert_eq!(
            apply(&obj, &[json!({"op": "frob", "path": "/x"})]).unwrap_err(),
            "Unexpected kind: frob"
        );
        assert_eq!(
            apply(&obj, &[json!({"op": "add", "path": "/x/y", "value": 1})]).unwrap_err(),
            "add operation does not apply: doc is missing path: \"/x/y\": missing value"
        );
        assert_eq!(
            apply(
                &obj,
                &[json!({"op": "test", "path": "/spec/a", "value": 2})]
            )
            .unwrap_err(),
            "testing value /spec/a failed: test failed"
        );
        assert!(apply(&obj, &[json!({"op": "add"})]).is_err());
    }
}
