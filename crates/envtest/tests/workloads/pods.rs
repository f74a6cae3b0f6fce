//! Nodes, the scheduler and the kubelet.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

use crate::common::{
    FAILING_PODS, client, condition, get_json, kubectl, namespace, wait_for_field,
};

#[tokio::test]
async fn nodes_register_with_their_status_and_renew_leases() {
    let client = client().await;
    let nodes = Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("list nodes");
    let names: Vec<String> = nodes
        .items
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    assert_eq!(names, ["envtest-node-1", "envtest-node-2"]);
    let first = &nodes.items[0];
    let labels = first.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels["kubernetes.io/hostname"], "envtest-node-1");
    assert_eq!(labels["kubernetes.io/os"], "linux");
    assert!(
        labels.contains_key("topology.kubernetes.io/zone"),
        "{labels:?}"
    );
    let status = first.status.clone().expect("status");
    let ready = status
        .conditions
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .expect("Ready condition");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_deref()),
        ("True", Some("KubeletReady"))
    );
    let allocatable = status.allocatable.expect("allocatable");
    assert_eq!(allocatable["cpu"].0, "8");
    assert_eq!(allocatable["pods"].0, "110");
    assert!(
        status
            .node_info
            .expect("nodeInfo")
            .kubelet_version
            .starts_with("v1.32")
    );
    let taints = nodes.items[1]
        .spec
        .clone()
        .and_then(|s| s.taints)
        .unwrap_or_default();
    assert_eq!(taints.len(), 1, "{taints:?}");
    assert_eq!(
        (
            taints[0].key.as_str(),
            taints[0].value.as_deref(),
            taints[0].effect.as_str()
        ),
        ("dedicated", Some("gpu"), "NoSchedule")
    );

    let lease = Api::<Lease>::namespaced(client, "kube-node-lease")
        .get("envtest-node-1")
        .await
        .expect("the kubelet's lease");
    let spec = lease.spec.expect("spec");
    assert_eq!(spec.holder_identity.as_deref(), Some("envtest-node-1"));
    assert_eq!(spec.lease_duration_seconds, Some(40));
    assert!(spec.renew_time.is_some());
    let owner = &lease.metadata.owner_references.expect("owned by its Node")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Node", "envtest-node-1")
    );
}

const INIT_AND_PROBE: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  initContainers:
  - {name: setup, image: busybox:1.36, command: ["true"]}
  containers:
  - name: web
    image: nginx:1.27
    readinessProbe: {httpGet: {path: /, port: 80}}
"#;

#[test]
fn a_pod_runs_its_init_containers_then_becomes_ready() {
    let ns = namespace("kubelet");
    let k = kubectl();
    k.ok_stdin(&["apply", "-n", &ns, "-f", "-"], INIT_AND_PROBE);
    k.ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "pod/web",
        "--timeout=60s",
    ]);
    let pod = get_json(&["get", "-n", &ns, "pod", "web"]);
    assert_eq!(
        pod["spec"]["nodeName"], "envtest-node-1",
        "the tainted node is avoided"
    );
    assert_eq!(pod["status"]["phase"], "Running");
    for kind in [
        "PodReadyToStartContainers",
        "Initialized",
        "ContainersReady",
        "Ready",
        "PodScheduled",
    ] {
        let c = condition(&pod, kind).unwrap_or_else(|| panic!("{kind} missing: {pod}"));
        assert_eq!(c["status"], "True", "{kind}: {c}");
    }
    let init = &pod["status"]["initContainerStatuses"][0];
    assert_eq!(init["state"]["terminated"]["reason"], "Completed", "{init}");
    assert_eq!(init["state"]["terminated"]["exitCode"], 0);
    let web = &pod["status"]["containerStatuses"][0];
    assert_eq!(
        (
            web["ready"].clone(),
            web["started"].clone(),
            web["restartCount"].clone()
        ),
        (Value::Bool(true), Value::Bool(true), Value::from(0))
    );
    assert!(web["state"]["running"]["startedAt"].is_string(), "{web}");
    assert_eq!(web["image"], "docker.io/library/nginx:1.27");
    let ip = pod["status"]["podIP"].as_str().unwrap_or("");
    assert!(ip.starts_with("10.244.1."), "{ip}");
    assert_eq!(pod["status"]["podIPs"][0]["ip"], ip);
    assert_eq!(pod["status"]["hostIP"], "172.18.0.2");
}

