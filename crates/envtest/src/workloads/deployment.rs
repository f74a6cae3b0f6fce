//! The Deployment controller: one ReplicaSet per Pod template (named
//! `<deployment>-<pod-template-hash>`, revision in
//! `deployment.kubernetes.io/revision`), rolled over by the RollingUpdate
//! (maxSurge / maxUnavailable) or Recreate strategy, old ReplicaSets kept
//! up to `revisionHistoryLimit`, and the status and conditions
//! (`Available`, `Progressing`) that `kubectl rollout status` reads.
//!
//! The pod-template-hash is computed from the template's JSON, not from
//! the Go structure kube-controller-manager hashes, so its value differs
//! from a real cluster's for the same template (its form is the same).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::client::{self, CONTROLLER_MANAGER, ConditionStyle, DEPLOYMENTS, REPLICASETS};
use super::{owned_pods, ownership, template_hash};
use crate::app::App;
use crate::error::ApiResult;
use crate::meta;

pub(crate) const HASH_LABEL: &str = "pod-template-hash";
pub(crate) const REVISION: &str = "deployment.kubernetes.io/revision";
const DESIRED: &str = "deployment.kubernetes.io/desired-replicas";
const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";

fn replicas(obj: &Value) -> i64 {
    client::int_at(obj, &["spec", "replicas"]).unwrap_or(1)
}

fn status_count(obj: &Value, field: &str) -> i64 {
    client::int_at(obj, &["status", field]).unwrap_or(0)
}

fn revision(rs: &Value) -> i64 {
    meta::metadata(rs)
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(REVISION))
        .and_then(Value::as_str)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

/// The template without the hash label (what a ReplicaSet was made from).
fn unhashed_template(rs: &Value) -> Value {
    let mut t = meta::get_path(rs, &["spec", "template"])
        .cloned()
        .unwrap_or_default();
    if let Some(labels) = t
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.remove(HASH_LABEL);
    }
    t
}

/// An int-or-percent of `total` (percentages rounded up for surge, down for unavailable).
fn resolve(value: Option<&Value>, total: i64, default: &str, round_up: bool) -> i64 {
    let text = match value {
        Some(Value::Number(n)) => return n.as_i64().unwrap_or(0),
        Some(Value::String(s)) => s.clone(),
        _ => default.to_string(),
    };
    match text.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) {
        Some(p) if round_up => (p * total + 99) / 100,
        Some(p) => p * total / 100,
        None => text.parse().unwrap_or(0),
    }
}

/// maxSurge and maxUnavailable as numbers (both 0 means one may be unavailable).
fn surge_and_unavailable(d: &Value) -> (i64, i64) {
    if client::str_at(d, &["spec", "strategy", "type"]) == "Recreate" {
        return (0, replicas(d));
    }
    let ru = meta::get_path(d, &["spec", "strategy", "rollingUpdate"]);
    let total = replicas(d);
    let surge = resolve(ru.and_then(|r| r.get("maxSurge")), total, "25%", true);
    let mut unavailable = resolve(
        ru.and_then(|r| r.get("maxUnavailable")),
        total,
        "25%",
        false,
    );
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    (surge, unavailable.min(total))
}

struct Sets {
    new: Option<Arc<Value>>,
    /// Oldest first.
    old: Vec<Arc<Value>>,
}

fn replica_sets(app: &App, d: &Value) -> Sets {
    let template = meta::get_path(d, &["spec", "template"])
        .cloned()
        .unwrap_or_default();
    let mut new = None;
    let mut old = Vec::new();
    for rs in client::list(app, REPLICASETS, Some(meta::namespace(d))) {
        if client::controller_uid(&rs, "Deployment") != Some(meta::uid(d)) {
            continue;
        }
        if new.is_none() && unhashed_template(&rs) == template {
            new = Some(rs);
        } else {
            old.push(rs);
        }
    }
    old.sort_by(|a, b| {
        meta::meta_str(a, "creationTimestamp")
            .cmp(meta::meta_str(b, "creationTimestamp"))
            .then_with(|| meta::name(a).cmp(meta::name(b)))
    });
    Sets { new, old }
}

