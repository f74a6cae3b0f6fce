//! `kubectl apply --server-side` after client-side `kubectl apply`: the
//! `kubectl.kubernetes.io/last-applied-configuration` annotation lets the
//! `kubectl` manager take over fields whose live values it applied before,
//! and is kept in sync with what `kubectl` applies.

use serde_json::Value;

use super::ApplyRequest;
use super::fieldpath::Set;
use super::shape::Shape;
use super::walk;
use super::zero::typed_view;
use crate::gofmt;

/// The only manager these rules apply to.
pub(super) const KUBECTL: &str = "kubectl";

const ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

fn annotation(obj: &Value) -> Option<&str> {
    obj.get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(ANNOTATION))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// Fields of the last client-side apply whose live values are still the
/// applied ones: conflicts on those are not conflicts for `kubectl`.
pub(super) fn allowed_conflicts(req: &ApplyRequest<'_>) -> Option<Set> {
    let live = req.live?;
    let last: Value = serde_json::from_str(annotation(live)?).ok()?;
    if last.get("apiVersion").and_then(Value::as_str) != Some(req.api_version) {
        return None;
    }
    let shape = Shape::new(req.types);
    let applied = walk::field_set(shape, &last).ok()?;
    let mut live_view = typed_view(live);
    if let Some(meta) = live_view.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    let cmp = walk::compare(shape, Some(&last), Some(&live_view)).ok()?;
    Some(
        applied
            .difference(&cmp.modified)
            .difference(&cmp.added)
            .difference(&cmp.removed),
    )
}

/// After a successful apply by `kubectl`, an existing annotation is rewritten
/// to the configuration just applied (the annotation itself left out), as
/// `kubectl` would have written it.
pub(super) fn sync_annotation(req: &ApplyRequest<'_>, out: &mut Value) {
    if req.manager != KUBECTL || annotation(out).is_none() {
        return;
    }
    let mut config = req.applied.clone();
    if let Some(annotations) = config
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    {
        annotations.remove(ANNOTATION);
    }
    let text = format!("{}\n", gofmt::json(&config));
    if let Some(annotations) = out
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    {
        annotations.insert(ANNOTATION.to_string(), Value::String(text));
    }
}
