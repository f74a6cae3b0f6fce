//! Nodes without a kubelet: what kube-apiserver does to a new Node (the
//! TaintNodesByCondition admission plugin), the status a kubelet posts when
//! it registers its node, and the taints kube-controller-manager's node
//! lifecycle controller keeps in step with the node's conditions.
//!
//! A simulated kubelet drives a node through [`Registration`] (the first
//! status) and [`set_ready`] (heartbeats that flip `Ready`); the taints
//! follow through [`condition_taints`], which the controllers apply after
//! every change of a Node.

use serde_json::{Map, Value, json};

/// Taints of the node lifecycle controller (`NoSchedule`; the first two
/// also `NoExecute`).
pub(crate) const NOT_READY: &str = "node.kubernetes.io/not-ready";
pub(crate) const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
pub(crate) const UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
const MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";
const DISK_PRESSURE: &str = "node.kubernetes.io/disk-pressure";
const PID_PRESSURE: &str = "node.kubernetes.io/pid-pressure";
const NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";

/// Which condition status puts which taint on a node (kube-controller-manager's
/// `nodeConditionToTaintKeyStatusMap`).
const CONDITION_TAINTS: &[(&str, &str, &str)] = &[
    ("Ready", "False", NOT_READY),
    ("Ready", "Unknown", UNREACHABLE),
    ("MemoryPressure", "True", MEMORY_PRESSURE),
    ("DiskPressure", "True", DISK_PRESSURE),
    ("PIDPressure", "True", PID_PRESSURE),
    ("NetworkUnavailable", "True", NETWORK_UNAVAILABLE),
];

fn no_schedule(key: &str) -> Value {
    json!({"key": key, "effect": "NoSchedule"})
}

fn taints_mut(node: &mut Value) -> Option<&mut Vec<Value>> {
    let spec = node
        .as_object_mut()?
        .entry("spec")
        .or_insert_with(|| json!({}))
        .as_object_mut()?;
    let taints = spec.entry("taints").or_insert_with(|| json!([]));
    if !taints.is_array() {
        *taints = json!([]);
    }
    taints.as_array_mut()
}

fn has_taint(taints: &[Value], key: &str, effect: &str) -> bool {
    taints.iter().any(|t| {
        t.get("key").and_then(Value::as_str) == Some(key)
            && t.get("effect").and_then(Value::as_str) == Some(effect)
    })
}

/// The TaintNodesByCondition admission plugin: every new Node starts
/// NotReady for the scheduler until the lifecycle controller has seen its
/// conditions.
pub(crate) fn admit_create(node: &mut Value) {
    if let Some(taints) = taints_mut(node)
        && !has_taint(taints, NOT_READY, "NoSchedule")
    {
        taints.push(no_schedule(NOT_READY));
    }
}

/// The condition and unschedulable taints a node should carry, in the
/// controller's order.
fn desired_taints(node: &Value) -> Vec<&'static str> {
    let mut keys = Vec::new();
    for cond in node
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let kind = cond.get("type").and_then(Value::as_str);
        let status = cond.get("status").and_then(Value::as_str);
        for (t, s, key) in CONDITION_TAINTS {
            if kind == Some(*t) && status == Some(*s) {
                keys.push(*key);
            }
        }
    }
    if node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        keys.push(UNSCHEDULABLE);
    }
    keys
}

/// The status of a node's Ready condition (`None` when it has none).
pub(crate) fn ready_status(node: &Value) -> Option<&str> {
    node.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))?
        .get("status")
        .and_then(Value::as_str)
}

/// The NoExecute taint a node's Ready condition calls for (the lifecycle
/// controller's NoExecute pass): `not-ready` while False, `unreachable`
/// while Unknown, none while True. Pods that do not tolerate it are evicted.
fn desired_no_execute(node: &Value) -> Option<&'static str> {
    match ready_status(node) {
        Some("False") => Some(NOT_READY),
        Some("Unknown") => Some(UNREACHABLE),
        _ => None,
    }
}

