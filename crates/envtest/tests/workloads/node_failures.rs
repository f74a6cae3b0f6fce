//! A Node that fails, on a server of its own (the shared one's Nodes must
//! stay up): its kubelet stopped through the `envtest.opctl.dev/kubelet`
//! annotation, the Node going Unknown and tainted `unreachable`, its Pods
//! marked not Ready, the ones that tolerate it for a second evicted and
//! replaced on the other Node, all recovering when the kubelet comes back;
//! a kubelet reporting NotReady; and the Pod garbage collector taking the
//! Pods of a deleted Node.

use std::sync::OnceLock;
use std::time::Duration;

use opctl_envtest::{Config, NodeSpec, Simulation, Timing};
use serde_json::Value;

use crate::common::{WAIT, condition};
use crate::server::{self, Background};
use crate::support::kubectl::Kubectl;

fn server() -> &'static Background {
    static SERVER: OnceLock<Background> = OnceLock::new();
    SERVER.get_or_init(|| {
        let simulation = Simulation {
            nodes: NodeSpec::numbered(2),
            timing: Timing {
                node_monitor_grace: Duration::from_millis(300),
                pod_gc_quarantine: Duration::from_secs(1),
                ..Timing::default()
            },
            ..Simulation::default()
        };
        server::background(Config {
            simulation,
            ..Config::default()
        })
    })
}

fn kubectl() -> Kubectl {
    Kubectl::new(&server().kubeconfig)
}

fn get(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(&kubectl().ok(&all)).expect("kubectl prints JSON")
}

/// Polls `kubectl get ARGS -o json` until `done` holds; returns the object.
fn wait_for(what: &str, args: &[&str], done: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let obj = get(args);
        if done(&obj) {
            return obj;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what} not reached within {WAIT:?}: {obj:#}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn status_of<'a>(obj: &'a Value, kind: &str) -> &'a str {
    condition(obj, kind)
        .and_then(|c| c["status"].as_str())
        .unwrap_or("")
}

fn taints(node: &Value) -> Vec<String> {
    node["spec"]["taints"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            format!(
                "{}:{}",
                t["key"].as_str().unwrap_or(""),
                t["effect"].as_str().unwrap_or("")
            )
        })
        .collect()
}

/// Event reasons about `name` in `ns` (`ns` empty: cluster-scoped objects' events, in `default`).
fn event_reasons(ns: &str, name: &str) -> Vec<String> {
    let ns = if ns.is_empty() { "default" } else { ns };
    let selector = format!("involvedObject.name={name}");
    let list = get(&["get", "events", "-n", ns, "--field-selector", &selector]);
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| e["reason"].as_str().unwrap_or("").to_owned())
        .collect()
}

const PINNED: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: pinned}
spec:
  nodeSelector: {kubernetes.io/hostname: envtest-node-2}
  containers: [{name: app, image: nginx}]
"#;

const WORKLOAD: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      tolerations:
      - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 1}
      containers: [{name: app, image: nginx}]
"#;

