//! The StatefulSet controller: Pods `<set>-<ordinal>` with stable names,
//! hostnames (`subdomain` = `serviceName`) and claims
//! `<template>-<set>-<ordinal>` from `volumeClaimTemplates`. Under
//! `podManagementPolicy: OrderedReady` each Pod is created only once the one
//! before it is Running and Ready, and scaling down removes the highest
//! ordinal first, one at a time; `Parallel` creates and deletes at once.
//! Templates are recorded as ControllerRevisions; a `RollingUpdate`
//! replaces Pods from the highest ordinal down to `partition`, one at a
//! time, each once the others are Ready; `OnDelete` waits for the Pods to
//! be deleted. Status as kube-controller-manager reports it (`replicas`,
//! `readyReplicas`, `availableReplicas`, `currentReplicas`,
//! `updatedReplicas`, `currentRevision`, `updateRevision`,
//! `collisionCount`, `observedGeneration`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::client::{self, CONTROLLER_MANAGER, PERSISTENTVOLUMECLAIMS, PODS, STATEFULSETS};
use super::revisions;
use super::{owned_pods, ownership};
use crate::app::App;
use crate::error::ApiResult;
use crate::meta;

/// The label naming the revision a Pod was made from.
pub(crate) const REVISION_LABEL: &str = "controller-revision-hash";
const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

fn replicas(set: &Value) -> i64 {
    client::int_at(set, &["spec", "replicas"])
        .unwrap_or(1)
        .max(0)
}

fn start_ordinal(set: &Value) -> i64 {
    client::int_at(set, &["spec", "ordinals", "start"])
        .unwrap_or(0)
        .max(0)
}

/// The ordinal in a Pod's name, if the Pod is one of the set's.
fn ordinal(set: &Value, pod: &Value) -> Option<i64> {
    let prefix = format!("{}-", meta::name(set));
    meta::name(pod).strip_prefix(&prefix)?.parse().ok()
}

fn running_and_ready(pod: &Value) -> bool {
    owned_pods::phase(pod) == "Running" && owned_pods::is_ready(pod) && !meta::is_deleting(pod)
}

fn revision_of(pod: &Value) -> &str {
    client::str_at(pod, &["metadata", "labels", REVISION_LABEL])
}

