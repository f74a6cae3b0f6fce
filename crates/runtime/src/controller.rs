//! Controllers: what triggers a reconcile ([`Controller`], built by a
//! controller's `setup` from its caches) and how the manager runs one (a
//! kube `Controller` per watched scope).
//!
//! Around each reconcile the manager waits until it may reconcile (caches
//! filled, leadership held), takes the object's latest version from the
//! cache, skips a reconcile that would read a status from before this
//! manager's last write of it, opens a `reconcile` span naming the
//! controller and the object, counts it in the metrics, and keeps the
//! per-object backoff of failures (forgotten when the object goes). It
//! reconciles at most `--max-concurrent-reconciles` objects at once and
//! every object again each `--sync-period-seconds`.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use kube::ResourceExt;
use kube::runtime::controller::{self, Action};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use tracing::Instrument;

use crate::Context;
use crate::cache::{ApiScope, Cacheable, Cached, Scope};
use crate::expectations::STATUS_RETRY;
use crate::metrics::Outcome;

/// What triggers the reconciles of a controller of `K`: changes of its own
/// cache ([`Cached::controller`]), of the children it owns
/// ([`Controller::owns`]) and of other objects mapped to it
/// ([`Controller::watches`]). A controller's `setup` returns it:
///
/// ```no_run
/// use k8s_openapi::api::apps::v1::Deployment;
/// use k8s_openapi::api::core::v1::{ConfigMap, Pod};
/// use kube::runtime::reflector::{ObjectRef, Store};
/// use kube::runtime::watcher;
/// use opctl_runtime::{Controller, Scope};
///
/// /// What the reconciles read.
/// struct Context {
///     manager: opctl_runtime::Context,
///     pods: Store<kube::core::PartialObjectMeta<Pod>>,
/// }
///
/// fn setup(scope: &Scope) -> (Controller<Deployment>, Context) {
///     let mine = watcher::Config::default().labels("app.kubernetes.io/managed-by=guestbook");
///     let pods = scope.cache_metadata::<Pod>(mine);
///     let settings = scope.cache::<ConfigMap>(watcher::Config::default());
///     let context = Context { manager: scope.context().clone(), pods: pods.store() };
///     let controller = scope
///         .cache::<Deployment>(watcher::Config::default().any_semantic())
///         .controller()
///         .owns(pods) // a changed Pod reconciles the Deployment owning it
///         .watches(settings, |config_map| {
///             // A changed ConfigMap reconciles the Deployment of its name.
///             let name = config_map.metadata.name.unwrap_or_default();
///             let namespace = config_map.metadata.namespace.unwrap_or_default();
///             Some(ObjectRef::new(&name).within(&namespace))
///         });
///     (controller, context)
/// }
/// ```
pub struct Controller<K: Cacheable> {
    inner: controller::Controller<K>,
}

impl<K: Cacheable> std::fmt::Debug for Controller<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("kind", &K::kind(&()))
            .finish_non_exhaustive()
    }
}

impl<K: Cacheable> Controller<K> {
    pub(crate) fn for_cache(cached: Cached<K>) -> Self {
        let store = cached.store();
        Self {
            inner: controller::Controller::for_stream(cached.applied(), store),
        }
    }

    /// Reconciles the owner of each object of `children` that changes or
    /// goes: the objects of `K` its ownerReferences name.
    #[must_use]
    pub fn owns<C: Cacheable>(self, children: Cached<C>) -> Self {
        Self {
            inner: self.inner.owns_stream(children.touched()),
        }
    }

    /// Reconciles the objects `mapper` names for each object of `others`
    /// that changes or goes.
    #[must_use]
    pub fn watches<C, I>(
        self,
        others: Cached<C>,
        mapper: impl Fn(C) -> I + Send + Sync + 'static,
    ) -> Self
    where
        C: Cacheable,
        I: IntoIterator<Item = ObjectRef<K>> + 'static,
        I::IntoIter: Send,
    {
        Self {
            inner: self.inner.watches_stream(others.touched(), mapper),
        }
    }

