//! Patches and field ownership: JSON patch, JSON merge patch, strategic merge
//! patch, server-side apply and `managedFields` bookkeeping.
//!
//! Every function here is pure (no store access): the HTTP layer reads the
//! live object, calls in, then validates and stores the result.
//!
//! Ownership follows kube-apiserver's field manager (structured-merge-diff):
//! `fieldpath` holds field sets and their `FieldsV1` encoding, `walk` the
//! typed comparisons and merges over a kind's [`TypeInfo`], `zero` the Go zero
//! values of built-in kinds, `managed` the `managedFields` entries; `update`
//! and `apply` are the two operations.

mod apply;
mod fieldpath;
mod gosort;
mod json;
pub(crate) mod json_ops;
mod last_applied;
mod managed;
mod merge;
mod shape;
mod strategic;
mod update_ownership;
mod walk;
mod zero;

#[cfg(test)]
mod tests;

use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::typeinfo::TypeInfo;

/// Deepest nesting the patch and ownership walkers accept (request bodies
/// parsed as JSON are limited to 128 levels already).
const MAX_DEPTH: usize = 256;

/// Whether `value` nests deeper than [`MAX_DEPTH`] (checked without recursion).
fn exceeds_depth(value: &Value) -> bool {
    let mut stack = vec![(value, 0usize)];
    while let Some((v, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            return true;
        }
        match v {
            Value::Array(items) => stack.extend(items.iter().map(|i| (i, depth + 1))),
            Value::Object(map) => stack.extend(map.values().map(|i| (i, depth + 1))),
            _ => {}
        }
    }
    false
}

/// The patch formats a PATCH request can carry, from its `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchType {
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
    /// Maps a PATCH request's Content-Type to a patch type as kube-apiserver
    /// v1.32 does, in two steps. Built-in resources are routed by
    /// go-restful first: one of the comma-separated values, cut at `;` and
    /// stripped of spaces, must be a patch type, else `415: Unsupported
    /// Media Type`. Then the patch handler (the only step for custom
    /// resources) cuts the whole value at its first `;` and must find a
    /// patch type the resource takes exactly (no case folding, no
    /// trimming), else the negotiation's 415 naming them.
    pub(crate) fn from_content_type(content_type: &str, custom: bool) -> ApiResult<PatchType> {
        let supported: &[(&str, PatchType)] = if custom {
            &[
                ("application/json-patch+json", PatchType::Json),
                ("application/merge-patch+json", PatchType::Merge),
                ("application/apply-patch+yaml", PatchType::Apply),
            ]
        } else {
            &[
                ("application/json-patch+json", PatchType::Json),
                ("application/merge-patch+json", PatchType::Merge),
                (
                    "application/strategic-merge-patch+json",
                    PatchType::Strategic,
                ),
                ("application/apply-patch+yaml", PatchType::Apply),
            ]
        };
        let routed = content_type.split(',').any(|v| {
            let v = v.split(';').next().unwrap_or("").trim_matches(' ');
            supported.iter().any(|(name, _)| *name == v)
        });
        if !custom && !routed {
            return Err(
                ApiError::unsupported_media_type("415: Unsupported Media Type")
                    .with_details(crate::error::Details::default()),
            );
        }
        let essence = match content_type.find(';') {
            Some(i) if i > 0 => &content_type[..i],
            _ => content_type,
        };
        match supported.iter().find(|(name, _)| *name == essence) {
            Some((_, patch_type)) => Ok(*patch_type),
            None => {
                let names: Vec<&str> = supported.iter().map(|(name, _)| *name).collect();
                Err(ApiError::unsupported_media_type(format!(
                    "the body of the request was in an unknown format - accepted media types include: {}",
                    names.join(", ")
                )))
            }
        }
    }
}

/// RFC 6902 JSON patch of `doc` by the raw request body.
/// Errors: body not a JSON array → 400 (`error decoding patch: json: cannot
/// unmarshal object into Go value of type []handlers.jsonPatchOp`); a failing
/// or malformed operation (`test`, missing path, unknown op) → 422 `the server
/// rejected our request due to an error in our request` with `details: {}`;
/// more than 10,000 operations → 413.
pub(crate) fn json_patch(doc: &Value, body: &[u8]) -> ApiResult<Value> {
    json::apply(doc, body)
}

/// RFC 7386 JSON merge patch of `doc` by the raw request body.
/// Errors: malformed JSON or a non-object body → 400 `error decoding patch: ...`;
/// a `null` body → 400 `Invalid JSON Patch`.
pub(crate) fn merge_patch(doc: &Value, body: &[u8]) -> ApiResult<Value> {
    merge::apply(doc, body)
}

/// Strategic merge patch (lists merged per `types.patch_strategy`, `$patch`
/// directives, `$setElementOrder`, `$deleteFromPrimitiveList`, `$retainKeys`).
/// Errors are classified as the real server does: malformed body or directive
/// lists → 400, lists of lists → 422, anything else (missing merge key,
/// unknown `$patch`) → 500 with the Go message.
pub(crate) fn strategic_merge_patch(
    doc: &Value,
    body: &[u8],
    types: &dyn TypeInfo,
) -> ApiResult<Value> {
    strategic::apply(doc, body, types)
}

/// Inputs of one server-side apply request.
pub(crate) struct ApplyRequest<'a> {
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
///
/// Also checked here, as the field manager does: `applied.apiVersion` must equal
/// `api_version` (400 `Incorrect version specified in apply patch...`) and
/// `metadata.managedFields` must be absent (400). The kind and name of the
/// applied object are the caller's to check.
pub(crate) fn server_side_apply(req: &ApplyRequest<'_>) -> ApiResult<Value> {
    apply::apply(req)
}

/// Inputs of the ownership bookkeeping after a non-apply write.
pub(crate) struct UpdateRequest<'a> {
    /// The object before the write (`None` on create).
    pub old: Option<&'a Value>,
    /// `fieldManager` query parameter, or the name derived from the User-Agent.
    pub manager: &'a str,
    pub api_version: &'a str,
    pub subresource: Option<&'a str>,
    pub now: &'a str,
    pub types: &'a dyn TypeInfo,
}

/// Whether the request asks to reset field tracking (`managedFields: [{}]`,
/// or `[]`); the list is removed, since the field manager acts on it before
/// validation, which would refuse the empty entry.
pub(crate) fn take_managed_fields_reset(obj: &mut Value) -> bool {
    let reset = obj
        .get("metadata")
        .is_some_and(|m| managed::is_reset(m.get("managedFields")));
    if reset && let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    reset
}

/// Records an `operation: Update` entry: `manager` takes ownership of every field
/// it set or changed in `new` (relative to `old`), other managers lose those
/// fields, and entries left empty are dropped. Mutates `new.metadata.managedFields`.
///
/// Call it where kube-apiserver runs its field manager: after decoding and
/// defaulting the request object, before admission plugins and the registry's
/// create/update preparation (so a Pod's service-account volume, a Service's
/// allocated clusterIP or a Namespace's finalizer are not owned). `new` may
/// carry the request's own `managedFields` (a list replaces the stored ones,
/// `[]` clears them); on a subresource the stored ones are always used.
pub(crate) fn record_update(req: &UpdateRequest<'_>, new: &mut Value) {
    if update_ownership::record(req, new).is_err() {
        // As the real server: keep the stored managedFields when tracking fails.
        let previous = req
            .old
            .and_then(|o| o.get("metadata"))
            .and_then(|m| m.get("managedFields"))
            .cloned();
        update_ownership::store(new, previous);
    }
}
