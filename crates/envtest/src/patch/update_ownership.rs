//! Ownership bookkeeping of create, update and non-apply patch requests
//! (`operation: Update` entries).

use serde_json::Value;

use super::managed::{self, Entry, Managed, ManagerId};
use super::shape::Shape;
use super::walk::{self, Comparison};
use super::zero::{empty_view, typed_view};
use super::{UpdateRequest, exceeds_depth};

fn managed_fields(obj: &Value) -> Option<&Value> {
    obj.get("metadata").and_then(|m| m.get("managedFields"))
}

fn without_managed_fields(obj: &Value) -> Value {
    let mut out = obj.clone();
    if let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    out
}

/// Writes `managed` into `obj.metadata.managedFields` (removing the field
/// when no manager is left).
pub(super) fn store(obj: &mut Value, encoded: Option<Value>) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    match encoded {
        Some(list) => {
            let meta = map
                .entry("metadata")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert("managedFields".to_string(), list);
            }
        }
        None => {
            if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("managedFields");
            }
        }
    }
}

/// The managers to start from: the request's own managedFields when it
/// sends some (an empty list clears them), otherwise the stored object's.
/// Subresources always start from the stored object's.
fn starting_managers(req: &UpdateRequest<'_>, new: &Value) -> Managed {
    let live = || Managed::decode(req.old.and_then(managed_fields)).unwrap_or_default();
    if req.subresource.is_some() {
        return live();
    }
    let sent = managed_fields(new);
    if managed::is_reset(sent) {
        return Managed::default();
    }
    match Managed::decode(sent) {
        Ok(m) if !m.is_empty() => m,
        _ => live(),
    }
}

/// What [`super::record_update`] does; `Err` leaves the stored managedFields.
pub(super) fn record(req: &UpdateRequest<'_>, new: &mut Value) -> Result<(), String> {
    if !new.is_object() {
        return Err("the new object is not an object".to_string());
    }
    if exceeds_depth(new) || req.old.is_some_and(exceeds_depth) {
        return Err("object nested too deeply".to_string());
    }
    let mut managers = starting_managers(req, new);
    let is_create = req
        .old
        .and_then(|o| o.pointer("/metadata/uid"))
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    // An existing object nobody manages stays unmanaged (objects from before
    // field management, or whose managedFields a client cleared).
    if managers.is_empty() && !is_create {
        store(new, None);
        return Ok(());
    }

    let shape = Shape::new(req.types);
    let old_view = match req.old {
        Some(old) => typed_view(&without_managed_fields(old)),
        None => empty_view(new),
    };
    let new_view = typed_view(&without_managed_fields(new));
    let cmp = walk::compare(shape, Some(&old_view), Some(&new_view))?
        .filter(|s| managed::owned_part(s, req.subresource));
    apply_update(&mut managers, &cmp, req);
    store(new, managers.encode());
    Ok(())
}

/// Others lose what changed under them and what was removed; the writer
/// gains what it added or changed.
pub(super) fn apply_update(managers: &mut Managed, cmp: &Comparison, req: &UpdateRequest<'_>) {
    managers.take_from_others(None, &cmp.changed().union(&cmp.removed));
    let gained = cmp.changed().difference(&managed::strip_set());
    if !gained.is_empty() {
        let id = ManagerId::update(req.manager, req.api_version, req.subresource);
        let previous = managers
            .entries
            .remove(&id)
            .map(|e| e.set)
            .unwrap_or_default();
        managers.entries.insert(
            id,
            Entry {
                set: gained.union(&previous),
                api_version: req.api_version.to_string(),
                time: Some(req.now.to_string()),
            },
        );
    }
    managers.cap_update_managers();
}