pub(crate) async fn reconcile(app: &App, ns: &str, name: &str) -> ApiResult<Option<Duration>> {
    let Some(d) = client::get(app, DEPLOYMENTS, ns, name) else {
        return Ok(None);
    };
    if meta::is_deleting(&d) {
        return Ok(None);
    }
    let paused = meta::get_path(&d, &["spec", "paused"]).and_then(Value::as_bool) == Some(true);
    // Orphan ReplicaSets it selects are adopted, its own it no longer selects released.
    let claim = ownership::Claim {
        key: REPLICASETS,
        selector: ownership::selector_of(&d),
        finalizers: &[],
    };
    let candidates = client::list(app, REPLICASETS, Some(ns));
    ownership::claim(app, &d, &claim, candidates, |_| true).await?;
    let mut sets = replica_sets(app, &d);
    let max_old_revision = sets.old.iter().map(|rs| revision(rs)).max().unwrap_or(0);
    let mut created = false;
    if !paused {
        match &sets.new {
            None => {
                sets.new = Some(create_new(app, &d, &sets, max_old_revision).await?);
                created = true;
            }
            Some(rs) if revision(rs) <= max_old_revision => {
                // A rollback to an older template makes its ReplicaSet the newest revision.
                let next = (max_old_revision + 1).to_string();
                client::modify_with_admission(
                    app,
                    REPLICASETS,
                    ns,
                    meta::name(rs),
                    None,
                    CONTROLLER_MANAGER,
                    |obj| {
                        meta::set_path(obj, &["metadata", "annotations", REVISION], json!(next));
                        true
                    },
                )
                .await?;
            }
            Some(_) => {}
        }
        if let Some(new) = sets.new.clone() {
            if client::str_at(&d, &["spec", "strategy", "type"]) == "Recreate" {
                recreate(app, &d, &new, &sets.old).await?;
            } else {
                roll(app, &d, &new, &sets.old).await?;
            }
        }
        cleanup(app, &d, &sets.old)?;
    }
    // Status from the ReplicaSets as they are now.
    let sets = replica_sets(app, &d);
    write_status(app, &d, &sets, created, paused).await
}

async fn create_new(
    app: &App,
    d: &Value,
    sets: &Sets,
    max_old_revision: i64,
) -> ApiResult<Arc<Value>> {
    let collision_count = client::int_at(d, &["status", "collisionCount"]);
    let collisions = collision_count.unwrap_or(0);
    let template = meta::get_path(d, &["spec", "template"])
        .cloned()
        .unwrap_or_default();
    // kube-controller-manager's hash where the template prints as Go's
    // struct would; otherwise one of the same form.
    let hash = template_hash::pod_template_hash(&template, collision_count)
        .unwrap_or_else(|| template_hash::json_template_hash(&template, collisions));
    let name = format!("{}-{hash}", meta::name(d));
    let mut rs_template = template.clone();
    meta::set_path(
        &mut rs_template,
        &["metadata", "labels", HASH_LABEL],
        json!(hash),
    );
    let mut selector = meta::get_path(d, &["spec", "selector"])
        .cloned()
        .unwrap_or_else(|| json!({}));
    meta::set_path(&mut selector, &["matchLabels", HASH_LABEL], json!(hash));
    let mut labels = template
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    labels.insert(HASH_LABEL.into(), json!(hash));
    let (surge, _) = surge_and_unavailable(d);
    let want = replicas(d);
    // The first ReplicaSet starts at full size; a rollout's new one at what the surge allows.
    let total: i64 = sets.old.iter().map(|rs| replicas(rs)).sum();
    let initial = if sets.old.is_empty()
        || client::str_at(d, &["spec", "strategy", "type"]) == "Recreate" && total == 0
    {
        want
    } else if client::str_at(d, &["spec", "strategy", "type"]) == "Recreate" {
        0
    } else {
        (want + surge - total).clamp(0, want)
    };
    let mut annotations: Map<String, Value> = meta::metadata(d)
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
    annotations.remove(REVISION);
    annotations.insert(REVISION.into(), json!((max_old_revision + 1).to_string()));
    annotations.insert(DESIRED.into(), json!(want.to_string()));
    annotations.insert(MAX_REPLICAS.into(), json!((want + surge).to_string()));
    let mut spec = json!({
        "replicas": initial,
        "selector": selector,
        "template": rs_template,
    });
    if let Some(m) = client::int_at(d, &["spec", "minReadySeconds"]) {
        spec["minReadySeconds"] = json!(m);
    }
    let rs = json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [client::controller_ref(d)],
        },
        "spec": spec,
    });
    let created =
        client::create_object(app, REPLICASETS, meta::namespace(d), rs, CONTROLLER_MANAGER).await;
    match created {
        Ok(rs) => {
            scaled_event(app, d, &rs, 0, initial);
            Ok(rs)
        }
        Err(e) if e.code == 409 => {
            // A ReplicaSet of that name with another template: count the collision and try again.
            client::modify_with_admission(
                app,
                DEPLOYMENTS,
                meta::namespace(d),
                meta::name(d),
                Some("status"),
                CONTROLLER_MANAGER,
                |obj| {
                    meta::set_path(obj, &["status", "collisionCount"], json!(collisions + 1));
                    true
                },
            )
            .await?;
            Err(e)
        }
        Err(e) => Err(e),
    }
}

