//! The garbage collector of kube-controller-manager: deletes dependents whose
//! owners are gone, carries out Foreground and Orphan deletion, and drops
//! dangling owner references when other owners remain. It keeps an index of
//! owners and dependents updated from the change stream, so it reacts at once.
//!
//! An owner reference is judged as the real collector judges it: its
//! apiVersion and kind must name a served resource (else the dependent is left
//! alone until they do), the owner is looked up by name (in the dependent's
//! namespace for a namespaced kind) and must carry the reference's uid. A
//! cluster-scoped dependent of a namespaced kind is never collected, and a
//! dependent whose namespaced owner lives in another namespace gets the
//! `OwnerRefInvalidNamespace` Warning event.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};

use super::{CONTROLLER_MANAGER, modify_without_admission, resource_for};
use crate::api::delete::{FOREGROUND, ORPHAN, delete_internal};
use crate::app::App;
use crate::meta;
use crate::request::query::{DeleteOptions, Propagation};
use crate::store::{Event, EventType, ResKey};

/// The event source of the garbage collector's events.
const GC_COMPONENT: &str = "garbage-collector-controller";

/// (storage key, namespace, name) of an object.
type ObjRef = (ResKey, String, String);

#[derive(Default)]
pub(super) struct GarbageCollector {
    /// uid → the object with that uid (and whether it is namespaced).
    objects: HashMap<String, (ObjRef, bool)>,
    /// owner uid → dependents naming it.
    dependents: HashMap<String, HashSet<ObjRef>>,
    /// Dependents with an owner reference to a kind no served resource has:
    /// judged again when the served resources change (a CRD comes).
    unresolved: HashSet<ObjRef>,
}

/// What an owner reference leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// The owner exists.
    Solid,
    /// No owner of that name, or one with another uid.
    Dangling,
    /// The owner is being deleted in the foreground.
    WaitingForDependents,
    /// No served resource has the reference's apiVersion and kind.
    Unresolvable,
    /// A cluster-scoped dependent naming a namespaced kind.
    InvalidScope,
}

fn owner_uids(obj: &Value) -> Vec<String> {
    meta::owner_references(obj)
        .iter()
        .filter_map(|r| r.get("uid").and_then(Value::as_str))
        .map(str::to_string)
        .collect()
}

fn blocks_owner(dependent: &Value, owner_uid: &str) -> bool {
    meta::owner_references(dependent).iter().any(|r| {
        r.get("uid").and_then(Value::as_str) == Some(owner_uid)
            && r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true)
    })
}

impl GarbageCollector {
    /// Records an existing object without acting on it (the start-up scan
    /// indexes everything before judging any owner reference).
    pub(super) fn observe(&mut self, ev: &Event) {
        let me: ObjRef = (ev.resource.clone(), ev.namespace.clone(), ev.name.clone());
        let uid = meta::uid(&ev.object).to_string();
        self.objects
            .insert(uid, (me.clone(), !ev.namespace.is_empty()));
        for o in owner_uids(&ev.object) {
            self.dependents.entry(o).or_default().insert(me.clone());
        }
    }

    pub(super) fn on_event(&mut self, app: &App, ev: &Event) {
        let me: ObjRef = (ev.resource.clone(), ev.namespace.clone(), ev.name.clone());
        let uid = meta::uid(&ev.object).to_string();
        if let Some(prev) = &ev.prev {
            for o in owner_uids(prev) {
                if let Some(set) = self.dependents.get_mut(&o) {
                    set.remove(&me);
                }
            }
        }
        match ev.kind {
            EventType::Deleted => {
                self.objects.remove(&uid);
                self.unresolved.remove(&me);
                // Owners in foreground deletion may be waiting for this one.
                let owners = owner_uids(&ev.object);
                self.dependents.retain(|_, set| !set.is_empty());
                for o in &owners {
                    self.recheck_owner(app, o);
                }
                // Dependents of this object lost an owner.
                let deps: Vec<ObjRef> = self
                    .dependents
                    .get(&uid)
                    .map(|s| s.iter().cloned().collect())
                    .unwrap_or_default();
                for d in deps {
                    self.collect(app, &d);
                }
            }
            EventType::Added | EventType::Modified => {
                let namespaced = !ev.namespace.is_empty();
                let first_seen = self
                    .objects
                    .insert(uid.clone(), (me.clone(), namespaced))
                    .is_none();
                if first_seen && namespaced {
                    self.report_dependents_elsewhere(app, &uid, &ev.namespace);
                }
                self.report_new_refs_elsewhere(app, ev);
                let owners = owner_uids(&ev.object);
                for o in &owners {
                    self.dependents
                        .entry(o.clone())
                        .or_default()
                        .insert(me.clone());
                }
                if !owners.is_empty() && !meta::is_deleting(&ev.object) {
                    self.collect(app, &me);
                }
                if meta::is_deleting(&ev.object) {
                    self.recheck_owner(app, &uid);
                }
            }
        }
    }

