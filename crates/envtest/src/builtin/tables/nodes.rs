//! `kubectl get nodes` columns, as kube-apiserver's Node printer makes them
//! (the last five are `-o wide`'s).

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::column::{AGE, Column, NAME};
use crate::builtin::KindInfo;

const ADDRESSES_DESC: &str = "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).";

pub(super) fn columns(kind: &KindInfo) -> Option<Vec<Column>> {
    if (kind.group, kind.kind) != ("", "Node") {
        return None;
    }
    Some(vec![
        NAME,
        ("Status", "string", "", 0, "The status of the node"),
        ("Roles", "string", "", 0, "The roles of the node"),
        AGE,
        (
            "Version",
            "string",
            "",
            0,
            "Kubelet Version reported by the node.",
        ),
        ("Internal-IP", "string", "", 1, ADDRESSES_DESC),
        ("External-IP", "string", "", 1, ADDRESSES_DESC),
        (
            "OS-Image",
            "string",
            "",
            1,
            "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
        ),
        (
            "Kernel-Version",
            "string",
            "",
            1,
            "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
        ),
        (
            "Container-Runtime",
            "string",
            "",
            1,
            "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
        ),
    ])
}

pub(super) fn row(kind: &KindInfo, obj: &Value, name: Value, age: Value) -> Option<Vec<Value>> {
    if (kind.group, kind.kind) != ("", "Node") {
        return None;
    }
    let info = |field: &str| {
        let value = obj.pointer(&format!("/status/nodeInfo/{field}"));
        let value = value.and_then(Value::as_str).unwrap_or("");
        if value.is_empty() { "<unknown>" } else { value }.to_owned()
    };
    Some(vec![
        name,
        json!(status(obj)),
        json!(roles(obj)),
        age,
        json!(
            obj.pointer("/status/nodeInfo/kubeletVersion")
                .and_then(Value::as_str)
                .unwrap_or("")
        ),
        json!(address(obj, "InternalIP")),
        json!(address(obj, "ExternalIP")),
        json!(info("osImage")),
        json!(info("kernelVersion")),
        json!(info("containerRuntimeVersion")),
    ])
}

/// `Ready` or `NotReady` (from the Ready condition; `Unknown` without one),
/// then `SchedulingDisabled` for a cordoned Node.
fn status(node: &Value) -> String {
    let conditions = node.pointer("/status/conditions").and_then(Value::as_array);
    let ready = conditions
        .into_iter()
        .flatten()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"));
    let mut status = vec![match ready {
        Some(c) if c.get("status").and_then(Value::as_str) == Some("True") => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled");
    }
    status.join(",")
}

/// The roles its labels give: `node-role.kubernetes.io/<role>` and
/// `kubernetes.io/role=<role>`, sorted, or `<none>`.
fn roles(node: &Value) -> String {
    let labels = node.pointer("/metadata/labels").and_then(Value::as_object);
    let mut roles = BTreeSet::new();
    for (key, value) in labels.into_iter().flatten() {
        if let Some(role) = key.strip_prefix("node-role.kubernetes.io/") {
            if !role.is_empty() {
                roles.insert(role.to_owned());
            }
        } else if key == "kubernetes.io/role"
            && let Some(role) = value.as_str().filter(|r| !r.is_empty())
        {
            roles.insert(role.to_owned());
        }
    }
    if roles.is_empty() {
        "<none>".to_owned()
    } else {
        roles.into_iter().collect::<Vec<_>>().join(",")
    }
}

/// The first address of `type_`, or `<none>`.
fn address(node: &Value, type_: &str) -> String {
    let addresses = node.pointer("/status/addresses").and_then(Value::as_array);
    addresses
        .into_iter()
        .flatten()
        .find(|a| a.get("type").and_then(Value::as_str) == Some(type_))
        .and_then(|a| a.get("address").and_then(Value::as_str))
        .unwrap_or("<none>")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(node: Value) -> Vec<Value> {
        let kind = crate::builtin::find("", "nodes").expect("a built-in kind");
        row(kind, &node, json!("n"), json!("1m")).expect("a row")
    }

    #[test]
    fn a_ready_node_prints_as_kubectl_shows_it() {
        let node = json!({
            "metadata": {"labels": {"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/control-plane": ""}},
            "status": {
                "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
                "addresses": [{"type": "Hostname", "address": "n"}, {"type": "InternalIP", "address": "10.0.0.2"}],
                "nodeInfo": {"kubeletVersion": "v1.32.13", "osImage": "envtest", "kernelVersion": "", "containerRuntimeVersion": "envtest://1"},
            },
        });
        assert_eq!(
            cells(node),
            vec![
                json!("n"),
                json!("Ready"),
                json!("control-plane,worker"),
                json!("1m"),
                json!("v1.32.13"),
                json!("10.0.0.2"),
                json!("<none>"),
                json!("envtest"),
                json!("<unknown>"),
                json!("envtest://1"),
            ]
        );
    }

    #[test]
    fn a_cordoned_not_ready_node_says_both() {
        let node = json!({
            "metadata": {"labels": {"kubernetes.io/role": "edge"}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]},
        });
        let row = cells(node);
        assert_eq!(row[1], json!("NotReady,SchedulingDisabled"));
        assert_eq!(row[2], json!("edge"));
        let bare = cells(json!({}));
        assert_eq!(bare[1], json!("Unknown"));
        assert_eq!(bare[2], json!("<none>"));
    }
}