fn scaled_event(app: &App, d: &Value, rs: &Value, from: i64, to: i64) {
    if from == to {
        return;
    }
    let direction = if to > from { "up" } else { "down" };
    client::event(
        app,
        client::DEPLOYMENT_CONTROLLER,
        d,
        "Normal",
        "ScalingReplicaSet",
        &format!(
            "Scaled {direction} replica set {} from {from} to {to}",
            meta::name(rs)
        ),
    );
}

async fn scale(app: &App, d: &Value, rs: &Value, to: i64) -> ApiResult<()> {
    let from = replicas(rs);
    let (surge, _) = surge_and_unavailable(d);
    let desired = replicas(d).to_string();
    let max = (replicas(d) + surge).to_string();
    let annotated = |obj: &Value, key: &str, value: &str| {
        meta::get_path(obj, &["metadata", "annotations", key]).and_then(Value::as_str)
            == Some(value)
    };
    if from == to && annotated(rs, DESIRED, &desired) && annotated(rs, MAX_REPLICAS, &max) {
        return Ok(());
    }
    client::modify_with_admission(
        app,
        REPLICASETS,
        meta::namespace(rs),
        meta::name(rs),
        None,
        CONTROLLER_MANAGER,
        |obj| {
            obj["spec"]["replicas"] = json!(to);
            meta::set_path(obj, &["metadata", "annotations", DESIRED], json!(desired));
            meta::set_path(obj, &["metadata", "annotations", MAX_REPLICAS], json!(max));
            true
        },
    )
    .await?;
    scaled_event(app, d, rs, from, to);
    Ok(())
}

/// Recreate: old Pods all gone before the new ReplicaSet scales up.
async fn recreate(app: &App, d: &Value, new: &Value, old: &[Arc<Value>]) -> ApiResult<()> {
    let mut old_running = false;
    for rs in old {
        if replicas(rs) > 0 {
            scale(app, d, rs, 0).await?;
        }
        old_running |= !owned_pods::owned(app, meta::namespace(rs), meta::uid(rs)).is_empty();
    }
    if !old_running {
        scale(app, d, new, replicas(d)).await?;
    }
    Ok(())
}

