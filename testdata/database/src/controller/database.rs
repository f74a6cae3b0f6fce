//! The Database controller: for each `databases.zalando.org` object it keeps
//! a Pod running the database server (`mongo:4.0` or `mysql:8.0`), a
//! NodePort Service selecting exactly that Pod and, for mysql, a Secret with
//! a random root password, all owned by the Database (so the garbage
//! collector removes them with it) and all written with server-side apply.
//! A change of `spec.type` replaces the Pod and updates the Service; a
//! deleted child comes back, since the controller watches its children.

mod children;

use std::sync::Arc;
use std::time::Duration;

use either::Either;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::EventType;
use kube::runtime::finalizer::{self, finalizer};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};

use database::api::zalando::v1::{Database, DatabasePhase, DatabaseStatus, DatabaseType};
use database::manager::{self, Manager, conditions};

use children::Desired;

// What this controller may do; `opctl manifests` turns these lines into
// config/rbac/role.yaml.
// Databases: watched, read fresh where the watch may lag, finalizer patched,
// status applied; `finalizers` lets the children's ownerReferences set
// blockOwnerDeletion.
// +opctl:rbac:groups=zalando.org,resources=databases,verbs=get;list;watch;patch
// +opctl:rbac:groups=zalando.org,resources=databases/status,verbs=get;patch
// +opctl:rbac:groups=zalando.org,resources=databases/finalizers,verbs=update
// Children: watched and applied (a create or a patch); Pods and Secrets are
// read (type, password) and deleted when the type changes.
// +opctl:rbac:groups=core,resources=pods,verbs=get;list;watch;create;patch;delete
// +opctl:rbac:groups=core,resources=services,verbs=list;watch;create;patch
// +opctl:rbac:groups=core,resources=secrets,verbs=get;list;watch;create;patch;delete

/// The controller's name in logs and metrics.
const NAME: &str = "database";

/// The finalizer that lets [`cleanup`] run before an object is deleted.
pub fn finalizer_name() -> String {
    format!("{}/finalizer", Database::group(&()))
}

/// How often an object is reconciled when nothing changes.
const RESYNC: Duration = Duration::from_secs(300);

/// How soon to look again while an old Pod is terminating (its deletion
/// also triggers a reconcile; this is the fallback).
const WAIT_FOR_OLD_POD: Duration = Duration::from_secs(2);

/// What the original operator reported once a Database's children existed.
fn created_message(name: &str) -> String {
    format!("Pod and Service created by Database {name}")
}

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
    /// A namespaced object came without a namespace.
    #[error("the object has no namespace")]
    MissingNamespace,
    /// The object lacks what its children need (name, namespace, uid).
    #[error(transparent)]
    MissingMetadata(#[from] children::MissingMetadata),
}

/// Adds this controller to the manager (called from src/main.rs).
pub fn register(manager: Manager) -> Manager {
    manager.with_controller(NAME, run)
}

