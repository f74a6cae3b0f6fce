//! `flowcontrol.apiserver.k8s.io/v1` as kube-apiserver v1.32 keeps it: the
//! mandatory and suggested FlowSchemas and PriorityLevelConfigurations, put
//! back when changed or deleted, every FlowSchema's `Dangling` condition,
//! and the validation of new ones. (envtest does not queue or reject
//! requests by this configuration.)

use std::time::Duration;

use serde_json::{Value, json};

use crate::kubectl_support::Kubectl;
use crate::server;

const WAIT: Duration = Duration::from_secs(10);

fn get(k: &Kubectl, kind: &str, name: &str) -> Value {
    serde_json::from_str(&k.ok(&["get", kind, name, "-o", "json"])).expect("JSON")
}

#[test]
fn the_bootstrap_configuration_is_there_and_kept() {
    let k = Kubectl::new(&server::shared().kubeconfig);
    let rows = k.table(&["get", "flowschemas"]);
    assert_eq!(
        rows[0],
        [
            "NAME",
            "PRIORITYLEVEL",
            "MATCHINGPRECEDENCE",
            "DISTINGUISHERMETHOD",
            "AGE",
            "MISSINGPL"
        ]
    );
    // Printed by matching precedence, as kubectl shows them on a cluster.
    let names: Vec<&str> = rows[1..]
        .iter()
        .map(|r| r[0].as_str())
        .filter(|n| !n.starts_with("fc-"))
        .collect();
    assert_eq!(
        names,
        [
            "exempt",
            "probes",
            "system-leader-election",
            "endpoint-controller",
            "workload-leader-election",
            "system-node-high",
            "system-nodes",
            "kube-controller-manager",
            "kube-scheduler",
            "kube-system-service-accounts",
            "service-accounts",
            "global-default",
            "catch-all",
        ],
        "{rows:?}"
    );
    assert_eq!(
        rows[1],
        [
            "exempt",
            "exempt",
            "1",
            "<none>",
            rows[1][4].as_str(),
            "False"
        ]
    );

    let levels = k.ok(&["get", "prioritylevelconfigurations", "--no-headers"]);
    let global = levels
        .lines()
        .find(|l| l.starts_with("global-default "))
        .unwrap_or_else(|| panic!("{levels}"));
    assert_eq!(
        global.split_whitespace().collect::<Vec<_>>()[..6],
        ["global-default", "Limited", "20", "128", "6", "50"]
    );
    let exempt = get(&k, "prioritylevelconfiguration", "exempt");
    assert_eq!(
        exempt["spec"],
        json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}})
    );
    let schema = get(&k, "flowschema", "global-default");
    let dangling = &schema["status"]["conditions"][0];
    assert_eq!(
        (&dangling["type"], &dangling["status"], &dangling["reason"]),
        (&json!("Dangling"), &json!("False"), &json!("Found"))
    );
    assert_eq!(
        dangling["message"],
        "This FlowSchema references the PriorityLevelConfiguration object named \"global-default\" and it exists"
    );

    // A deleted suggested object comes back; a mandatory one cannot be changed.
    k.ok(&["delete", "flowschema", "probes"]);
    k.eventually(&["get", "flowschema", "probes"], WAIT, |r| r.success());
    let changed = k.fails(&[
        "patch",
        "flowschema",
        "catch-all",
        "--type=merge",
        "-p",
        r#"{"spec":{"matchingPrecedence":9999}}"#,
    ]);
    assert!(
        changed.contains("spec of 'catch-all' must equal the fixed value"),
        "{changed}"
    );
}

#[test]
fn new_flow_schemas_are_validated_and_report_missing_priority_levels() {
    let k = Kubectl::new(&server::shared().kubeconfig);
    let name = server::unique_name("fc-orphan");
    let schema = json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": name},
        "spec": {"priorityLevelConfiguration": {"name": format!("{name}-level")},
            "rules": [{"subjects": [{"kind": "Group", "group": {"name": "operators"}}],
                "resourceRules": [{"verbs": ["list"], "apiGroups": ["apps"], "resources": ["deployments"], "namespaces": ["*"]}]}]},
    });
    k.ok_stdin(&["create", "-f", "-"], &schema.to_string());
    assert_eq!(
        get(&k, "flowschema", &name)["spec"]["matchingPrecedence"],
        1000
    );
    k.eventually(&["get", "flowschema", &name, "--no-headers"], WAIT, |r| {
        r.stdout.trim_end().ends_with("True")
    });
    let level = json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": {"name": format!("{name}-level")},
        "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}},
    });
    k.ok_stdin(&["create", "-f", "-"], &level.to_string());
    let created = get(&k, "prioritylevelconfiguration", &format!("{name}-level"));
    assert_eq!(
        created["spec"]["limited"],
        json!({"nominalConcurrencyShares": 30, "lendablePercent": 0,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}})
    );
    k.eventually(&["get", "flowschema", &name, "--no-headers"], WAIT, |r| {
        r.stdout.trim_end().ends_with("False")
    });

    let bad = json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": format!("{name}-bad")},
        "spec": {"priorityLevelConfiguration": {"name": "global-default"}, "matchingPrecedence": 1,
            "rules": [{"subjects": [{"kind": "Robot"}], "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["healthz"]}]}]},
    });
    let err = k.fails_stdin(&["create", "-f", "-"], &bad.to_string());
    for expected in [
        "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1",
        "spec.rules[0].subjects[0].kind: Unsupported value: \"Robot\"",
        "spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: \"healthz\": must start with slash",
    ] {
        assert!(err.contains(expected), "{expected}\n{err}");
    }
}