/// The node lifecycle controller's tainting passes: the NoSchedule
/// condition taints and the unschedulable taint, and the NoExecute
/// `not-ready` or `unreachable` taint (with its `timeAdded`), added or
/// removed to match the node; other taints are left alone. Returns whether
/// anything changed.
pub(crate) fn condition_taints(node: &mut Value) -> bool {
    let desired = desired_taints(node);
    let desired_no_execute = desired_no_execute(node);
    let key_of = |t: &Value| t.get("key").and_then(Value::as_str).map(str::to_owned);
    let effect_of = |t: &Value| t.get("effect").and_then(Value::as_str).map(str::to_owned);
    let managed = |t: &Value| match (key_of(t), effect_of(t).as_deref()) {
        (Some(k), Some("NoSchedule")) => {
            k == UNSCHEDULABLE || CONDITION_TAINTS.iter().any(|(_, _, key)| *key == k)
        }
        (Some(k), Some("NoExecute")) => k == NOT_READY || k == UNREACHABLE,
        _ => false,
    };
    let wanted = |t: &Value| match (key_of(t), effect_of(t).as_deref()) {
        (Some(k), Some("NoSchedule")) => desired.contains(&k.as_str()),
        (Some(k), Some("NoExecute")) => desired_no_execute == Some(k.as_str()),
        _ => false,
    };
    let current: Vec<Value> = node
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let stale = current.iter().any(|t| managed(t) && !wanted(t));
    let mut missing: Vec<Value> = desired
        .iter()
        .filter(|k| !has_taint(&current, k, "NoSchedule"))
        .map(|k| no_schedule(k))
        .collect();
    if let Some(key) = desired_no_execute
        && !has_taint(&current, key, "NoExecute")
    {
        missing.push(json!({
            "key": key, "effect": "NoExecute", "timeAdded": crate::meta::now_rfc3339(),
        }));
    }
    if !stale && missing.is_empty() {
        return false;
    }
    let Some(taints) = taints_mut(node) else {
        return false;
    };
    taints.retain(|t| !managed(t) || wanted(t));
    taints.extend(missing);
    if taints.is_empty()
        && let Some(spec) = node.get_mut("spec").and_then(Value::as_object_mut)
    {
        spec.remove("taints");
    }
    true
}

/// What a kubelet reports about its machine when it registers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Registration {
    pub cpu: String,
    pub memory: String,
    pub ephemeral_storage: String,
    pub pods: String,
    pub internal_ip: String,
    pub kubelet_version: String,
    pub architecture: String,
    pub operating_system: String,
}

impl Default for Registration {
    fn default() -> Registration {
        Registration {
            cpu: "4".into(),
            memory: "16Gi".into(),
            ephemeral_storage: "100Gi".into(),
            pods: "110".into(),
            internal_ip: "10.0.0.10".into(),
            kubelet_version: crate::version::KUBE_GIT_VERSION.into(),
            architecture: "amd64".into(),
            operating_system: "linux".into(),
        }
    }
}

fn condition(kind: &str, status: &str, reason: &str, message: &str, now: &str) -> Value {
    json!({
        "type": kind, "status": status,
        "lastHeartbeatTime": now, "lastTransitionTime": now,
        "reason": reason, "message": message,
    })
}

