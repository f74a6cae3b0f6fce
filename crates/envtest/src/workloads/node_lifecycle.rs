//! What happens to Pods when their Node fails, as kube-controller-manager
//! does it (the Node's taints themselves follow its conditions in
//! [`crate::node_status::condition_taints`]):
//!
//! - the node lifecycle controller marks the Node's condition `Unknown` once
//!   its kubelet has stopped posting for the monitor grace period, and marks
//!   the Pods of a Node that is not Ready not Ready (`MarkPodsNotReady`,
//!   with a `NodeNotReady` event on the Node and on each Pod);
//! - the taint eviction controller deletes the Pods that do not tolerate a
//!   `NoExecute` taint of their Node, at once or after their toleration's
//!   `tolerationSeconds` (the DefaultTolerationSeconds admission plugin gives
//!   every Pod 300 s for `not-ready` and `unreachable`), with the
//!   `DisruptionTarget` condition first;
//! - the Pod garbage collector force-deletes the Pods bound to a Node that
//!   no longer exists, once they have been orphans for its quarantine.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::client::{self, CONTROLLER_MANAGER, NODES, PODS};
use super::config::Timing;
use super::scheduler;
use super::simulated_nodes::{self, KubeletMode};
use crate::app::App;
use crate::controller_selection::Controller;
use crate::error::ApiResult;
use crate::meta;

/// The event sources of the real controllers.
const NODE_CONTROLLER: &str = "node-controller";
const TAINT_EVICTION: &str = "taint-eviction-controller";

/// What the lifecycle remembers between looks.
#[derive(Default)]
pub(crate) struct Memory {
    /// When each Node's kubelet was first seen stopped (by Node name).
    stopped_since: HashMap<String, Instant>,
    /// Nodes whose NotReady was told in an event (by uid), until Ready again.
    told_not_ready: HashSet<String>,
    /// When each orphaned Pod was first seen (by uid).
    orphaned_since: HashMap<String, Instant>,
}

/// The Pods bound to `node`.
pub(crate) fn pods_on(app: &App, node: &str) -> Vec<std::sync::Arc<Value>> {
    client::list(app, PODS, None)
        .into_iter()
        .filter(|p| client::str_at(p, &["spec", "nodeName"]) == node)
        .collect()
}

/// Whether a Node's state means anything for its Pods: it is not Ready, or
/// carries a NoExecute taint.
pub(crate) fn concerns_pods(node: &Value) -> bool {
    crate::node_status::ready_status(node).is_some_and(|s| s != "True")
        || !no_execute_taints(node).is_empty()
}

/// The simulated kubelet's side: it posts Ready or NotReady as its Node's
/// annotation asks, and posts nothing once stopped; the lifecycle
/// controller then marks the Node `Unknown` after the grace period. Returns
/// when to look again.
pub(crate) async fn kubelet_health(
    app: &App,
    node: &Value,
    timing: &Timing,
    memory: &mut Memory,
) -> ApiResult<Option<Duration>> {
    let lifecycle_controller = app.controllers.is_on(Controller::NodeLifecycle);
    let name = meta::name(node).to_string();
    let status = crate::node_status::ready_status(node).map(str::to_owned);
    let mode = simulated_nodes::kubelet_mode(node);
    if mode != KubeletMode::Stopped {
        memory.stopped_since.remove(&name);
        let ready = mode == KubeletMode::Running;
        if status.as_deref() == Some(if ready { "True" } else { "False" }) {
            return Ok(None);
        }
        let now = meta::now_rfc3339();
        client::modify_with_admission(
            app,
            NODES,
            "",
            &name,
            Some("status"),
            client::KUBELET,
            |n| {
                crate::node_status::set_ready(n, ready, &now);
                true
            },
        )
        .await?;
        if ready {
            simulated_nodes::renew_lease(app, &name).await?;
        }
        return Ok(None);
    }
    if !lifecycle_controller {
        return Ok(None);
    }
    let since = *memory
        .stopped_since
        .entry(name.clone())
        .or_insert_with(Instant::now);
    let waited = since.elapsed();
    if waited < timing.node_monitor_grace {
        return Ok(Some(timing.node_monitor_grace - waited));
    }
    if status.as_deref() == Some("Unknown") {
        return Ok(None);
    }
    let now = meta::now_rfc3339();
    client::modify_with_admission(
        app,
        NODES,
        "",
        &name,
        Some("status"),
        CONTROLLER_MANAGER,
        |n| mark_unknown(n, &now),
    )
    .await?;
    Ok(None)
}

/// Every condition of a Node whose kubelet stopped posting turns Unknown.
fn mark_unknown(node: &mut Value, now: &str) -> bool {
    let Some(conditions) = node
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return false;
    };
    let mut changed = false;
    for c in conditions.iter_mut() {
        if c.get("status").and_then(Value::as_str) == Some("Unknown") {
            continue;
        }
        c["status"] = json!("Unknown");
        c["reason"] = json!("NodeStatusUnknown");
        c["message"] = json!("Kubelet stopped posting node status.");
        c["lastTransitionTime"] = json!(now);
        changed = true;
    }
    changed
}

