//! The disruption controller of kube-controller-manager: keeps each
//! PodDisruptionBudget's status true to the Pods it selects, so that
//! evictions (`api::eviction`) honour it. `expectedPods` and
//! `desiredHealthy` come from an integer `minAvailable` and the number of
//! Pods, or from the replicas of the Pods' controllers (Deployment through
//! its ReplicaSet, ReplicaSet, StatefulSet, ReplicationController, or any
//! kind with a `/scale` subresource) for a percentage or `maxUnavailable`;
//! `currentHealthy` counts Ready Pods not being deleted nor recently evicted.
//! A budget it cannot compute gets `disruptionsAllowed: 0` and a
//! `SyncFailed` condition. Of its events, it records `NoPods` (once per
//! budget while it selects nothing).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::{CONTROLLER_MANAGER, modify_without_admission, resource_for};
use crate::api::eviction::{
    PDB_KEY, expected_condition, int_at, is_ready, set_allowed_condition, set_condition,
};
use crate::app::App;
use crate::meta;
use crate::selectors::LabelSelector;
use crate::store::{Event, ResKey};

/// How long an evicted Pod may take to go before it counts again.
const DELETION_TIMEOUT_SECONDS: i64 = 120;

/// The namespace whose budgets a change may affect.
pub(crate) fn namespace_to_sync(ev: &Event) -> Option<&str> {
    let watched = matches!(
        &*ev.resource,
        "pods"
            | "replicationcontrollers"
            | "apps/deployments"
            | "apps/replicasets"
            | "apps/statefulsets"
            | PDB_KEY
    );
    (watched && !ev.namespace.is_empty()).then_some(ev.namespace.as_str())
}

/// The event source of the disruption controller's recorder.
const COMPONENT: &str = "controllermanager";

/// Brings every budget of `ns` up to date. `told_no_pods` holds the uids of
/// budgets told already that they select no Pod.
pub(crate) fn sync_namespace(app: &App, ns: &str, told_no_pods: &mut HashSet<String>) {
    let key: ResKey = Arc::from(PDB_KEY);
    let (budgets, _) = app.store.list(&key, Some(ns), None);
    for (_, pdb) in budgets {
        sync(app, &pdb, told_no_pods);
    }
}

fn sync(app: &App, pdb: &Value, told_no_pods: &mut HashSet<String>) {
    let ns = meta::namespace(pdb);
    let pods = match selected_pods(app, pdb) {
        Ok(pods) => pods,
        Err(e) => return fail_safe(app, pdb, &e),
    };
    // `trySync` tells a budget that selects nothing so at every sync (the
    // recorder then only raises the Event's count): once here.
    let uid = meta::uid(pdb).to_string();
    if !pods.is_empty() {
        told_no_pods.remove(&uid);
    } else if told_no_pods.insert(uid) {
        let involved = super::event_recorder::reference(pdb);
        super::event_recorder::record(
            app,
            COMPONENT,
            involved,
            "Normal",
            "NoPods",
            "No matching pods found",
        );
    }
    let (expected, desired) = match expected_and_desired(app, pdb, &pods) {
        Ok(counts) => counts,
        Err(e) => return fail_safe(app, pdb, &e),
    };
    let now = jiff::Timestamp::now();
    let disrupted = still_disrupted(pdb, &pods, now);
    let current = pods
        .iter()
        .filter(|p| !meta::is_deleting(p) && !disrupted.contains_key(meta::name(p)) && is_ready(p))
        .count() as i64;
    let mut allowed = current - desired;
    if expected <= 0 || allowed <= 0 {
        allowed = 0;
    }
    let generation = meta::generation(pdb);
    let status = pdb.get("status").cloned().unwrap_or(json!({}));
    let stored_disrupted = status
        .get("disruptedPods")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let up_to_date = int_at(&status, &["currentHealthy"]) == current
        && int_at(&status, &["desiredHealthy"]) == desired
        && int_at(&status, &["expectedPods"]) == expected
        && int_at(&status, &["disruptionsAllowed"]) == allowed
        && stored_disrupted == disrupted
        && int_at(&status, &["observedGeneration"]) == generation
        && conditions_up_to_date(pdb);
    if up_to_date {
        return;
    }
    write_status(app, ns, meta::name(pdb), move |obj| {
        let conditions = obj
            .pointer("/status/conditions")
            .cloned()
            .unwrap_or(json!([]));
        let mut status = json!({
            "currentHealthy": current,
            "desiredHealthy": desired,
            "expectedPods": expected,
            "disruptionsAllowed": allowed,
            "observedGeneration": generation,
            "conditions": conditions,
        });
        if !disrupted.is_empty() {
            status["disruptedPods"] = Value::Object(disrupted.clone());
        }
        obj["status"] = status;
        set_allowed_condition(obj);
    });
}

