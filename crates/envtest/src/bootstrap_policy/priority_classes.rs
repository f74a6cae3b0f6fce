//! The PriorityClasses kube-apiserver v1.32 writes at start
//! (`scheduling/bootstrap-system-priority-classes`), whose names it reserves.

use serde_json::{Value, json};

/// `system-cluster-critical` and `system-node-critical`, with kube-apiserver's
/// values and descriptions.
pub(crate) fn priority_classes() -> Vec<Value> {
    [
        (
            "system-cluster-critical",
            2_000_000_000,
            "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
        ),
        (
            "system-node-critical",
            2_000_001_000,
            "Used for system critical pods that must not be moved from their current node.",
        ),
    ]
    .into_iter()
    .map(|(name, value, description)| {
        json!({
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "description": description,
        })
    })
    .collect()
}

/// Names kube-apiserver reserves: a PriorityClass whose name starts with
/// `system-` must be one of these.
pub(crate) fn is_system_priority_class(name: &str) -> bool {
    matches!(name, "system-cluster-critical" | "system-node-critical")
}
