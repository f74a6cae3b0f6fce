//! What the workload simulation does: which parts run, which Nodes exist,
//! and how long each simulated step takes.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The parts of the simulation; each can be switched off on its own.
#[derive(Debug, Clone)]
pub struct Simulation {
    /// Simulated Nodes registered at start (their kubelets heartbeat and run Pods).
    pub nodes: Vec<NodeSpec>,
    /// Binds Pods without `spec.nodeName` to a fitting Node.
    pub scheduler: bool,
    /// Moves Pods on simulated Nodes through their lifecycle.
    pub kubelet: bool,
    /// A dynamic volume provisioner (as kind's or minikube's) with its
    /// default StorageClass `standard`: volumes for the claims of its
    /// classes. kube-controller-manager's controllers (workloads, endpoints,
    /// volume binding, ...) are not part of the simulation: see
    /// [`crate::Config::controllers`].
    pub provisioner: bool,
    /// How long the simulated steps take.
    pub timing: Timing,
}

impl Default for Simulation {
    fn default() -> Simulation {
        Simulation {
            nodes: NodeSpec::numbered(1),
            scheduler: true,
            kubelet: true,
            provisioner: true,
            timing: Timing::default(),
        }
    }
}

impl Simulation {
    /// Nothing simulated: no Node, no scheduler, no kubelet, no
    /// provisioner (Pods stay Pending). kube-controller-manager's
    /// controllers still run unless [`crate::Config::controllers`] says otherwise.
    pub fn off() -> Simulation {
        Simulation {
            nodes: Vec::new(),
            scheduler: false,
            kubelet: false,
            provisioner: false,
            timing: Timing::default(),
        }
    }

    /// Whether nothing is simulated.
    pub fn is_off(&self) -> bool {
        self.nodes.is_empty() && !self.scheduler && !self.kubelet && !self.provisioner
    }

    /// Switches parts on or off from a list such as `scheduler,kubelet`
    /// (`all`, `none`); Nodes are kept only when `nodes` is listed.
    pub fn select_parts(&mut self, parts: &str) -> Result<(), String> {
        let mut wanted = Parts::default();
        for part in parts.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part {
                "all" => wanted = Parts::all(),
                "none" => wanted = Parts::default(),
                "nodes" => wanted.nodes = true,
                "scheduler" => wanted.scheduler = true,
                "kubelet" => wanted.kubelet = true,
                "provisioner" => wanted.provisioner = true,
                "controllers" => {
                    return Err(
                        "--simulate: kube-controller-manager's controllers are chosen with --controllers (all by default; --controllers= for none)"
                            .to_string(),
                    );
                }
                other => {
                    return Err(format!(
                        "--simulate: unknown part {other:?}; use all, none or a list of nodes, scheduler, kubelet, provisioner"
                    ));
                }
            }
        }
        if !wanted.nodes {
            self.nodes.clear();
        }
        self.scheduler = wanted.scheduler;
        self.kubelet = wanted.kubelet;
        self.provisioner = wanted.provisioner;
        Ok(())
    }
}

#[derive(Default)]
struct Parts {
    nodes: bool,
    scheduler: bool,
    kubelet: bool,
    provisioner: bool,
}

impl Parts {
    fn all() -> Parts {
        Parts {
            nodes: true,
            scheduler: true,
            kubelet: true,
            provisioner: true,
        }
    }
}

/// How long the simulated steps take. Short by default so tests stay fast.
#[derive(Debug, Clone)]
pub struct Timing {
    /// From a Pod bound to a Node to its containers running (and each init container's run).
    pub start: Duration,
    /// From a container running to ready when it has a readiness probe.
    pub ready: Duration,
    /// How long a Job's containers run before exiting 0, and a crash-looping
    /// container before it exits 1.
    pub run: Duration,
    /// How long a deleted Pod's containers take to stop (never longer than its grace period).
    pub stop: Duration,
    /// How often each kubelet renews its Lease in `kube-node-lease`.
    pub lease_renew: Duration,
    /// How often the HorizontalPodAutoscaler controller looks at each
    /// autoscaler again (kube-controller-manager's sync period).
    pub autoscaler_sync: Duration,
    /// How long a Node's kubelet may post nothing before the node lifecycle
    /// controller marks the Node `Unknown` (50 s on a cluster).
    pub node_monitor_grace: Duration,
    /// How long a Pod bound to a Node that does not exist waits before the
    /// Pod garbage collector deletes it (40 s, as on a cluster).
    pub pod_gc_quarantine: Duration,
}

impl Default for Timing {
    fn default() -> Timing {
        Timing {
            start: Duration::from_millis(20),
            ready: Duration::from_millis(50),
            run: Duration::from_millis(100),
            stop: Duration::from_millis(20),
            lease_renew: Duration::from_secs(10),
            autoscaler_sync: Duration::from_secs(15),
            node_monitor_grace: Duration::from_millis(500),
            pod_gc_quarantine: Duration::from_secs(40),
        }
    }
}

/// One simulated Node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSpec {
    /// The Node's name.
    pub name: String,
    /// The Node's taints.
    pub taints: Vec<Taint>,
    /// `false`: the kubelet reports NotReady (and the Node is tainted `node.kubernetes.io/not-ready`).
    pub ready: bool,
    /// The CPU capacity (a quantity, e.g. `8`).
    pub cpu: String,
    /// The memory capacity (a quantity, e.g. `32Gi`).
    pub memory: String,
    /// How many Pods the Node takes.
    pub pods: u32,
}

