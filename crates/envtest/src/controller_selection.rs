//! Which of kube-controller-manager's controllers run, chosen as its own
//! `--controllers` flag chooses them (`cmd/controller-manager/app`'s
//! `IsControllerEnabled`): a comma-separated list whose entries are `*`
//! (every controller that is on by default), `NAME` (on) or `-NAME` (off),
//! the first entry naming a controller deciding for it; a controller no entry
//! names is on only if `*` is listed. An empty list runs none. Names are
//! kube-controller-manager v1.32's (`cmd/kube-controller-manager/names`),
//! and its older short aliases (`garbagecollector`, `podgc`, ...) are
//! accepted as it accepts them.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

/// A controller of kube-controller-manager that envtest simulates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Controller {
    /// `garbage-collector-controller`: deletes the dependents of deleted owners.
    GarbageCollector,
    /// `namespace-controller`: empties and finishes terminating Namespaces.
    Namespace,
    /// `serviceaccount-controller`: the `default` ServiceAccount of every Namespace.
    ServiceAccount,
    /// `serviceaccount-token-controller`: the tokens of ServiceAccount token Secrets.
    ServiceAccountToken,
    /// `root-ca-certificate-publisher-controller`: the `kube-root-ca.crt` ConfigMap of every Namespace.
    RootCaCertificatePublisher,
    /// `clusterrole-aggregation-controller`: the rules of aggregated ClusterRoles.
    ClusterRoleAggregation,
    /// `validatingadmissionpolicy-status-controller`: the type checks in ValidatingAdmissionPolicies' status.
    ValidatingAdmissionPolicyStatus,
    /// `disruption-controller`: PodDisruptionBudgets' status.
    Disruption,
    /// `resourcequota-controller`: ResourceQuotas' usage.
    ResourceQuota,
    /// `deployment-controller`: ReplicaSets of Deployments, rollouts.
    Deployment,
    /// `replicaset-controller`: Pods of ReplicaSets.
    ReplicaSet,
    /// `replicationcontroller-controller`: Pods of ReplicationControllers.
    ReplicationController,
    /// `statefulset-controller`: Pods and claims of StatefulSets.
    StatefulSet,
    /// `daemonset-controller`: a Pod of each DaemonSet on every eligible Node.
    DaemonSet,
    /// `job-controller`: Pods and completion of Jobs.
    Job,
    /// `cronjob-controller`: Jobs of CronJobs on their schedule.
    CronJob,
    /// `ttl-after-finished-controller`: deletes finished Jobs after their TTL.
    TtlAfterFinished,
    /// `horizontal-pod-autoscaler-controller`: HorizontalPodAutoscalers' status.
    HorizontalPodAutoscaler,
    /// `endpoints-controller`: Endpoints of Services.
    Endpoints,
    /// `endpointslice-controller`: EndpointSlices of Services.
    EndpointSlice,
    /// `persistentvolume-binder-controller`: binds claims to volumes.
    PersistentVolumeBinder,
    /// `persistentvolumeclaim-protection-controller`: the finalizer of claims in use.
    PersistentVolumeClaimProtection,
    /// `persistentvolume-protection-controller`: the finalizer of bound volumes.
    PersistentVolumeProtection,
    /// `node-lifecycle-controller`: Node conditions, taints and the Pods of failed Nodes.
    NodeLifecycle,
    /// `taint-eviction-controller`: deletes Pods that do not tolerate a `NoExecute` taint.
    TaintEviction,
    /// `pod-garbage-collector-controller`: deletes orphaned and terminated Pods.
    PodGarbageCollector,
}