    /// Keeps `cache` current for the reconciles to read, without triggering
    /// any: a cache must be handed to the controller one way or another,
    /// which drives its watch.
    #[must_use]
    pub fn reads<C: Cacheable>(self, cache: Cached<C>) -> Self {
        self.watches(cache, |_| None)
    }

    /// The store of the objects this controller reconciles.
    pub fn store(&self) -> Store<K> {
        self.inner.store()
    }
}

/// A registered controller, started by the manager: it sets up its caches
/// at once (so that readiness knows them all) and returns what runs it.
pub(crate) type Task = Box<dyn FnOnce(&Context) -> BoxFuture<'static, ()> + Send>;

/// The task of the controller `name`: `setup` makes its [`Controller`] and
/// the context its reconciles get, for one scope; `reconcile` reconciles
/// one object.
pub(crate) fn task<K, C, S, R, Fut, E>(name: &'static str, setup: S, reconcile: R) -> Task
where
    K: Cacheable,
    K::Scope: ApiScope,
    S: Fn(&Scope) -> (Controller<K>, C) + Send + 'static,
    C: Send + Sync + 'static,
    R: Fn(Arc<K>, Arc<C>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    Box::new(move |context: &Context| {
        let namespaces = if K::Scope::NAMESPACED {
            context.scope.namespaces()
        } else {
            vec![None]
        };
        let settings = context.settings;
        let instances = i64::try_from(namespaces.len()).unwrap_or(i64::MAX);
        let limit = i64::from(settings.max_concurrent_reconciles).saturating_mul(instances);
        context.metrics.register_controller(name, limit);
        let runs: Vec<_> = namespaces
            .into_iter()
            .map(|namespace| {
                let scope = Scope::new(namespace, context.clone());
                let (controller, ctx) = setup(&scope);
                let reconciler = Reconciler {
                    name,
                    store: controller.store(),
                    reconcile: reconcile.clone(),
                    context: context.clone(),
                };
                let ctx = Arc::new(ctx);
                let erased: ErasedReconcile<K> = Arc::new(move |object| {
                    let run = reconciler.clone().run(object, ctx.clone());
                    run.map(|result| result.map_err(ReconcileError::new))
                        .boxed()
                });
                drive(name, controller, erased, context)
            })
            .collect();
        Box::pin(futures::future::join_all(runs).map(drop))
    })
}

/// A reconcile with its context, function and error type behind a pointer.
/// kube's controller is a stream of many layers, each of whose closures
/// names every type parameter of the function it is made in: instantiated
/// in [`task`], those names repeated the context, reconcile and error types
/// thousands of times (300 MB of debug strings for 15 controllers, and
/// as much compile time). Here it is instantiated per kind only.
type ErasedReconcile<K> =
    Arc<dyn Fn(Arc<K>) -> BoxFuture<'static, Result<Action, ReconcileError>> + Send + Sync>;

/// A reconcile's own error, behind a pointer (see [`ErasedReconcile`]):
/// displayed as the error itself, with the same sources.
struct ReconcileError(Box<dyn std::error::Error + Send + Sync>);

impl ReconcileError {
    fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(Box::new(error))
    }
}

impl std::fmt::Debug for ReconcileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.0, f)
    }
}

impl std::fmt::Display for ReconcileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for ReconcileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Runs kube's controller of one scope until the manager shuts down.
fn drive<K>(
    name: &'static str,
    controller: Controller<K>,
    reconcile: ErasedReconcile<K>,
    context: &Context,
) -> BoxFuture<'static, ()>
where
    K: Cacheable,
{
    let settings = context.settings;
    let failures = context.clone();
    let finished = context.clone();
    let config = controller::Config::default().concurrency(settings.max_concurrent_reconciles);
    controller
        .inner
        .with_config(config)
        .reconcile_all_on(ticks(settings.sync_period))
        .graceful_shutdown_on(context.shutdown.clone().wait_owned())
        .run(
            move |object, _: Arc<()>| reconcile(object),
            move |object, error, _| retry(name, &failures, &*object, error),
            Arc::new(()),
        )
        .for_each(move |result| {
            after(name, &finished, result);
            std::future::ready(())
        })
        .boxed()
}

