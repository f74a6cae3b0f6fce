//! A patch that changes the object's `apiVersion` or `kind`, answered as
//! kube-apiserver v1.32 answers it (`endpoints/handlers/patch.go` and the
//! custom resource validator):
//!
//! - a JSON or merge patch of a built-in object is decoded again from the
//!   patched JSON, and a type the decoder cannot read as the resource's is
//!   422 Invalid on the field `patch`, naming the patched JSON and the
//!   decoder's error;
//! - a strategic merge patch goes from a map straight into the resource's
//!   Go type, which keeps no apiVersion or kind of its own: the change is
//!   dropped and the patch succeeds;
//! - a custom resource decodes whatever it is given (only a missing kind
//!   fails, as a `patch` error); its validator then refuses another kind or
//!   apiVersion (422 on `kind` / `apiVersion`), except on `/status`, whose
//!   update keeps everything but the status from the stored object.

use serde_json::{Map, Value};

use super::decode::type_mismatch;
use crate::error::{ApiError, ApiResult, Cause};
use crate::gofmt;
use crate::meta;
use crate::patch::PatchType;
use crate::registry::Resource;

/// Checks (or for a strategic merge patch, restores) the patched object's
/// apiVersion and kind. Server-side apply checks its body beforehand.
pub(super) fn check(
    res: &Resource,
    patch_type: PatchType,
    sub: Option<&str>,
    patched: &mut Value,
) -> ApiResult<()> {
    if patch_type == PatchType::Apply {
        return Ok(());
    }
    let Value::Object(map) = patched else {
        return Ok(());
    };
    if res.is_custom() {
        return check_custom(res, sub, map);
    }
    if patch_type == PatchType::Strategic {
        map.insert("apiVersion".into(), Value::String(res.api_version()));
        map.insert("kind".into(), Value::String(res.kind.clone()));
        return Ok(());
    }
    let detail = match (map.get("apiVersion"), map.get("kind")) {
        (Some(v), _) if !v.is_string() && !v.is_null() => Some(not_a_string("apiVersion", v)),
        (_, Some(v)) if !v.is_string() && !v.is_null() => Some(not_a_string("kind", v)),
        (av, kind) => {
            // What is missing the decoder takes from the resource.
            let av = av.and_then(Value::as_str).filter(|s| !s.is_empty());
            let kind = kind.and_then(Value::as_str).filter(|s| !s.is_empty());
            match av.filter(|av| av.matches('/').count() > 1) {
                Some(bad) => Some(format!("unexpected GroupVersion string: {bad}")),
                None => type_mismatch(
                    res,
                    &av.map_or_else(|| res.api_version(), str::to_string),
                    kind.unwrap_or(&res.kind),
                ),
            }
        }
    };
    match detail {
        Some(detail) => Err(patch_invalid(map, &detail)),
        None => Ok(()),
    }
}

/// The decoder's first read of apiVersion and kind into Go strings.
fn not_a_string(field: &str, v: &Value) -> String {
    format!(
        "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go struct field .{field} of type string",
        gofmt::json_kind(v)
    )
}

fn check_custom(res: &Resource, sub: Option<&str>, map: &Map<String, Value>) -> ApiResult<()> {
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() {
        let json = patched_json(map);
        let shown = format!("Object 'Kind' is missing in '{json}'");
        return Err(patch_invalid(map, &shown));
    }
    if sub == Some("status") {
        return Ok(());
    }
    let av = map.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let want = res.api_version();
    let mut causes = Vec::new();
    if kind != res.kind {
        causes.push(Cause::invalid(
            "kind",
            &Value::String(kind.to_string()),
            &format!("must be {}", res.kind),
        ));
    }
    if av != want {
        causes.push(Cause::invalid(
            "apiVersion",
            &Value::String(av.to_string()),
            &format!("must be {want}"),
        ));
    }
    if causes.is_empty() {
        return Ok(());
    }
    // Named by the type the object now claims to be.
    let name = map
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let (group, _) = meta::split_api_version(av);
    Err(ApiError::invalid(group, kind, name, causes))
}

/// The patched object as the JSON patch library writes it: keys of the top
/// level sorted (it marshals a Go map there), compact, HTML-escaped.
fn patched_json(map: &Map<String, Value>) -> String {
    let mut sorted: Vec<(&String, &Value)> = map.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    let sorted: Map<String, Value> = sorted
        .into_iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut bytes = crate::gojson::compact(&Value::Object(sorted));
    bytes.pop();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// 422 on the field `patch`: ` "" is invalid: patch: Invalid value:
/// "<patched JSON>": <detail>` (kube-apiserver names no kind or object).
fn patch_invalid(map: &Map<String, Value>, detail: &str) -> ApiError {
    let cause = Cause::new(
        "FieldValueInvalid",
        "patch",
        format!(
            "Invalid value: {}: {detail}",
            gofmt::quote(&patched_json(map))
        ),
    );
    ApiError::invalid("", "", "", vec![cause])
}
