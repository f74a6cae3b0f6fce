//! Patches and field ownership: JSON patch, JSON merge patch, strategic merge
//! patch, server-side apply and `managedFields` bookkeeping.
//!
//! Every function here is pure (no store access): the HTTP layer reads the
//! live object, calls in, then validates and stores the result.

use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::typeinfo::TypeInfo;

/// The patch formats a PATCH request can carry, from its `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/strategic-merge-patch+json` (built-in kinds only).
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply; also accepts `+cbor` never).
    Apply,
}

impl PatchType {
    /// Maps a Content-Type (parameters such as `; charset=utf-8` ignored) to a
    /// patch type; anything else is the real server's `415: Unsupported Media Type`.
    pub fn from_content_type(content_type: &str) -> ApiResult<PatchType> {
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match essence.as_str() {
            "application/json-patch+json" => Ok(PatchType::Json),
            "application/merge-patch+json" => Ok(PatchType::Merge),
            "application/strategic-merge-patch+json" => Ok(PatchType::Strategic),
            "application/apply-patch+yaml" => Ok(PatchType::Apply),
            _ => Err(
                ApiError::unsupported_media_type("415: Unsupported Media Type")
                    .with_details(crate::error::Details::default()),
            ),
        }
    }
}

/// RFC 6902 JSON patch of `doc` by the raw request body.
/// Errors: body not a JSON array → 400; a failing op (`test`, missing path) → 422
/// `the server rejected our request due to an error in our request`.
pub fn json_patch(doc: &Value, body: &[u8]) -> ApiResult<Value> {
    let ops: json_patch::Patch = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    let mut out = doc.clone();
    json_patch::patch(&mut out, &ops).map_err(|_| {
        ApiError::new(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
        )
        .with_details(crate::error::Details::default())
    })?;
    Ok(out)
}

/// RFC 7386 JSON merge patch of `doc` by the raw request body.
pub fn merge_patch(doc: &Value, body: &[u8]) -> ApiResult<Value> {
    let patch: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    let mut out = doc.clone();
    json_patch::merge(&mut out, &patch);
    Ok(out)
}

/// Strategic merge patch (lists merged per `types.patch_strategy`, `$patch`
/// directives, `$setElementOrder`, `$deleteFromPrimitiveList`, `$retainKeys`).
pub fn strategic_merge_patch(doc: &Value, body: &[u8], types: &dyn TypeInfo) -> ApiResult<Value> {
    // Placeholder until the strategic merge implementation lands: plain merge patch.
    let _ = types;
    merge_patch(doc, body)
}

/// Inputs of one server-side apply request.
pub struct ApplyRequest<'a> {
    /// The stored object (with its `managedFields`), or `None` when apply creates it.
    pub live: Option<&'a Value>,
    /// The applied configuration, parsed from YAML/JSON.
    pub applied: &'a Value,
    /// `fieldManager` query parameter (already checked non-empty).
    pub manager: &'a str,
    /// `force` query parameter.
    pub force: bool,
    /// apiVersion recorded in the managedFields entry, e.g. `v1` or `example.com/v1`.
    pub api_version: &'a str,
    /// `Some("status")` when applying to a subresource.
    pub subresource: Option<&'a str>,
    /// RFC 3339 time for the managedFields entry.
    pub now: &'a str,
    pub types: &'a dyn TypeInfo,
}

/// Server-side apply: merges `applied` into `live`, transfers ownership, removes
/// fields that `manager` alone owned and no longer applies, and returns the new
/// object with updated `metadata.managedFields`. Conflicts (without `force`) are
/// 409 with one `FieldManagerConflict` cause per field.
pub fn server_side_apply(req: &ApplyRequest<'_>) -> ApiResult<Value> {
    // Placeholder until server-side apply lands: merge the applied config.
    let mut out = req
        .live
        .cloned()
        .unwrap_or(Value::Object(Default::default()));
    json_patch::merge(&mut out, req.applied);
    Ok(out)
}

/// Inputs of the ownership bookkeeping after a non-apply write.
pub struct UpdateRequest<'a> {
    /// The object before the write (`None` on create).
    pub old: Option<&'a Value>,
    /// `fieldManager` query parameter, or the name derived from the User-Agent.
    pub manager: &'a str,
    pub api_version: &'a str,
    pub subresource: Option<&'a str>,
    pub now: &'a str,
    pub types: &'a dyn TypeInfo,
}

/// Records an `operation: Update` entry: `manager` takes ownership of every field
/// it set or changed in `new` (relative to `old`), other managers lose those
/// fields, and entries left empty are dropped. Mutates `new.metadata.managedFields`.
pub fn record_update(req: &UpdateRequest<'_>, new: &mut Value) {
    // Placeholder until managedFields bookkeeping lands.
    let _ = (req, new);
}
