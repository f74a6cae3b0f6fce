//! The shared server and its clients.

use std::sync::OnceLock;
use std::time::Duration;

use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};
use opctl_envtest::Config;
use opctl_envtest::{NodeSpec, NodeTaint, Simulation};
use serde_json::Value;

use crate::server::{self, Background};
use crate::support::kubectl::Kubectl;

pub const WAIT: Duration = Duration::from_secs(60);

/// Two Pods whose images ask the simulated kubelet for failures: one crash
/// loops (`crashing`), one is never pulled (`unpullable`).
pub const FAILING_PODS: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: crashing}
spec:
  containers: [{name: app, image: "example.com/app:envtest-crashloop"}]
---
apiVersion: v1
kind: Pod
metadata: {name: unpullable}
spec:
  containers: [{name: app, image: "example.com/envtest-image-pull-error:1"}]
"#;

/// Two simulated Nodes; the second one tainted.
pub fn shared() -> &'static Background {
    static SHARED: OnceLock<Background> = OnceLock::new();
    SHARED.get_or_init(|| {
        let mut simulation = Simulation {
            nodes: NodeSpec::numbered(2),
            ..Simulation::default()
        };
        let taint: NodeTaint = "envtest-node-2=dedicated=gpu:NoSchedule"
            .parse()
            .expect("taint");
        simulation.adjust_nodes(&[taint], &[]).expect("node exists");
        server::background(Config {
            simulation,
            ..Config::default()
        })
    })
}

pub fn kubectl() -> Kubectl {
    Kubectl::new(&shared().kubeconfig)
}

/// A fresh namespace through kubectl.
pub fn namespace(prefix: &str) -> String {
    let ns = server::unique_name(prefix);
    kubectl().ok(&["create", "namespace", &ns]);
    ns
}

pub async fn client() -> Client {
    let yaml = std::fs::read_to_string(&shared().kubeconfig).expect("kubeconfig");
    let kubeconfig = Kubeconfig::from_yaml(&yaml).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube-rs accepts the kubeconfig");
    Client::try_from(config).expect("client")
}

/// `kubectl get ... -o json`, parsed.
pub fn get_json(args: &[&str]) -> Value {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["-o", "json"]);
    let out = kubectl().ok(&all);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("kubectl {args:?}: not JSON ({e}): {out}"))
}

/// Waits (up to [`WAIT`]) until `kubectl get -n NS KIND NAME -o
/// jsonpath=PATH` prints what `done` accepts.
pub fn wait_for_field(
    ns: &str,
    (kind, name): (&str, &str),
    path: &str,
    done: impl Fn(&str) -> bool,
) {
    let jsonpath = format!("jsonpath={path}");
    kubectl().eventually(&["get", "-n", ns, kind, name, "-o", &jsonpath], WAIT, |r| {
        done(&r.stdout)
    });
}

/// The condition of `kind` in an object's status.
pub fn condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}