#[test]
fn a_stopped_kubelet_makes_its_node_unknown_and_its_pods_move() {
    let k = kubectl();
    let ns = server::unique_name("node-down");
    k.ok(&["create", "namespace", &ns]);
    k.ok_stdin(&["apply", "-n", &ns, "-f", "-"], WORKLOAD);
    k.ok(&[
        "rollout",
        "status",
        "-n",
        &ns,
        "deployment/web",
        "--timeout=60s",
    ]);
    k.ok_stdin(&["apply", "-n", &ns, "-f", "-"], PINNED);
    k.ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "pod/pinned",
        "--timeout=60s",
    ]);
    let pods = get(&["get", "pods", "-n", &ns, "-l", "app=web"]);
    let on_second: Vec<String> = pods["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["spec"]["nodeName"] == "envtest-node-2")
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        on_second.len(),
        1,
        "the scheduler spreads the replicas: {pods:#}"
    );
    let moved = &on_second[0];

    // The machine goes away: its kubelet posts nothing more.
    k.ok(&[
        "annotate",
        "node",
        "envtest-node-2",
        "envtest.opctl.dev/kubelet=stopped",
    ]);
    let node = wait_for(
        "envtest-node-2 Unknown",
        &["get", "node", "envtest-node-2"],
        |n| status_of(n, "Ready") == "Unknown",
    );
    let ready = condition(&node, "Ready").unwrap();
    assert_eq!(ready["reason"], "NodeStatusUnknown");
    assert_eq!(ready["message"], "Kubelet stopped posting node status.");
    let node = wait_for(
        "the unreachable taints",
        &["get", "node", "envtest-node-2"],
        |n| taints(n).len() == 2,
    );
    assert_eq!(
        taints(&node),
        [
            "node.kubernetes.io/unreachable:NoSchedule",
            "node.kubernetes.io/unreachable:NoExecute"
        ]
    );
    assert!(
        node["spec"]["taints"][1]["timeAdded"].is_string(),
        "{node:#}"
    );
    assert!(event_reasons("", "envtest-node-2").contains(&"NodeNotReady".to_owned()));

    // Its Pods are not Ready; the one that tolerates the taint for 300 s
    // (the default toleration) stays, the one that tolerates it for 1 s goes.
    let pinned = wait_for(
        "pinned not Ready",
        &["get", "pod", "-n", &ns, "pinned"],
        |p| status_of(p, "Ready") == "False",
    );
    assert_eq!(status_of(&pinned, "ContainersReady"), "True", "{pinned:#}");
    assert!(event_reasons(&ns, "pinned").contains(&"NodeNotReady".to_owned()));
    let evicted = wait_for("the eviction", &["get", "pod", "-n", &ns, moved], |p| {
        p["metadata"]["deletionTimestamp"].is_string()
    });
    let disruption = condition(&evicted, "DisruptionTarget").expect("DisruptionTarget");
    assert_eq!(disruption["reason"], "DeletionByTaintManager");
    assert!(event_reasons(&ns, moved).contains(&"TaintManagerEviction".to_owned()));
    // Its replacement runs on the Node that is up; the evicted Pod stays
    // Terminating, as no kubelet confirms it stopped.
    k.ok(&[
        "rollout",
        "status",
        "-n",
        &ns,
        "deployment/web",
        "--timeout=60s",
    ]);
    let pods = get(&["get", "pods", "-n", &ns, "-l", "app=web"]);
    let running: Vec<&str> = pods["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .map(|p| p["spec"]["nodeName"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(running, ["envtest-node-1", "envtest-node-1"], "{pods:#}");
    assert!(get(&["get", "pod", "-n", &ns, moved])["metadata"]["deletionTimestamp"].is_string());

    // The kubelet comes back: Ready, untainted, the pinned Pod Ready again
    // and the evicted one gone.
    k.ok(&[
        "annotate",
        "node",
        "envtest-node-2",
        "envtest.opctl.dev/kubelet-",
    ]);
    wait_for(
        "envtest-node-2 Ready",
        &["get", "node", "envtest-node-2"],
        |n| status_of(n, "Ready") == "True" && taints(n).is_empty(),
    );
    wait_for(
        "pinned Ready again",
        &["get", "pod", "-n", &ns, "pinned"],
        |p| status_of(p, "Ready") == "True",
    );
    k.eventually(&["get", "pod", "-n", &ns, moved], WAIT, |r| {
        !r.success() && r.stderr.contains("NotFound")
    });
}

#[test]
fn a_kubelet_reporting_not_ready_taints_its_node_and_starts_nothing() {
    let k = kubectl();
    let name = server::unique_name("node-sick");
    // A third simulated Node, added while the server runs.
    let node = format!(
        r#"{{"apiVersion": "v1", "kind": "Node", "metadata": {{"name": "{name}",
            "annotations": {{"envtest.opctl.dev/simulated": "true", "envtest.opctl.dev/kubelet": "not-ready"}}}}}}"#
    );
    k.ok_stdin(&["create", "-f", "-"], &node);
    let node = wait_for("the NotReady taints", &["get", "node", &name], |n| {
        taints(n).len() == 2
    });
    let ready = condition(&node, "Ready").unwrap();
    assert_eq!(
        (ready["status"].as_str(), ready["reason"].as_str()),
        (Some("False"), Some("KubeletNotReady"))
    );
    assert_eq!(
        taints(&node),
        [
            "node.kubernetes.io/not-ready:NoSchedule",
            "node.kubernetes.io/not-ready:NoExecute"
        ]
    );
    // A Pod bound there is not started.
    let ns = server::unique_name("node-sick");
    k.ok(&["create", "namespace", &ns]);
    let pod = format!(
        r#"{{"apiVersion": "v1", "kind": "Pod", "metadata": {{"name": "waiting"}},
            "spec": {{"nodeName": "{name}", "containers": [{{"name": "app", "image": "nginx"}}]}}}}"#
    );
    k.ok_stdin(&["create", "-n", &ns, "-f", "-"], &pod);
    std::thread::sleep(Duration::from_millis(300));
    let waiting = get(&["get", "pod", "-n", &ns, "waiting"]);
    assert!(waiting["status"]["podIP"].is_null(), "{waiting:#}");
    // Well again, the kubelet starts it.
    k.ok(&[
        "annotate",
        "node",
        &name,
        "envtest.opctl.dev/kubelet=running",
        "--overwrite",
    ]);
    k.ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "pod/waiting",
        "--timeout=60s",
    ]);
    wait_for("the taints lifted", &["get", "node", &name], |n| {
        taints(n).is_empty()
    });
    k.ok(&["delete", "node", &name]);
}

#[test]
fn the_pods_of_a_deleted_node_are_collected() {
    let k = kubectl();
    let ns = server::unique_name("node-gone");
    k.ok(&["create", "namespace", &ns]);
    let pod = r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stranded"},
        "spec": {"nodeName": "no-such-node", "containers": [{"name": "app", "image": "nginx"}]}}"#;
    k.ok_stdin(&["create", "-n", &ns, "-f", "-"], pod);
    // Still there within the quarantine (1 s here, 40 s on a cluster) ...
    assert!(k.run(&["get", "pod", "-n", &ns, "stranded"]).success());
    // ... then force-deleted.
    k.eventually(&["get", "pod", "-n", &ns, "stranded"], WAIT, |r| {
        !r.success() && r.stderr.contains("NotFound")
    });
}