impl Controller {
    /// Every simulated controller, in the order the documentation lists them.
    pub const ALL: [Controller; 26] = [
        Controller::GarbageCollector,
        Controller::Namespace,
        Controller::ServiceAccount,
        Controller::ServiceAccountToken,
        Controller::RootCaCertificatePublisher,
        Controller::ClusterRoleAggregation,
        Controller::ValidatingAdmissionPolicyStatus,
        Controller::Disruption,
        Controller::ResourceQuota,
        Controller::Deployment,
        Controller::ReplicaSet,
        Controller::ReplicationController,
        Controller::StatefulSet,
        Controller::DaemonSet,
        Controller::Job,
        Controller::CronJob,
        Controller::TtlAfterFinished,
        Controller::HorizontalPodAutoscaler,
        Controller::Endpoints,
        Controller::EndpointSlice,
        Controller::PersistentVolumeBinder,
        Controller::PersistentVolumeClaimProtection,
        Controller::PersistentVolumeProtection,
        Controller::NodeLifecycle,
        Controller::TaintEviction,
        Controller::PodGarbageCollector,
    ];

    /// kube-controller-manager's name for it.
    pub fn name(self) -> &'static str {
        self.names().0
    }

    /// The canonical name and the alias kube-controller-manager still accepts.
    fn names(self) -> (&'static str, Option<&'static str>) {
        use Controller::*;
        match self {
            GarbageCollector => ("garbage-collector-controller", Some("garbagecollector")),
            Namespace => ("namespace-controller", Some("namespace")),
            ServiceAccount => ("serviceaccount-controller", Some("serviceaccount")),
            ServiceAccountToken => (
                "serviceaccount-token-controller",
                Some("serviceaccount-token"),
            ),
            RootCaCertificatePublisher => (
                "root-ca-certificate-publisher-controller",
                Some("root-ca-cert-publisher"),
            ),
            ClusterRoleAggregation => (
                "clusterrole-aggregation-controller",
                Some("clusterrole-aggregation"),
            ),
            ValidatingAdmissionPolicyStatus => {
                ("validatingadmissionpolicy-status-controller", None)
            }
            Disruption => ("disruption-controller", Some("disruption")),
            ResourceQuota => ("resourcequota-controller", Some("resourcequota")),
            Deployment => ("deployment-controller", Some("deployment")),
            ReplicaSet => ("replicaset-controller", Some("replicaset")),
            ReplicationController => (
                "replicationcontroller-controller",
                Some("replicationcontroller"),
            ),
            StatefulSet => ("statefulset-controller", Some("statefulset")),
            DaemonSet => ("daemonset-controller", Some("daemonset")),
            Job => ("job-controller", Some("job")),
            CronJob => ("cronjob-controller", Some("cronjob")),
            TtlAfterFinished => ("ttl-after-finished-controller", Some("ttl-after-finished")),
            HorizontalPodAutoscaler => (
                "horizontal-pod-autoscaler-controller",
                Some("horizontalpodautoscaling"),
            ),
            Endpoints => ("endpoints-controller", Some("endpoint")),
            EndpointSlice => ("endpointslice-controller", Some("endpointslice")),
            PersistentVolumeBinder => (
                "persistentvolume-binder-controller",
                Some("persistentvolume-binder"),
            ),
            PersistentVolumeClaimProtection => (
                "persistentvolumeclaim-protection-controller",
                Some("pvc-protection"),
            ),
            PersistentVolumeProtection => (
                "persistentvolume-protection-controller",
                Some("pv-protection"),
            ),
            NodeLifecycle => ("node-lifecycle-controller", Some("nodelifecycle")),
            TaintEviction => ("taint-eviction-controller", None),
            PodGarbageCollector => ("pod-garbage-collector-controller", Some("podgc")),
        }
    }

    /// The controller a `--controllers` entry names (canonical name or alias).
    pub fn from_name(name: &str) -> Option<Controller> {
        Controller::ALL.into_iter().find(|c| {
            let (canonical, alias) = c.names();
            canonical == name || alias == Some(name)
        })
    }
}