/// Runs the controller until the manager shuts down: one controller per
/// watched namespace (or one for all), each also watching the children it
/// owns, so that a changed or deleted child triggers its Database.
pub async fn run(manager: manager::Context) {
    let shutdown = manager.shutdown.clone();
    let databases = manager.namespaced_apis::<Database>();
    let pods = manager.namespaced_apis::<Pod>();
    let services = manager.namespaced_apis::<Service>();
    let secrets = manager.namespaced_apis::<Secret>();
    let ctx = Arc::new(Context { manager });
    // Only this operator's children: no cache of every Pod in the cluster.
    let owned = watcher::Config::default()
        .labels(&children::managed_selector())
        .any_semantic();
    let scopes = databases.into_iter().zip(pods).zip(services).zip(secrets);
    let controllers = scopes.map(|(((databases, pods), services), secrets)| {
        Controller::new(databases, watcher::Config::default().any_semantic())
            .owns(pods, owned.clone())
            .owns(services, owned.clone())
            .owns(secrets, owned.clone())
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
/// or of its children, and after each requeue.
async fn reconcile(
    object: Arc<Database>, // as last seen by the watch
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let mut timer = ctx.manager.metrics.reconcile(NAME);
    let key = ObjectRef::from_obj(&*object).to_string();
    let namespace = object.namespace().ok_or(Error::MissingNamespace)?;
    let api = Api::namespaced(ctx.manager.client.clone(), &namespace);
    let finalizer_name = finalizer_name();
    let result = finalizer(&api, &finalizer_name, object, |event| async {
        match event {
            finalizer::Event::Apply(object) => apply(&object, &api, &ctx).await,
            finalizer::Event::Cleanup(object) => cleanup(&object, &api, &ctx).await,
        }
    })
    .await;
    let result = match result {
        // The Database went while this reconcile ran (a reconcile queued by a
        // child's deletion can see it after its finalizer is gone): done.
        Err(finalizer::Error::AddFinalizer(kube::Error::Api(status)))
        | Err(finalizer::Error::RemoveFinalizer(kube::Error::Api(status)))
            if status.code == 404 =>
        {
            Ok(Action::await_change())
        }
        other => other.map_err(|err| Error::Finalizer(Box::new(err))),
    };
    match &result {
        Ok(_) => ctx.manager.backoff.succeeded(&key),
        Err(_) => timer.failed(),
    }
    result
}

/// What one pass over a Database's children achieved.
#[derive(Debug, Default)]
struct Progress {
    /// Whether this pass created the Pod (it did not exist before).
    created_pod: bool,
    /// The type of the Pod this pass deleted because `spec.type` changed.
    replaced: Option<String>,
    /// Whether an old Pod is still terminating, so the new one must wait.
    waiting_for_old_pod: bool,
}

/// Puts the children in place, then reports it in the status and in events.
async fn apply(
    object: &Database, // carries the finalizer
    api: &Api<Database>,
    ctx: &Context,
) -> Result<Action, Error> {
    let desired = Desired::of(object)?;
    let name = desired.name.clone();
    let progress = match ensure_children(&desired, ctx).await {
        Ok(progress) => progress,
        Err(err) => {
            let message = format!("cannot put the children of Database {name} in place: {err}");
            match set_status(api, object, DatabasePhase::Failed, "Failed", &message).await {
                Ok(true) => {
                    let warning = EventType::Warning;
                    publish(ctx, object, warning, "Failed", "Reconcile", message).await;
                }
                Ok(false) => {}
                Err(status_err) => {
                    tracing::warn!(database = %name, error = %status_err, "cannot report the failure");
                }
            }
            return Err(err);
        }
    };

    if let Some(old) = &progress.replaced {
        let note = format!(
            "spec.type changed from {old} to {}: Pod {name} replaced, Service {name} updated",
            desired.type_
        );
        let normal = EventType::Normal;
        publish(ctx, object, normal, "TypeChanged", "Replace", note).await;
    }
    if progress.waiting_for_old_pod {
        let message = format!("waiting for the old Pod {name} to terminate");
        set_status(
            api,
            object,
            DatabasePhase::Pending,
            "ReplacingPod",
            &message,
        )
        .await?;
        return Ok(Action::requeue(WAIT_FOR_OLD_POD));
    }

    let message = created_message(&name);
    set_status(api, object, DatabasePhase::Ready, "ChildrenReady", &message).await?;
    if progress.created_pod && progress.replaced.is_none() {
        publish(ctx, object, EventType::Normal, "Created", "Create", message).await;
    }
    Ok(Action::requeue(RESYNC))
}

/// Brings the status to `phase`; returns whether it changed. The object from
/// the watch may predate this controller's last status write (a reconcile
/// queued by a child can start before that write is seen), so a write is
/// decided on the stored status: otherwise `lastTransitionTime` would move
/// while the condition stayed the same.
async fn set_status(
    api: &Api<Database>,
    object: &Database,
    phase: DatabasePhase,
    reason: &str,
    message: &str,
) -> Result<bool, kube::Error> {
    if object.status.as_ref() == Some(&status_for(object, phase, reason, message)) {
        return Ok(false);
    }
    let stored = api.get_status(&object.name_any()).await?;
    let status = status_for(&stored, phase, reason, message);
    if stored.status.as_ref() == Some(&status) {
        return Ok(false);
    }
    write_status(api, &object.name_any(), &status).await?;
    Ok(true)
}

/// Applies the Secret (mysql), the Pod and the Service, replacing a Pod that
/// runs another type of server first (a Pod's containers cannot be changed
/// in place).
async fn ensure_children(desired: &Desired, ctx: &Context) -> Result<Progress, Error> {
    let client = ctx.manager.client.clone();
    let namespace = desired.namespace.as_str();
    let params = PatchParams::apply(manager::NAME).force();
    let mut progress = Progress::default();

    ensure_secret(
        desired,
        &Api::namespaced(client.clone(), namespace),
        &params,
    )
    .await?;

    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    if let Some(pod) = pods.get_opt(&desired.name).await? {
        let pod_type = children::type_of(&pod).map(str::to_owned);
        if pod.metadata.deletion_timestamp.is_some() {
            progress.waiting_for_old_pod = true;
            return Ok(progress);
        }
        if desired.controls(&pod) && pod_type.as_deref() != Some(desired.type_.as_str()) {
            progress.replaced = Some(pod_type.unwrap_or_else(|| "unknown".to_owned()));
            if !delete_if_unchanged(&pods, &pod).await? {
                progress.waiting_for_old_pod = true;
                return Ok(progress);
            }
        }
    } else {
        progress.created_pod = true;
    }
    pods.patch(&desired.name, &params, &Patch::Apply(desired.pod()))
        .await?;

    let services: Api<Service> = Api::namespaced(client, namespace);
    services
        .patch(&desired.name, &params, &Patch::Apply(desired.service()))
        .await?;
    Ok(progress)
}

/// For mysql: applies the Secret, keeping the password it already holds (a
/// new random one the first time). For mongo: removes a Secret left from
/// an earlier mysql type.
async fn ensure_secret(
    desired: &Desired,
    secrets: &Api<Secret>,
    params: &PatchParams,
) -> Result<(), Error> {
    let name = desired.secret_name();
    // Read from the API server, not a cache: a stale cache would make a new
    // password and overwrite the one the database was started with.
    let existing = secrets.get_opt(&name).await?;
    match desired.type_ {
        DatabaseType::Mysql => {
            let password = existing.as_ref().and_then(children::password_of);
            let password = password.unwrap_or_else(children::new_password);
            secrets
                .patch(&name, params, &Patch::Apply(desired.secret(&password)))
                .await?;
        }
        DatabaseType::Mongo => {
            if let Some(secret) = existing.filter(|secret| desired.controls(secret)) {
                delete_if_unchanged(secrets, &secret).await?;
            }
        }
    }
    Ok(())
}

/// Deletes `object` if it is still the one read (same uid). Returns whether
/// it is gone now (false: it is terminating, as a running Pod does).
async fn delete_if_unchanged<K>(api: &Api<K>, object: &K) -> Result<bool, Error>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: object.uid(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match api.delete(&object.name_any(), &params).await {
        Ok(Either::Left(_terminating)) => Ok(false),
        Ok(Either::Right(_deleted)) => Ok(true),
        // Gone already, or replaced by another object of the same name.
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => Ok(true),
        Err(err) => Err(err.into()),
    }
}

/// Writes `status` with server-side apply (the status subresource).
async fn write_status(
    api: &Api<Database>,
    name: &str,
    status: &DatabaseStatus,
) -> Result<(), kube::Error> {
    let patch = serde_json::json!({
        "apiVersion": Database::api_version(&()),
        "kind": Database::kind(&()),
        "status": status,
    });
    let params = PatchParams::apply(manager::NAME).force();
    api.patch_status(name, &params, &Patch::Apply(patch))
        .await
        .map(drop)
}

/// Records an event about the Database.
async fn publish(
    ctx: &Context,
    object: &Database,
    type_: EventType,
    reason: &str,
    action: &str,
    note: String,
) {
    let regarding = object.object_ref(&());
    ctx.manager
        .publish(&regarding, type_, reason, action, Some(note))
        .await;
}

/// Runs before a Database goes: its children need nothing, the garbage
/// collector deletes them through their ownerReferences.
async fn cleanup(
    object: &Database, // being deleted
    api: &Api<Database>,
    ctx: &Context,
) -> Result<Action, Error> {
    let name = object.name_any();
    // A reconcile queued by a child before the Database went can still see
    // it with the finalizer: only the first cleanup records the event.
    let stored = api.get_opt(&name).await?;
    let ours = finalizer_name();
    if stored.is_some_and(|db| db.finalizers().contains(&ours)) {
        let note = format!("Database {name} deleted: its Pod, Service and Secret go with it");
        publish(ctx, object, EventType::Normal, "Deleting", "Delete", note).await;
    }
    Ok(Action::await_change())
}

/// The status of `obj` in `phase` at its current generation, `Ready`
/// exactly when the phase is.
fn status_for(obj: &Database, phase: DatabasePhase, reason: &str, message: &str) -> DatabaseStatus {
    let generation = obj.metadata.generation;
    let mut status = obj.status.clone().unwrap_or_default();
    status.phase = Some(phase);
    status.message = Some(message.to_owned());
    status.observed_generation = generation;
    let ready = conditions::ready(phase == DatabasePhase::Ready, reason, message, generation);
    conditions::set(&mut status.conditions, ready);
    status
}

/// Decides when a failed reconcile is retried: exponential backoff per
/// object.
fn error_policy(
    object: Arc<Database>, // the object whose reconcile failed
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
    use database::api::zalando::v1::DatabaseSpec;

    fn object_at(generation: i64) -> Database {
        let spec = DatabaseSpec {
            type_: DatabaseType::Mongo,
        };
        let mut object = Database::new("orders", spec);
        object.metadata.namespace = Some("default".to_owned());
        object.metadata.generation = Some(generation);
        object
    }

    fn ready_status(object: &Database) -> DatabaseStatus {
        status_for(
            object,
            DatabasePhase::Ready,
            "ChildrenReady",
            &created_message("orders"),
        )
    }

    #[test]
    fn the_ready_status_carries_the_original_message_at_the_observed_generation() {
        let status = ready_status(&object_at(3));
        assert_eq!(status.phase, Some(DatabasePhase::Ready));
        assert_eq!(
            status.message.as_deref(),
            Some("Pod and Service created by Database orders")
        );
        assert_eq!(status.observed_generation, Some(3));
        let ready = conditions::find(&status.conditions, conditions::READY);
        let ready = ready.expect("a Ready condition");
        assert_eq!(ready.status, "True");
        assert_eq!(ready.observed_generation, Some(3));
    }

    #[test]
    fn pending_and_failed_are_not_ready() {
        let object = object_at(1);
        for phase in [DatabasePhase::Pending, DatabasePhase::Failed] {
            let status = status_for(&object, phase, "Why", "because");
            assert_eq!(status.phase, Some(phase));
            assert_eq!(status.message.as_deref(), Some("because"));
            let ready = conditions::find(&status.conditions, conditions::READY);
            assert_eq!(ready.map(|c| c.status.as_str()), Some("False"));
        }
    }

    #[test]
    fn an_up_to_date_status_is_left_alone() {
        let mut object = object_at(2);
        assert!(object.status.is_none());
        object.status = Some(ready_status(&object));
        let status = object.status.clone().unwrap_or_default();
        assert!(conditions::is_true(&status.conditions, conditions::READY));
        assert_eq!(object.status, Some(ready_status(&object)));
    }

    #[test]
    fn a_new_generation_needs_a_new_status() {
        let mut object = object_at(2);
        object.status = Some(ready_status(&object));
        object.metadata.generation = Some(3);
        assert_ne!(object.status, Some(ready_status(&object)));
    }
}