/// The lifecycle and taint eviction controllers' look at one Node and its
/// Pods; returns when to look again (a toleration running out).
pub(crate) async fn reconcile(
    app: &App,
    node: &Value,
    memory: &mut Memory,
) -> ApiResult<Option<Duration>> {
    let name = meta::name(node);
    let uid = meta::uid(node).to_string();
    let pods = pods_on(app, name);
    let lifecycle_controller = app.controllers.is_on(Controller::NodeLifecycle);
    let ready = crate::node_status::ready_status(node);
    if ready == Some("True") {
        memory.told_not_ready.remove(&uid);
    } else if ready.is_some() && lifecycle_controller {
        if memory.told_not_ready.insert(uid) {
            let message = format!("Node {name} status is now: NodeNotReady");
            client::event(
                app,
                NODE_CONTROLLER,
                node,
                "Normal",
                "NodeNotReady",
                &message,
            );
        }
        for pod in &pods {
            mark_pod_not_ready(app, pod).await?;
        }
    }
    let taints = no_execute_taints(node);
    if taints.is_empty() || !app.controllers.is_on(Controller::TaintEviction) {
        return Ok(None);
    }
    let now = Utc::now();
    let mut next: Option<Duration> = None;
    for pod in pods.iter().filter(|p| !meta::is_deleting(p)) {
        match eviction_time(pod, &taints) {
            Eviction::Never => {}
            Eviction::At(at) if at > now => {
                let wait = (at - now).to_std().unwrap_or_default();
                next = Some(next.map_or(wait, |n| n.min(wait)));
            }
            Eviction::At(_) => evict(app, pod).await?,
        }
    }
    Ok(next)
}

/// `MarkPodsNotReady`: a Pod that says Ready is not, while its Node is not.
async fn mark_pod_not_ready(app: &App, pod: &Value) -> ApiResult<()> {
    let ready = client::condition(pod, "Ready").and_then(|c| c.get("status"));
    if ready.and_then(Value::as_str) != Some("True") {
        return Ok(());
    }
    let uid = meta::uid(pod).to_string();
    let now = meta::now_rfc3339();
    client::modify_with_admission(
        app,
        PODS,
        meta::namespace(pod),
        meta::name(pod),
        Some("status"),
        CONTROLLER_MANAGER,
        |p| {
            if meta::uid(p) != uid {
                return false;
            }
            let Some(conditions) = p
                .pointer_mut("/status/conditions")
                .and_then(Value::as_array_mut)
            else {
                return false;
            };
            let Some(c) = conditions
                .iter_mut()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
            else {
                return false;
            };
            if c.get("status").and_then(Value::as_str) != Some("True") {
                return false;
            }
            c["status"] = json!("False");
            c["lastTransitionTime"] = json!(now);
            true
        },
    )
    .await?;
    client::event(
        app,
        NODE_CONTROLLER,
        pod,
        "Warning",
        "NodeNotReady",
        "Node is not ready",
    );
    Ok(())
}