/// RollingUpdate: scale the new ReplicaSet up within maxSurge, the old ones
/// down within maxUnavailable (their unhealthy Pods first), oldest first.
async fn roll(app: &App, d: &Value, new: &Value, old: &[Arc<Value>]) -> ApiResult<()> {
    let want = replicas(d);
    let (surge, unavailable) = surge_and_unavailable(d);
    let new_spec = replicas(new);
    let all_spec: i64 = old.iter().map(|rs| replicas(rs)).sum::<i64>() + new_spec;
    if new_spec > want {
        scale(app, d, new, want).await?;
        return Ok(());
    }
    if new_spec < want && all_spec < want + surge {
        let up = (want + surge - all_spec).min(want - new_spec);
        scale(app, d, new, new_spec + up).await?;
    } else {
        scale(app, d, new, new_spec).await?;
    }
    let old_spec: i64 = old.iter().map(|rs| replicas(rs)).sum();
    if old_spec == 0 {
        return Ok(());
    }
    let min_available = want - unavailable;
    let new_unavailable = new_spec - status_count(new, "availableReplicas");
    let mut budget = all_spec - min_available - new_unavailable;
    let mut remaining: Vec<i64> = old.iter().map(|rs| replicas(rs)).collect();
    // Unhealthy old Pods go first: they count for nothing.
    for (i, rs) in old.iter().enumerate() {
        if budget <= 0 {
            break;
        }
        let unhealthy = remaining[i] - status_count(rs, "availableReplicas");
        let cut = unhealthy.min(budget).max(0);
        remaining[i] -= cut;
        budget -= cut;
    }
    // Then healthy ones, as long as enough stay available.
    let available: i64 = old
        .iter()
        .map(|rs| status_count(rs, "availableReplicas"))
        .sum::<i64>()
        + status_count(new, "availableReplicas");
    let mut spare = available - min_available;
    for left in remaining.iter_mut() {
        if spare <= 0 {
            break;
        }
        let cut = (*left).min(spare);
        *left -= cut;
        spare -= cut;
    }
    for (rs, to) in old.iter().zip(remaining) {
        if to != replicas(rs) {
            scale(app, d, rs, to).await?;
        }
    }
    Ok(())
}

/// Old ReplicaSets scaled to zero beyond `revisionHistoryLimit` are deleted, oldest first.
fn cleanup(app: &App, d: &Value, old: &[Arc<Value>]) -> ApiResult<()> {
    let limit = client::int_at(d, &["spec", "revisionHistoryLimit"])
        .unwrap_or(10)
        .max(0) as usize;
    let mut idle: Vec<&Arc<Value>> = old
        .iter()
        .filter(|rs| {
            replicas(rs) == 0 && status_count(rs, "replicas") == 0 && !meta::is_deleting(rs)
        })
        .collect();
    if idle.len() <= limit {
        return Ok(());
    }
    idle.sort_by_key(|rs| revision(rs));
    let excess = idle.len() - limit;
    for rs in idle.into_iter().take(excess) {
        client::delete(
            app,
            REPLICASETS,
            meta::namespace(rs),
            meta::name(rs),
            meta::uid(rs),
        )?;
    }
    Ok(())
}

