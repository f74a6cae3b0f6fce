//! `componentstatuses`: kube-apiserver answers them from health probes it
//! makes when asked, never from storage: the scheduler and the controller
//! manager on their loopback health ports and each etcd server. envtest's
//! store stands for etcd and its controllers for the controller manager;
//! the scheduler is healthy while the workload simulation schedules Pods,
//! and answers as an unreachable one does otherwise.
//!
//! The resource is deprecated (since v1.19), so every request of it carries
//! kube-apiserver's deprecation Warning (its row of the kinds table has it).

use serde_json::{Value, json};

/// Where kube-apiserver probes the scheduler.
const SCHEDULER_HEALTHZ: &str = "https://127.0.0.1:10259/healthz";

/// Whether `group`/`plural` is the resource.
pub(crate) fn is_component_statuses(group: &str, plural: &str) -> bool {
    group.is_empty() && plural == "componentstatuses"
}

/// One probed component, as the Go `ComponentStatus` type writes it.
fn status(name: &str, probe: Result<&str, String>) -> Value {
    let condition = match probe {
        Ok(message) => json!({"type": "Healthy", "status": "True", "message": message}),
        // An HTTP probe that cannot connect is a failure whose message is the error.
        Err(message) => json!({"type": "Healthy", "status": "False", "message": message}),
    };
    json!({
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": name, "creationTimestamp": null},
        "conditions": [condition],
    })
}

/// Every component, in the order `kubectl get componentstatuses` usually
/// shows them (kube-apiserver probes them concurrently, so its order varies).
pub(crate) fn all(scheduler_runs: bool) -> Vec<Value> {
    let scheduler = if scheduler_runs {
        Ok("ok")
    } else {
        let port = SCHEDULER_HEALTHZ
            .trim_start_matches("https://")
            .split('/')
            .next()
            .unwrap_or_default();
        Err(format!(
            "Get \"{SCHEDULER_HEALTHZ}\": dial tcp {port}: connect: connection refused"
        ))
    };
    vec![
        status("scheduler", scheduler),
        status("controller-manager", Ok("ok")),
        status("etcd-0", Ok("ok")),
    ]
}

/// The component named `name`, if there is one.
pub(crate) fn get(scheduler_runs: bool, name: &str) -> Option<Value> {
    all(scheduler_runs)
        .into_iter()
        .find(|c| c.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_are_healthy_unless_no_scheduler_runs() {
        let names: Vec<Value> = all(true)
            .iter()
            .map(|c| c["metadata"]["name"].clone())
            .collect();
        assert_eq!(names, ["scheduler", "controller-manager", "etcd-0"]);
        assert!(
            all(true).iter().all(|c| c["conditions"][0]
                == json!({"type": "Healthy", "status": "True", "message": "ok"}))
        );
        let scheduler = get(false, "scheduler").unwrap();
        assert_eq!(
            scheduler["conditions"][0]["message"],
            "Get \"https://127.0.0.1:10259/healthz\": dial tcp 127.0.0.1:10259: connect: connection refused"
        );
        assert_eq!(scheduler["conditions"][0]["status"], "False");
        assert!(get(true, "etcd-1").is_none());
    }
}
