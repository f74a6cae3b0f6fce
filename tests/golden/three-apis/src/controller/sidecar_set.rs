//! The SidecarSet controller: reconciles `sidecarsets.apps.org` objects.
//!
//! This file is yours: write what a SidecarSet means in [`apply`] (and what
//! its deletion means in [`cleanup`]). opctl never overwrites it without
//! `--force`.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::EventType;
use kube::runtime::finalizer::{self, finalizer};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};

use database::api::apps::v1alpha1::SidecarSet;
use database::api::apps::v1alpha1::SidecarSetStatus;
use database::manager::{self, Manager, conditions};

// What this controller may do; `opctl manifests` turns these lines into
// config/rbac/role.yaml.
// +opctl:rbac:groups=apps.org,resources=sidecarsets,verbs=get;list;watch;patch;update
// +opctl:rbac:groups=apps.org,resources=sidecarsets/status,verbs=get;patch;update
// +opctl:rbac:groups=apps.org,resources=sidecarsets/finalizers,verbs=update

/// The controller's name in logs and metrics.
const NAME: &str = "sidecar_set";

/// The finalizer that lets [`cleanup`] run before an object is deleted.
pub fn finalizer_name() -> String {
    format!("{}/finalizer", SidecarSet::group(&()))
}

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
    /// Adding or removing the finalizer, or the cleanup, failed.
    #[error("finalizer: {0}")]
    Finalizer(#[source] Box<finalizer::Error<Error>>),
}

impl Error {
    /// Whether adding or removing the finalizer found the object gone: it
    /// was deleted while this reconcile ran, which is no failure (the watch
    /// delivers the deletion).
    fn is_object_gone(&self) -> bool {
        let Error::Finalizer(err) = self else {
            return false;
        };
        match &**err {
            finalizer::Error::AddFinalizer(kube::Error::Api(status))
            | finalizer::Error::RemoveFinalizer(kube::Error::Api(status)) => status.is_not_found(),
            _ => false,
        }
    }
}

/// Adds this controller to the manager (called from src/main.rs).
pub fn register(manager: Manager) -> Manager {
    manager.with_controller(NAME, run)
}

/// Runs the controller until the manager shuts down.
pub async fn run(manager: manager::Context) {
    let shutdown = manager.shutdown.clone();
    let client = manager.client.clone();
    let apis = vec![Api::<SidecarSet>::all(client)];
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

/// Brings the cluster in line with one object: called on every change of it
/// and after each requeue.
async fn reconcile(
    object: Arc<SidecarSet>, // as last seen by the watch
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let mut timer = ctx.manager.metrics.reconcile(NAME);
    let key = ObjectRef::from_obj(&*object).to_string();
    let api = Api::all(ctx.manager.client.clone());
    let finalizer_name = finalizer_name();
    let result = finalizer(&api, &finalizer_name, object, |event| async {
        match event {
            finalizer::Event::Apply(object) => apply(&object, &api, &ctx).await,
            finalizer::Event::Cleanup(object) => cleanup(&object, &ctx).await,
        }
    })
    .await
    .map_err(|err| Error::Finalizer(Box::new(err)));
    let result = match result {
        Err(err) if err.is_object_gone() => Ok(Action::await_change()),
        other => other,
    };
    match &result {
        Ok(_) => ctx.manager.backoff.succeeded(&key),
        Err(_) => timer.failed(),
    }
    result
}

/// Makes the world match the object's spec, then reports it in its status.
async fn apply(
    object: &SidecarSet, // carries the finalizer
    api: &Api<SidecarSet>,
    ctx: &Context,
) -> Result<Action, Error> {
    // TODO: create or update what the object stands for here, for example
    // objects it owns, through server-side apply (Patch::Apply).

    let status = status_for(object);
    if object.status.as_ref() != Some(&status) {
        let patch = serde_json::json!({
            "apiVersion": SidecarSet::api_version(&()),
            "kind": SidecarSet::kind(&()),
            "status": status,
        });
        let params = PatchParams::apply(manager::NAME).force();
        api.patch_status(&object.name_any(), &params, &Patch::Apply(patch))
            .await?;
        if !is_ready(object) {
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
    }
    Ok(Action::requeue(RESYNC))
}

/// Undoes what [`apply`] did outside the cluster before the object goes.
/// Objects it owns through ownerReferences need nothing here: the garbage
/// collector deletes them.
async fn cleanup(
    object: &SidecarSet, // being deleted
    ctx: &Context,
) -> Result<Action, Error> {
    let note = format!("cleaning up {} before deletion", object.name_any());
    ctx.manager
        .publish(
            &object.object_ref(&()),
            EventType::Normal,
            "Deleting",
            "Cleanup",
            Some(note),
        )
        .await;
    Ok(Action::await_change())
}

/// The status [`apply`] writes: Ready at the current generation.
fn status_for(obj: &SidecarSet) -> SidecarSetStatus {
    let generation = obj.metadata.generation;
    let mut status = obj.status.clone().unwrap_or_default();
    status.observed_generation = generation;
    let ready = conditions::ready(true, "Reconciled", "up to date", generation);
    conditions::set(&mut status.conditions, ready);
    status
}

/// Whether the object's status already says Ready.
fn is_ready(obj: &SidecarSet) -> bool {
    let status = obj.status.as_ref();
    status.is_some_and(|s| conditions::is_true(&s.conditions, conditions::READY))
}

/// Decides when a failed reconcile is retried: exponential backoff per
/// object.
fn error_policy(
    object: Arc<SidecarSet>, // the object whose reconcile failed
    error: &Error,
    ctx: Arc<Context>,
) -> Action {
    let key = ObjectRef::from_obj(&*object).to_string();
    let delay = ctx.manager.backoff.failed(&key);
    tracing::warn!(object = %key, %error, ?delay, "reconcile failed; retrying");
    Action::requeue(delay)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object_at(generation: i64) -> SidecarSet {
        let mut object = SidecarSet::new("test", Default::default());
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

    #[test]
    fn an_up_to_date_status_is_left_alone() {
        let mut object = object_at(2);
        assert!(!is_ready(&object));
        object.status = Some(status_for(&object));
        assert!(is_ready(&object));
        assert_eq!(object.status, Some(status_for(&object)));
    }

    #[test]
    fn an_object_deleted_during_its_reconcile_is_no_failure() {
        use kube::core::Status;
        let gone = |status: Status| {
            let err = finalizer::Error::AddFinalizer(kube::Error::Api(status.boxed()));
            Error::Finalizer(Box::new(err)).is_object_gone()
        };
        assert!(gone(Status::failure("deleted", "NotFound").with_code(404)));
        assert!(!gone(Status::failure("stale", "Conflict").with_code(409)));
    }

    #[test]
    fn a_new_generation_needs_a_new_status() {
        let mut object = object_at(2);
        object.status = Some(status_for(&object));
        object.metadata.generation = Some(3);
        assert_ne!(object.status, Some(status_for(&object)));
    }
}
