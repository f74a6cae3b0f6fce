//! The controllers that keep a cluster's objects in order: kube-apiserver's
//! own (CRD names, conditions and serving, the aggregator's APIService
//! controllers, the API Priority and Fairness configuration, admission
//! webhook configurations) and, as [`selection`] chooses them,
//! kube-controller-manager's garbage collector, namespace, serviceaccount,
//! token, root-CA publisher, disruption, clusterrole-aggregation,
//! resourcequota, PersistentVolume(Claim) protection, node lifecycle
//! (taints) and ValidatingAdmissionPolicy status controllers; its workload
//! controllers run in `workloads`. They share one task
//! fed by an unbounded subscription to every change, so they react at once
//! and in order.

pub(crate) mod aggregation;
pub(crate) mod aggregator;
mod crds;
pub(crate) mod disruption;
pub(crate) mod event_recorder;
mod gc;
mod namespaces;
mod node_taints;
mod policy_status;
pub(crate) mod priority_and_fairness;
mod resource_quota;
mod root_ca;
mod sa_tokens;
mod storage_protection;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::api::WriteCtx;
use crate::api::update_steps::{Change, Fail, update_once, with_retries};
use crate::app::App;
use crate::controller_selection::Controller;
use crate::error::ApiResult;
use crate::registry::Resource;
use crate::store::{Event, WatchFilter, WatcherTx};

/// Manager names of the server's own writes, as on a real cluster.
pub(crate) use crate::api::{APISERVER, CONTROLLER_MANAGER};

struct Controllers {
    app: Arc<App>,
    gc: gc::GarbageCollector,
    /// Terminating namespaces whose content changed since they were last finalized.
    dirty_namespaces: std::collections::BTreeSet<String>,
    /// Namespaces being deleted.
    namespaces: namespaces::Lifecycle,
    /// How long a deleted namespace keeps its content (kube-controller-manager
    /// waits 5 s), and where the end of that wait is announced.
    namespace_grace: Duration,
    grace_passed: mpsc::UnboundedSender<String>,
    /// Terminating CRDs whose custom resources changed.
    dirty_crds: std::collections::BTreeSet<String>,
    /// A webhook configuration changed (e.g. the garbage collector deleted one).
    webhooks_changed: bool,
    /// A ClusterRole changed: aggregated ClusterRoles may need new rules.
    cluster_roles_changed: bool,
    /// A CRD changed: owner references to its kind may resolve now.
    crds_changed: bool,
    /// A CRD, APIService or Service changed: APIServices may need writing.
    apiservices_changed: bool,
    /// A FlowSchema or PriorityLevelConfiguration changed.
    flowcontrol_changed: bool,
    /// A ValidatingAdmissionPolicy changed: its status may lag its generation.
    policies_changed: bool,
    /// Namespaces whose PodDisruptionBudgets may need a new status.
    dirty_budgets: std::collections::BTreeSet<String>,
    /// Budgets told they select no Pod.
    told_no_pods: std::collections::HashSet<String>,
    /// ResourceQuotas to recalculate.
    quotas: resource_quota::Work,
    /// Claims and volumes whose protection finalizer may change.
    storage_protection: storage_protection::Work,
}

impl Controllers {
    fn handle(&mut self, ev: &Event) {
        if let Some(crd) = crds::on_event(&self.app, ev) {
            self.dirty_crds.insert(crd);
        }
        match namespaces::on_event(&self.app, ev, &mut self.namespaces) {
            Some(namespaces::Work::Finalize(ns)) => {
                self.dirty_namespaces.insert(ns);
            }
            Some(namespaces::Work::Wait(ns)) => {
                let tx = self.grace_passed.clone();
                let grace = self.namespace_grace;
                tokio::spawn(async move {
                    tokio::time::sleep(grace).await;
                    let _ = tx.send(ns);
                });
            }
            None => {}
        }
        let on = |c: Controller| self.app.controllers.is_on(c);
        if on(Controller::RootCaCertificatePublisher) {
            root_ca::on_event(&self.app, ev, |ns| self.namespaces.is_terminating(ns));
        }
        if on(Controller::GarbageCollector) {
            self.gc.on_event(&self.app, ev);
        }
        if on(Controller::NodeLifecycle) {
            node_taints::on_event(&self.app, ev);
        }
        if on(Controller::ServiceAccountToken) {
            sa_tokens::on_event(&self.app, ev);
        }
        if crate::api::admit::is_configuration_key(&ev.resource) {
            self.webhooks_changed = true;
        }
        if &*ev.resource == aggregation::KEY && on(Controller::ClusterRoleAggregation) {
            self.cluster_roles_changed = true;
        }
        if &*ev.resource == crds::CRD_KEY {
            self.crds_changed = true;
        }
        if aggregator::concerns(ev) {
            self.apiservices_changed = true;
        }
        if priority_and_fairness::concerns(ev) {
            self.flowcontrol_changed = true;
        }
        if policy_status::concerns(ev) && on(Controller::ValidatingAdmissionPolicyStatus) {
            self.policies_changed = true;
        }
        if on(Controller::ResourceQuota) {
            self.quotas.on_event(ev);
        }
        self.storage_protection.on_event(&self.app, ev);
        if on(Controller::Disruption)
            && let Some(ns) = disruption::namespace_to_sync(ev)
        {
            self.dirty_budgets.insert(ns.to_string());
        }
    }

