//! Server-side apply: merge the applied configuration, remove what the
//! applier stopped applying, detect conflicts, transfer ownership.

use serde_json::{Map, Value};

use super::fieldpath::{Path, Set, path_string, values_equal};
use super::managed::{self, Entry, Managed, ManagerId};
use super::shape::Shape;
use super::update_ownership::store;
use super::zero::{empty_view, typed_view};
use super::{ApplyRequest, exceeds_depth};
use super::{last_applied, walk};
use crate::error::{ApiError, ApiResult, Cause, Details};

fn internal(message: String) -> ApiError {
    // What the real server sends for errors that are not a Status: 500, no reason.
    ApiError::new(500, "", message)
}

fn without_managed_fields(obj: &Value) -> Value {
    let mut out = obj.clone();
    if let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    out
}

/// `ns/name; group/version, Kind=Kind`, as the real server names the object.
fn describe_object(obj: &Value) -> String {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    let meta = obj.get("metadata");
    let api_version = text(obj.get("apiVersion"));
    let (group, version) = api_version
        .split_once('/')
        .unwrap_or(("", api_version.as_str()));
    format!(
        "{}/{}; {group}/{version}, Kind={}",
        text(meta.and_then(|m| m.get("namespace"))),
        text(meta.and_then(|m| m.get("name"))),
        text(obj.get("kind"))
    )
}

fn check_applied(req: &ApplyRequest<'_>) -> ApiResult<()> {
    let Value::Object(applied) = req.applied else {
        return Err(ApiError::bad_request(
            "error decoding YAML: the applied configuration is not an object",
        ));
    };
    if exceeds_depth(req.applied) {
        return Err(ApiError::bad_request(
            "error decoding YAML: nested too deeply",
        ));
    }
    let version = applied
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if version != req.api_version {
        return Err(ApiError::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {version}, expected: {}",
            req.api_version
        )));
    }
    let sent_managed = applied
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .is_some_and(|v| !v.is_null());
    if sent_managed {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    Ok(())
}

/// Why an apply did not go through.
pub(super) enum Failure {
    Conflicts(Vec<(ManagerId, Set)>),
    Error(ApiError),
}

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Failure {
        Failure::Error(e)
    }
}

pub(super) fn apply(req: &ApplyRequest<'_>) -> ApiResult<Value> {
    let outcome = match apply_once(req, req.force) {
        Err(Failure::Conflicts(conflicts)) if req.manager == last_applied::KUBECTL => {
            // kubectl moving from client-side to server-side apply.
            match last_applied::allowed_conflicts(req) {
                Some(allowed) => {
                    let left: Vec<(ManagerId, Set)> = conflicts
                        .into_iter()
                        .map(|(id, set)| (id, set.difference(&allowed)))
                        .filter(|(_, set)| !set.is_empty())
                        .collect();
                    if left.is_empty() {
                        apply_once(req, true)
                    } else {
                        Err(Failure::Conflicts(left))
                    }
                }
                None => Err(Failure::Conflicts(conflicts)),
            }
        }
        other => other,
    };
    match outcome {
        Ok(mut out) => {
            last_applied::sync_annotation(req, &mut out);
            Ok(out)
        }
        Err(Failure::Conflicts(conflicts)) => Err(conflict_error(conflicts)),
        Err(Failure::Error(e)) => Err(e),
    }
}