/// Ticks every `period` (not at once): the periodic resync.
fn ticks(period: Duration) -> impl futures::Stream<Item = ()> + Send + 'static {
    futures::stream::unfold((), move |()| async move {
        tokio::time::sleep(period).await;
        Some(((), ()))
    })
}

/// Wraps a controller's reconcile function (see the module documentation).
struct Reconciler<K: Cacheable, R> {
    name: &'static str,
    store: Store<K>,
    reconcile: R,
    context: Context,
}

impl<K: Cacheable, R: Clone> Clone for Reconciler<K, R> {
    fn clone(&self) -> Self {
        Self {
            name: self.name,
            store: self.store.clone(),
            reconcile: self.reconcile.clone(),
            context: self.context.clone(),
        }
    }
}

impl<K, R> Reconciler<K, R>
where
    K: Cacheable,
{
    async fn run<C, Fut, E>(self, object: Arc<K>, ctx: Arc<C>) -> Result<Action, E>
    where
        R: Fn(Arc<K>, Arc<C>) -> Fut,
        Fut: Future<Output = Result<Action, E>>,
    {
        self.context.readiness.may_reconcile().await;
        let key = ObjectRef::from_obj(&*object);
        // Waiting for leadership can take long: the latest version counts.
        let erased = key.clone().erase();
        let Some(object) = self.store.get(&key) else {
            self.context.backoff.forget(&erased);
            return Ok(Action::await_change());
        };
        let version = object.resource_version();
        if self
            .context
            .status_writes
            .awaited(&erased, version.as_deref())
        {
            return Ok(Action::requeue(STATUS_RETRY));
        }
        let span = tracing::info_span!("reconcile", controller = self.name, object = %erased);
        let _worker = self.context.metrics.worker(self.name);
        let started = Instant::now();
        let result = (self.reconcile)(object, ctx).instrument(span).await;
        let outcome = match &result {
            Err(_) => Outcome::Error,
            Ok(action) if *action == Action::await_change() => Outcome::Success,
            Ok(action) if *action == Action::requeue(Duration::ZERO) => Outcome::Requeue,
            Ok(_) => Outcome::RequeueAfter,
        };
        self.context
            .metrics
            .observe(self.name, outcome, started.elapsed());
        if result.is_ok() {
            self.context.backoff.forget(&erased);
        }
        result
    }
}

/// After a failed reconcile: retry with the object's backoff.
fn retry<K: Cacheable>(
    name: &str,
    context: &Context,
    object: &K,
    error: &ReconcileError,
) -> Action {
    let key = ObjectRef::from_obj(object).erase();
    let delay = context.backoff.failed(&key);
    tracing::warn!(controller = name, object = %key, %error, ?delay, "reconcile failed; retrying");
    Action::requeue(delay)
}

type Finished<K> =
    Result<(ObjectRef<K>, Action), controller::Error<ReconcileError, watcher::Error>>;

/// After each reconcile (or attempt): an object gone before its turn loses
/// its backoff; watch failures are reported (the controller retries them).
fn after<K: Cacheable>(name: &str, context: &Context, result: Finished<K>) {
    match result {
        Ok((object, _)) => tracing::debug!(controller = name, %object, "reconciled"),
        // Reported by `retry`.
        Err(controller::Error::ReconcilerFailed(..)) => {}
        Err(controller::Error::ObjectNotFound(object)) => {
            tracing::debug!(controller = name, %object, "gone before its reconcile");
            context.backoff.forget(&object);
        }
        Err(controller::Error::QueueError(error)) => {
            tracing::warn!(controller = name, %error, "watch failed; retrying");
        }
        Err(controller::Error::RunnerError(error)) => {
            tracing::error!(controller = name, %error, "the controller's runner failed");
        }
    }
}
