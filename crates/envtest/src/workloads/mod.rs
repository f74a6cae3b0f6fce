//! Workloads that move as on a cluster, without containers: simulated
//! Nodes and their kubelets, the default scheduler and a volume provisioner
//! (`Simulation`), and kube-controller-manager's workload controllers
//! (ReplicaSet and ReplicationController, Deployment, Job and its time to
//! live, StatefulSet, DaemonSet, CronJob), endpoint controllers (Endpoints,
//! EndpointSlice), the PersistentVolume binder, the node lifecycle, taint
//! eviction and Pod garbage collectors and the HorizontalPodAutoscaler
//! controller (without metrics), each as `Config::controllers` says.
//!
//! One task follows every change in the store and reconciles what the
//! change concerns, level-triggered: each part looks at the objects as
//! they are now and writes only what differs, so a change it caused comes
//! back as a no-op. Its writes go through the API steps a client's go
//! through (defaults, admission webhooks, validation, watches). Timed steps
//! (a container starting, becoming ready, exiting) are queued for later.

pub(crate) mod autoscaler;
pub(crate) mod client;
pub(crate) mod config;
pub(crate) mod cronjob;
pub(crate) mod daemonset;
pub(crate) mod deployment;
pub(crate) mod endpoints;
pub(crate) mod endpointslice;
pub(crate) mod job;
pub(crate) mod kubelet;
pub(crate) mod node_lifecycle;
pub(crate) mod owned_pods;
pub(crate) mod ownership;
pub(crate) mod replicaset;
pub(crate) mod revisions;
pub(crate) mod scheduler;
pub(crate) mod simulated_nodes;
pub(crate) mod statefulset;
pub(crate) mod template_hash;
pub(crate) mod ttl_after_finished;
pub(crate) mod volume_binding;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

pub use config::{NodeSpec, NodeTaint, Simulation, Taint, Timing};

use crate::app::App;
use crate::controller_selection::Controller;
use crate::meta;
use crate::store::{Event, WatchFilter, WatcherTx};
use client::{
    CRONJOBS, DAEMONSETS, DEPLOYMENTS, ENDPOINTS, ENDPOINTSLICES, JOBS, NODES,
    PERSISTENTVOLUMECLAIMS, PERSISTENTVOLUMES, PODS, REPLICASETS, REPLICATIONCONTROLLERS, SERVICES,
    STATEFULSETS,
};
use replicaset::Replicated;

/// The stores whose changes the controllers follow.
const FOLLOWED: [&str; 14] = [
    PODS,
    REPLICASETS,
    REPLICATIONCONTROLLERS,
    DEPLOYMENTS,
    JOBS,
    SERVICES,
    ENDPOINTS,
    ENDPOINTSLICES,
    PERSISTENTVOLUMECLAIMS,
    PERSISTENTVOLUMES,
    STATEFULSETS,
    DAEMONSETS,
    CRONJOBS,
    autoscaler::AUTOSCALERS,
];

/// What one reconcile looks at.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Key {
    /// The scheduler's pass over unbound Pods.
    Schedule,
    /// The kubelet's view of one Pod.
    Pod(String, String),
    /// A ReplicaSet's or ReplicationController's Pods.
    Replicas(Replicated, String, String),
    Deployment(String, String),
    Job(String, String),
    /// A finished Job's time to live.
    FinishedJob(String, String),
    StatefulSet(String, String),
    DaemonSet(String, String),
    CronJob(String, String),
    /// A HorizontalPodAutoscaler and its target's scale.
    Autoscaler(String, String),
    /// The Endpoints and EndpointSlices of a Service.
    Service(String, String),
    /// A PersistentVolumeClaim to bind (or provision for).
    Claim(String, String),
    /// A PersistentVolume whose claim may be gone.
    Volume(String),
    /// A Node's kubelet health, and what its condition and taints mean for its Pods.
    Node(String),
    /// The Pod garbage collector's pass over Pods of Nodes that are gone.
    Orphans,
    /// Lease renewal of every simulated Node.
    Heartbeat,
}