/// The Pods of the budget's namespace its selector matches (none without a
/// selector).
fn selected_pods(app: &App, pdb: &Value) -> Result<Vec<Arc<Value>>, String> {
    let Some(selector) = pdb.pointer("/spec/selector").filter(|s| !s.is_null()) else {
        return Ok(Vec::new());
    };
    let selector = LabelSelector::from_object(Some(selector))?;
    let key: ResKey = Arc::from("pods");
    let (pods, _) = app.store.list(&key, Some(meta::namespace(pdb)), None);
    Ok(pods
        .into_iter()
        .map(|(_, pod)| pod)
        .filter(|pod| selector.matches_object(pod))
        .collect())
}

/// `getExpectedPodCount`: (expectedPods, desiredHealthy).
fn expected_and_desired(app: &App, pdb: &Value, pods: &[Arc<Value>]) -> Result<(i64, i64), String> {
    if let Some(max_unavailable) = pdb.pointer("/spec/maxUnavailable").filter(|v| !v.is_null()) {
        let expected = expected_scale(app, pods)?;
        let unavailable = scaled(max_unavailable, expected)?;
        return Ok((expected, (expected - unavailable).max(0)));
    }
    match pdb.pointer("/spec/minAvailable") {
        Some(Value::Number(n)) => Ok((pods.len() as i64, n.as_i64().unwrap_or(0))),
        Some(percent @ Value::String(_)) => {
            let expected = expected_scale(app, pods)?;
            Ok((expected, scaled(percent, expected)?))
        }
        _ => Ok((0, 0)),
    }
}

/// `GetScaledValueFromIntOrPercent` rounding up.
fn scaled(value: &Value, total: i64) -> Result<i64, String> {
    match value {
        Value::Number(n) => Ok(n.as_i64().unwrap_or(0)),
        Value::String(s) => {
            let percent = s
                .strip_suffix('%')
                .and_then(|p| p.parse::<i64>().ok())
                .ok_or_else(|| format!("invalid value for IntOrString: invalid value {s:?}"))?;
            Ok((percent * total + 99) / 100)
        }
        _ => Ok(0),
    }
}

/// The sum of the replicas of the controllers of `pods` (each counted once).
fn expected_scale(app: &App, pods: &[Arc<Value>]) -> Result<i64, String> {
    let mut scales: BTreeMap<String, i64> = BTreeMap::new();
    for pod in pods {
        let Some(owner) = meta::owner_references(pod)
            .into_iter()
            .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        else {
            // Unmanaged Pods count for nothing (the real controller warns).
            continue;
        };
        let uid = owner.get("uid").and_then(Value::as_str).unwrap_or("");
        if scales.contains_key(uid) {
            continue;
        }
        match controller_scale(app, owner, meta::namespace(pod))? {
            Some((uid, replicas)) => {
                scales.insert(uid, replicas);
            }
            None => {
                return Err(format!(
                    "found no controllers for pod {:?}",
                    meta::name(pod)
                ));
            }
        }
    }
    Ok(scales.values().sum())
}