/// The NoExecute taints of a Node.
fn no_execute_taints(node: &Value) -> Vec<Value> {
    node.pointer("/spec/taints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|t| t.get("effect").and_then(Value::as_str) == Some("NoExecute"))
        .cloned()
        .collect()
}

/// When a Pod goes because of its Node's NoExecute taints.
#[derive(Debug, PartialEq, Eq)]
enum Eviction {
    Never,
    At(DateTime<Utc>),
}

/// The taint eviction controller's rule: a taint the Pod does not tolerate
/// evicts it at once; otherwise the shortest `tolerationSeconds` among the
/// tolerations that match, counted from when the first taint was added,
/// and never when no matching toleration has a limit.
fn eviction_time(pod: &Value, taints: &[Value]) -> Eviction {
    let tolerations: Vec<Value> = pod
        .pointer("/spec/tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut shortest: Option<i64> = None;
    let mut since: Option<DateTime<Utc>> = None;
    for taint in taints {
        let matching: Vec<&Value> = tolerations
            .iter()
            .filter(|t| scheduler::tolerated(taint, std::slice::from_ref(t)))
            .collect();
        if matching.is_empty() {
            return Eviction::At(DateTime::<Utc>::MIN_UTC);
        }
        for seconds in matching
            .iter()
            .filter_map(|t| t.get("tolerationSeconds").and_then(Value::as_i64))
        {
            shortest = Some(shortest.map_or(seconds, |s| s.min(seconds)));
        }
        let added = client::str_at(taint, &["timeAdded"])
            .parse::<DateTime<Utc>>()
            .unwrap_or_else(|_| Utc::now());
        since = Some(since.map_or(added, |s| s.min(added)));
    }
    match (shortest, since) {
        (Some(seconds), Some(since)) => {
            Eviction::At(since + chrono::Duration::seconds(seconds.max(0)))
        }
        _ => Eviction::Never,
    }
}

/// Marks the Pod as disrupted, tells it, then deletes it with its own
/// grace period.
async fn evict(app: &App, pod: &Value) -> ApiResult<()> {
    disrupt(
        app,
        pod,
        "DeletionByTaintManager",
        "Taint manager: deleting due to NoExecute taint",
    )
    .await?;
    let (ns, name) = (meta::namespace(pod), meta::name(pod));
    let message = format!("Marking for deletion Pod {ns}/{name}");
    client::event(
        app,
        TAINT_EVICTION,
        pod,
        "Normal",
        "TaintManagerEviction",
        &message,
    );
    client::delete(app, PODS, ns, name, meta::uid(pod))
}

/// Adds the `DisruptionTarget` condition a controller sets before deleting a Pod.
async fn disrupt(app: &App, pod: &Value, reason: &str, message: &str) -> ApiResult<()> {
    let uid = meta::uid(pod).to_string();
    let cond =
        json!({"type": "DisruptionTarget", "status": "True", "reason": reason, "message": message});
    client::modify_with_admission(
        app,
        PODS,
        meta::namespace(pod),
        meta::name(pod),
        Some("status"),
        CONTROLLER_MANAGER,
        |p| {
            if meta::uid(p) != uid {
                return false;
            }
            let mut conditions = client::conditions(p);
            if !client::set_condition(&mut conditions, cond.clone(), client::ConditionStyle::Pod) {
                return false;
            }
            p["status"]["conditions"] = json!(conditions);
            true
        },
    )
    .await
}

/// The Pod garbage collector's pass over Pods bound to a Node that does not
/// exist: each is force-deleted once it has been an orphan for the
/// quarantine. Returns when to look again.
pub(crate) async fn collect_orphans(
    app: &App,
    quarantine: Duration,
    memory: &mut Memory,
) -> ApiResult<Option<Duration>> {
    let nodes: HashSet<String> = client::list(app, NODES, None)
        .iter()
        .map(|n| meta::name(n).to_string())
        .collect();
    let mut seen = HashSet::new();
    let mut next: Option<Duration> = None;
    for pod in client::list(app, PODS, None) {
        let node = client::str_at(&pod, &["spec", "nodeName"]);
        if node.is_empty() || nodes.contains(node) {
            continue;
        }
        let uid = meta::uid(&pod).to_string();
        seen.insert(uid.clone());
        let since = *memory
            .orphaned_since
            .entry(uid)
            .or_insert_with(Instant::now);
        let waited = since.elapsed();
        if waited < quarantine {
            let wait = quarantine - waited;
            next = Some(next.map_or(wait, |n| n.min(wait)));
            continue;
        }
        disrupt(app, &pod, "DeletionByPodGC", "PodGC: node no longer exists").await?;
        let (ns, name) = (meta::namespace(&pod), meta::name(&pod));
        client::force_delete(app, PODS, ns, name, meta::uid(&pod))?;
    }
    memory.orphaned_since.retain(|uid, _| seen.contains(uid));
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADDED: &str = "2026-01-01T00:00:00Z";

    fn taint(key: &str) -> Value {
        json!({"key": key, "effect": "NoExecute", "timeAdded": ADDED})
    }

    fn pod(tolerations: Value) -> Value {
        json!({"spec": {"tolerations": tolerations}})
    }

    fn at(seconds: i64) -> Eviction {
        Eviction::At(ADDED.parse::<DateTime<Utc>>().unwrap() + chrono::Duration::seconds(seconds))
    }

    #[test]
    fn an_untolerated_taint_evicts_at_once() {
        let p = pod(json!([]));
        assert!(
            matches!(eviction_time(&p, &[taint(crate::node_status::UNREACHABLE)]),
            Eviction::At(t) if t == DateTime::<Utc>::MIN_UTC)
        );
    }

    #[test]
    fn toleration_seconds_count_from_the_taint() {
        let p = pod(json!([
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5},
        ]));
        assert_eq!(
            eviction_time(&p, &[taint(crate::node_status::UNREACHABLE)]),
            at(5)
        );
        assert_eq!(
            eviction_time(&p, &[taint(crate::node_status::NOT_READY)]),
            at(300)
        );
    }

    #[test]
    fn tolerations_without_seconds_keep_the_pod() {
        let p = pod(json!([{"operator": "Exists"}]));
        assert_eq!(
            eviction_time(&p, &[taint(crate::node_status::UNREACHABLE)]),
            Eviction::Never
        );
        // The limit of another matching toleration still counts.
        let p = pod(json!([
            {"operator": "Exists", "effect": "NoExecute"},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5},
        ]));
        assert_eq!(
            eviction_time(&p, &[taint(crate::node_status::UNREACHABLE)]),
            at(5)
        );
    }

    #[test]
    fn an_unknown_node_has_every_condition_unknown() {
        let mut node = json!({"status": {"conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady"},
            {"type": "MemoryPressure", "status": "False"},
        ]}});
        assert!(mark_unknown(&mut node, ADDED));
        assert!(!mark_unknown(&mut node, ADDED));
        for c in node["status"]["conditions"].as_array().unwrap() {
            assert_eq!(c["status"], "Unknown");
            assert_eq!(c["reason"], "NodeStatusUnknown");
            assert_eq!(c["message"], "Kubelet stopped posting node status.");
        }
    }
}
