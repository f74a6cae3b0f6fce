//! The garbage collector: deletes dependents whose owners (matched by uid)
//! are gone, carries out Foreground and Orphan deletion, and drops dangling
//! owner references when other owners remain. It keeps an index of owners and
//! dependents updated from the change stream, so it reacts at once.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::{CONTROLLER_MANAGER, modify, resource_for};
use crate::api::App;
use crate::api::delete::{FOREGROUND, ORPHAN, delete_internal};
use crate::http::query::{DeleteOptions, Propagation};
use crate::meta;
use crate::store::{Event, EventType, ResKey};

/// (storage key, namespace, name) of an object.
type ObjRef = (ResKey, String, String);

#[derive(Default)]
pub struct GarbageCollector {
    /// uid → the object with that uid (and whether it is namespaced).
    objects: HashMap<String, (ObjRef, bool)>,
    /// owner uid → dependents naming it.
    dependents: HashMap<String, HashSet<ObjRef>>,
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
    pub fn observe(&mut self, ev: &Event) {
        let me: ObjRef = (ev.resource.clone(), ev.namespace.clone(), ev.name.clone());
        let uid = meta::uid(&ev.object).to_string();
        self.objects
            .insert(uid, (me.clone(), !ev.namespace.is_empty()));
        for o in owner_uids(&ev.object) {
            self.dependents.entry(o).or_default().insert(me.clone());
        }
    }

    pub fn on_event(&mut self, app: &App, ev: &Event) {
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
                self.objects.insert(uid.clone(), (me.clone(), namespaced));
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

    /// Whether the owner `uid` exists for a dependent in namespace `ns`.
    fn owner_present(&self, app: &App, uid: &str, ns: &str) -> Option<std::sync::Arc<Value>> {
        let ((key, owner_ns, name), namespaced) = self.objects.get(uid)?;
        // A namespaced owner must live in the dependent's namespace.
        if *namespaced && owner_ns != ns {
            return None;
        }
        app.store
            .get(key, owner_ns, name)
            .filter(|o| meta::uid(o) == uid)
    }

    /// Decides the fate of a dependent from the state of its owners.
    fn collect(&self, app: &App, dep: &ObjRef) {
        let (key, ns, name) = dep;
        let Some(obj) = app.store.get(key, ns, name) else {
            return;
        };
        if meta::is_deleting(&obj) {
            return;
        }
        let refs = owner_uids(&obj);
        if refs.is_empty() {
            return;
        }
        let mut absent = Vec::new();
        let mut waiting = 0;
        for r in &refs {
            match self.owner_present(app, r, ns) {
                None => absent.push(r.clone()),
                Some(owner) => {
                    if meta::is_deleting(&owner)
                        && meta::finalizers(&owner).iter().any(|f| f == FOREGROUND)
                    {
                        waiting += 1;
                    }
                }
            }
        }
        let Some(res) = resource_for(app, key) else {
            return;
        };
        if absent.len() == refs.len() || (waiting > 0 && absent.len() + waiting == refs.len()) {
            let own = meta::finalizers(&obj);
            let propagation = if waiting > 0 || own.iter().any(|f| f == FOREGROUND) {
                Propagation::Foreground
            } else if own.iter().any(|f| f == ORPHAN) {
                Propagation::Orphan
            } else {
                Propagation::Background
            };
            let opts = DeleteOptions {
                propagation: Some(propagation),
                ..DeleteOptions::default()
            };
            let _ = delete_internal(app, &res, ns, name, &opts);
        } else if !absent.is_empty() {
            let _ = modify(app, &res, ns, name, None, CONTROLLER_MANAGER, |o| {
                drop_owner_refs(o, &absent)
            });
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
                    let _ = modify(app, &dres, dns, dname, None, CONTROLLER_MANAGER, |o| {
                        drop_owner_refs(o, &uid_s)
                    });
                }
            }
            let _ = modify(app, &owner_res, ns, name, None, CONTROLLER_MANAGER, |o| {
                remove_finalizer(o, ORPHAN)
            });
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
                let _ = modify(app, &owner_res, ns, name, None, CONTROLLER_MANAGER, |o| {
                    remove_finalizer(o, FOREGROUND)
                });
            }
        }
    }
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