struct Engine {
    app: Arc<App>,
    sim: Simulation,
    due: BTreeSet<Key>,
    later: BTreeMap<Instant, Vec<Key>>,
    /// The earliest time each key is queued for in `later`.
    scheduled: HashMap<Key, Instant>,
    /// When the kubelet last wrote each Pod (by uid): the clock of its next step.
    kubelet_clock: HashMap<String, Instant>,
    /// The next Pod address of each Node's range.
    next_ip: HashMap<String, u32>,
    /// What was told once in an event: claims waiting for a first consumer,
    /// Jobs a CronJob did not make, bad schedules (by uid).
    announced: HashSet<String>,
    /// What the node lifecycle remembers between looks.
    lifecycle: node_lifecycle::Memory,
}

/// kube-controller-manager's controllers that run in this task.
const WORKLOAD_CONTROLLERS: [Controller; 15] = [
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
    Controller::NodeLifecycle,
    Controller::TaintEviction,
    Controller::PodGarbageCollector,
];

/// Registers the simulated Nodes, then starts the simulation and the
/// workload controllers. `None` when nothing of it runs.
pub(crate) async fn start(
    app: Arc<App>,
    sim: Simulation,
) -> anyhow::Result<Option<JoinHandle<()>>> {
    if sim.is_off()
        && !WORKLOAD_CONTROLLERS
            .iter()
            .any(|c| app.controllers.is_on(*c))
    {
        return Ok(None);
    }
    let (tx, mut rx) = mpsc::unbounded_channel::<Arc<Event>>();
    let since = app.store.current_rv();
    let sub = app.store.subscribe(
        WatchFilter::default(),
        Some(since),
        WatcherTx::Unbounded(tx),
    );
    if sub.is_err() {
        anyhow::bail!("the workload simulation cannot follow the store");
    }
    simulated_nodes::register_all(&app, &sim.nodes)
        .await
        .map_err(|e| anyhow::anyhow!("registering the simulated nodes: {}", e.message))?;
    if sim.provisioner {
        volume_binding::ensure_default_class(&app)
            .await
            .map_err(|e| anyhow::anyhow!("creating the default StorageClass: {}", e.message))?;
    }
    let mut engine = Engine {
        app,
        sim,
        due: BTreeSet::new(),
        later: BTreeMap::new(),
        scheduled: HashMap::new(),
        kubelet_clock: HashMap::new(),
        next_ip: HashMap::new(),
        announced: HashSet::new(),
        lifecycle: node_lifecycle::Memory::default(),
    };
    engine.seed();
    Ok(Some(tokio::spawn(async move {
        loop {
            engine.run_due().await;
            let wake = engine.later.keys().next().copied();
            let sleep = async {
                match wake {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                ev = rx.recv() => {
                    let Some(ev) = ev else { return };
                    engine.observe(&ev);
                    while let Ok(ev) = rx.try_recv() {
                        engine.observe(&ev);
                    }
                }
                () = sleep => {}
            }
            engine.promote_timers();
        }
    })))
}

impl Engine {
    fn on(&self, controller: Controller) -> bool {
        self.app.controllers.is_on(controller)
    }

    /// Everything that exists is looked at once, and the heartbeat starts.
    fn seed(&mut self) {
        for key in FOLLOWED {
            for obj in client::list(&self.app, key, None) {
                self.observe_object(key, &obj, None);
            }
        }
        self.due.insert(Key::Schedule);
        for node in client::list(&self.app, NODES, None) {
            self.due.insert(Key::Node(meta::name(&node).to_string()));
        }
        if self.on(Controller::PodGarbageCollector) {
            self.due.insert(Key::Orphans);
        }
        if !self.sim.nodes.is_empty() {
            self.after(self.sim.timing.lease_renew, Key::Heartbeat);
        }
    }

    /// Queues `key` for `delay` from now, unless it is queued for sooner already.
    fn after(&mut self, delay: Duration, key: Key) {
        let at = Instant::now() + delay.min(Duration::from_secs(86_400));
        if self.scheduled.get(&key).is_some_and(|t| *t <= at) {
            return;
        }
        self.scheduled.insert(key.clone(), at);
        self.later.entry(at).or_default().push(key);
    }

    fn promote_timers(&mut self) {
        let now = Instant::now();
        let later = self.later.split_off(&(now + Duration::from_nanos(1)));
        for (at, keys) in std::mem::replace(&mut self.later, later) {
            for key in keys {
                if self.scheduled.get(&key) == Some(&at) {
                    self.scheduled.remove(&key);
                }
                self.due.insert(key);
            }
        }
    }

    fn observe(&mut self, ev: &Event) {
        let key = &*ev.resource;
        if key == NODES {
            self.due.insert(Key::Schedule);
            if ev.kind == crate::store::EventType::Deleted {
                if self.on(Controller::PodGarbageCollector) {
                    self.after(self.sim.timing.pod_gc_quarantine, Key::Orphans);
                }
            } else {
                self.due.insert(Key::Node(ev.name.to_string()));
            }
            // Its kubelet may start, stop or post its Pods' readiness again.
            if self.sim.kubelet {
                for pod in node_lifecycle::pods_on(&self.app, &ev.name) {
                    let (ns, name) = (meta::namespace(&pod), meta::name(&pod));
                    self.due.insert(Key::Pod(ns.to_string(), name.to_string()));
                }
            }
            // Which Nodes a DaemonSet runs on may have changed.
            if self.on(Controller::DaemonSet) {
                for ds in client::list(&self.app, DAEMONSETS, None) {
                    let key = Key::DaemonSet(meta::namespace(&ds).into(), meta::name(&ds).into());
                    self.due.insert(key);
                }
            }
            return;
        }
        if FOLLOWED.contains(&key) {
            let obj = self
                .app
                .registry
                .load()
                .by_store_key(key)
                .map(|r| r.from_storage(&ev.object));
            if let Some(obj) = obj {
                let deleted = ev.kind == crate::store::EventType::Deleted;
                self.observe_object(key, &obj, Some(deleted));
            }
        }
    }

    /// Queues the reconciles a change of `obj` concerns.
    fn observe_object(&mut self, key: &str, obj: &Value, deleted: Option<bool>) {
        let ns = meta::namespace(obj).to_string();
        let name = meta::name(obj).to_string();
        let app = self.app.clone();
        let on = |c: Controller| app.controllers.is_on(c);
        if on(Controller::HorizontalPodAutoscaler)
            && [
                DEPLOYMENTS,
                REPLICASETS,
                STATEFULSETS,
                REPLICATIONCONTROLLERS,
            ]
            .contains(&key)
        {
            for hpa in autoscaler::autoscalers_of(&self.app, key, &ns, &name) {
                self.due.insert(Key::Autoscaler(ns.clone(), hpa));
            }
        }
        match key {
            PODS => {
                if deleted == Some(true) {
                    self.kubelet_clock.remove(meta::uid(obj));
                    self.due.insert(Key::Schedule);
                } else {
                    if self.sim.kubelet {
                        self.due.insert(Key::Pod(ns.clone(), name));
                    }
                    // A Pod bound to a Node that is gone waits for the Pod
                    // GC; one bound to a failed Node meets its lifecycle.
                    let node = client::str_at(obj, &["spec", "nodeName"]);
                    if !node.is_empty() {
                        match client::get(&self.app, NODES, "", node) {
                            None if on(Controller::PodGarbageCollector) => {
                                self.after(self.sim.timing.pod_gc_quarantine, Key::Orphans)
                            }
                            None => {}
                            Some(n)
                                if node_lifecycle::concerns_pods(&n)
                                    && (on(Controller::NodeLifecycle)
                                        || on(Controller::TaintEviction)) =>
                            {
                                self.due.insert(Key::Node(node.to_string()));
                            }
                            Some(_) => {}
                        }
                    }
                }
                if self.sim.scheduler {
                    self.due.insert(Key::Schedule);
                }
                if deleted != Some(true) && ownership::is_orphan(obj) {
                    let adopters = self.adopters(key, obj);
                    self.due.extend(adopters);
                }
                for which in [Replicated::ReplicaSet, Replicated::ReplicationController] {
                    if on(which.controller())
                        && let Some(owner) = client::controller_name(obj, which.kind())
                    {
                        let key = Key::Replicas(which, ns.clone(), owner.to_string());
                        self.due.insert(key);
                    }
                }
                if on(Controller::Job)
                    && let Some(job) = client::controller_name(obj, "Job")
                {
                    self.due.insert(Key::Job(ns.clone(), job.to_string()));
                }
                if on(Controller::DaemonSet)
                    && let Some(ds) = client::controller_name(obj, "DaemonSet")
                {
                    self.due.insert(Key::DaemonSet(ns.clone(), ds.to_string()));
                }
                if on(Controller::StatefulSet)
                    && let Some(set) = client::controller_name(obj, "StatefulSet")
                {
                    self.due
                        .insert(Key::StatefulSet(ns.clone(), set.to_string()));
                }
                if on(Controller::PersistentVolumeBinder) {
                    for claim in volume_binding::claims_of(obj) {
                        self.due.insert(Key::Claim(ns.clone(), claim));
                    }
                }
                // Any Service of the namespace may select it, or have selected it before.
                if on(Controller::Endpoints) || on(Controller::EndpointSlice) {
                    for svc in client::list(&self.app, SERVICES, Some(&ns)) {
                        if endpoints::selector(&svc).is_some() {
                            let name = meta::name(&svc).to_string();
                            self.due.insert(Key::Service(ns.clone(), name));
                        }
                    }
                }
            }
            SERVICES | ENDPOINTS if on(Controller::Endpoints) || on(Controller::EndpointSlice) => {
                self.due.insert(Key::Service(ns, name));
            }
            PERSISTENTVOLUMECLAIMS => {
                if on(Controller::PersistentVolumeBinder) {
                    let volume = client::str_at(obj, &["spec", "volumeName"]);
                    if deleted == Some(true) && !volume.is_empty() {
                        self.due.insert(Key::Volume(volume.to_string()));
                    } else if deleted != Some(true) {
                        self.due.insert(Key::Claim(ns.clone(), name.clone()));
                    }
                }
                // Pods mounting the claim start once it is bound.
                if self.sim.kubelet {
                    for pod in client::list(&self.app, PODS, Some(&ns)) {
                        if volume_binding::claims_of(&pod).contains(&name) {
                            let pod_name = meta::name(&pod).to_string();
                            self.due.insert(Key::Pod(ns.clone(), pod_name));
                        }
                    }
                }
            }
            PERSISTENTVOLUMES if on(Controller::PersistentVolumeBinder) => {
                if deleted != Some(true) {
                    self.due.insert(Key::Volume(name));
                }
                let claim = client::str_at(obj, &["spec", "claimRef", "name"]);
                let claim_ns = client::str_at(obj, &["spec", "claimRef", "namespace"]);
                if !claim.is_empty() {
                    self.due
                        .insert(Key::Claim(claim_ns.to_string(), claim.to_string()));
                }
            }
            ENDPOINTSLICES if on(Controller::EndpointSlice) => {
                if let Some(svc) = endpointslice::managed_for(obj) {
                    self.due.insert(Key::Service(ns, svc.to_string()));
                }
            }
            REPLICASETS => {
                if deleted != Some(true) && ownership::is_orphan(obj) {
                    let adopters = self.adopters(key, obj);
                    self.due.extend(adopters);
                }
                if on(Controller::Deployment)
                    && let Some(d) = client::controller_name(obj, "Deployment")
                {
                    self.due.insert(Key::Deployment(ns.clone(), d.to_string()));
                }
                if deleted != Some(true) && on(Controller::ReplicaSet) {
                    self.due
                        .insert(Key::Replicas(Replicated::ReplicaSet, ns, name));
                }
            }
            REPLICATIONCONTROLLERS
                if on(Controller::ReplicationController) && deleted != Some(true) =>
            {
                let which = Replicated::ReplicationController;
                self.due.insert(Key::Replicas(which, ns, name));
            }
            DEPLOYMENTS if on(Controller::Deployment) && deleted != Some(true) => {
                self.due.insert(Key::Deployment(ns, name));
            }
            JOBS => {
                if on(Controller::CronJob)
                    && let Some(cj) = client::controller_name(obj, "CronJob")
                {
                    self.due.insert(Key::CronJob(ns.clone(), cj.to_string()));
                }
                if deleted != Some(true) && on(Controller::TtlAfterFinished) {
                    self.due.insert(Key::FinishedJob(ns.clone(), name.clone()));
                }
                if deleted != Some(true) && on(Controller::Job) {
                    self.due.insert(Key::Job(ns, name));
                }
            }
            autoscaler::AUTOSCALERS
                if on(Controller::HorizontalPodAutoscaler) && deleted != Some(true) =>
            {
                self.due.insert(Key::Autoscaler(ns, name));
            }
            CRONJOBS if on(Controller::CronJob) && deleted != Some(true) => {
                self.due.insert(Key::CronJob(ns, name));
            }
            STATEFULSETS if on(Controller::StatefulSet) && deleted != Some(true) => {
                self.due.insert(Key::StatefulSet(ns, name));
            }
            DAEMONSETS if on(Controller::DaemonSet) && deleted != Some(true) => {
                self.due.insert(Key::DaemonSet(ns, name));
            }
            _ => {}
        }
    }

    async fn run_due(&mut self) {
        while let Some(key) = self.due.pop_first() {
            let requeue = match &key {
                Key::Schedule => {
                    if self.sim.scheduler {
                        report(scheduler::schedule_pending(&self.app).await, "scheduler");
                    }
                    None
                }
                Key::Pod(ns, name) => self.kubelet(ns, name).await,
                Key::Replicas(which, ns, name) => retry(
                    replicaset::reconcile(&self.app, *which, ns, name).await,
                    "replicaset controller",
                ),
                Key::Deployment(ns, name) => retry(
                    deployment::reconcile(&self.app, ns, name).await,
                    "deployment controller",
                ),
                Key::Job(ns, name) => {
                    retry(job::reconcile(&self.app, ns, name).await, "job controller")
                }
                Key::FinishedJob(ns, name) => retry(
                    ttl_after_finished::reconcile(&self.app, ns, name),
                    "ttl-after-finished controller",
                ),
                Key::StatefulSet(ns, name) => retry(
                    statefulset::reconcile(&self.app, ns, name).await,
                    "statefulset controller",
                ),
                Key::DaemonSet(ns, name) => retry(
                    daemonset::reconcile(&self.app, ns, name).await,
                    "daemonset controller",
                ),
                Key::CronJob(ns, name) => retry(
                    cronjob::reconcile(&self.app, ns, name, &mut self.announced).await,
                    "cronjob controller",
                ),
                Key::Autoscaler(ns, name) => retry(
                    autoscaler::reconcile(&self.app, ns, name, self.sim.timing.autoscaler_sync)
                        .await,
                    "horizontal-pod-autoscaler controller",
                ),
                Key::Service(ns, name) => {
                    let slices = match self.on(Controller::EndpointSlice) {
                        true => endpointslice::reconcile(&self.app, ns, name).await,
                        false => Ok(()),
                    };
                    let endpoints = match self.on(Controller::Endpoints) {
                        true => endpoints::reconcile(&self.app, ns, name).await,
                        false => Ok(()),
                    };
                    retry(slices.and(endpoints).map(|()| None), "endpoint controllers")
                }
                Key::Claim(ns, name) if self.on(Controller::PersistentVolumeBinder) => retry(
                    volume_binding::reconcile_claim(
                        &self.app,
                        ns,
                        name,
                        &mut self.announced,
                        self.sim.provisioner,
                    )
                    .await
                    .map(|()| None),
                    "persistentvolume controller",
                ),
                Key::Claim(..) => None,
                Key::Volume(name) if self.on(Controller::PersistentVolumeBinder) => retry(
                    volume_binding::reconcile_volume(&self.app, name)
                        .await
                        .map(|()| None),
                    "persistentvolume controller",
                ),
                Key::Volume(_) => None,
                Key::Node(name) => self.node(name).await,
                Key::Orphans if self.on(Controller::PodGarbageCollector) => retry(
                    node_lifecycle::collect_orphans(
                        &self.app,
                        self.sim.timing.pod_gc_quarantine,
                        &mut self.lifecycle,
                    )
                    .await,
                    "pod garbage collector",
                ),
                Key::Orphans => None,
                Key::Heartbeat => {
                    simulated_nodes::heartbeat(&self.app).await;
                    Some(self.sim.timing.lease_renew)
                }
            };
            if let Some(delay) = requeue {
                self.after(delay, key);
            }
        }
    }

    /// One look at a Node: its simulated kubelet's health, then the node
    /// lifecycle and taint eviction controllers; returns when to look again.
    async fn node(&mut self, name: &str) -> Option<Duration> {
        let node = client::get(&self.app, NODES, "", name)?;
        let mut next = None;
        if self.sim.kubelet && simulated_nodes::is_simulated(&node) {
            let health = node_lifecycle::kubelet_health(
                &self.app,
                &node,
                &self.sim.timing,
                &mut self.lifecycle,
            )
            .await;
            next = retry(health, "kubelet");
        }
        if self.on(Controller::NodeLifecycle) || self.on(Controller::TaintEviction) {
            let node = client::get(&self.app, NODES, "", name)?;
            let pods = node_lifecycle::reconcile(&self.app, &node, &mut self.lifecycle).await;
            let later = retry(pods, "node lifecycle controller");
            next = match (next, later) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        next
    }

    /// One look of the kubelet at a Pod; returns when to look again.
    async fn kubelet(&mut self, ns: &str, name: &str) -> Option<Duration> {
        let pod = client::get(&self.app, PODS, ns, name)?;
        let node_name = client::str_at(&pod, &["spec", "nodeName"]);
        if node_name.is_empty() {
            return None;
        }
        let node = client::get(&self.app, NODES, "", node_name)?;
        if !simulated_nodes::is_simulated(&node) {
            return None;
        }
        // A stopped kubelet does nothing; one that is not ready starts
        // nothing, but still stops the Pods deleted.
        match simulated_nodes::kubelet_mode(&node) {
            simulated_nodes::KubeletMode::Stopped => return None,
            simulated_nodes::KubeletMode::NotReady if !meta::is_deleting(&pod) => return None,
            _ => {}
        }
        if self.waits_for_volumes(&pod) {
            return None;
        }
        let uid = meta::uid(&pod).to_string();
        let now = Instant::now();
        let since = *self.kubelet_clock.entry(uid.clone()).or_insert(now);
        let (host_ip, cidr) = simulated_nodes::addresses(&node);
        let counter = self.next_ip.entry(node_name.to_string()).or_insert(0);
        let ip_index = *counter;
        let pod_ip = pod_address(&cidr, ip_index);
        let site = kubelet::Site {
            host_ip: &host_ip,
            pod_ip: &pod_ip,
        };
        let plan = match kubelet::plan(&pod, &self.sim.timing, now - since, &site) {
            kubelet::Plan::Idle => match kubelet::restated(&pod) {
                Some(status) => kubelet::Plan::Write {
                    status,
                    events: Vec::new(),
                },
                None => kubelet::Plan::Idle,
            },
            plan => plan,
        };
        match plan {
            kubelet::Plan::Idle => None,
            kubelet::Plan::After(d) => Some(d),
            kubelet::Plan::Remove => {
                report(remove_pod(&self.app, &pod), "kubelet");
                None
            }
            kubelet::Plan::Write { status, events } => {
                if client::str_at(&pod, &["status", "podIP"]).is_empty() {
                    *counter += 1;
                }
                let expected_uid = uid.clone();
                let written = client::modify_with_admission(
                    &self.app,
                    PODS,
                    ns,
                    name,
                    Some("status"),
                    client::KUBELET,
                    |p| {
                        if meta::uid(p) != expected_uid || meta::is_deleting(p) {
                            return false;
                        }
                        p["status"] = status.clone();
                        true
                    },
                )
                .await;
                report(written, "kubelet");
                for (kind, reason, message) in events {
                    crate::controllers::event_recorder::record_from_host(
                        &self.app,
                        client::KUBELET,
                        node_name,
                        crate::controllers::event_recorder::reference(&pod),
                        kind,
                        reason,
                        &message,
                    );
                }
                self.kubelet_clock.insert(uid, Instant::now());
                None
            }
        }
    }
}

impl Engine {
    /// The controllers of an orphan's namespace whose selector matches it:
    /// they may adopt it.
    fn adopters(&self, key: &str, obj: &Value) -> Vec<Key> {
        let ns = meta::namespace(obj);
        let mut out = Vec::new();
        let mut look = |owners: &str, controller: Controller, make: &dyn Fn(String) -> Key| {
            if !self.on(controller) {
                return;
            }
            for owner in client::list(&self.app, owners, Some(ns)) {
                let selector = match owners {
                    REPLICATIONCONTROLLERS => Replicated::ReplicationController.selector(&owner),
                    _ => ownership::selector_of(&owner),
                };
                if selector.is_some_and(|s| !s.is_empty() && s.matches_object(obj)) {
                    out.push(make(meta::name(&owner).to_string()));
                }
            }
        };
        let ns_owned = ns.to_string();
        match key {
            PODS => {
                look(REPLICASETS, Controller::ReplicaSet, &|n| {
                    Key::Replicas(Replicated::ReplicaSet, ns_owned.clone(), n)
                });
                look(
                    REPLICATIONCONTROLLERS,
                    Controller::ReplicationController,
                    &|n| Key::Replicas(Replicated::ReplicationController, ns_owned.clone(), n),
                );
                look(STATEFULSETS, Controller::StatefulSet, &|n| {
                    Key::StatefulSet(ns_owned.clone(), n)
                });
                look(DAEMONSETS, Controller::DaemonSet, &|n| {
                    Key::DaemonSet(ns_owned.clone(), n)
                });
                look(JOBS, Controller::Job, &|n| Key::Job(ns_owned.clone(), n));
            }
            REPLICASETS => look(DEPLOYMENTS, Controller::Deployment, &|n| {
                Key::Deployment(ns_owned.clone(), n)
            }),
            _ => {}
        }
        out
    }

    /// Whether a Pod not started yet mounts a claim that is not bound (the
    /// kubelet waits to mount its volumes; the claim's change wakes it).
    fn waits_for_volumes(&self, pod: &Value) -> bool {
        if meta::is_deleting(pod) || !client::str_at(pod, &["status", "podIP"]).is_empty() {
            return false;
        }
        volume_binding::claims_of(pod).iter().any(|c| {
            client::get(&self.app, PERSISTENTVOLUMECLAIMS, meta::namespace(pod), c)
                .is_none_or(|claim| !volume_binding::is_bound(&claim))
        })
    }
}

/// The `index`th address of a Node's Pod range (`10.244.1.0/24` → 10.244.1.2, …).
fn pod_address(cidr: &str, index: u32) -> String {
    let base = cidr.split('/').next().unwrap_or("10.244.0.0");
    let octets: Vec<&str> = base.split('.').collect();
    if octets.len() != 4 {
        return "10.244.0.2".to_string();
    }
    format!(
        "{}.{}.{}.{}",
        octets[0],
        octets[1],
        octets[2],
        2 + index % 253
    )
}

/// The kubelet's last word on a deleted Pod whose containers stopped: the
/// Pod goes (finalizers, if any, still hold it).
fn remove_pod(app: &App, pod: &Value) -> crate::error::ApiResult<()> {
    if !meta::finalizers(pod).is_empty() {
        return Ok(());
    }
    let res = client::resource(app, PODS)?;
    let pre = crate::store::Preconditions {
        resource_version: None,
        uid: Some(meta::uid(pod).to_string()),
    };
    match app
        .store
        .delete(&res.store_key, meta::namespace(pod), meta::name(pod), &pre)
    {
        Ok(_) | Err(crate::store::WriteError::NotFound) => Ok(()),
        Err(e) => Err(crate::error::ApiError::internal(format!(
            "removing Pod {}: {e:?}",
            meta::name(pod)
        ))),
    }
}

/// Failures of the simulation are logged; the next change retries.
fn report<T>(result: crate::error::ApiResult<T>, part: &str) {
    if let Err(e) = result {
        tracing::warn!(part, code = e.code, "{}", e.message);
    }
}

/// How long a controller waits before trying again after a refused write.
const RETRY_AFTER: Duration = Duration::from_millis(500);

/// A controller's requeue: as it asked, or soon after a failure (logged).
fn retry(result: crate::error::ApiResult<Option<Duration>>, part: &str) -> Option<Duration> {
    match result {
        Ok(requeue) => requeue,
        Err(e) => {
            report::<()>(Err(e), part);
            Some(RETRY_AFTER)
        }
    }
}
