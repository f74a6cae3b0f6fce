//! Simulated Nodes, registered as a kubelet registers its Node: the Node
//! object with its status (capacity, allocatable, conditions, addresses,
//! nodeInfo: [`crate::node_status::Registration`]), then a Lease in
//! `kube-node-lease` renewed as a heartbeat. The node lifecycle controller
//! keeps the condition taints in step (`node.kubernetes.io/not-ready` goes
//! once the Node reports Ready).
//!
//! A Node whose `envtest.opctl.dev/simulated` annotation is `"true"` is run
//! by the simulated kubelet, so a test can add Nodes while the server runs.

use serde_json::{Value, json};

use super::client::{self, KUBELET, LEASES, NAMESPACES, NODES};
use super::config::NodeSpec;
use crate::app::App;
use crate::error::ApiResult;
use crate::meta;

/// Marks a Node whose kubelet the simulation plays.
pub(crate) const SIMULATED: &str = "envtest.opctl.dev/simulated";
/// How a simulated Node's kubelet behaves: `running` (the default),
/// `not-ready` (it posts `Ready=False` and starts no Pods) or `stopped` (it
/// posts nothing and moves no Pod, as when its machine is unreachable).
pub(crate) const KUBELET_MODE: &str = "envtest.opctl.dev/kubelet";

/// What [`KUBELET_MODE`] asks of a simulated kubelet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KubeletMode {
    Running,
    NotReady,
    Stopped,
}

/// The mode a Node's annotation asks for (anything else is `running`).
pub(crate) fn kubelet_mode(node: &Value) -> KubeletMode {
    let mode = meta::metadata(node)
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(KUBELET_MODE))
        .and_then(Value::as_str);
    match mode {
        Some("not-ready") => KubeletMode::NotReady,
        Some("stopped") => KubeletMode::Stopped,
        _ => KubeletMode::Running,
    }
}
/// The namespace of the kubelets' heartbeat Leases.
pub(crate) const LEASE_NAMESPACE: &str = "kube-node-lease";
const LEASE_SECONDS: i64 = 40;
const ZONES: &[&str] = &["zone-a", "zone-b", "zone-c"];

/// Whether the simulation plays this Node's kubelet.
pub(crate) fn is_simulated(node: &Value) -> bool {
    meta::metadata(node)
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(SIMULATED))
        .and_then(Value::as_str)
        == Some("true")
}

/// The `index`th Node's internal address (from 172.18.0.2, as kind numbers its nodes).
pub(crate) fn node_ip(index: usize) -> String {
    format!("172.18.{}.{}", (index + 2) / 256, (index + 2) % 256)
}

/// The Node object a kubelet registers (its status is posted after).
fn node_object(spec: &NodeSpec, index: usize) -> Value {
    let zone = ZONES[index % ZONES.len()];
    let taints: Vec<Value> = spec
        .taints
        .iter()
        .map(|t| {
            let mut v = json!({"key": t.key, "effect": t.effect});
            if !t.value.is_empty() {
                v["value"] = json!(t.value);
            }
            v
        })
        .collect();
    let mut node = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": spec.name,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": spec.name,
                "kubernetes.io/os": "linux",
                "topology.kubernetes.io/zone": zone,
                "topology.kubernetes.io/region": "envtest",
            },
            "annotations": {
                SIMULATED: "true",
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {
            "podCIDR": pod_cidr(index),
            "podCIDRs": [pod_cidr(index)],
        },
    });
    if !taints.is_empty() {
        node["spec"]["taints"] = json!(taints);
    }
    if !spec.ready {
        node["metadata"]["annotations"][KUBELET_MODE] = json!("not-ready");
    }
    node
}

/// The `index`th Node's Pod range (10.244.<index+1>.0/24).
pub(crate) fn pod_cidr(index: usize) -> String {
    format!("10.244.{}.0/24", index + 1)
}

