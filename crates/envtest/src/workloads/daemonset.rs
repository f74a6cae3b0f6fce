//! The DaemonSet controller: one Pod per Node the template fits (its
//! nodeSelector and required node affinity, the Node's NoSchedule and
//! NoExecute taints against the template's tolerations plus those the
//! controller adds), pinned to its Node by node affinity on
//! `metadata.name` and bound by the scheduler. Templates are recorded as
//! ControllerRevisions; Pods carry `controller-revision-hash` and
//! `pod-template-generation`. `RollingUpdate` replaces out-of-date Pods
//! with at most `maxUnavailable` Nodes unavailable at a time; `OnDelete`
//! waits for them to be deleted. Status as kube-controller-manager reports it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::client::{self, DAEMONSETS, NODES, PODS};
use super::revisions;
use super::scheduler::{UNSCHEDULABLE_TAINT, selects, tolerated};
use super::{owned_pods, ownership};
use crate::app::App;
use crate::error::ApiResult;
use crate::meta;

const REVISION_LABEL: &str = "controller-revision-hash";
const GENERATION_LABEL: &str = "pod-template-generation";

/// The tolerations the controller adds to every daemon Pod (`AddOrUpdateDaemonPodTolerations`).
fn added_tolerations(template: &Value) -> Vec<Value> {
    let mut added = vec![
        json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}),
        json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}),
        json!({"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"}),
        json!({"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"}),
        json!({"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"}),
        json!({"key": UNSCHEDULABLE_TAINT, "operator": "Exists", "effect": "NoSchedule"}),
    ];
    if meta::get_path(template, &["spec", "hostNetwork"]).and_then(Value::as_bool) == Some(true) {
        added.push(json!({"key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"}));
    }
    added
}

