//! `kubectl get componentstatuses` as kube-apiserver v1.32 answers it: made
//! from probes, read-only, with the deprecation Warning on every request. The
//! shared server runs no workload simulation, so its scheduler answers as a
//! scheduler that does not run.

use serde_json::Value;

use crate::kubectl_support::Kubectl;
use crate::server;

const WARNING: &str = "Warning: v1 ComponentStatus is deprecated in v1.19+";

#[test]
fn component_statuses_are_read_only_probes_with_a_deprecation_warning() {
    let k = Kubectl::new(&server::shared().kubeconfig);
    let run = k.run(&["get", "componentstatuses"]);
    assert!(run.success(), "{run:?}");
    assert!(run.stderr.contains(WARNING), "{}", run.stderr);
    let lines: Vec<Vec<&str>> = run
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0], ["NAME", "STATUS", "MESSAGE", "ERROR"]);
    assert_eq!(lines[1][..2], ["scheduler", "Unhealthy"], "{}", run.stdout);
    assert!(
        run.stdout.contains("Get \"https://127.0.0.1:10259/healthz\": dial tcp 127.0.0.1:10259: connect: connection refused"),
        "{}",
        run.stdout
    );
    assert_eq!(lines[2], ["controller-manager", "Healthy", "ok"]);
    assert_eq!(lines[3], ["etcd-0", "Healthy", "ok"]);

    let etcd: Value =
        serde_json::from_str(&k.ok(&["get", "cs", "etcd-0", "-o", "json"])).expect("JSON");
    assert_eq!(
        etcd,
        serde_json::json!({"apiVersion": "v1", "kind": "ComponentStatus",
            "metadata": {"name": "etcd-0", "creationTimestamp": null},
            "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]})
    );
    let raw: Value =
        serde_json::from_str(&k.ok(&["get", "--raw", "/api/v1/componentstatuses"])).expect("JSON");
    assert_eq!(raw["kind"], "ComponentStatusList");
    assert_eq!(raw["metadata"], serde_json::json!({}));
    assert_eq!(raw["items"].as_array().map(Vec::len), Some(3));

    let missing = k.fails(&["get", "cs", "etcd-1"]);
    assert!(
        missing.contains("componentstatuses \"etcd-1\" not found"),
        "{missing}"
    );
    let refused = k.fails(&["delete", "cs", "etcd-0"]);
    assert!(
        refused.contains("MethodNotAllowed") || refused.contains("not allowed"),
        "{refused}"
    );
}