impl Registration {
    /// The labels and status a kubelet writes into the Node it registers,
    /// added where `node` leaves them out (what the node already says wins).
    /// The node is not Ready yet: its runtime has not reported.
    pub(crate) fn register(&self, node: &mut Value, now: &str) {
        let name = crate::meta::name(node).to_string();
        let Some(root) = node.as_object_mut() else {
            return;
        };
        let meta = root.entry("metadata").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            let labels = meta.entry("labels").or_insert_with(|| json!({}));
            if let Some(labels) = labels.as_object_mut() {
                for (k, v) in [
                    ("kubernetes.io/hostname", name.as_str()),
                    ("kubernetes.io/os", &self.operating_system),
                    ("kubernetes.io/arch", &self.architecture),
                    ("beta.kubernetes.io/os", &self.operating_system),
                    ("beta.kubernetes.io/arch", &self.architecture),
                ] {
                    labels.entry(k).or_insert_with(|| json!(v));
                }
            }
        }
        let status = root.entry("status").or_insert_with(|| json!({}));
        let Some(status) = status.as_object_mut() else {
            return;
        };
        let capacity = json!({
            "cpu": self.cpu, "memory": self.memory,
            "ephemeral-storage": self.ephemeral_storage, "pods": self.pods,
            "hugepages-1Gi": "0", "hugepages-2Mi": "0",
        });
        let capacity = status.entry("capacity").or_insert(capacity).clone();
        // kube-apiserver's default: allocatable is the whole capacity.
        status.entry("allocatable").or_insert(capacity);
        status.entry("addresses").or_insert_with(|| {
            json!([
                {"type": "InternalIP", "address": self.internal_ip},
                {"type": "Hostname", "address": name},
            ])
        });
        let port = status
            .get("daemonEndpoints")
            .and_then(|d| d.pointer("/kubeletEndpoint/Port"));
        if port.and_then(Value::as_i64).unwrap_or(0) == 0 {
            status.insert(
                "daemonEndpoints".into(),
                json!({"kubeletEndpoint": {"Port": 10250}}),
            );
        }
        let info = status.entry("nodeInfo").or_insert_with(|| json!({}));
        if let Some(info) = info.as_object_mut() {
            fill(
                info,
                &[
                    ("machineID", &machine_id(&name)),
                    ("systemUUID", &machine_id(&name)),
                    ("bootID", &machine_id(&format!("{name}/boot"))),
                    ("kernelVersion", "6.1.0"),
                    ("osImage", "envtest"),
                    ("containerRuntimeVersion", "envtest://1.0.0"),
                    ("kubeletVersion", &self.kubelet_version),
                    ("kubeProxyVersion", &self.kubelet_version),
                    ("operatingSystem", &self.operating_system),
                    ("architecture", &self.architecture),
                ],
            );
        }
        if status
            .get("conditions")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
        {
            status.insert(
                "conditions".into(),
                json!([
                    condition(
                        "MemoryPressure",
                        "False",
                        "KubeletHasSufficientMemory",
                        "kubelet has sufficient memory available",
                        now
                    ),
                    condition(
                        "DiskPressure",
                        "False",
                        "KubeletHasNoDiskPressure",
                        "kubelet has no disk pressure",
                        now
                    ),
                    condition(
                        "PIDPressure",
                        "False",
                        "KubeletHasSufficientPID",
                        "kubelet has sufficient PID available",
                        now
                    ),
                    condition(
                        "Ready",
                        "False",
                        "KubeletNotReady",
                        "container runtime status check may not have completed yet",
                        now
                    ),
                ]),
            );
        }
    }
}

/// Empty-string fields (the zero values a create leaves) take `values`.
fn fill(map: &mut Map<String, Value>, values: &[(&str, &str)]) {
    for (k, v) in values {
        let entry = map.entry(*k).or_insert_with(|| json!(""));
        if entry.as_str().is_some_and(str::is_empty) {
            *entry = json!(v);
        }
    }
}