impl fmt::Display for Controller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// kube-controller-manager v1.32's controllers that envtest does not
/// simulate, with their aliases: `--controllers` accepts them, as
/// kube-controller-manager does, and they do nothing.
const NOT_SIMULATED: &[(&str, Option<&str>)] = &[
    (
        "endpointslice-mirroring-controller",
        Some("endpointslicemirroring"),
    ),
    (
        "certificatesigningrequest-signing-controller",
        Some("csrsigning"),
    ),
    (
        "certificatesigningrequest-approving-controller",
        Some("csrapproving"),
    ),
    (
        "certificatesigningrequest-cleaner-controller",
        Some("csrcleaner"),
    ),
    ("ttl-controller", Some("ttl")),
    ("bootstrap-signer-controller", Some("bootstrapsigner")),
    ("token-cleaner-controller", Some("tokencleaner")),
    ("node-ipam-controller", Some("nodeipam")),
    ("service-lb-controller", Some("service")),
    ("node-route-controller", Some("route")),
    (
        "cloud-node-lifecycle-controller",
        Some("cloud-node-lifecycle"),
    ),
    (
        "persistentvolume-attach-detach-controller",
        Some("attachdetach"),
    ),
    (
        "persistentvolume-expander-controller",
        Some("persistentvolume-expander"),
    ),
    ("ephemeral-volume-controller", Some("ephemeral-volume")),
    (
        "storageversion-garbage-collector-controller",
        Some("storage-version-gc"),
    ),
    (
        "resourceclaim-controller",
        Some("resource-claim-controller"),
    ),
    (
        "legacy-serviceaccount-token-cleaner-controller",
        Some("legacy-service-account-token-cleaner"),
    ),
    ("service-cidr-controller", None),
    ("storage-version-migrator-controller", None),
    ("selinux-warning-controller", None),
    ("volumeattributesclass-protection-controller", None),
    (
        "kube-apiserver-serving-clustertrustbundle-publisher-controller",
        None,
    ),
];

/// Whether kube-controller-manager v1.32 knows `name` (simulated or not).
fn is_known(name: &str) -> bool {
    Controller::from_name(name).is_some()
        || NOT_SIMULATED
            .iter()
            .any(|(canonical, alias)| *canonical == name || *alias == Some(name))
}

/// Every name kube-controller-manager v1.32 lists, sorted as its `--help` sorts them.
pub(crate) fn known_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = Controller::ALL.iter().map(|c| c.name()).collect();
    names.extend(NOT_SIMULATED.iter().map(|(name, _)| *name));
    names.sort_unstable();
    names
}

/// The simulated controllers that run (`Config::controllers`, `opctl
/// envtest --controllers`). The default is kube-controller-manager's `*`:
/// all of them. Parse one with `"*,-garbage-collector-controller".parse()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Controllers {
    on: BTreeSet<Controller>,
}

impl Default for Controllers {
    fn default() -> Controllers {
        Controllers::all()
    }
}

impl Controllers {
    /// Every simulated controller (`*`).
    pub fn all() -> Controllers {
        Controllers {
            on: Controller::ALL.into_iter().collect(),
        }
    }

    /// None (`--controllers=`): with `--simulate none`, a bare API server.
    pub fn none() -> Controllers {
        Controllers {
            on: BTreeSet::new(),
        }
    }

    /// Exactly these.
    pub fn only(controllers: impl IntoIterator<Item = Controller>) -> Controllers {
        Controllers {
            on: controllers.into_iter().collect(),
        }
    }

    /// The controllers of the cluster the kube-apiserver transcripts were
    /// recorded on (`tests/fixtures/transcripts/README.md`).
    pub fn transcript_recording() -> Controllers {
        Controllers::only([
            Controller::GarbageCollector,
            Controller::Namespace,
            Controller::ServiceAccount,
            Controller::ServiceAccountToken,
            Controller::ClusterRoleAggregation,
        ])
    }

    /// Whether `controller` runs.
    pub fn is_on(&self, controller: Controller) -> bool {
        self.on.contains(&controller)
    }

    /// Whether no controller runs.
    pub fn is_empty(&self) -> bool {
        self.on.is_empty()
    }

    /// These plus `controller`.
    pub fn with(mut self, controller: Controller) -> Controllers {
        self.on.insert(controller);
        self
    }

    /// These without `controller`.
    pub fn without(mut self, controller: Controller) -> Controllers {
        self.on.remove(&controller);
        self
    }

    /// The running controllers, in [`Controller::ALL`]'s order.
    pub fn iter(&self) -> impl Iterator<Item = Controller> + '_ {
        Controller::ALL.into_iter().filter(|c| self.is_on(*c))
    }
}