    /// Judges the dependents waiting for their owners' kinds to be served.
    pub(super) fn recheck_unresolved(&mut self, app: &App) {
        for dep in std::mem::take(&mut self.unresolved) {
            self.collect(app, &dep);
        }
    }

    /// `isDangling` of the real collector for one owner reference of a
    /// dependent in namespace `ns` (empty when cluster-scoped).
    fn classify(app: &App, reference: &Map<String, Value>, ns: &str) -> Owner {
        let field = |key: &str| reference.get(key).and_then(Value::as_str).unwrap_or("");
        let (group, version) = meta::split_api_version(field("apiVersion"));
        let Some(res) = app.registry.load().by_kind(group, version, field("kind")) else {
            return Owner::Unresolvable;
        };
        if res.namespaced && ns.is_empty() {
            return Owner::InvalidScope;
        }
        let owner_ns = if res.namespaced { ns } else { "" };
        match app.store.get(&res.store_key, owner_ns, field("name")) {
            Some(owner) if meta::uid(&owner) == field("uid") => {
                let foreground = meta::finalizers(&owner).iter().any(|f| f == FOREGROUND);
                if meta::is_deleting(&owner) && foreground {
                    Owner::WaitingForDependents
                } else {
                    Owner::Solid
                }
            }
            _ => Owner::Dangling,
        }
    }

    /// Decides the fate of a dependent from the state of its owners
    /// (`attemptToDeleteItem`).
    fn collect(&mut self, app: &App, dep: &ObjRef) {
        let (key, ns, name) = dep;
        let Some(obj) = app.store.get(key, ns, name) else {
            return;
        };
        if meta::is_deleting(&obj) {
            return;
        }
        let refs = meta::owner_references(&obj);
        if refs.is_empty() {
            return;
        }
        let judged: Vec<(String, Owner)> = refs
            .iter()
            .map(|r| {
                let uid = r.get("uid").and_then(Value::as_str).unwrap_or("");
                (uid.to_string(), Self::classify(app, r, ns))
            })
            .collect();
        // The real collector stops at a reference it cannot resolve and
        // tries again later; one it can never judge leaves the dependent be.
        if judged.iter().any(|(_, o)| *o == Owner::Unresolvable) {
            self.unresolved.insert(dep.clone());
            return;
        }
        self.unresolved.remove(dep);
        if judged.iter().any(|(_, o)| *o == Owner::InvalidScope) {
            return;
        }
        let Some(res) = resource_for(app, key) else {
            return;
        };
        let uids_of = |state: Owner| -> Vec<String> {
            judged
                .iter()
                .filter(|(_, o)| *o == state)
                .map(|(uid, _)| uid.clone())
                .collect()
        };
        let (dangling, waiting) = (
            uids_of(Owner::Dangling),
            uids_of(Owner::WaitingForDependents),
        );
        if judged.iter().any(|(_, o)| *o == Owner::Solid) {
            // Another owner holds it: only the references to owners gone or
            // waiting for their dependents go.
            let gone: Vec<String> = dangling.into_iter().chain(waiting).collect();
            if !gone.is_empty() {
                let _ =
                    modify_without_admission(app, &res, ns, name, None, CONTROLLER_MANAGER, |o| {
                        drop_owner_refs(o, &gone)
                    });
            }
            return;
        }
        let own = meta::finalizers(&obj);
        let has_dependents = self
            .dependents
            .get(meta::uid(&obj))
            .is_some_and(|deps| !deps.is_empty());
        let propagation = if !waiting.is_empty() && has_dependents {
            Propagation::Foreground
        } else if own.iter().any(|f| f == ORPHAN) {
            Propagation::Orphan
        } else if own.iter().any(|f| f == FOREGROUND) {
            Propagation::Foreground
        } else {
            Propagation::Background
        };
        let opts = DeleteOptions {
            propagation: Some(propagation),
            ..DeleteOptions::default()
        };
        let _ = delete_internal(app, &res, ns, name, &opts);
    }

    /// A namespaced object seen for the first time: dependents that named it
    /// from another namespace (or from the cluster scope) are told.
    fn report_dependents_elsewhere(&self, app: &App, uid: &str, owner_ns: &str) {
        let Some(deps) = self.dependents.get(uid) else {
            return;
        };
        for (key, ns, name) in deps {
            if ns != owner_ns
                && let Some(dep) = app.store.get(key, ns, name)
            {
                report_invalid_namespace(app, key, &dep, uid);
            }
        }
    }

