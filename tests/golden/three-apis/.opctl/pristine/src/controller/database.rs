//! The Database controller: reconciles `databases.zalando.org` objects.
//!
//! This file is yours: write what a Database means in [`apply`]. opctl
//! never overwrites it without `--force`.
//!
//! Cache first: a reconcile reads the Database, and whatever else it
//! needs, from the caches [`setup`] makes (the manager keeps them current
//! with watches), never from the API server, and writes only what differs:
//! reconciling an object that is already as it should be costs no request.
//! Give what you create for a Database an ownerReference to it
//! (`controller_owner_ref`): the garbage collector deletes it with the
//! Database, with no finalizer. (Cleanup outside the cluster needs one:
//! `opctl create api ... --finalizer` scaffolds it.)

use std::sync::Arc;

use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};

use database::api::zalando::v1::Database;
use database::api::zalando::v1::DatabaseStatus;
use database::manager::{self, Controller, Manager, Scope, conditions};

// What this controller may do; `opctl manifests` turns these lines into
// config/rbac/role.yaml.
// +opctl:rbac:groups=zalando.org,resources=databases,verbs=get;list;watch
// +opctl:rbac:groups=zalando.org,resources=databases/status,verbs=get;patch;update

/// The controller's name in logs and metrics.
const NAME: &str = "database";

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
    /// A namespaced object came without a namespace.
    #[error("the object has no namespace")]
    MissingNamespace,
}

/// Adds this controller to the manager (called from src/main.rs).
pub fn register(manager: Manager) -> Manager {
    manager.with_controller(NAME, setup, reconcile)
}

/// Sets up the controller for one watched scope: the caches reconciles read
/// and what triggers a reconcile. To own children, cache their metadata
/// and let their changes trigger their owner, for example Pods labelled as
/// this operator's:
///
/// ```ignore
/// let pods = scope.cache_metadata::<Pod>(watcher::Config::default().labels(SELECTOR));
/// let context = Context { pods: pods.store(), .. };   // reconciles read it
/// let controller = controller.owns(pods);
/// ```
///
/// and write them with `ctx.manager.apply_owned`, which skips a child whose
/// cached metadata shows it current. A reconcile that reads more of a
/// child than its metadata (a Pod's status, say) caches a projection:
/// `scope.cache_projected::<Pod, PodView>(..)`, with `PodView` a struct of
/// the metadata and the fields it reads (`manager::Projection`).
fn setup(scope: &Scope) -> (Controller<Database>, Context) {
    let config = watcher::Config::default().any_semantic();
    let objects = scope.cache::<Database>(config);
    let context = Context {
        manager: scope.context().clone(),
    };
    (objects.controller(), context)
}

/// Brings the cluster in line with one object, as cached: called on every
/// change of it (or of what [`setup`] watches for it), every sync period,
/// and after a failure (with backoff).
async fn reconcile(
    object: Arc<Database>, // as cached
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    if object.metadata.deletion_timestamp.is_some() {
        // Being deleted: what it owns goes with it.
        return Ok(Action::await_change());
    }
    let api = api_of(&object, &ctx)?;
    apply(&object, &api, &ctx).await
}

/// Where `object` is written.
fn api_of(
    object: &Database, // read for its namespace
    ctx: &Context,
) -> Result<Api<Database>, Error> {
    let namespace = object.namespace().ok_or(Error::MissingNamespace)?;
    Ok(Api::namespaced(ctx.manager.client.clone(), &namespace))
}

/// Makes the world match the object's spec, then reports it in its status
/// (written only when it changes).
async fn apply(
    object: &Database, // as cached
    api: &Api<Database>,
    ctx: &Context,
) -> Result<Action, Error> {
    // TODO: create or update what the object stands for here, for example
    // objects it owns, with `ctx.manager.apply_owned` (see [`setup`]).

    let status = status_for(object);
    let current = object.status.as_ref();
    let written = ctx
        .manager
        .apply_status_if_changed(api, object, current, &status)
        .await?;
    if written && !is_ready(object) {
        let note = format!("{} is up to date", object.name_any());
        ctx.manager
            .publish(
                &object.object_ref(&()),
                EventType::Normal,
                "Ready",
                "Reconcile",
                Some(note),
            )
            .await;
    }
    Ok(Action::await_change())
}

/// The status [`apply`] writes: Ready at the current generation.
fn status_for(obj: &Database) -> DatabaseStatus {
    let generation = obj.metadata.generation;
    let mut status = obj.status.clone().unwrap_or_default();
    status.observed_generation = generation;
    let ready = conditions::ready(true, "Reconciled", "up to date", generation);
    conditions::set(&mut status.conditions, ready);
    status
}

/// Whether the object's status already says Ready.
fn is_ready(obj: &Database) -> bool {
    let status = obj.status.as_ref();
    status.is_some_and(|s| conditions::is_true(&s.conditions, conditions::READY))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object_at(generation: i64) -> Database {
        let mut object = Database::new("test", Default::default());
        object.metadata.namespace = Some("default".to_owned());
        object.metadata.generation = Some(generation);
        object
    }

    #[test]
    fn the_status_reports_ready_at_the_observed_generation() {
        let status = status_for(&object_at(3));
        assert_eq!(status.observed_generation, Some(3));
        let ready = conditions::find(&status.conditions, conditions::READY);
        let ready = ready.expect("a Ready condition");
        assert_eq!(ready.status, "True");
        assert_eq!(ready.observed_generation, Some(3));
    }

    #[tokio::test]
    async fn an_up_to_date_status_is_left_alone() {
        let mut object = object_at(2);
        assert!(!is_ready(&object));
        object.status = Some(status_for(&object));
        assert!(is_ready(&object));
        // A client with no server behind it: any request would fail.
        let nowhere = kube::Config::new("http://127.0.0.1:1".parse().expect("a URL"));
        let client = kube::Client::try_from(nowhere).expect("a client");
        let scope = manager::WatchScope::AllNamespaces;
        let ctx = manager::Context::new(manager::PROJECT, client, scope);
        let api = Api::all(ctx.client.clone());
        let status = status_for(&object);
        let current = object.status.as_ref();
        let written = ctx.apply_status_if_changed(&api, &object, current, &status);
        let written = written.await.expect("no request, no error");
        assert!(!written, "nothing written");
    }

    #[test]
    fn a_new_generation_needs_a_new_status() {
        let mut object = object_at(2);
        object.status = Some(status_for(&object));
        object.metadata.generation = Some(3);
        assert_ne!(object.status, Some(status_for(&object)));
    }
}