impl FromStr for Controllers {
    type Err = String;

    /// kube-controller-manager's `--controllers` syntax; an unknown name is
    /// refused with the list of known ones.
    fn from_str(list: &str) -> Result<Controllers, String> {
        let entries: Vec<&str> = list
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .collect();
        for entry in &entries {
            let name = entry.strip_prefix('-').unwrap_or(entry);
            if *entry != "*" && !is_known(name) {
                return Err(format!(
                    "{name:?} is not in the list of known controllers: {}",
                    known_names().join(", ")
                ));
            }
        }
        let star = entries.contains(&"*");
        let on = Controller::ALL
            .into_iter()
            .filter(|c| {
                let (canonical, alias) = c.names();
                let names = |n: &str| n == canonical || Some(n) == alias;
                entries
                    .iter()
                    .find_map(|e| match e.strip_prefix('-') {
                        Some(off) if names(off) => Some(false),
                        None if names(e) => Some(true),
                        _ => None,
                    })
                    .unwrap_or(star)
            })
            .collect();
        Ok(Controllers { on })
    }
}

impl fmt::Display for Controllers {
    /// The canonical list that parses back to the same set (`*` for all).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Controllers::all() {
            return f.write_str("*");
        }
        let names: Vec<&str> = self.iter().map(Controller::name).collect();
        f.write_str(&names.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(list: &str) -> Controllers {
        list.parse().unwrap_or_else(|e| panic!("{list:?}: {e}"))
    }

    #[test]
    fn star_empty_and_names_follow_kube_controller_manager() {
        assert_eq!(parse("*"), Controllers::all());
        assert_eq!(parse(""), Controllers::none());
        assert_eq!(
            parse("garbage-collector-controller,namespace"),
            Controllers::only([Controller::GarbageCollector, Controller::Namespace])
        );
        // `-NAME` alone turns nothing on: without `*` nothing else runs.
        assert_eq!(parse("-job-controller"), Controllers::none());
        assert_eq!(
            parse("*,-job-controller,-podgc"),
            Controllers::all()
                .without(Controller::Job)
                .without(Controller::PodGarbageCollector)
        );
        // The first entry naming a controller decides.
        assert!(parse("job-controller,-job-controller").is_on(Controller::Job));
        assert!(!parse("-job,*,job-controller").is_on(Controller::Job));
        // Known to kube-controller-manager, not simulated: accepted, nothing runs.
        assert_eq!(parse("ttl-controller,csrsigning"), Controllers::none());
    }

    #[test]
    fn unknown_names_are_refused_with_the_known_ones() {
        let err = "*,-garbage-collecter".parse::<Controllers>().unwrap_err();
        assert!(
            err.starts_with("\"garbage-collecter\" is not in the list of known controllers: "),
            "{err}"
        );
        assert!(err.contains("garbage-collector-controller, horizontal-pod-autoscaler-controller"));
        assert!(!err.contains('\n'));
    }

    #[test]
    fn display_parses_back() {
        for set in [
            Controllers::all(),
            Controllers::none(),
            Controllers::transcript_recording(),
            Controllers::all().without(Controller::Deployment),
        ] {
            assert_eq!(parse(&set.to_string()), set);
        }
        assert_eq!(
            Controllers::transcript_recording().to_string(),
            "garbage-collector-controller,namespace-controller,serviceaccount-controller,serviceaccount-token-controller,clusterrole-aggregation-controller"
        );
    }

    #[test]
    fn every_name_and_alias_is_distinct() {
        let mut seen = BTreeSet::new();
        for c in Controller::ALL {
            let (canonical, alias) = c.names();
            assert!(seen.insert(canonical), "{canonical}");
            if let Some(a) = alias {
                assert!(seen.insert(a), "{a}");
            }
        }
        for (canonical, alias) in NOT_SIMULATED {
            assert!(seen.insert(canonical), "{canonical}");
            if let Some(a) = alias {
                assert!(seen.insert(a), "{a}");
            }
        }
    }
}