async fn write_status(
    app: &App,
    d: &Value,
    sets: &Sets,
    created: bool,
    paused: bool,
) -> ApiResult<Option<Duration>> {
    let all: Vec<&Arc<Value>> = sets.new.iter().chain(sets.old.iter()).collect();
    let sum = |f: &dyn Fn(&Value) -> i64| all.iter().map(|rs| f(rs)).sum::<i64>();
    let want = replicas(d);
    let total_spec = sum(&|rs| replicas(rs));
    let observed = sum(&|rs| status_count(rs, "replicas"));
    let updated = sets
        .new
        .as_ref()
        .map_or(0, |rs| status_count(rs, "replicas"));
    let ready = sum(&|rs| status_count(rs, "readyReplicas"));
    let available = sum(&|rs| status_count(rs, "availableReplicas"));
    let (_, max_unavailable) = surge_and_unavailable(d);
    let new_name = sets
        .new
        .as_ref()
        .map(|rs| meta::name(rs).to_string())
        .unwrap_or_default();
    let complete = updated == want
        && observed == want
        && available == want
        && sets.new.as_ref().is_some_and(|rs| replicas(rs) == want);
    let generation = meta::generation(d);
    let revision_of_new = sets.new.as_ref().map(|rs| revision(rs));

    let available_cond = if available >= want - max_unavailable {
        json!({"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."})
    } else {
        json!({"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "message": "Deployment does not have minimum availability."})
    };
    let deadline = client::int_at(d, &["spec", "progressDeadlineSeconds"]).unwrap_or(600);
    let progressing = client::condition(d, "Progressing").cloned();
    let timed_out = !complete
        && !paused
        && progressing.as_ref().is_some_and(|c| {
            client::str_at(c, &["reason"]) != "NewReplicaSetAvailable" && older_than(c, deadline)
        });
    let progress_cond = if paused {
        Some(
            json!({"type": "Progressing", "status": "Unknown", "reason": "DeploymentPaused", "message": "Deployment is paused"}),
        )
    } else if new_name.is_empty() {
        None
    } else if complete {
        Some(
            json!({"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
            "message": format!("ReplicaSet \"{new_name}\" has successfully progressed.")}),
        )
    } else if timed_out
        || progressing
            .as_ref()
            .is_some_and(|c| client::str_at(c, &["reason"]) == "ProgressDeadlineExceeded")
    {
        Some(
            json!({"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
            "message": format!("ReplicaSet \"{new_name}\" has timed out progressing.")}),
        )
    } else if created {
        Some(
            json!({"type": "Progressing", "status": "True", "reason": "NewReplicaSetCreated",
            "message": format!("Created new replica set \"{new_name}\"")}),
        )
    } else if progressing.is_none() {
        Some(
            json!({"type": "Progressing", "status": "True", "reason": "FoundNewReplicaSet",
            "message": format!("Found new replica set \"{new_name}\"")}),
        )
    } else if progressing
        .as_ref()
        .is_some_and(|c| client::str_at(c, &["reason"]) == "NewReplicaSetCreated")
        && observed == 0
    {
        None
    } else {
        Some(
            json!({"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated",
            "message": format!("ReplicaSet \"{new_name}\" is progressing.")}),
        )
    };

    let (ns, name) = (meta::namespace(d), meta::name(d));
    // The revision annotation goes with the status, through `/status` (as
    // kube-controller-manager writes it: no new generation).
    let rev = revision_of_new.filter(|r| *r > 0).map(|r| r.to_string());
    client::modify_with_admission(
        app,
        DEPLOYMENTS,
        ns,
        name,
        Some("status"),
        CONTROLLER_MANAGER,
        |obj| {
            let mut changed = false;
            if let Some(rev) = &rev
                && meta::get_path(obj, &["metadata", "annotations", REVISION])
                    .and_then(Value::as_str)
                    != Some(rev.as_str())
            {
                meta::set_path(obj, &["metadata", "annotations", REVISION], json!(rev));
                changed = true;
            }
            let mut status = obj
                .get("status")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let before = status.clone();
            status.insert("observedGeneration".into(), json!(generation));
            owned_pods::set_count(&mut status, "replicas", observed);
            owned_pods::set_count(&mut status, "updatedReplicas", updated);
            owned_pods::set_count(&mut status, "readyReplicas", ready);
            owned_pods::set_count(&mut status, "availableReplicas", available);
            owned_pods::set_count(
                &mut status,
                "unavailableReplicas",
                (total_spec - available).max(0),
            );
            let mut conditions = client::conditions(obj);
            client::set_condition(
                &mut conditions,
                available_cond.clone(),
                ConditionStyle::Deployment,
            );
            if let Some(p) = &progress_cond {
                client::set_condition(&mut conditions, p.clone(), ConditionStyle::Deployment);
            }
            status.insert("conditions".into(), json!(conditions));
            if status != before {
                obj["status"] = Value::Object(status);
                changed = true;
            }
            changed
        },
    )
    .await?;
    // Look again when the progress deadline would pass.
    Ok((!complete && !paused && !timed_out)
        .then(|| Duration::from_secs(deadline.max(0) as u64 + 1)))
}

/// Whether the condition's last update is more than `seconds` ago.
fn older_than(cond: &Value, seconds: i64) -> bool {
    let at = cond
        .get("lastUpdateTime")
        .or_else(|| cond.get("lastTransitionTime"))
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    at.is_some_and(|t| {
        jiff::Timestamp::now().duration_since(t) > jiff::SignedDuration::from_secs(seconds)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surge_rounds_up_and_unavailable_rounds_down() {
        let d = json!({"spec": {"replicas": 10, "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}}});
        assert_eq!(surge_and_unavailable(&d), (3, 2));
        let d = json!({"spec": {"replicas": 3, "strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}}});
        assert_eq!(surge_and_unavailable(&d), (0, 1));
        let d = json!({"spec": {"replicas": 4, "strategy": {"type": "Recreate"}}});
        assert_eq!(surge_and_unavailable(&d), (0, 4));
    }
}