#[test]
fn a_pod_no_node_fits_is_reported_unschedulable() {
    let ns = namespace("sched");
    let k = kubectl();
    let pod = r#"
apiVersion: v1
kind: Pod
metadata: {name: gpu}
spec:
  nodeSelector: {kubernetes.io/hostname: envtest-node-2}
  containers: [{name: c, image: busybox}]
"#;
    k.ok_stdin(&["apply", "-n", &ns, "-f", "-"], pod);
    k.ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=PodScheduled=false",
        "pod/gpu",
        "--timeout=60s",
    ]);
    let got = get_json(&["get", "-n", &ns, "pod", "gpu"]);
    let scheduled = condition(&got, "PodScheduled").expect("PodScheduled");
    assert_eq!(scheduled["reason"], "Unschedulable");
    assert_eq!(
        scheduled["message"],
        "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {dedicated: gpu}. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    );
    assert_eq!(got["status"]["phase"], "Pending");
    let events = get_json(&["get", "-n", &ns, "events"]);
    let failed = events["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|e| e["reason"] == "FailedScheduling")
        .unwrap_or_else(|| panic!("no FailedScheduling event: {events}"));
    assert_eq!(failed["type"], "Warning");
    assert_eq!(failed["involvedObject"]["name"], "gpu");

    // Tolerating the taint lets it run there; asking too much fits nowhere.
    let tolerant = r#"
apiVersion: v1
kind: Pod
metadata: {name: tolerant}
spec:
  nodeSelector: {kubernetes.io/hostname: envtest-node-2}
  tolerations: [{key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}]
  containers: [{name: c, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata: {name: greedy}
spec:
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "100"}}}]
"#;
    k.ok_stdin(&["apply", "-n", &ns, "-f", "-"], tolerant);
    k.ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "pod/tolerant",
        "--timeout=60s",
    ]);
    let tolerant = get_json(&["get", "-n", &ns, "pod", "tolerant"]);
    assert_eq!(tolerant["spec"]["nodeName"], "envtest-node-2");
    k.ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=PodScheduled=false",
        "pod/greedy",
        "--timeout=60s",
    ]);
    let greedy = get_json(&["get", "-n", &ns, "pod", "greedy"]);
    let message = condition(&greedy, "PodScheduled").expect("PodScheduled")["message"].clone();
    assert!(
        message
            .as_str()
            .unwrap_or("")
            .contains("1 Insufficient cpu"),
        "{message}"
    );
}

#[test]
fn images_ask_for_crash_loops_and_pull_failures() {
    let ns = namespace("failing");
    let k = kubectl();
    k.ok_stdin(&["apply", "-n", &ns, "-f", "-"], FAILING_PODS);
    wait_for_field(
        &ns,
        ("pod", "crashing"),
        "{.status.containerStatuses[0].state.waiting.reason}/{.status.containerStatuses[0].restartCount}",
        |v| v.starts_with("CrashLoopBackOff/"),
    );
    let crashing = get_json(&["get", "-n", &ns, "pod", "crashing"]);
    let status = &crashing["status"]["containerStatuses"][0];
    assert!(
        status["restartCount"].as_i64().unwrap_or(0) >= 1,
        "{status}"
    );
    assert_eq!(status["lastState"]["terminated"]["exitCode"], 1);
    assert_eq!(
        condition(&crashing, "Ready").expect("Ready")["status"],
        "False"
    );
    assert_eq!(crashing["status"]["phase"], "Running");

    wait_for_field(
        &ns,
        ("pod", "unpullable"),
        "{.status.containerStatuses[0].state.waiting.reason}",
        |v| v == "ImagePullBackOff",
    );
    let unpullable = get_json(&["get", "-n", &ns, "pod", "unpullable"]);
    assert_eq!(unpullable["status"]["phase"], "Pending");
    // What `kubectl get pods` shows in STATUS.
    let table = k.ok(&["get", "-n", &ns, "pods", "--no-headers"]);
    assert!(table.contains("ImagePullBackOff"), "{table}");
}

