//! The Deployment controller: reconciles `apps/v1` Deployment
//! objects, a kind this project does not define (no CRD, no status of ours).
//!
//! This file is yours: write what should happen for each Deployment in
//! [`reconcile`]. opctl never overwrites it without `--force`.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;

use simple_deployment::manager::{self, Manager};

// What this controller may do; `opctl manifests` turns these lines into
// config/rbac/role.yaml.
// +opctl:rbac:groups=apps,resources=deployments,verbs=get;list;watch

/// The controller's name in logs and metrics.
const NAME: &str = "deployment";

/// How often an object is reconciled when nothing changes.
const RESYNC: Duration = Duration::from_secs(300);

/// What every reconcile can use: the manager's context, plus anything you
/// add (fill it in [`run`]).
pub struct Context {
    /// Client, event recorder, metrics and backoff shared by the manager.
    pub manager: manager::Context,
}

/// Why a reconcile failed; it is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Kubernetes API call failed.
    #[error("Kubernetes API call failed: {0}")]
    Kube(#[from] kube::Error),
}

/// Adds this controller to the manager (called from src/main.rs).
pub fn register(manager: Manager) -> Manager {
    manager.with_controller(NAME, run)
}

/// Runs the controller until the manager shuts down.
pub async fn run(manager: manager::Context) {
    let shutdown = manager.shutdown.clone();
    let apis = manager.namespaced_apis::<Deployment>();
    let ctx = Arc::new(Context { manager });
    let controllers = apis.into_iter().map(|api| {
        Controller::new(api, watcher::Config::default().any_semantic())
            .graceful_shutdown_on(shutdown.clone().wait_owned())
            .run(reconcile, error_policy, ctx.clone())
            .for_each(|result| async move {
                match result {
                    Ok((object, _)) => tracing::debug!(%object, "reconciled"),
                    Err(err) => tracing::debug!(error = %err, "reconcile failed"),
                }
            })
    });
    futures::future::join_all(controllers).await;
}

/// Called on every change of an object and after each requeue.
async fn reconcile(
    object: Arc<Deployment>, // as last seen by the watch
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let _timer = ctx.manager.metrics.reconcile(NAME);
    if object.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    // TODO: act on the object here; return Err(Error::Kube(..)) when an API
    // call fails, to be retried with backoff.
    tracing::info!(
        name = %object.name_any(),
        namespace = object.namespace().unwrap_or_default(),
        "reconciling"
    );
    let key = ObjectRef::from_obj(&*object).to_string();
    ctx.manager.backoff.succeeded(&key);
    Ok(Action::requeue(RESYNC))
}

/// Decides when a failed reconcile is retried: exponential backoff per
/// object.
fn error_policy(
    object: Arc<Deployment>, // the object whose reconcile failed
    error: &Error,
    ctx: Arc<Context>,
) -> Action {
    let key = ObjectRef::from_obj(&*object).to_string();
    let delay = ctx.manager.backoff.failed(&key);
    tracing::warn!(object = %key, %error, ?delay, "reconcile failed; retrying");
    Action::requeue(delay)
}