/// A stable 32-hex-digit id derived from the node's name.
fn machine_id(seed: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(seed.as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// A kubelet's heartbeat: the `Ready` condition set to `ready` (its
/// transition time moves only when the status does).
pub(crate) fn set_ready(node: &mut Value, ready: bool, now: &str) {
    let (status, reason, message) = if ready {
        ("True", "KubeletReady", "kubelet is posting ready status")
    } else {
        (
            "False",
            "KubeletNotReady",
            "container runtime status check may not have completed yet",
        )
    };
    let Some(conditions) = node
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    match conditions
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
    {
        Some(c) => {
            let transition = if c.get("status").and_then(Value::as_str) == Some(status) {
                c.get("lastTransitionTime").cloned().unwrap_or(json!(now))
            } else {
                json!(now)
            };
            *c = condition("Ready", status, reason, message, now);
            c["lastTransitionTime"] = transition;
        }
        None => conditions.push(condition("Ready", status, reason, message, now)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2026-01-01T00:00:00Z";

    fn taint_keys(node: &Value) -> Vec<String> {
        node.pointer("/spec/taints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|t| Some(t.get("key")?.as_str()?.to_string()))
            .collect()
    }

    #[test]
    fn a_new_node_is_tainted_not_ready_once() {
        let mut node = json!({"metadata": {"name": "n1"}});
        admit_create(&mut node);
        admit_create(&mut node);
        assert_eq!(taint_keys(&node), [NOT_READY]);
    }

    #[test]
    fn taints_follow_the_ready_condition_and_cordoning() {
        let mut node = json!({"metadata": {"name": "n1"}, "spec": {"taints": [
            {"key": "dedicated", "value": "db", "effect": "NoSchedule"}]}});
        Registration::default().register(&mut node, NOW);
        assert!(condition_taints(&mut node));
        assert_eq!(taint_keys(&node), ["dedicated", NOT_READY, NOT_READY]);
        assert_eq!(
            node.pointer("/spec/taints/2/effect"),
            Some(&json!("NoExecute"))
        );
        assert!(node.pointer("/spec/taints/2/timeAdded").is_some());
        assert!(
            !condition_taints(&mut node),
            "a second pass changes nothing"
        );
        set_ready(&mut node, true, NOW);
        node["spec"]["unschedulable"] = json!(true);
        assert!(condition_taints(&mut node));
        assert_eq!(taint_keys(&node), ["dedicated", UNSCHEDULABLE]);
        node["spec"]["unschedulable"] = json!(false);
        node["spec"]["taints"] = json!([no_schedule(UNSCHEDULABLE)]);
        assert!(condition_taints(&mut node));
        assert_eq!(node.pointer("/spec/taints"), None);
    }

    #[test]
    fn an_unknown_ready_condition_means_unreachable_for_eviction() {
        let mut node = json!({"metadata": {"name": "n1"}});
        Registration::default().register(&mut node, NOW);
        set_ready(&mut node, true, NOW);
        assert!(!condition_taints(&mut node));
        node["status"]["conditions"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .filter(|c| c["type"] == "Ready")
            .for_each(|c| c["status"] = json!("Unknown"));
        assert!(condition_taints(&mut node));
        let taints: Vec<(String, String)> = node["spec"]["taints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["key"].as_str().unwrap().into(),
                    t["effect"].as_str().unwrap().into(),
                )
            })
            .collect();
        assert_eq!(
            taints,
            [
                (UNREACHABLE.to_owned(), "NoSchedule".to_owned()),
                (UNREACHABLE.to_owned(), "NoExecute".to_owned()),
            ]
        );
        set_ready(&mut node, true, NOW);
        assert!(condition_taints(&mut node));
        assert_eq!(node.pointer("/spec/taints"), None);
    }

    #[test]
    fn registration_keeps_what_the_node_says() {
        let mut node = json!({"metadata": {"name": "n1", "labels": {"kubernetes.io/arch": "arm64"}},
            "status": {"capacity": {"cpu": "2"}, "nodeInfo": {"kernelVersion": ""}}});
        Registration::default().register(&mut node, NOW);
        assert_eq!(
            node.pointer("/metadata/labels/kubernetes.io~1arch"),
            Some(&json!("arm64"))
        );
        assert_eq!(node.pointer("/status/capacity"), Some(&json!({"cpu": "2"})));
        assert_eq!(
            node.pointer("/status/nodeInfo/kernelVersion"),
            Some(&json!("6.1.0"))
        );
        assert_eq!(
            node.pointer("/status/conditions/3/status"),
            Some(&json!("False"))
        );
        assert_eq!(
            node.pointer("/status/addresses/1/address"),
            Some(&json!("n1"))
        );
    }
}
