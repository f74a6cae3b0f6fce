//! The CRD registry: accepts names, sets `NamesAccepted` and `Established`,
//! serves established CRDs, and on CRD deletion removes every custom
//! resource before releasing the `customresourcecleanup` finalizer.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{APISERVER, modify_without_admission, resource_for};
use crate::api::delete::{CRD_CLEANUP, delete_internal};
use crate::app::App;
use crate::meta;
use crate::registry::{CustomResource, Registry, custom_store_key};
use crate::request::query::DeleteOptions;
use crate::store::{Event, EventType, ResKey};

pub(super) const CRD_KEY: &str = "apiextensions.k8s.io/customresourcedefinitions";

fn crd_key() -> ResKey {
    Arc::from(CRD_KEY)
}

/// Rebuilds the served set from the stored CRDs.
pub(super) fn rebuild_registry(app: &App) {
    rebuild_registry_with(app, None);
}

/// Rebuilds the served set with `next` in place of its stored CRD, so that
/// a CRD is served before a client can read that it is Established.
fn rebuild_registry_with(app: &App, next: Option<&Value>) {
    let (crds, _) = app.store.list(&crd_key(), None, None);
    let replaced = next.map(meta::name);
    let custom = crds
        .iter()
        .map(|(_, c)| match next {
            Some(n) if replaced == Some(meta::name(c)) => n,
            _ => &**c,
        })
        .map(|c| Arc::new(CustomResource::from_crd(c)))
        .collect();
    app.registry.replace(Registry::new(custom));
}

fn condition(type_: &str, status: &str, reason: &str, message: &str, now: &str) -> Value {
    json!({"type": type_, "status": status, "lastTransitionTime": now, "reason": reason, "message": message})
}

/// Whether the CRD has a condition of `type_` whose `field` is `value`.
fn condition_with(crd: &Value, type_: &str, field: &str, value: &str) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some(type_)
                    && c.get(field).and_then(Value::as_str) == Some(value)
            })
        })
}

fn has_condition(crd: &Value, type_: &str, status: &str) -> bool {
    condition_with(crd, type_, "status", status)
}

/// Whether spec.names moved on from the accepted names (a CRD update).
fn names_changed(crd: &Value) -> bool {
    let Some(accepted) = crd.pointer("/status/acceptedNames") else {
        return false;
    };
    if !has_condition(crd, "Established", "True") {
        return false;
    }
    ["plural", "kind", "shortNames", "categories"]
        .iter()
        .any(|k| {
            let spec = crd.pointer(&format!("/spec/names/{k}"));
            let acc = accepted.get(*k);
            spec.filter(|v| !v.is_null()) != acc.filter(|v| !v.is_null())
        })
}

/// Another CRD already serving the same plural or kind in the group.
fn name_conflict(app: &App, crd: &Value) -> Option<String> {
    let me = CustomResource::from_crd(crd);
    let (all, _) = app.store.list(&crd_key(), None, None);
    all.iter()
        .map(|(_, c)| CustomResource::from_crd(c))
        .filter(|o| o.crd_name != me.crd_name && o.group == me.group)
        .find_map(|o| {
            if o.plural == me.plural {
                Some(format!("{:?} is already in use", me.plural))
            } else if o.kind == me.kind {
                Some(format!("{:?} is already in use", me.kind))
            } else {
                None
            }
        })
}

fn accept_names(app: &App, crd: &Value) {
    let Some(res) = resource_for(app, CRD_KEY) else {
        return;
    };
    let conflict = name_conflict(app, crd);
    let name = meta::name(crd).to_string();
    let written =
        modify_without_admission(app, &res, "", &name, Some("status"), APISERVER, |obj| {
            let now = meta::now_rfc3339();
            let spec_names = obj
                .pointer("/spec/names")
                .filter(|n| n.is_object())
                .cloned()
                .unwrap_or(json!({}));
            let kind = spec_names
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let mut accepted = spec_names.clone();
            if accepted.get("singular").is_none() {
                accepted["singular"] = json!(kind.to_lowercase());
            }
            if accepted.get("listKind").is_none() {
                accepted["listKind"] = json!(format!("{kind}List"));
            }
            let conditions = match &conflict {
                None => vec![
                    condition(
                        "NamesAccepted",
                        "True",
                        "NoConflicts",
                        "no conflicts found",
                        &now,
                    ),
                    condition(
                        "Established",
                        "True",
                        "InitialNamesAccepted",
                        "the initial names have been accepted",
                        &now,
                    ),
                ],
                Some(msg) => vec![
                    condition("NamesAccepted", "False", "NameConflict", msg, &now),
                    condition(
                        "Established",
                        "False",
                        "NotAccepted",
                        "not all names are accepted",
                        &now,
                    ),
                ],
            };
            if !obj.get("status").is_some_and(Value::is_object) {
                obj["status"] = json!({});
            }
            if conflict.is_none() {
                obj["status"]["acceptedNames"] = accepted;
            }
            obj["status"]["conditions"] = Value::Array(conditions);
            let storage = CustomResource::from_crd(obj).storage_version;
            let stored = obj["status"]
                .get("storedVersions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if !storage.is_empty() && !stored.iter().any(|v| v.as_str() == Some(storage.as_str())) {
                let mut list = stored;
                list.push(json!(storage));
                obj["status"]["storedVersions"] = Value::Array(list);
            }
            if conflict.is_none() {
                rebuild_registry_with(app, Some(obj));
            }
            true
        });
    log_failure(
        "accepting the names of a CustomResourceDefinition",
        &name,
        written,
    );
}

