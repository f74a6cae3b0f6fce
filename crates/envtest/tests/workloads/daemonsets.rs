//! DaemonSets: one Pod per Node the template fits, revisions and rolling updates.
//! The shared server's second Node is tainted `dedicated=gpu:NoSchedule`.

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};

use crate::common::{client, get_json, kubectl, namespace, wait_for_field};

fn daemonset(name: &str, tolerate: bool, node_selector: Option<&str>) -> DaemonSet {
    let mut spec = json!({"containers": [{"name": "agent", "image": "fluent/fluent-bit:3.1"}]});
    if tolerate {
        spec["tolerations"] = json!([{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]);
    }
    if let Some(node) = node_selector {
        spec["nodeSelector"] = json!({"kubernetes.io/hostname": node});
    }
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }))
    .expect("DaemonSet")
}

fn rolled_out(ns: &str, name: &str) {
    let out = kubectl().ok(&[
        "rollout",
        "status",
        "-n",
        ns,
        &format!("daemonset/{name}"),
        "--timeout=60s",
    ]);
    assert!(out.contains("successfully rolled out"), "{out}");
}

fn nodes_of(pods: &[Value]) -> Vec<String> {
    let mut nodes: Vec<String> = pods
        .iter()
        .map(|p| p["spec"]["nodeName"].as_str().unwrap_or("").to_string())
        .collect();
    nodes.sort();
    nodes
}

async fn pods_of(api: &Api<Pod>, app: &str) -> Vec<Value> {
    api.list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .expect("list")
        .items
        .into_iter()
        .map(|p| serde_json::to_value(p).expect("json"))
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .collect()
}

#[tokio::test]
async fn a_daemonset_runs_one_pod_per_fitting_node() {
    let ns = namespace("ds");
    let client = client().await;
    let sets: Api<DaemonSet> = Api::namespaced(client.clone(), &ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    for ds in [
        daemonset("plain", false, None),
        daemonset("everywhere", true, None),
        daemonset("gpu-only", true, Some("envtest-node-2")),
    ] {
        sets.create(&PostParams::default(), &ds)
            .await
            .expect("create");
    }
    for name in ["plain", "everywhere", "gpu-only"] {
        rolled_out(&ns, name);
    }
    // The tainted Node only runs the Pods that tolerate its taint.
    assert_eq!(nodes_of(&pods_of(&pods, "plain").await), ["envtest-node-1"]);
    assert_eq!(
        nodes_of(&pods_of(&pods, "everywhere").await),
        ["envtest-node-1", "envtest-node-2"]
    );
    assert_eq!(
        nodes_of(&pods_of(&pods, "gpu-only").await),
        ["envtest-node-2"]
    );

    let ds = get_json(&["get", "-n", &ns, "daemonset", "everywhere"]);
    let status = &ds["status"];
    for field in [
        "desiredNumberScheduled",
        "currentNumberScheduled",
        "numberReady",
        "numberAvailable",
        "updatedNumberScheduled",
    ] {
        assert_eq!(status[field], 2, "{field}: {status}");
    }
    assert_eq!(status["numberMisscheduled"], 0);
    assert_eq!(status["observedGeneration"], 1);
    let history = get_json(&[
        "get",
        "-n",
        &ns,
        "controllerrevisions",
        "-l",
        "app=everywhere",
    ]);
    let revision = &history["items"][0];
    let hash = revision["metadata"]["labels"]["controller.kubernetes.io/hash"]
        .as_str()
        .expect("hash label")
        .to_string();
    assert_eq!(revision["metadata"]["name"], format!("everywhere-{hash}"));
    assert_eq!(revision["revision"], 1);
    let pod = &pods_of(&pods, "everywhere").await[0];
    assert_eq!(
        pod["metadata"]["labels"]["controller-revision-hash"],
        hash.as_str()
    );
    assert_eq!(pod["metadata"]["labels"]["pod-template-generation"], "1");
    assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "DaemonSet");
    let pinned = &pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"][0]["matchFields"][0];
    assert_eq!(pinned["key"], "metadata.name");
    assert_eq!(pinned["values"][0], pod["spec"]["nodeName"]);
    let tolerations = pod["spec"]["tolerations"].as_array().expect("tolerations");
    assert!(
        tolerations
            .iter()
            .any(|t| t["key"] == "node.kubernetes.io/unschedulable" && t["effect"] == "NoSchedule"),
        "{tolerations:?}"
    );

    // A new image rolls through both Nodes.
    let k = kubectl();
    k.ok(&[
        "set",
        "image",
        "-n",
        &ns,
        "daemonset/everywhere",
        "agent=fluent/fluent-bit:3.2",
    ]);
    rolled_out(&ns, "everywhere");
    wait_for_field(
        &ns,
        ("daemonset", "everywhere"),
        "{.status.updatedNumberScheduled}/{.status.numberAvailable}/{.status.observedGeneration}",
        |v| v == "2/2/2",
    );
    let now = pods_of(&pods, "everywhere").await;
    assert_eq!(nodes_of(&now), ["envtest-node-1", "envtest-node-2"]);
    assert!(
        now.iter().all(
            |p| p["spec"]["containers"][0]["image"] == "fluent/fluent-bit:3.2"
                && p["metadata"]["labels"]["pod-template-generation"] == "2"
                && p["metadata"]["labels"]["controller-revision-hash"] != hash.as_str()
        ),
        "{now:#?}"
    );
    let history = get_json(&[
        "get",
        "-n",
        &ns,
        "controllerrevisions",
        "-l",
        "app=everywhere",
    ]);
    assert_eq!(history["items"].as_array().map(Vec::len), Some(2));
}