/// The controller a controller reference names and its replicas, looked up
/// as the real controller's finders do (a ReplicaSet owned by a Deployment
/// stands for the Deployment).
fn controller_scale(
    app: &App,
    owner: &Map<String, Value>,
    ns: &str,
) -> Result<Option<(String, i64)>, String> {
    let field = |r: &Map<String, Value>, key: &str| -> String {
        r.get(key).and_then(Value::as_str).unwrap_or("").to_string()
    };
    let api_version = field(owner, "apiVersion");
    let (group, version) = meta::split_api_version(&api_version);
    let kind = field(owner, "kind");
    let lookup = |key: &str, name: &str, uid: &str| -> Option<Arc<Value>> {
        let key: ResKey = Arc::from(key);
        app.store
            .get(&key, ns, name)
            .filter(|o| meta::uid(o) == uid)
    };
    let replicas = |obj: &Value| int_at(obj, &["spec", "replicas"]);
    let (name, uid) = (field(owner, "name"), field(owner, "uid"));
    let apps = matches!(group, "apps" | "extensions");
    match kind.as_str() {
        "ReplicationController" if group.is_empty() => {
            return Ok(lookup("replicationcontrollers", &name, &uid)
                .map(|rc| (uid.clone(), replicas(&rc))));
        }
        "ReplicaSet" if apps => {
            let Some(rs) = lookup("apps/replicasets", &name, &uid) else {
                return Ok(None);
            };
            let deployment = meta::owner_references(&rs).into_iter().find(|r| {
                r.get("controller").and_then(Value::as_bool) == Some(true)
                    && field(r, "kind") == "Deployment"
            });
            return Ok(match deployment {
                Some(d) => lookup("apps/deployments", &field(d, "name"), &field(d, "uid"))
                    .map(|d| (meta::uid(&d).to_string(), replicas(&d))),
                None => Some((uid.clone(), replicas(&rs))),
            });
        }
        "StatefulSet" if group == "apps" => {
            return Ok(
                lookup("apps/statefulsets", &name, &uid).map(|ss| (uid.clone(), replicas(&ss)))
            );
        }
        _ => {}
    }
    // Any other kind, through its /scale subresource.
    let Some(res) = app.registry.load().by_kind(group, version, &kind) else {
        return Err(format!("no matches for kind {kind:?} in group {group:?}"));
    };
    let Some(obj) = app.store.get(&res.store_key, ns, &name) else {
        return Ok(None);
    };
    let obj = res.from_storage(&obj);
    let scale = crate::api::scale::to_scale(&res, &obj).map_err(|_| {
        let qualified = if res.group.is_empty() {
            res.plural.clone()
        } else {
            format!("{}.{}", res.plural, res.group)
        };
        format!("{qualified} does not implement the scale subresource")
    })?;
    if meta::uid(&obj) != uid {
        return Ok(None);
    }
    Ok(Some((uid, int_at(&scale, &["spec", "replicas"]))))
}

/// The budget's `disruptedPods` entries for Pods that still exist, are not
/// being deleted and were evicted less than two minutes ago.
fn still_disrupted(pdb: &Value, pods: &[Arc<Value>], now: jiff::Timestamp) -> Map<String, Value> {
    let recorded = pdb
        .pointer("/status/disruptedPods")
        .and_then(Value::as_object);
    let mut out = Map::new();
    let Some(recorded) = recorded else {
        return out;
    };
    for pod in pods {
        if meta::is_deleting(pod) {
            continue;
        }
        let Some(at) = recorded.get(meta::name(pod)) else {
            continue;
        };
        let fresh = at
            .as_str()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .is_some_and(|t| now.duration_since(t).as_secs() < DELETION_TIMEOUT_SECONDS);
        if fresh {
            out.insert(meta::name(pod).to_string(), at.clone());
        }
    }
    out
}

/// `ConditionsAreUpToDate`.
fn conditions_up_to_date(pdb: &Value) -> bool {
    let Some(condition) = allowed_condition(pdb) else {
        return false;
    };
    if int_at(pdb, &["status", "observedGeneration"]) != meta::generation(pdb) {
        return false;
    }
    let (status, reason) = expected_condition(pdb);
    condition["status"] == status && condition["reason"] == reason
}

fn allowed_condition(pdb: &Value) -> Option<&Value> {
    meta::get_path(pdb, &["status", "conditions"])
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c["type"] == "DisruptionAllowed")
}

/// `failSafe`: no disruptions allowed, and why.
fn fail_safe(app: &App, pdb: &Value, error: &str) {
    let error = error.to_string();
    write_status(app, meta::namespace(pdb), meta::name(pdb), move |obj| {
        meta::set_path(obj, &["status", "disruptionsAllowed"], json!(0));
        set_condition(obj, "False", "SyncFailed", &error);
    });
}

fn write_status(app: &App, ns: &str, name: &str, edit: impl Fn(&mut Value)) {
    let Some(res) = resource_for(app, PDB_KEY) else {
        return;
    };
    let _ = modify_without_admission(
        app,
        &res,
        ns,
        name,
        Some("status"),
        CONTROLLER_MANAGER,
        |obj| {
            let before = obj.clone();
            edit(obj);
            *obj != before
        },
    );
}