/// The template's tolerations with the controller's added (unless present).
fn tolerations(template: &Value) -> Vec<Value> {
    let mut list: Vec<Value> = meta::get_path(template, &["spec", "tolerations"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for t in added_tolerations(template) {
        let same = |x: &Value| {
            client::str_at(x, &["key"]) == client::str_at(&t, &["key"])
                && client::str_at(x, &["effect"]) == client::str_at(&t, &["effect"])
        };
        if !list.iter().any(same) {
            list.push(t);
        }
    }
    list
}

/// Whether a daemon Pod should run on `node` (`NodeShouldRunDaemonPod`).
fn should_run(template: &Value, node: &Value) -> bool {
    if meta::is_deleting(node) || !selects(template, node) {
        return false;
    }
    let tolerations = tolerations(template);
    meta::get_path(node, &["spec", "taints"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|t| matches!(client::str_at(t, &["effect"]), "NoSchedule" | "NoExecute"))
        .all(|t| tolerated(t, &tolerations))
}

/// The Node a daemon Pod is for: where it runs, or where its affinity pins it.
fn node_of(pod: &Value) -> String {
    let bound = client::str_at(pod, &["spec", "nodeName"]);
    if !bound.is_empty() {
        return bound.to_string();
    }
    pod.pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchFields/0/values/0")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// Pins the Pod to `node` as `ReplaceDaemonSetPodNodeNameNodeAffinity` does.
fn pin(pod: &mut Value, node: &str) {
    let field = json!([{"key": "metadata.name", "operator": "In", "values": [node]}]);
    let path = [
        "spec",
        "affinity",
        "nodeAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
        "nodeSelectorTerms",
    ];
    let mut terms: Vec<Value> = meta::get_path(pod, &path)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if terms.is_empty() {
        terms.push(json!({"matchFields": field}));
    } else {
        for term in &mut terms {
            term["matchFields"] = field.clone();
        }
    }
    meta::set_path(pod, &path, json!(terms));
}

fn revision_of(pod: &Value) -> &str {
    client::str_at(pod, &["metadata", "labels", REVISION_LABEL])
}

/// `maxUnavailable` against the number of Nodes (percentages round up), at least 1.
fn max_unavailable(ds: &Value, desired: i64) -> i64 {
    let value = meta::get_path(
        ds,
        &["spec", "updateStrategy", "rollingUpdate", "maxUnavailable"],
    );
    let n = match value {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(1),
        Some(Value::String(s)) if s.ends_with('%') => {
            let pct: i64 = s.trim_end_matches('%').parse().unwrap_or(0);
            (pct * desired + 99) / 100
        }
        _ => 1,
    };
    n.max(1)
}

pub(crate) async fn reconcile(app: &App, ns: &str, name: &str) -> ApiResult<Option<Duration>> {
    let Some(ds) = client::get(app, DAEMONSETS, ns, name) else {
        return Ok(None);
    };
    if meta::is_deleting(&ds) {
        return Ok(None);
    }
    let (update, history) = revisions::update_revision(app, &ds).await?;
    let hash = revisions::hash_of(&update);
    let template = meta::get_path(&ds, &["spec", "template"])
        .cloned()
        .unwrap_or_default();
    let min_ready = client::int_at(&ds, &["spec", "minReadySeconds"]).unwrap_or(0);
    let nodes: Vec<Arc<Value>> = client::list(app, NODES, None);
    let mut by_node: BTreeMap<String, Vec<Arc<Value>>> = BTreeMap::new();
    let claim = ownership::Claim {
        key: PODS,
        selector: ownership::selector_of(&ds),
        finalizers: &[],
    };
    let candidates = client::list(app, PODS, Some(ns));
    for pod in ownership::claim(app, &ds, &claim, candidates, |_| true).await? {
        by_node.entry(node_of(&pod)).or_default().push(pod);
    }

    // Status from the Pods as they are now.
    let (mut desired, mut current, mut misscheduled, mut ready, mut available, mut updated) =
        (0, 0, 0, 0, 0, 0);
    let mut recheck: Option<Duration> = None;
    let mut runs_on: BTreeSet<String> = BTreeSet::new();
    for node in &nodes {
        let node_name = meta::name(node).to_string();
        let wanted = should_run(&template, node);
        let active: Vec<&Arc<Value>> = by_node
            .get(&node_name)
            .into_iter()
            .flatten()
            .filter(|p| owned_pods::is_active(p))
            .collect();
        if wanted {
            runs_on.insert(node_name);
            desired += 1;
        }
        let Some(pod) = active.first() else {
            continue;
        };
        if !wanted {
            misscheduled += 1;
            continue;
        }
        current += 1;
        if revision_of(pod) == hash {
            updated += 1;
        }
        if owned_pods::is_ready(pod) {
            ready += 1;
        }
        match owned_pods::available_in(pod, min_ready) {
            None => available += 1,
            Some(d) if d != Duration::MAX => recheck = Some(recheck.map_or(d, |r| r.min(d))),
            Some(_) => {}
        }
    }
    write_status(
        app,
        &ds,
        [
            ("desiredNumberScheduled", desired),
            ("currentNumberScheduled", current),
            ("numberMisscheduled", misscheduled),
            ("numberReady", ready),
            ("numberAvailable", available),
            ("updatedNumberScheduled", updated),
        ],
    )
    .await?;

    // Pods where none should run go; finished and surplus ones too.
    let mut missing: Vec<String> = Vec::new();
    for (node, list) in &by_node {
        let active: Vec<&Arc<Value>> = list.iter().filter(|p| owned_pods::is_active(p)).collect();
        for pod in list {
            if matches!(owned_pods::phase(pod), "Failed" | "Succeeded") && !meta::is_deleting(pod) {
                owned_pods::delete(app, &ds, pod)?;
            }
        }
        if !runs_on.contains(node) {
            for pod in &active {
                owned_pods::delete(app, &ds, pod)?;
            }
        } else if active.len() > 1 {
            let mut extra: Vec<Arc<Value>> = active.iter().map(|p| (*p).clone()).collect();
            extra.sort_by(|a, b| {
                meta::meta_str(a, "creationTimestamp").cmp(meta::meta_str(b, "creationTimestamp"))
            });
            for pod in &extra[1..] {
                owned_pods::delete(app, &ds, pod)?;
            }
        }
    }
    for node in &runs_on {
        let busy = by_node.get(node).is_some_and(|l| {
            l.iter()
                .any(|p| owned_pods::is_active(p) || meta::is_deleting(p))
        });
        if !busy {
            missing.push(node.clone());
        }
    }
    for node in &missing {
        create_pod(app, &ds, &template, &hash, node).await?;
    }

    if client::str_at(&ds, &["spec", "updateStrategy", "type"]) != "OnDelete" {
        // Out-of-date Pods go: unavailable ones at once, available ones while
        // fewer than maxUnavailable Nodes are without an available Pod.
        let mut unavailable = desired - available;
        let budget = max_unavailable(&ds, desired);
        for node in &runs_on {
            let Some(pod) = by_node
                .get(node)
                .and_then(|l| l.iter().find(|p| owned_pods::is_active(p)))
            else {
                continue;
            };
            if revision_of(pod) == hash {
                continue;
            }
            if owned_pods::available_in(pod, min_ready).is_some() {
                owned_pods::delete(app, &ds, pod)?;
            } else if unavailable < budget {
                owned_pods::delete(app, &ds, pod)?;
                unavailable += 1;
            }
        }
    }
    let mut live: BTreeSet<String> = by_node
        .values()
        .flatten()
        .map(|p| revision_of(p).to_string())
        .collect();
    live.insert(hash);
    revisions::truncate(app, &ds, &history, &live)?;
    Ok(recheck)
}

async fn create_pod(
    app: &App,
    ds: &Value,
    template: &Value,
    hash: &str,
    node: &str,
) -> ApiResult<()> {
    let mut labels = Map::new();
    labels.insert(REVISION_LABEL.into(), json!(hash));
    labels.insert(
        GENERATION_LABEL.into(),
        json!(meta::generation(ds).to_string()),
    );
    let mut pod = owned_pods::from_template(ds, template, &labels, &Map::new());
    meta::set_path(
        &mut pod,
        &["metadata", "generateName"],
        json!(format!("{}-", meta::name(ds))),
    );
    pin(&mut pod, node);
    meta::set_path(
        &mut pod,
        &["spec", "tolerations"],
        json!(tolerations(template)),
    );
    owned_pods::create(app, ds, pod, |name| format!("Created pod: {name}")).await?;
    Ok(())
}

async fn write_status(app: &App, ds: &Value, counts: [(&str, i64); 6]) -> ApiResult<()> {
    let generation = meta::generation(ds);
    let desired = counts[0].1;
    let available = counts[4].1;
    let (ns, name) = (meta::namespace(ds), meta::name(ds));
    client::write_status(app, DAEMONSETS, ns, name, |_, status| {
        for (field, value) in counts {
            // The four counts a DaemonSet's status always carries; the rest are omitempty.
            if matches!(
                field,
                "desiredNumberScheduled"
                    | "currentNumberScheduled"
                    | "numberMisscheduled"
                    | "numberReady"
            ) {
                status.insert(field.into(), json!(value));
            } else {
                owned_pods::set_count(status, field, value);
            }
        }
        owned_pods::set_count(status, "numberUnavailable", (desired - available).max(0));
        status.insert("observedGeneration".into(), json!(generation));
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daemon_pods_go_where_the_template_fits_and_tolerate_cordons() {
        let node = |taints: Value, unschedulable: bool| {
            json!({"metadata": {"name": "n", "labels": {"disk": "ssd"}},
                "spec": {"taints": taints, "unschedulable": unschedulable}})
        };
        let template = json!({"spec": {"nodeSelector": {"disk": "ssd"}}});
        assert!(should_run(&template, &node(json!([]), true)));
        let tainted = node(json!([{"key": "gpu", "effect": "NoSchedule"}]), false);
        assert!(!should_run(&template, &tainted));
        let tolerant = json!({"spec": {"tolerations": [{"key": "gpu", "operator": "Exists"}]}});
        assert!(should_run(&tolerant, &tainted));
        let not_ready = node(
            json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]),
            false,
        );
        assert!(!should_run(&template, &not_ready));
        let elsewhere = json!({"spec": {"nodeSelector": {"disk": "hdd"}}});
        assert!(!should_run(&elsewhere, &node(json!([]), false)));
    }

    #[test]
    fn max_unavailable_rounds_percentages_up() {
        let ds = |v: Value| json!({"spec": {"updateStrategy": {"rollingUpdate": {"maxUnavailable": v}}}});
        assert_eq!(max_unavailable(&ds(json!("10%")), 3), 1);
        assert_eq!(max_unavailable(&ds(json!("50%")), 3), 2);
        assert_eq!(max_unavailable(&ds(json!(2)), 3), 2);
        assert_eq!(max_unavailable(&json!({}), 3), 1);
    }
}