/// Deletes the custom resources of a terminating CRD; once none is left the
/// cleanup finalizer goes and the CRD with it.
fn cleanup(app: &App, crd: &Value) {
    let Some(crd_res) = resource_for(app, CRD_KEY) else {
        return;
    };
    // As the apiextensions finalizer does before it deletes anything.
    if !condition_with(crd, "Terminating", "reason", "InstanceDeletionInProgress") {
        let written = modify_without_admission(
            app,
            &crd_res,
            "",
            meta::name(crd),
            Some("status"),
            APISERVER,
            |obj| {
                let mut conditions: Vec<Value> = obj
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let now = meta::now_rfc3339();
                let wanted = condition(
                    "Terminating",
                    "True",
                    "InstanceDeletionInProgress",
                    "CustomResource deletion is in progress",
                    &now,
                );
                match conditions
                    .iter_mut()
                    .find(|c| c.get("type").and_then(Value::as_str) == Some("Terminating"))
                {
                    // SetCRDCondition keeps the transition time of an unchanged status.
                    Some(c) => {
                        let keep = c.get("status") == wanted.get("status");
                        let time = c.get("lastTransitionTime").cloned();
                        *c = wanted;
                        if keep && let Some(t) = time {
                            c["lastTransitionTime"] = t;
                        }
                    }
                    None => conditions.push(wanted),
                }
                obj["status"]["conditions"] = Value::Array(conditions);
                true
            },
        );
        log_failure(
            "marking a CustomResourceDefinition Terminating",
            meta::name(crd),
            written,
        );
    }
    let cr = CustomResource::from_crd(crd);
    let key = custom_store_key(&cr.group, &cr.plural);
    let (objects, _) = app.store.list(&key, None, None);
    if let Some(res) = resource_for(app, &key) {
        for (_, obj) in &objects {
            if !meta::is_deleting(obj) {
                let deleted = delete_internal(
                    app,
                    &res,
                    meta::namespace(obj),
                    meta::name(obj),
                    &DeleteOptions::default(),
                );
                log_failure(
                    "deleting a custom resource of a deleted CRD",
                    meta::name(obj),
                    deleted,
                );
            }
        }
    }
    let (left, _) = app.store.list(&key, None, None);
    if !left.is_empty() {
        return;
    }
    // The finalizer goes and, no other being left, the CRD with it: the
    // DELETED event shows the last stored state (deletion in progress).
    let written =
        modify_without_admission(app, &crd_res, "", meta::name(crd), None, APISERVER, |obj| {
            let mut f = meta::finalizers(obj);
            let before = f.len();
            f.retain(|x| x != CRD_CLEANUP);
            meta::set_finalizers(obj, &f);
            f.len() != before
        });
    log_failure(
        "removing the cleanup finalizer of a CRD",
        meta::name(crd),
        written,
    );
}

/// A write this controller could not make is logged, not lost (the next
/// change of the CRD tries again). An object gone meanwhile needs nothing.
fn log_failure<T>(what: &str, name: &str, result: crate::error::ApiResult<T>) {
    match result {
        Err(e) if e.code != 404 => {
            tracing::warn!(code = e.code, name, "{what}: {}", e.message);
        }
        _ => {}
    }
}

/// Reacts to a change; returns a terminating CRD whose custom resources
/// must be cleaned up (done once per batch by [`cleanup_by_name`]).
pub(super) fn on_event(app: &App, ev: &Event) -> Option<String> {
    if &*ev.resource == CRD_KEY {
        match ev.kind {
            EventType::Deleted => rebuild_registry(app),
            _ => {
                let crd = &ev.object;
                if meta::is_deleting(crd) {
                    rebuild_registry(app);
                    if meta::finalizers(crd).iter().any(|f| f == CRD_CLEANUP) {
                        return Some(ev.name.clone());
                    }
                } else if (!has_condition(crd, "Established", "True")
                    && !has_condition(crd, "NamesAccepted", "False"))
                    || names_changed(crd)
                {
                    accept_names(app, crd);
                } else {
                    rebuild_registry(app);
                }
            }
        }
        return None;
    }
    // A custom resource of a terminating CRD went away: maybe the last one.
    if ev.kind != EventType::Deleted {
        return None;
    }
    let reg = app.registry.load();
    reg.crds()
        .find(|c| c.terminating && *custom_store_key(&c.group, &c.plural) == *ev.resource)
        .map(|c| c.crd_name.clone())
}

/// Continues the cleanup of the terminating CRD `name`.
pub(super) fn cleanup_by_name(app: &App, name: &str) {
    if let Some(crd) = app.store.get(&crd_key(), "", name) {
        cleanup(app, &crd);
    }
}