impl NodeSpec {
    /// `count` Nodes named `envtest-node-1`… with the default capacity.
    pub fn numbered(count: usize) -> Vec<NodeSpec> {
        (1..=count)
            .map(|i| NodeSpec {
                name: format!("envtest-node-{i}"),
                taints: Vec::new(),
                ready: true,
                cpu: "8".to_string(),
                memory: "32Gi".to_string(),
                pods: 110,
            })
            .collect()
    }
}

/// A Node taint (`key[=value]:effect`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taint {
    /// The taint's key.
    pub key: String,
    /// The taint's value (may be empty).
    pub value: String,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

const EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];

impl FromStr for Taint {
    type Err = String;

    fn from_str(s: &str) -> Result<Taint, String> {
        let bad = || {
            format!(
                "{s:?} is not a taint: write KEY[=VALUE]:EFFECT with EFFECT one of {}",
                EFFECTS.join(", ")
            )
        };
        let (kv, effect) = s.rsplit_once(':').ok_or_else(bad)?;
        if !EFFECTS.contains(&effect) {
            return Err(bad());
        }
        let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
        if key.is_empty() {
            return Err(bad());
        }
        Ok(Taint {
            key: key.to_string(),
            value: value.to_string(),
            effect: effect.to_string(),
        })
    }
}

impl fmt::Display for Taint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.value.is_empty() {
            write!(f, "{}:{}", self.key, self.effect)
        } else {
            write!(f, "{}={}:{}", self.key, self.value, self.effect)
        }
    }
}

/// `NODE=KEY[=VALUE]:EFFECT`: a taint on one simulated Node (`--node-taint`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeTaint {
    /// The simulated Node's name.
    pub node: String,
    /// The taint to add.
    pub taint: Taint,
}

impl FromStr for NodeTaint {
    type Err = String;

    fn from_str(s: &str) -> Result<NodeTaint, String> {
        let (node, taint) = s.split_once('=').ok_or_else(|| {
            format!(
                "{s:?}: write NODE=KEY[=VALUE]:EFFECT, e.g. envtest-node-2=dedicated=gpu:NoSchedule"
            )
        })?;
        Ok(NodeTaint {
            node: node.to_string(),
            taint: taint.parse()?,
        })
    }
}

impl Simulation {
    /// Applies `--node-taint` and `--node-not-ready` to the Nodes, refusing names no Node has.
    pub fn adjust_nodes(
        &mut self,
        taints: &[NodeTaint],
        not_ready: &[String],
    ) -> Result<(), String> {
        let known: Vec<String> = self.nodes.iter().map(|n| n.name.clone()).collect();
        let find = |name: &str| -> Result<usize, String> {
            known.iter().position(|n| n == name).ok_or_else(|| {
                format!(
                    "no simulated node {name:?}: the nodes are {} (see --nodes)",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                )
            })
        };
        for t in taints {
            let i = find(&t.node)?;
            self.nodes[i].taints.push(t.taint.clone());
        }
        for name in not_ready {
            let i = find(name)?;
            self.nodes[i].ready = false;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taints_parse_with_and_without_values() {
        let t: Taint = "dedicated=gpu:NoSchedule".parse().unwrap();
        assert_eq!(
            (t.key.as_str(), t.value.as_str(), t.effect.as_str()),
            ("dedicated", "gpu", "NoSchedule")
        );
        let t: Taint = "example.com/maintenance:NoExecute".parse().unwrap();
        assert_eq!(t.value, "");
        assert_eq!(t.to_string(), "example.com/maintenance:NoExecute");
        assert!(
            "a=b:Sometimes"
                .parse::<Taint>()
                .unwrap_err()
                .contains("NoSchedule")
        );
        let nt: NodeTaint = "envtest-node-2=a=b:NoSchedule".parse().unwrap();
        assert_eq!(nt.node, "envtest-node-2");
        assert_eq!(nt.taint.to_string(), "a=b:NoSchedule");
    }

    #[test]
    fn parts_are_selected_by_name() {
        let mut sim = Simulation::default();
        sim.select_parts("scheduler,kubelet").unwrap();
        assert!(sim.nodes.is_empty() && sim.scheduler && sim.kubelet && !sim.provisioner);
        let mut sim = Simulation::default();
        sim.select_parts("none").unwrap();
        assert!(sim.is_off());
        assert!(
            Simulation::default()
                .select_parts("kublet")
                .unwrap_err()
                .contains("kublet")
        );
        assert!(
            Simulation::default()
                .select_parts("nodes,controllers")
                .unwrap_err()
                .contains("--controllers")
        );
    }

    #[test]
    fn node_adjustments_name_existing_nodes() {
        let mut sim = Simulation {
            nodes: NodeSpec::numbered(2),
            ..Simulation::default()
        };
        let taint: NodeTaint = "envtest-node-2=gpu:NoSchedule".parse().unwrap();
        sim.adjust_nodes(
            std::slice::from_ref(&taint),
            &["envtest-node-1".to_string()],
        )
        .unwrap();
        assert!(!sim.nodes[0].ready && sim.nodes[1].taints.len() == 1);
        let missing = NodeTaint {
            node: "envtest-node-3".into(),
            ..taint
        };
        assert!(
            sim.adjust_nodes(&[missing], &[])
                .unwrap_err()
                .contains("envtest-node-1, envtest-node-2")
        );
    }
}
