//! kube-controller-manager's persistentvolumeclaim-protection and
//! persistentvolume-protection controllers: the finalizers the
//! StorageObjectInUseProtection admission plugin adds
//! (`api/storage_protection_admission.rs`) are added where missing, and removed once
//! a deleted claim is used by no scheduled Pod that is still running, and a
//! deleted volume is no longer `Bound`.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Value, json};

use super::{CONTROLLER_MANAGER, modify_without_admission, resource_for};
use crate::api::storage_protection_admission::{PV_FINALIZER, PVC_FINALIZER};
use crate::app::App;
use crate::controller_selection::Controller;
use crate::meta;
use crate::store::{Event, EventType, ResKey};

const CLAIMS: &str = "persistentvolumeclaims";
const VOLUMES: &str = "persistentvolumes";
const PODS: &str = "pods";

/// Claims and volumes to look at after a batch of changes.
#[derive(Default)]
pub(super) struct Work {
    claims: BTreeSet<(String, String)>,
    volumes: BTreeSet<String>,
}

impl Work {
    pub(super) fn on_event(&mut self, app: &App, ev: &Event) {
        let on = |c: Controller| app.controllers.is_on(c);
        let deleted = ev.kind == EventType::Deleted;
        match &*ev.resource {
            CLAIMS if !deleted && on(Controller::PersistentVolumeClaimProtection) => {
                self.claims.insert((ev.namespace.clone(), ev.name.clone()));
            }
            VOLUMES if !deleted && on(Controller::PersistentVolumeProtection) => {
                self.volumes.insert(ev.name.clone());
            }
            // A Pod that goes or finishes may free the claims it mounts.
            PODS if on(Controller::PersistentVolumeClaimProtection)
                && (deleted || is_terminal(&ev.object)) =>
            {
                for claim in claims_of(&ev.object) {
                    self.claims.insert((ev.namespace.clone(), claim));
                }
            }
            _ => {}
        }
    }

    pub(super) fn flush(&mut self, app: &App) {
        for (ns, name) in std::mem::take(&mut self.claims) {
            sync_claim(app, &ns, &name);
        }
        for name in std::mem::take(&mut self.volumes) {
            sync_volume(app, &name);
        }
    }
}

fn is_terminal(pod: &Value) -> bool {
    matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    )
}

fn claims_of(pod: &Value) -> Vec<String> {
    pod.pointer("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            v.pointer("/persistentVolumeClaim/claimName")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect()
}

/// Whether a scheduled Pod that has not finished mounts the claim (a Pod
/// not scheduled yet cannot start with a claim being deleted).
fn claim_in_use(app: &App, ns: &str, claim: &str) -> bool {
    let key: ResKey = Arc::from(PODS);
    app.store
        .list(&key, Some(ns), None)
        .0
        .iter()
        .any(|(_, pod)| {
            let scheduled = pod
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty());
            scheduled && !is_terminal(pod) && claims_of(pod).iter().any(|c| c == claim)
        })
}

fn sync_claim(app: &App, ns: &str, name: &str) {
    let key: ResKey = Arc::from(CLAIMS);
    let Some(claim) = app.store.get(&key, ns, name) else {
        return;
    };
    let deleting = meta::is_deleting(&claim);
    let has = meta::finalizers(&claim).iter().any(|f| f == PVC_FINALIZER);
    if deleting && has && !claim_in_use(app, ns, name) {
        set_finalizer(app, CLAIMS, ns, name, PVC_FINALIZER, false);
    } else if !deleting && !has {
        set_finalizer(app, CLAIMS, ns, name, PVC_FINALIZER, true);
    }
}

fn sync_volume(app: &App, name: &str) {
    let key: ResKey = Arc::from(VOLUMES);
    let Some(volume) = app.store.get(&key, "", name) else {
        return;
    };
    let deleting = meta::is_deleting(&volume);
    let has = meta::finalizers(&volume).iter().any(|f| f == PV_FINALIZER);
    let bound = volume.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
    if deleting && has && !bound {
        set_finalizer(app, VOLUMES, "", name, PV_FINALIZER, false);
    } else if !deleting && !has {
        set_finalizer(app, VOLUMES, "", name, PV_FINALIZER, true);
    }
}

/// Adds or removes `finalizer` as `kube-controller-manager` (a claim or
/// volume gone meanwhile is no error; a refused write waits for the next change).
fn set_finalizer(app: &App, key: &str, ns: &str, name: &str, finalizer: &str, add: bool) {
    let Some(res) = resource_for(app, key) else {
        return;
    };
    let _ = modify_without_admission(app, &res, ns, name, None, CONTROLLER_MANAGER, |obj| {
        let mut list: Vec<Value> = meta::finalizers(obj).into_iter().map(Value::from).collect();
        let had = list.iter().any(|f| f.as_str() == Some(finalizer));
        if add == had || (add && meta::is_deleting(obj)) {
            return false;
        }
        if add {
            list.push(json!(finalizer));
        } else {
            list.retain(|f| f.as_str() != Some(finalizer));
        }
        if list.is_empty() {
            meta::remove_meta(obj, "finalizers");
        } else {
            meta::set_meta(obj, "finalizers", Value::Array(list));
        }
        true
    });
}
