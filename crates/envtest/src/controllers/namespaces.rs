//! The namespace lifecycle and the serviceaccount controller: every active
//! namespace has a `default` ServiceAccount; a terminating namespace has its
//! content deleted, reports progress in its conditions, and goes once empty.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::{CONTROLLER_MANAGER, modify_without_admission, resource_for};
use crate::api::WriteCtx;
use crate::api::create::{Input, create_internal};
use crate::api::delete::delete_internal;
use crate::app::App;
use crate::controller_selection::Controller;
use crate::meta;
use crate::request::query::DeleteOptions;
use crate::store::{Event, EventType, Preconditions, ResKey};

const NS_KEY: &str = "namespaces";
const SA_KEY: &str = "serviceaccounts";

fn ensure_default_service_account(app: &App, ns: &str) {
    let key: ResKey = Arc::from(SA_KEY);
    if app.store.get(&key, ns, "default").is_some() {
        return;
    }
    let Some(res) = resource_for(app, SA_KEY) else {
        return;
    };
    let obj =
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}});
    let ctx = WriteCtx::internal(CONTROLLER_MANAGER);
    let _ = create_internal(
        app,
        &res,
        ns,
        Input::Body {
            obj,
            duplicates: Vec::new(),
        },
        &ctx,
    );
}

/// What the namespace controller knows of namespaces being deleted.
#[derive(Default)]
pub(super) struct Lifecycle {
    /// Namespaces being deleted, and whether their deletion grace has passed.
    terminating: HashMap<String, bool>,
}

/// What a change asks of the namespace controller.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Work {
    /// A namespace just started terminating: act once its grace has passed.
    Wait(String),
    /// Delete what is left in the namespace, report it, and finish when empty.
    Finalize(String),
}

impl Lifecycle {
    /// Whether namespace `name` is being deleted.
    pub(super) fn is_terminating(&self, name: &str) -> bool {
        self.terminating.contains_key(name)
    }

    /// The grace of namespace `name` has passed: its content may go.
    pub(super) fn grace_passed(&mut self, name: &str) -> bool {
        match self.terminating.get_mut(name) {
            Some(ready) => {
                *ready = true;
                true
            }
            None => false,
        }
    }
}

/// Reacts to a change. The record of terminating namespaces spares the many
/// changes elsewhere a store lookup. Without the namespace controller a
/// deleted namespace stays Terminating; without the serviceaccount
/// controller no `default` ServiceAccount is made.
pub(super) fn on_event(app: &App, ev: &Event, lifecycle: &mut Lifecycle) -> Option<Work> {
    let service_accounts = app.controllers.is_on(Controller::ServiceAccount);
    if !app.controllers.is_on(Controller::Namespace) {
        if service_accounts {
            default_service_account_on(app, ev);
        }
        return None;
    }
    let terminating = &mut lifecycle.terminating;
    if &*ev.resource == NS_KEY {
        if ev.kind == EventType::Deleted {
            terminating.remove(&ev.name);
            return None;
        }
        if meta::is_deleting(&ev.object) {
            return match terminating.get(&ev.name) {
                None => {
                    terminating.insert(ev.name.clone(), false);
                    Some(Work::Wait(ev.name.clone()))
                }
                Some(true) => Some(Work::Finalize(ev.name.clone())),
                Some(false) => None,
            };
        }
        terminating.remove(&ev.name);
        if service_accounts {
            ensure_default_service_account(app, &ev.name);
        }
        return None;
    }
    if ev.namespace.is_empty() {
        return None;
    }
    if let Some(ready) = terminating.get(&ev.namespace) {
        return (*ready && ev.kind == EventType::Deleted)
            .then(|| Work::Finalize(ev.namespace.clone()));
    }
    if service_accounts {
        default_service_account_on(app, ev);
    }
    None
}

/// The serviceaccount controller: an active namespace, or one whose
/// `default` ServiceAccount was deleted, gets it (again).
fn default_service_account_on(app: &App, ev: &Event) {
    let deleted = ev.kind == EventType::Deleted;
    if &*ev.resource == NS_KEY && !deleted && !meta::is_deleting(&ev.object) {
        ensure_default_service_account(app, &ev.name);
    }
    if &*ev.resource == SA_KEY && ev.name == "default" && deleted {
        let ns_key: ResKey = Arc::from(NS_KEY);
        let active = app
            .store
            .get(&ns_key, "", &ev.namespace)
            .is_some_and(|ns| !meta::is_deleting(&ns));
        if active {
            ensure_default_service_account(app, &ev.namespace);
        }
    }
}

fn condition(type_: &str, status: &str, reason: &str, message: &str, now: &str) -> Value {
    json!({"type": type_, "status": status, "lastTransitionTime": now, "reason": reason, "message": message})
}