/// Registers every Node of `specs` with its status and first Lease.
pub(crate) async fn register_all(app: &App, specs: &[NodeSpec]) -> ApiResult<()> {
    if specs.is_empty() {
        return Ok(());
    }
    ensure_lease_namespace(app).await?;
    for (index, spec) in specs.iter().enumerate() {
        register(app, spec, index).await?;
    }
    Ok(())
}

async fn ensure_lease_namespace(app: &App) -> ApiResult<()> {
    if client::get(app, NAMESPACES, "", LEASE_NAMESPACE).is_some() {
        return Ok(());
    }
    let ns =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": LEASE_NAMESPACE}});
    match client::create_object(app, NAMESPACES, "", ns, crate::api::APISERVER).await {
        Ok(_) => Ok(()),
        Err(e) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

async fn register(app: &App, spec: &NodeSpec, index: usize) -> ApiResult<()> {
    client::create_object(app, NODES, "", node_object(spec, index), KUBELET).await?;
    // Then the first status post: this machine's capacity and addresses,
    // and Ready once its runtime is up (at once, unless asked otherwise).
    let registration = crate::node_status::Registration {
        cpu: spec.cpu.clone(),
        memory: spec.memory.clone(),
        pods: spec.pods.to_string(),
        internal_ip: node_ip(index),
        ..crate::node_status::Registration::default()
    };
    let now = meta::now_rfc3339();
    client::modify_with_admission(
        app,
        NODES,
        "",
        &spec.name,
        Some("status"),
        KUBELET,
        |node| {
            node["status"] = json!({});
            registration.register(node, &now);
            crate::node_status::set_ready(node, spec.ready, &now);
            true
        },
    )
    .await?;
    renew_lease(app, &spec.name).await
}

/// Creates or renews the Node's heartbeat Lease.
pub(crate) async fn renew_lease(app: &App, node: &str) -> ApiResult<()> {
    let now = micro_time();
    if client::get(app, LEASES, LEASE_NAMESPACE, node).is_some() {
        return client::modify_with_admission(
            app,
            LEASES,
            LEASE_NAMESPACE,
            node,
            None,
            KUBELET,
            |lease| {
                lease["spec"]["renewTime"] = json!(now);
                true
            },
        )
        .await;
    }
    let Some(owner) = client::get(app, NODES, "", node) else {
        return Ok(());
    };
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": node,
            "ownerReferences": [{
                "apiVersion": "v1", "kind": "Node", "name": node, "uid": meta::uid(&owner),
            }],
        },
        "spec": {
            "holderIdentity": node,
            "leaseDurationSeconds": LEASE_SECONDS,
            "renewTime": now,
        },
    });
    match client::create_object(app, LEASES, LEASE_NAMESPACE, lease, KUBELET).await {
        Ok(_) => Ok(()),
        Err(e) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Renews the Leases of every simulated Node.
pub(crate) async fn heartbeat(app: &App) {
    for node in client::list(app, NODES, None) {
        if is_simulated(&node)
            && !meta::is_deleting(&node)
            && kubelet_mode(&node) != KubeletMode::Stopped
        {
            let _ = renew_lease(app, meta::name(&node)).await;
        }
    }
}

/// The InternalIP of a Node, and its Pod range.
pub(crate) fn addresses(node: &Value) -> (String, String) {
    let ip = meta::get_path(node, &["status", "addresses"])
        .and_then(Value::as_array)
        .and_then(|a| {
            a.iter()
                .find(|x| x.get("type").and_then(Value::as_str) == Some("InternalIP"))
        })
        .and_then(|x| x.get("address").and_then(Value::as_str))
        .unwrap_or("")
        .to_string();
    let cidr = client::str_at(node, &["spec", "podCIDR"]).to_string();
    (ip, cidr)
}

/// Now as a MicroTime (`2006-01-02T15:04:05.000000Z`).
pub(crate) fn micro_time() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}