#[test]
fn a_deleted_pod_terminates_then_goes() {
    let ns = namespace("delete");
    let k = kubectl();
    k.ok(&["run", "-n", &ns, "doomed", "--image=nginx"]);
    k.ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "pod/doomed",
        "--timeout=60s",
    ]);
    // kubectl waits until the kubelet has stopped the containers and the Pod is gone.
    k.ok(&["delete", "-n", &ns, "pod", "doomed", "--timeout=60s"]);
    let gone = k.fails(&["get", "-n", &ns, "pod", "doomed"]);
    assert!(gone.contains("NotFound"), "{gone}");
}

/// What a watcher sees of one Pod, as on a cluster: created unassigned, then
/// bound by the scheduler's `pods/binding` (nodeName and PodScheduled in
/// one change, nothing of the kubelet yet), then the kubelet's steps.
#[tokio::test]
async fn watchers_see_the_binding_before_the_kubelet() {
    let ns = namespace("binding");
    let pods: Api<Pod> = Api::namespaced(client().await, &ns);
    let rv = pods
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("a list resourceVersion");
    let mut stream = pods
        .watch(&WatchParams::default().timeout(60), &rv)
        .await
        .expect("watch")
        .boxed();
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "watched"},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
    }))
    .expect("Pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("create");
    let mut seen: Vec<(String, Value)> = Vec::new();
    while let Some(event) = stream.try_next().await.expect("watch event") {
        let (kind, pod) = match event {
            WatchEvent::Added(p) => ("ADDED", p),
            WatchEvent::Modified(p) => ("MODIFIED", p),
            _ => continue,
        };
        let pod = serde_json::to_value(pod).expect("json");
        let running = pod["status"]["phase"] == "Running";
        seen.push((kind.to_string(), pod));
        if running {
            break;
        }
    }
    let steps: Vec<String> = seen
        .iter()
        .map(|(kind, p)| {
            format!(
                "{kind} node={} hostIP={}",
                p["spec"]["nodeName"], p["status"]["hostIP"]
            )
        })
        .collect();
    assert!(seen.len() >= 3, "{steps:#?}");
    let (kind, created) = &seen[0];
    assert_eq!(kind, "ADDED");
    assert!(created["spec"]["nodeName"].is_null(), "{created}");
    assert_eq!(created["status"]["phase"], "Pending");
    let (kind, bound) = &seen[1];
    assert_eq!(kind, "MODIFIED", "{steps:#?}");
    assert_eq!(bound["spec"]["nodeName"], "envtest-node-1", "{steps:#?}");
    assert!(bound["status"]["hostIP"].is_null(), "{steps:#?}");
    let scheduled = condition(bound, "PodScheduled").expect("PodScheduled");
    assert_eq!(scheduled["status"], "True");
    assert_eq!(
        bound["status"]["conditions"].as_array().map(Vec::len),
        Some(1),
        "{bound}"
    );
    assert!(
        seen[2..]
            .iter()
            .all(|(_, p)| p["spec"]["nodeName"] == "envtest-node-1"),
        "{steps:#?}"
    );
    let events = get_json(&[
        "get",
        "-n",
        &ns,
        "events",
        "--field-selector",
        "reason=Scheduled",
    ]);
    assert_eq!(
        events["items"][0]["message"],
        format!("Successfully assigned {ns}/watched to envtest-node-1"),
        "{events}"
    );
}