fn apply_once(req: &ApplyRequest<'_>, force: bool) -> Result<Value, Failure> {
    check_applied(req)?;
    let shape = Shape::new(req.types);
    if req.live.is_some_and(exceeds_depth) {
        return Err(internal("failed to decode live object: nested too deeply".into()).into());
    }
    let mut managers = match req.live {
        Some(live) => Managed::decode(live.get("metadata").and_then(|m| m.get("managedFields")))
            .map_err(|e| internal(format!("failed to decode managed fields: {e}")))?,
        None => Managed::default(),
    };
    let live_raw = match req.live {
        Some(live) => without_managed_fields(live),
        None => Value::Object(Map::new()),
    };
    let live_view = match req.live {
        Some(_) => typed_view(&live_raw),
        None => empty_view(req.applied),
    };

    let applied_set = walk::field_set(shape, req.applied).map_err(|e| {
        internal(format!(
            "failed to create typed patch object ({}): {e}",
            describe_object(req.applied)
        ))
    })?;

    // Fields of an object nobody manages yet belong to "before-first-apply".
    if managers.is_empty() && req.live.is_some() {
        let empty = empty_view(&live_raw);
        let cmp = walk::compare(shape, Some(&empty), Some(&live_view))
            .map_err(|e| internal(format!("failed to create manager for existing fields: {e}")))?;
        let owned =
            managed::owned_part(&cmp.changed(), req.subresource).difference(&managed::strip_set());
        if !owned.is_empty() {
            managers.entries.insert(
                ManagerId::update("before-first-apply", req.api_version, req.subresource),
                Entry {
                    set: owned,
                    api_version: req.api_version.to_string(),
                    time: Some(req.now.to_string()),
                },
            );
        }
    }

    let id = ManagerId::apply(req.manager, req.subresource);
    let previous = managers.entries.get(&id).cloned();
    let last_set = previous.as_ref().map(|e| e.set.clone()).unwrap_or_default();

    let merged = walk::merge(shape, Some(&live_raw), req.applied)
        .map_err(|e| internal(format!("failed to merge config: {e}")))?;
    managers.entries.insert(
        id.clone(),
        Entry {
            set: managed::owned_part(&applied_set, req.subresource),
            api_version: req.api_version.to_string(),
            time: previous.and_then(|e| e.time),
        },
    );
    let pruned = prune(shape, &merged, &managers, &last_set)
        .map_err(|e| internal(format!("failed to prune fields: {e}")))?;

    let new_view = typed_view(&pruned);
    let cmp = walk::compare(shape, Some(&live_view), Some(&new_view))
        .map_err(|e| internal(format!("failed to compare objects: {e}")))?
        .filter(|s| managed::owned_part(s, req.subresource));
    let changed = cmp.changed();

    let conflicts: Vec<(ManagerId, Set)> = managers
        .entries
        .iter()
        .filter(|(other, _)| **other != id)
        .map(|(other, entry)| (other.clone(), entry.set.intersection(&changed)))
        .filter(|(_, set)| !set.is_empty())
        .collect();
    if !force && !conflicts.is_empty() {
        return Err(Failure::Conflicts(conflicts));
    }
    managers.take_from_others(Some(&id), &changed.union(&cmp.removed));

    if let Some(entry) = managers.entries.get_mut(&id) {
        entry.set = entry.set.difference(&managed::strip_set());
        // A no-op apply leaves the applier's time alone.
        if !values_equal(&live_raw, &pruned) || req.live.is_none() {
            entry.time = Some(req.now.to_string());
        }
    }
    managers.drop_empty();

    let mut out = drop_removal_nulls(pruned, &merged);
    store(&mut out, managers.encode());
    Ok(out)
}

/// Removes what the applier owned last time and no longer applies, unless
/// another manager (or the applier's new configuration) still owns it.
fn prune(
    shape: Shape<'_>,
    merged: &Value,
    managers: &Managed,
    last: &Set,
) -> Result<Value, String> {
    if last.is_empty() {
        return Ok(merged.clone());
    }
    let last = last.ensure_named_fields_are_members();
    let all_owned = managers
        .entries
        .values()
        .fold(Set::new(), |acc, e| acc.union(&e.set))
        .ensure_named_fields_are_members();
    let merged_set = walk::field_set(shape, merged)?.ensure_named_fields_are_members();

    // Everything the applier had, gone; then back what someone still owns...
    let without_last = walk::remove(shape, merged, &last);
    let without_last_set = walk::field_set(shape, &without_last)?.ensure_named_fields_are_members();
    let unowned = merged_set.difference(&without_last_set.union(&all_owned));
    let owned_only = walk::remove(shape, merged, &unowned);
    // ...and back what was never the applier's (defaults, other writers).
    let owned_only_set = walk::field_set(shape, &owned_only)?.ensure_named_fields_are_members();
    let dropped = merged_set.difference(&owned_only_set).intersection(&last);
    Ok(walk::remove(shape, merged, &dropped))
}

/// Objects and lists emptied by the removal come back as `null`; the typed
/// round trip of the real server turns those into absent fields.
fn drop_removal_nulls(value: Value, before: &Value) -> Value {
    match (value, before) {
        (Value::Object(map), Value::Object(prev)) => Value::Object(
            map.into_iter()
                .filter_map(|(k, v)| match (v, prev.get(&k)) {
                    (Value::Null, Some(p)) if !p.is_null() => None,
                    (v, Some(p)) => Some((k, drop_removal_nulls(v, p))),
                    (v, None) => Some((k, v)),
                })
                .collect(),
        ),
        (v, _) => v,
    }
}

fn conflict_error(mut conflicts: Vec<(ManagerId, Set)>) -> ApiError {
    conflicts.sort_by_key(|(id, _)| id.identifier());
    let flat: Vec<(&ManagerId, Path)> = conflicts
        .iter()
        .flat_map(|(id, set)| set.paths().into_iter().map(move |p| (id, p)))
        .collect();
    let causes: Vec<Cause> = flat
        .iter()
        .map(|(id, path)| {
            Cause::new(
                "FieldManagerConflict",
                path_string(path),
                format!("conflict with {}", id.describe()),
            )
        })
        .collect();
    let message = match flat.as_slice() {
        [(id, path)] => format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            id.describe(),
            path_string(path)
        ),
        _ => {
            let mut lines = Vec::new();
            for (id, set) in &conflicts {
                lines.push(format!("conflicts with {}:", id.describe()));
                lines.extend(set.paths().iter().map(|p| format!("- {}", path_string(p))));
            }
            format!(
                "Apply failed with {} conflicts: {}",
                flat.len(),
                lines.join("\n")
            )
        }
    };
    ApiError::new(409, "Conflict", message).with_details(Details {
        causes,
        ..Details::default()
    })
}
