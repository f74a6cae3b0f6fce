//! The Deployment controller: reconciles `apps/v1` Deployment
//! objects, a kind this project does not define (no CRD, no status of ours).
//!
//! This file is yours: write what should happen for each Deployment in
//! [`reconcile`]. opctl never overwrites it without `--force`.
//!
//! Cache first: a reconcile reads the Deployment, and whatever else it
//! needs, from the caches [`setup`] makes (the manager keeps them current
//! with watches), never from the API server, and writes only what differs.
//! Give what you create for a Deployment an ownerReference to it
//! (`controller_owner_ref`): the garbage collector deletes it with the
//! Deployment, with no finalizer.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::watcher;

use simple_deployment::manager::{self, Controller, Manager, Scope};

// What this controller may do; `opctl manifests` turns these lines into
// config/rbac/role.yaml.
// +opctl:rbac:groups=apps,resources=deployments,verbs=get;list;watch

/// The controller's name in logs and metrics.
const NAME: &str = "deployment";

/// What every reconcile can use: the manager's context, plus anything you
/// add in [`setup`] (the stores of more caches, settings).
pub struct Context {
    /// Client, events and shutdown shared by the manager.
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
    manager.with_controller(NAME, setup, reconcile)
}

/// Sets up the controller for one watched scope: the caches reconciles read
/// and what triggers a reconcile. To own children, cache their metadata
/// (`scope.cache_metadata`, or `scope.cache_projected` for the few fields
/// of them a reconcile reads: `manager::Projection`), keep its store in
/// the [`Context`] and pass the cache to `Controller::owns`.
fn setup(scope: &Scope) -> (Controller<Deployment>, Context) {
    let config = watcher::Config::default().any_semantic();
    let objects = scope.cache::<Deployment>(config);
    let context = Context {
        manager: scope.context().clone(),
    };
    (objects.controller(), context)
}

/// Called on every change of an object (as cached), every sync period, and
/// after a failure (with backoff).
async fn reconcile(
    object: Arc<Deployment>, // as cached
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    if object.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    // TODO: act on the object here; return Err(Error::Kube(..)) when an API
    // call fails, to be retried with backoff.
    tracing::info!(
        name = %object.name_any(),
        namespace = object.namespace().unwrap_or_default(),
        watching = %ctx.manager.scope,
        "reconciling"
    );
    Ok(Action::await_change())
}