    /// Work deferred to the end of a batch of changes, so that emptying a
    /// namespace of N objects costs one pass per batch instead of one per object.
    fn flush(&mut self) {
        for crd in std::mem::take(&mut self.dirty_crds) {
            crds::cleanup_by_name(&self.app, &crd);
        }
        for ns in std::mem::take(&mut self.dirty_namespaces) {
            namespaces::finalize(&self.app, &ns);
        }
        if std::mem::take(&mut self.webhooks_changed) {
            crate::api::admit::refresh_configurations(&self.app);
        }
        if std::mem::take(&mut self.cluster_roles_changed) {
            aggregation::aggregate_all(&self.app);
        }
        if std::mem::take(&mut self.crds_changed)
            && self.app.controllers.is_on(Controller::GarbageCollector)
        {
            self.gc.recheck_unresolved(&self.app);
        }
        if std::mem::take(&mut self.apiservices_changed) {
            aggregator::sync(&self.app);
        }
        if std::mem::take(&mut self.flowcontrol_changed) {
            priority_and_fairness::sync(&self.app);
        }
        if std::mem::take(&mut self.policies_changed) {
            policy_status::sync(&self.app);
        }
        for ns in std::mem::take(&mut self.dirty_budgets) {
            disruption::sync_namespace(&self.app, &ns, &mut self.told_no_pods);
        }
        self.quotas.flush(&self.app);
        self.storage_protection.flush(&self.app);
    }
}

/// Starts the controllers; they first reconcile what already exists. A
/// deleted namespace keeps its content for `namespace_grace`.
pub(crate) fn spawn(app: Arc<App>, namespace_grace: Duration) -> JoinHandle<()> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Arc<Event>>();
    let (grace_tx, mut grace_rx) = mpsc::unbounded_channel::<String>();
    let since = app.store.current_rv();
    let sub = app.store.subscribe(
        WatchFilter::default(),
        Some(since),
        WatcherTx::Unbounded(tx),
    );
    let mut ctl = Controllers {
        app: app.clone(),
        gc: gc::GarbageCollector::default(),
        dirty_namespaces: Default::default(),
        dirty_crds: Default::default(),
        namespaces: Default::default(),
        namespace_grace,
        grace_passed: grace_tx,
        webhooks_changed: false,
        cluster_roles_changed: false,
        crds_changed: false,
        apiservices_changed: false,
        flowcontrol_changed: false,
        policies_changed: false,
        dirty_budgets: Default::default(),
        told_no_pods: Default::default(),
        quotas: Default::default(),
        storage_protection: Default::default(),
    };
    crds::rebuild_registry(&app);
    let existing: Vec<Event> = app
        .store
        .all_objects()
        .into_iter()
        .map(|(res, obj)| Event {
            rv: 0,
            kind: crate::store::EventType::Added,
            resource: res,
            namespace: crate::meta::namespace(&obj).to_string(),
            name: crate::meta::name(&obj).to_string(),
            object: obj,
            prev: None,
        })
        .collect();
    for ev in &existing {
        ctl.gc.observe(ev);
    }
    for ev in &existing {
        ctl.handle(ev);
    }
    ctl.flush();
    tokio::spawn(async move {
        if sub.is_err() {
            return;
        }
        let start = tokio::time::Instant::now() + resource_quota::RESYNC;
        let mut quota_resync = tokio::time::interval_at(start, resource_quota::RESYNC);
        loop {
            tokio::select! {
                _ = quota_resync.tick() => {
                    if ctl.app.controllers.is_on(Controller::ResourceQuota) {
                        ctl.quotas.resync_all(&ctl.app);
                    }
                }
                ev = rx.recv() => {
                    let Some(ev) = ev else { return };
                    ctl.handle(&ev);
                    while let Ok(ev) = rx.try_recv() {
                        ctl.handle(&ev);
                    }
                }
                Some(ns) = grace_rx.recv() => {
                    if ctl.namespaces.grace_passed(&ns) {
                        ctl.dirty_namespaces.insert(ns);
                    }
                }
            }
            ctl.flush();
        }
    })
}

/// Rewrites a stored object with `edit` (retrying on races) as `manager`,
/// without the admission chain (no plugins, webhooks or policies): one
/// update attempt as `api::update_steps` makes it. `edit` returns false to
/// leave the object alone. The workload controllers' writes, which do go
/// through admission, use `workloads::client::modify_with_admission`.
pub(crate) fn modify_without_admission(
    app: &App,
    res: &Resource,
    ns: &str,
    name: &str,
    sub: Option<&str>,
    manager: &str,
    edit: impl Fn(&mut Value) -> bool,
) -> ApiResult<()> {
    let ctx = WriteCtx::internal(manager);
    let change = Change {
        res,
        ns,
        name,
        sub,
        ctx: &ctx,
        is_put: false,
        managed_done: false,
    };
    let result = with_retries(app, res, ns, name, |old| {
        let Some(old) = old else {
            return Err(Fail::Api(
                crate::api::read::get(app, res, ns, name)
                    .err()
                    .unwrap_or_else(|| {
                        crate::error::ApiError::not_found(&res.group, &res.plural, name)
                    }),
            ));
        };
        let mut obj = (*res.from_storage(&old)).clone();
        if !edit(&mut obj) {
            return Ok(crate::api::Written {
                code: 200,
                body: Arc::new(obj),
                warnings: Vec::new(),
            });
        }
        // The edit was made on what was just read: without a resourceVersion
        // a concurrent write makes it read and edit again, not fail.
        crate::meta::remove_meta(&mut obj, "resourceVersion");
        update_once(app, &change, obj, &[], &old)
    });
    match result {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// The served resource for a storage key.
pub(crate) fn resource_for(app: &App, key: &str) -> Option<Arc<Resource>> {
    app.registry.load().by_store_key(key)
}