    /// The first owner reference a change added that names a namespaced
    /// object of another namespace (`addDependentToOwners`) is reported.
    fn report_new_refs_elsewhere(&self, app: &App, ev: &Event) {
        let before = ev.prev.as_deref().map(owner_uids).unwrap_or_default();
        for uid in owner_uids(&ev.object) {
            if before.contains(&uid) {
                continue;
            }
            let Some(((_, owner_ns, _), namespaced)) = self.objects.get(&uid) else {
                continue;
            };
            if *namespaced && *owner_ns != ev.namespace {
                report_invalid_namespace(app, &ev.resource, &ev.object, &uid);
                return;
            }
        }
    }

    /// Progress of an owner being deleted with the orphan or foregroundDeletion finalizer.
    fn recheck_owner(&self, app: &App, uid: &str) {
        let Some(((key, ns, name), _)) = self.objects.get(uid) else {
            return;
        };
        let Some(owner) = app.store.get(key, ns, name) else {
            return;
        };
        if !meta::is_deleting(&owner) {
            return;
        }
        let finalizers = meta::finalizers(&owner);
        let deps: Vec<ObjRef> = self
            .dependents
            .get(uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        let Some(owner_res) = resource_for(app, key) else {
            return;
        };
        if finalizers.iter().any(|f| f == ORPHAN) {
            for (dkey, dns, dname) in &deps {
                if let Some(dres) = resource_for(app, dkey) {
                    let uid_s = vec![uid.to_string()];
                    let _ = modify_without_admission(
                        app,
                        &dres,
                        dns,
                        dname,
                        None,
                        CONTROLLER_MANAGER,
                        |o| drop_owner_refs(o, &uid_s),
                    );
                }
            }
            let _ = modify_without_admission(
                app,
                &owner_res,
                ns,
                name,
                None,
                CONTROLLER_MANAGER,
                |o| remove_finalizer(o, ORPHAN),
            );
            return;
        }
        if finalizers.iter().any(|f| f == FOREGROUND) {
            let mut blocking = 0;
            for (dkey, dns, dname) in &deps {
                let Some(dep) = app.store.get(dkey, dns, dname) else {
                    continue;
                };
                if blocks_owner(&dep, uid) {
                    blocking += 1;
                }
                if !meta::is_deleting(&dep)
                    && let Some(dres) = resource_for(app, dkey)
                {
                    let opts = DeleteOptions {
                        propagation: Some(Propagation::Foreground),
                        ..DeleteOptions::default()
                    };
                    let _ = delete_internal(app, &dres, dns, dname, &opts);
                }
            }
            if blocking == 0 {
                let _ = modify_without_admission(
                    app,
                    &owner_res,
                    ns,
                    name,
                    None,
                    CONTROLLER_MANAGER,
                    |o| remove_finalizer(o, FOREGROUND),
                );
            }
        }
    }
}

/// The `OwnerRefInvalidNamespace` Warning kube-controller-manager records
/// on `dependent` for its reference to `owner_uid`.
fn report_invalid_namespace(app: &App, key: &str, dependent: &Value, owner_uid: &str) {
    let Some(res) = resource_for(app, key) else {
        return;
    };
    let refs = meta::owner_references(dependent);
    let Some(reference) = refs
        .iter()
        .find(|r| r.get("uid").and_then(Value::as_str) == Some(owner_uid))
    else {
        return;
    };
    let field = |key: &str| reference.get(key).and_then(Value::as_str).unwrap_or("");
    let ns = meta::namespace(dependent);
    let message = format!(
        "ownerRef [{}/{}, namespace: {ns}, name: {}, uid: {owner_uid}] does not exist in namespace {ns:?}",
        field("apiVersion"),
        field("kind"),
        field("name"),
    );
    let mut involved = json!({
        "kind": res.kind,
        "name": meta::name(dependent),
        "uid": meta::uid(dependent),
        "apiVersion": res.api_version(),
    });
    if !ns.is_empty() {
        involved["namespace"] = json!(ns);
    }
    super::event_recorder::record_warning(
        app,
        GC_COMPONENT,
        involved,
        "OwnerRefInvalidNamespace",
        &message,
    );
}

fn drop_owner_refs(obj: &mut Value, uids: &[String]) -> bool {
    let Some(Value::Array(refs)) = meta::metadata_mut(obj).get_mut("ownerReferences") else {
        return false;
    };
    let before = refs.len();
    refs.retain(|r| {
        r.get("uid")
            .and_then(Value::as_str)
            .is_none_or(|u| !uids.iter().any(|x| x == u))
    });
    let changed = refs.len() != before;
    if refs.is_empty() {
        meta::remove_meta(obj, "ownerReferences");
    }
    changed
}

fn remove_finalizer(obj: &mut Value, name: &str) -> bool {
    let mut f = meta::finalizers(obj);
    let before = f.len();
    f.retain(|x| x != name);
    meta::set_finalizers(obj, &f);
    f.len() != before
}
