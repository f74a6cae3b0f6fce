//! Applying a mutating webhook's JSONPatch, in two steps as kube-apiserver
//! does: decoding (a failure is a webhook call failure, subject to the
//! failure policy) and applying (a failure is an internal error of the
//! request), with evanphx/json-patch v4's semantics and messages
//! (`patch::json_ops`).

use serde_json::Value;

/// Decodes the patch bytes: a JSON array of operations (`jsonpatch.DecodePatch`).
pub(crate) fn decode(patch: &[u8]) -> Result<Vec<Value>, String> {
    match serde_json::from_slice::<Value>(patch) {
        Ok(Value::Array(ops)) => {
            if let Some(bad) = ops.iter().find(|op| !op.is_object() && !op.is_null()) {
                return Err(format!(
                    "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
                    crate::gofmt::json_kind(bad)
                ));
            }
            Ok(ops)
        }
        Ok(other) => Err(format!(
            "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
            crate::gofmt::json_kind(&other)
        )),
        Err(e) if e.is_eof() => Err("unexpected end of JSON input".to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// Applies decoded operations to `object`, returning the patched object or
/// the library's error text.
pub(crate) fn apply(object: &Value, ops: &[Value]) -> Result<Value, String> {
    let mut patched = object.clone();
    let mut copied = 0usize;
    let empty = serde_json::Map::new();
    for op in ops {
        // A null operation is an empty one (Go decodes it as a nil map).
        let map = op.as_object().unwrap_or(&empty);
        crate::patch::json_ops::apply(
            &mut patched,
            &crate::patch::json_ops::Operation::of(map),
            &mut copied,
            crate::request::body::MAX_BODY,
        )
        .map_err(|failed| failed.0)?;
    }
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