/// Deletes what is left in namespace `name`, records progress, and removes
/// the namespace once nothing remains.
pub(super) fn finalize(app: &App, name: &str) {
    let reg = app.registry.load();
    for (key, _) in app.store.resources_in_namespace(name) {
        let Some(res) = reg.by_store_key(&key) else {
            continue;
        };
        let (objects, _) = app.store.list(&key, Some(name), None);
        for (_, obj) in objects {
            if !meta::is_deleting(&obj) {
                let _ =
                    delete_internal(app, &res, name, meta::name(&obj), &DeleteOptions::default());
            }
        }
    }
    // kube-controller-manager names each resource `<resource>.<group>`
    // (`pods.` for the core group) and sorts the lists.
    let mut remaining = Vec::new();
    let mut finalizers: std::collections::BTreeMap<String, usize> = Default::default();
    for (key, count) in app.store.resources_in_namespace(name) {
        let Some(res) = reg.by_store_key(&key) else {
            continue;
        };
        remaining.push(format!(
            "{}.{} has {count} resource instances",
            res.plural, res.group
        ));
        let (objects, _) = app.store.list(&key, Some(name), None);
        for (_, obj) in objects {
            for f in meta::finalizers(&obj) {
                *finalizers.entry(f).or_default() += 1;
            }
        }
    }
    remaining.sort();
    let Some(ns_res) = resource_for(app, NS_KEY) else {
        return;
    };
    // The conditions are written after every pass (the first one too, when
    // nothing was left), then an empty namespace is finished.
    let _ = modify_without_admission(
        app,
        &ns_res,
        "",
        name,
        Some("status"),
        CONTROLLER_MANAGER,
        |obj| {
            let now = meta::now_rfc3339();
            let content = if remaining.is_empty() {
                condition(
                    "NamespaceContentRemaining",
                    "False",
                    "ContentRemoved",
                    "All content successfully removed",
                    &now,
                )
            } else {
                condition(
                    "NamespaceContentRemaining",
                    "True",
                    "SomeResourcesRemain",
                    &format!("Some resources are remaining: {}", remaining.join(", ")),
                    &now,
                )
            };
            let fin = if finalizers.is_empty() {
                condition(
                    "NamespaceFinalizersRemaining",
                    "False",
                    "ContentHasNoFinalizers",
                    "All content-preserving finalizers finished",
                    &now,
                )
            } else {
                let list = finalizers
                    .iter()
                    .map(|(f, c)| format!("{f} in {c} resource instances"))
                    .collect::<Vec<_>>()
                    .join(", ");
                condition(
                    "NamespaceFinalizersRemaining",
                    "True",
                    "SomeFinalizersRemain",
                    &format!("Some content in the namespace has finalizers remaining: {list}"),
                    &now,
                )
            };
            let wanted = vec![
                condition(
                    "NamespaceDeletionDiscoveryFailure",
                    "False",
                    "ResourcesDiscovered",
                    "All resources successfully discovered",
                    &now,
                ),
                condition(
                    "NamespaceDeletionGroupVersionParsingFailure",
                    "False",
                    "ParsedGroupVersions",
                    "All legacy kube types successfully parsed",
                    &now,
                ),
                condition(
                    "NamespaceDeletionContentFailure",
                    "False",
                    "ContentDeleted",
                    "All content successfully deleted, may be waiting on finalization",
                    &now,
                ),
                content,
                fin,
            ];
            // Keep transition times of conditions whose status did not change.
            let old: Vec<Value> = obj
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let same = |a: &Value, b: &Value, k: &str| a.get(k) == b.get(k);
            let merged: Vec<Value> = wanted
                .into_iter()
                .map(|mut c| {
                    if let Some(o) = old.iter().find(|o| same(o, &c, "type"))
                        && same(o, &c, "status")
                    {
                        c["lastTransitionTime"] = o["lastTransitionTime"].clone();
                    }
                    c
                })
                .collect();
            let unchanged = merged.len() == old.len()
                && merged.iter().zip(&old).all(|(a, b)| {
                    ["type", "status", "reason", "message"]
                        .iter()
                        .all(|k| same(a, b, k))
                });
            if unchanged {
                return false;
            }
            if !obj.get("status").is_some_and(Value::is_object) {
                obj["status"] = json!({});
            }
            obj["status"]["conditions"] = Value::Array(merged);
            true
        },
    );
    if remaining.is_empty() {
        finish(app, &ns_res, name);
    }
}

/// Content gone: the "kubernetes" finalizer goes. With no other finalizer
/// left kube-apiserver deletes the namespace instead of storing it, so a
/// watch sees it DELETED right after its last conditions; one still held by
/// metadata finalizers is stored finalized.
fn finish(app: &App, ns_res: &crate::registry::Resource, name: &str) {
    let ns_key: ResKey = Arc::from(NS_KEY);
    let Some(ns) = app.store.get(&ns_key, "", name) else {
        return;
    };
    if meta::finalizers(&ns).is_empty() {
        let _ = app
            .store
            .delete(&ns_key, "", name, &Preconditions::default());
        return;
    }
    let _ = modify_without_admission(
        app,
        ns_res,
        "",
        name,
        Some("finalize"),
        CONTROLLER_MANAGER,
        |obj| {
            let has = obj
                .pointer("/spec/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|f| !f.is_empty());
            if has {
                obj["spec"]["finalizers"] = json!([]);
            }
            has
        },
    );
}