fn claim_templates(set: &Value) -> Vec<Value> {
    meta::get_path(set, &["spec", "volumeClaimTemplates"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn claim_name(template: &Value, set: &Value, ordinal: i64) -> String {
    format!("{}-{}-{ordinal}", meta::name(template), meta::name(set))
}

pub(crate) async fn reconcile(app: &App, ns: &str, name: &str) -> ApiResult<Option<Duration>> {
    let Some(set) = client::get(app, STATEFULSETS, ns, name) else {
        return Ok(None);
    };
    if meta::is_deleting(&set) {
        return Ok(None);
    }
    let (update, history) = revisions::update_revision(app, &set).await?;
    let update_name = meta::name(&update).to_string();
    let current_name = match client::str_at(&set, &["status", "currentRevision"]) {
        "" => update_name.clone(),
        c if history.iter().any(|r| meta::name(r) == c) => c.to_string(),
        _ => update_name.clone(),
    };
    let current = history
        .iter()
        .find(|r| meta::name(r) == current_name)
        .cloned()
        .unwrap_or_else(|| update.clone());

    // Pods named as its members that it selects are adopted; its own that
    // it no longer selects are released.
    let claim = ownership::Claim {
        key: PODS,
        selector: ownership::selector_of(&set),
        finalizers: &[],
    };
    let candidates = client::list(app, PODS, Some(ns));
    let owned = ownership::claim(app, &set, &claim, candidates, |p| {
        ordinal(&set, p).is_some()
    })
    .await?;
    let mut by_ordinal: BTreeMap<i64, Arc<Value>> = BTreeMap::new();
    for pod in owned {
        if let Some(o) = ordinal(&set, &pod) {
            by_ordinal.insert(o, pod);
        }
    }
    let recheck = write_status(app, &set, &by_ordinal, &current_name, &update_name).await?;

    let parallel = client::str_at(&set, &["spec", "podManagementPolicy"]) == "Parallel";
    let (first, want) = (start_ordinal(&set), replicas(&set));
    let wanted = first..first + want;
    let rolling = client::str_at(&set, &["spec", "updateStrategy", "type"]) != "OnDelete";
    let partition = client::int_at(
        &set,
        &["spec", "updateStrategy", "rollingUpdate", "partition"],
    )
    .unwrap_or(0);

    // The Pods that should exist, in order.
    for ord in wanted.clone() {
        match by_ordinal.get(&ord) {
            Some(pod)
                if matches!(owned_pods::phase(pod), "Failed" | "Succeeded")
                    && !meta::is_deleting(pod) =>
            {
                // A finished Pod is replaced.
                delete_pod(app, &set, pod)?;
                if !parallel {
                    return Ok(recheck);
                }
            }
            Some(pod) => {
                if !parallel && !running_and_ready(pod) {
                    return Ok(recheck);
                }
            }
            None => {
                let from_current = rolling && partition > 0 && ord < partition;
                let revision = if from_current { &current } else { &update };
                create_pod(app, &set, revision, ord).await?;
                if !parallel {
                    return Ok(recheck);
                }
            }
        }
    }
    // The ones that should not, highest ordinal first.
    let condemned: Vec<&Arc<Value>> = by_ordinal
        .iter()
        .rev()
        .filter(|(o, _)| !wanted.contains(o))
        .map(|(_, p)| p)
        .collect();
    for pod in condemned {
        if meta::is_deleting(pod) {
            if !parallel {
                return Ok(recheck);
            }
            continue;
        }
        delete_pod(app, &set, pod)?;
        if !parallel {
            return Ok(recheck);
        }
    }
    if !rolling {
        return Ok(recheck);
    }
    // RollingUpdate: one Pod at a time, from the highest ordinal down to
    // the partition, each once every other Pod is Running and Ready.
    let in_range: Vec<&Arc<Value>> = by_ordinal
        .iter()
        .filter(|(o, _)| wanted.contains(o))
        .map(|(_, p)| p)
        .collect();
    if in_range.len() as i64 != want || !in_range.iter().all(|p| running_and_ready(p)) {
        return Ok(recheck);
    }
    for (ord, pod) in by_ordinal.iter().rev() {
        if !wanted.contains(ord) || *ord < partition {
            continue;
        }
        if revision_of(pod) != update_name {
            delete_pod(app, &set, pod)?;
            return Ok(recheck);
        }
    }
    let mut live: BTreeSet<String> = by_ordinal
        .values()
        .map(|p| revision_of(p).to_string())
        .collect();
    live.insert(current_name);
    live.insert(update_name);
    revisions::truncate(app, &set, &history, &live)?;
    Ok(recheck)
}

fn delete_pod(app: &App, set: &Value, pod: &Value) -> ApiResult<()> {
    client::delete(
        app,
        client::PODS,
        meta::namespace(pod),
        meta::name(pod),
        meta::uid(pod),
    )?;
    client::event(
        app,
        client::STATEFULSET_CONTROLLER,
        set,
        "Normal",
        "SuccessfulDelete",
        &format!(
            "delete Pod {} in StatefulSet {} successful",
            meta::name(pod),
            meta::name(set)
        ),
    );
    Ok(())
}

/// Creates the Pod of `ordinal` from `revision`'s template, its claims first.
async fn create_pod(app: &App, set: &Value, revision: &Value, ordinal: i64) -> ApiResult<()> {
    let set_name = meta::name(set);
    let pod_name = format!("{set_name}-{ordinal}");
    let template = revisions::template(revision);
    let mut labels = Map::new();
    labels.insert(REVISION_LABEL.into(), json!(meta::name(revision)));
    labels.insert(POD_NAME_LABEL.into(), json!(pod_name));
    labels.insert(POD_INDEX_LABEL.into(), json!(ordinal.to_string()));
    let mut pod = owned_pods::from_template(set, &template, &labels, &Map::new());
    // kube-controller-manager makes every controller's Pod with the
    // `<controller>-` generateName, then names a StatefulSet's.
    meta::set_path(
        &mut pod,
        &["metadata", "generateName"],
        json!(format!("{set_name}-")),
    );
    meta::set_path(&mut pod, &["metadata", "name"], json!(pod_name));
    meta::set_path(&mut pod, &["spec", "hostname"], json!(pod_name));
    let service = client::str_at(set, &["spec", "serviceName"]);
    if !service.is_empty() {
        meta::set_path(&mut pod, &["spec", "subdomain"], json!(service));
    }
    let mut volumes: Vec<Value> = meta::get_path(&pod, &["spec", "volumes"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for claim_template in claim_templates(set) {
        let claim = claim_name(&claim_template, set, ordinal);
        ensure_claim(app, set, &claim_template, &claim, &pod_name).await?;
        let volume_name = meta::name(&claim_template);
        volumes.retain(|v| client::str_at(v, &["name"]) != volume_name);
        volumes.push(json!({"name": volume_name, "persistentVolumeClaim": {"claimName": claim}}));
    }
    if !volumes.is_empty() {
        meta::set_path(&mut pod, &["spec", "volumes"], json!(volumes));
    }
    let set_name = set_name.to_string();
    let created = owned_pods::create(app, set, pod, |pod| {
        format!("create Pod {pod} in StatefulSet {set_name} successful")
    })
    .await;
    match created {
        Ok(_) => Ok(()),
        // Made meanwhile (the store is read before the create).
        Err(e) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates a claim from a `volumeClaimTemplates` entry unless it exists.
async fn ensure_claim(
    app: &App,
    set: &Value,
    template: &Value,
    claim: &str,
    pod_name: &str,
) -> ApiResult<()> {
    let ns = meta::namespace(set);
    if client::get(app, PERSISTENTVOLUMECLAIMS, ns, claim).is_some() {
        return Ok(());
    }
    let mut labels: Map<String, Value> = meta::labels(template).cloned().unwrap_or_default();
    if let Some(match_labels) =
        meta::get_path(set, &["spec", "selector", "matchLabels"]).and_then(Value::as_object)
    {
        labels.extend(match_labels.clone());
    }
    let mut metadata = json!({"name": claim, "labels": labels});
    if let Some(annotations) = meta::get_path(template, &["metadata", "annotations"]) {
        metadata["annotations"] = annotations.clone();
    }
    let when_deleted = client::str_at(
        set,
        &[
            "spec",
            "persistentVolumeClaimRetentionPolicy",
            "whenDeleted",
        ],
    );
    if when_deleted == "Delete" {
        let mut owner = client::controller_ref(set);
        owner["controller"] = json!(false);
        metadata["ownerReferences"] = json!([owner]);
    }
    let obj = json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    });
    let set_name = meta::name(set);
    match client::create_object(app, PERSISTENTVOLUMECLAIMS, ns, obj, CONTROLLER_MANAGER).await {
        Ok(_) => {
            client::event(
                app,
                client::STATEFULSET_CONTROLLER,
                set,
                "Normal",
                "SuccessfulCreate",
                &format!("create Claim {claim} Pod {pod_name} in StatefulSet {set_name} success"),
            );
            Ok(())
        }
        Err(e) if e.code == 409 => Ok(()),
        Err(e) => {
            client::event(
                app,
                client::STATEFULSET_CONTROLLER,
                set,
                "Warning",
                "FailedCreate",
                &format!(
                    "create Claim {claim} for Pod {pod_name} in StatefulSet {set_name} failed error: {}",
                    e.message
                ),
            );
            Err(e)
        }
    }
}

/// Writes the status the Pods show; returns when to look again for
/// `minReadySeconds`.
async fn write_status(
    app: &App,
    set: &Value,
    by_ordinal: &BTreeMap<i64, Arc<Value>>,
    current: &str,
    update: &str,
) -> ApiResult<Option<Duration>> {
    let min_ready = client::int_at(set, &["spec", "minReadySeconds"]).unwrap_or(0);
    let (mut replicas, mut ready, mut available, mut at_current, mut at_update) = (0, 0, 0, 0, 0);
    let mut recheck: Option<Duration> = None;
    for pod in by_ordinal.values() {
        replicas += 1;
        if running_and_ready(pod) {
            ready += 1;
            match owned_pods::available_in(pod, min_ready) {
                None => available += 1,
                Some(d) if d != Duration::MAX => recheck = Some(recheck.map_or(d, |r| r.min(d))),
                Some(_) => {}
            }
        }
        if !meta::is_deleting(pod) {
            if revision_of(pod) == current {
                at_current += 1;
            }
            if revision_of(pod) == update {
                at_update += 1;
            }
        }
    }
    let rolling = client::str_at(set, &["spec", "updateStrategy", "type"]) != "OnDelete";
    let (mut current, mut at_current) = (current.to_string(), at_current);
    // A finished rolling update makes the update revision current.
    if rolling && at_update == replicas && ready == replicas && replicas == self::replicas(set) {
        current = update.to_string();
        at_current = at_update;
    }
    let generation = meta::generation(set);
    let (ns, name) = (meta::namespace(set), meta::name(set));
    client::write_status(app, STATEFULSETS, ns, name, |_, status| {
        status.insert("observedGeneration".into(), json!(generation));
        status.insert("replicas".into(), json!(replicas));
        owned_pods::set_count(status, "readyReplicas", ready);
        status.insert("availableReplicas".into(), json!(available));
        owned_pods::set_count(status, "currentReplicas", at_current);
        owned_pods::set_count(status, "updatedReplicas", at_update);
        status.insert("currentRevision".into(), json!(current));
        status.insert("updateRevision".into(), json!(update));
        if !status.contains_key("collisionCount") {
            status.insert("collisionCount".into(), json!(0));
        }
    })
    .await?;
    Ok(recheck)
}
