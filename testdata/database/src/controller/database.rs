//! The Database controller: for each `databases.zalando.org` object it keeps
//! a Pod running the database server (`mongo:4.0` or `mysql:8.0`), a
//! NodePort Service selecting exactly that Pod and, for mysql, a Secret with
//! a random root password, all owned by the Database: the garbage collector
//! removes them with it, so the Database needs no finalizer. A change of
//! `spec.type` replaces the Pod and updates the Service; a deleted child
//! comes back, since the controller watches its children. The status
//! follows the Pod: Ready while the Pod is Ready, Pending while it starts,
//! Failed while it crash-loops or its image cannot be pulled (with a
//! Warning event), and Ready again when it recovers.
//!
//! Cache first: a reconcile reads the Database, the metadata of its
//! Service and Secret and the metadata and status of its Pod from the
//! manager's caches, never from the API server. The Pod
//! and the Service are applied (server-side apply) only when their cached
//! metadata shows another desired state; the status is written only when
//! it changes, and events go with status changes. The Secret is created
//! once if absent (a 409 means it exists) and never read: the Pod takes
//! the password from it by reference. A Database already as it should be
//! costs no request.

mod children;
mod pod_health;

use std::sync::Arc;
use std::time::Duration;

use either::Either;
use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, Preconditions};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};

use database::api::zalando::v1::{Database, DatabasePhase, DatabaseStatus, DatabaseType};
use database::manager::{self, Controller, Manager, Scope, conditions, find};

use children::Desired;
use pod_health::{CachedPod, PodHealth, PodView};

// What this controller may do; `opctl manifests` turns these lines into
// config/rbac/role.yaml.
// Databases: cached (list, watch), status applied, and the finalizer of
// earlier versions removed (patch); `finalizers` lets the children's
// ownerReferences set blockOwnerDeletion.
// +opctl:rbac:groups=zalando.org,resources=databases,verbs=get;list;watch;patch
// +opctl:rbac:groups=zalando.org,resources=databases/status,verbs=get;patch
// +opctl:rbac:groups=zalando.org,resources=databases/finalizers,verbs=update
// Children: their metadata cached (list, watch); Pods and Services applied
// (a create or a patch), Secrets created; Pods and Secrets of another type
// deleted.
// +opctl:rbac:groups=core,resources=pods,verbs=list;watch;create;patch;delete
// +opctl:rbac:groups=core,resources=services,verbs=list;watch;create;patch
// +opctl:rbac:groups=core,resources=secrets,verbs=list;watch;create;delete

/// The controller's name in logs and metrics.
const NAME: &str = "database";

/// The finalizer earlier versions of this operator put on every Database.
/// It guards nothing (the children are garbage-collected), so it is removed
/// wherever it is found: those Databases can then be deleted.
pub const LEGACY_FINALIZER: &str = "zalando.org/finalizer";

/// How soon to look again while an old Pod is terminating (its deletion
/// also triggers a reconcile; this is the fallback).
const WAIT_FOR_OLD_POD: Duration = Duration::from_secs(2);

/// How long a new Database's first Pod may take to become Ready before the
/// Database reports `Pending`: a Pod that is Ready sooner gets the Database
/// one status write (`Ready`), not two. The Pod's changes trigger a
/// reconcile anyway; this is the fallback.
const QUIET_START: Duration = Duration::from_secs(5);

/// What the original operator reported once a Database's children existed.
fn created_message(name: &str) -> String {
    format!("Pod and Service created by Database {name}")
}

/// What every reconcile can use: the manager's context and the caches of
/// the children's metadata (this scope's).
pub struct Context {
    /// Client, events and shutdown shared by the manager.
    pub manager: manager::Context,
    /// The Pods' metadata and the part of their status that tells their
    /// health (see [`pod_health::PodView`]).
    pods: Store<CachedPod>,
    services: Store<PartialObjectMeta<Service>>,
    secrets: Store<PartialObjectMeta<Secret>>,
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
    /// The object lacks what its children need (name, namespace, uid).
    #[error(transparent)]
    MissingMetadata(#[from] children::MissingMetadata),
}

/// Adds this controller to the manager (called from src/main.rs).
pub fn register(manager: Manager) -> Manager {
    manager.with_controller(NAME, setup, reconcile)
}

/// Sets up the controller for one watched scope: the Databases, and the
/// Pods (metadata and health), Services and Secrets (metadata) this
/// operator owns (only those labelled as its own: no cache of every Pod in
/// the cluster), whose changes trigger their Database.
fn setup(scope: &Scope) -> (Controller<Database>, Context) {
    let owned = watcher::Config::default()
        .labels(&children::managed_selector())
        .any_semantic();
    let pods = scope.cache_projected::<Pod, PodView>(owned.clone());
    let services = scope.cache_metadata::<Service>(owned.clone());
    let secrets = scope.cache_metadata::<Secret>(owned);
    let context = Context {
        manager: scope.context().clone(),
        pods: pods.store(),
        services: services.store(),
        secrets: secrets.store(),
    };
    let databases = scope.cache::<Database>(watcher::Config::default().any_semantic());
    let controller = databases
        .controller()
        .owns(pods)
        .owns(services)
        .owns(secrets);
    (controller, context)
}

/// Brings the cluster in line with one Database, as cached: called on every
/// change of it or of its children, every sync period, and after a failure.
async fn reconcile(database: Arc<Database>, ctx: Arc<Context>) -> Result<Action, Error> {
    let namespace = database.namespace().ok_or(Error::MissingNamespace)?;
    let api: Api<Database> = Api::namespaced(ctx.manager.client.clone(), &namespace);
    if database.finalizers().iter().any(|f| f == LEGACY_FINALIZER) {
        remove_legacy_finalizer(&api, &database).await?;
    }
    if database.metadata.deletion_timestamp.is_some() {
        // Going: the garbage collector removes its children.
        return Ok(Action::await_change());
    }
    apply(&database, &api, &ctx).await
}

/// Removes [`LEGACY_FINALIZER`] (a JSON patch that tests it is still where
/// it was seen, so no other finalizer is touched).
async fn remove_legacy_finalizer(api: &Api<Database>, database: &Database) -> Result<(), Error> {
    let Some(index) = database
        .finalizers()
        .iter()
        .position(|f| f == LEGACY_FINALIZER)
    else {
        return Ok(());
    };
    let path = format!("/metadata/finalizers/{index}");
    let patch = serde_json::json!([
        {"op": "test", "path": path, "value": LEGACY_FINALIZER},
        {"op": "remove", "path": path},
    ]);
    let patch: json_patch::Patch =
        serde_json::from_value(patch).map_err(kube::Error::SerdeError)?;
    match api
        .patch(
            &database.name_any(),
            &PatchParams::default(),
            &Patch::Json::<()>(patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        // Gone, or its finalizers changed meanwhile: the next event tells.
        Err(kube::Error::Api(status)) if status.is_not_found() || status.code == 422 => Ok(()),
        Err(err) => Err(err.into()),
    }
}

/// What one pass over a Database's children achieved.
#[derive(Debug, Default)]
struct Progress {
    /// The type of the Pod this pass deleted because `spec.type` changed
    /// (not when a stale cache showed a Pod deleted before).
    replaced: Option<String>,
    /// Whether an old Pod is still terminating, so the new one must wait.
    waiting_for_old_pod: bool,
    /// What the Database's Pod reports.
    health: PodHealth,
    /// When the Database's Pod was created (now, for one just applied).
    pod_created: Option<Time>,
}

/// The Ready condition's reason while the children cannot be put in place.
const CHILDREN_FAILED: &str = "Failed";

/// What is left of [`QUIET_START`] for a Pod created at `created`.
fn quiet_start_left(created: Option<Time>) -> Option<Duration> {
    let age = k8s_openapi::jiff::Timestamp::now().duration_since(created?.0);
    let age = Duration::try_from(age).unwrap_or_default();
    QUIET_START.checked_sub(age).filter(|left| !left.is_zero())
}

/// Puts the children in place, then reports it in the status, with an
/// event for each change of status that tells something.
async fn apply(database: &Database, api: &Api<Database>, ctx: &Context) -> Result<Action, Error> {
    let desired = Desired::of(database)?;
    let name = desired.name.clone();
    let progress = match ensure_children(&desired, ctx).await {
        Ok(progress) => progress,
        Err(err) => {
            let message = format!("cannot put the children of Database {name} in place: {err}");
            let failed = (DatabasePhase::Failed, CHILDREN_FAILED, message.as_str());
            match set_status(ctx, api, database, failed).await {
                Ok(true) => {
                    let warning = EventType::Warning;
                    publish(ctx, database, warning, "Failed", "Reconcile", message).await;
                }
                Ok(false) => {}
                Err(status_err) => {
                    tracing::warn!(database = %name, error = %status_err, "cannot report the failure");
                }
            }
            return Err(err);
        }
    };

    let type_changed = progress.replaced.as_ref().map(|old| {
        format!(
            "spec.type changed from {old} to {}: Pod {name} replaced, Service {name} updated",
            desired.type_
        )
    });
    if progress.waiting_for_old_pod {
        // Told before the status is written: only this reconcile, the one
        // that deleted the old Pod, knows the old type, and a failed status
        // write would leave the retry nothing to tell.
        if let Some(note) = type_changed {
            let normal = EventType::Normal;
            publish(ctx, database, normal, "TypeChanged", "Replace", note).await;
        }
        let message = format!("waiting for the old Pod {name} to terminate");
        let pending = (DatabasePhase::Pending, REPLACING, message.as_str());
        set_status(ctx, api, database, pending).await?;
        return Ok(Action::requeue(WAIT_FOR_OLD_POD));
    }
    if let Some(note) = type_changed {
        // The old Pod went at once.
        publish(
            ctx,
            database,
            EventType::Normal,
            "TypeChanged",
            "Replace",
            note,
        )
        .await;
    }

    let created = created_message(&name);
    let starting = format!("waiting for Pod {name} to become ready");
    let (phase, reason, message) = match &progress.health {
        PodHealth::Ready => (DatabasePhase::Ready, "ChildrenReady", created.as_str()),
        PodHealth::Starting => (DatabasePhase::Pending, STARTING, starting.as_str()),
        PodHealth::Failing { reason, message } => {
            (DatabasePhase::Failed, *reason, message.as_str())
        }
    };
    // The children are in place for the first time: no status yet, or only
    // the report that they could not be put in place (a failed write).
    let first_status = ready_condition(database)
        .is_none_or(|ready| ready.reason == CHILDREN_FAILED && is_failing(database));
    if first_status
        && progress.health == PodHealth::Starting
        && let Some(left) = quiet_start_left(progress.pod_created)
    {
        return Ok(Action::requeue(left));
    }
    let was_failing = is_failing(database);
    if !set_status(ctx, api, database, (phase, reason, message)).await? {
        return Ok(Action::await_change());
    }
    if first_status {
        let normal = EventType::Normal;
        publish(ctx, database, normal, "Created", "Create", created.clone()).await;
    }
    match &progress.health {
        PodHealth::Failing { reason, message } => {
            let warning = EventType::Warning;
            publish(ctx, database, warning, reason, "Reconcile", message.clone()).await;
        }
        PodHealth::Ready if was_failing => {
            let note = format!("Pod {name} is ready again");
            publish(
                ctx,
                database,
                EventType::Normal,
                "Recovered",
                "Reconcile",
                note,
            )
            .await;
        }
        PodHealth::Ready | PodHealth::Starting => {}
    }
    Ok(Action::await_change())
}

/// The reason of the Pending status while an old Pod terminates.
const REPLACING: &str = "ReplacingPod";
/// The reason of the Pending status while the Pod is not Ready yet.
const STARTING: &str = "PodStarting";

/// The cached Ready condition of the Database.
fn ready_condition(
    database: &Database,
) -> Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    let status = database.status.as_ref()?;
    conditions::find(&status.conditions, conditions::READY)
}

/// Whether the cached status says Failed.
fn is_failing(database: &Database) -> bool {
    let status = database.status.as_ref();
    status.is_some_and(|status| status.phase == Some(DatabasePhase::Failed))
}

/// Brings the status to `(phase, reason, message)` unless the cached one
/// says so already; returns whether it wrote (false also when the Database
/// is gone).
async fn set_status(
    ctx: &Context,
    api: &Api<Database>,
    database: &Database,
    (phase, reason, message): (DatabasePhase, &str, &str),
) -> Result<bool, kube::Error> {
    let status = status_for(database, phase, reason, message);
    let current = database.status.as_ref();
    ctx.manager
        .apply_status_if_changed(api, database, current, &status)
        .await
}

/// Puts the Secret (mysql), the Pod and the Service in place as the caches
/// show them, replacing a Pod that runs another type of server first (a
/// Pod's containers cannot be changed in place).
async fn ensure_children(desired: &Desired, ctx: &Context) -> Result<Progress, Error> {
    let client = ctx.manager.client.clone();
    let namespace = Some(desired.namespace.as_str());
    let mut progress = Progress::default();
    ensure_secret(desired, ctx).await?;

    let pods: Api<Pod> = Api::namespaced(client.clone(), &desired.namespace);
    let pod = find(&ctx.pods, &desired.name, namespace);
    if let Some(pod) = &pod {
        if pod.metadata.deletion_timestamp.is_some() {
            progress.waiting_for_old_pod = true;
            return Ok(progress);
        }
        let pod_type = children::type_of(&**pod);
        if desired.controls(&**pod) && pod_type != Some(desired.type_.as_str()) {
            let deletion = delete_if_unchanged(&pods, &pod.metadata).await?;
            if deletion != Deletion::AlreadyGone {
                progress.replaced = Some(pod_type.unwrap_or("unknown").to_owned());
            }
            if deletion == Deletion::Terminating {
                progress.waiting_for_old_pod = true;
                return Ok(progress);
            }
        }
    }
    // The Pod and the Service do not wait for each other: one round trip
    // for both (the Secret, which the Pod's environment names, came first).
    let services: Api<Service> = Api::namespaced(client, &desired.namespace);
    let service = find(&ctx.services, &desired.name, namespace);
    let mut writes = ctx.manager.batch();
    writes.push(
        ctx.manager
            .apply_owned(&pods, pod.as_deref(), desired.pod()),
    );
    let service_write = ctx
        .manager
        .apply_owned(&services, service.as_deref(), desired.service());
    writes.push(service_write);
    writes.run().await?;
    // The health of the Pod the Database asks for (not of one being replaced).
    let current = pod.as_deref().filter(|pod| {
        desired.controls(*pod) && children::type_of(*pod) == Some(desired.type_.as_str())
    });
    progress.health = pod_health::health(&desired.name, current.map(|pod| &**pod));
    progress.pod_created = match current {
        Some(pod) => pod.metadata.creation_timestamp.clone(),
        None => Some(Time(k8s_openapi::jiff::Timestamp::now())),
    };

    Ok(progress)
}

/// For mysql: creates the Secret with a new random password unless it
/// exists (the password is never read back, nor overwritten). For mongo:
/// removes a Secret left from an earlier mysql type.
async fn ensure_secret(desired: &Desired, ctx: &Context) -> Result<(), Error> {
    let name = desired.secret_name();
    let secrets: Api<Secret> = Api::namespaced(ctx.manager.client.clone(), &desired.namespace);
    let cached = find(&ctx.secrets, &name, Some(desired.namespace.as_str()));
    match desired.type_ {
        DatabaseType::Mysql => {
            if cached.is_none() {
                let secret = desired.secret(&children::new_password());
                ctx.manager
                    .create_if_absent(&secrets, None, &secret)
                    .await?;
            }
        }
        DatabaseType::Mongo => {
            if let Some(secret) = cached.filter(|secret| desired.controls(&**secret)) {
                delete_if_unchanged(&secrets, &secret.metadata).await?;
            }
        }
    }
    Ok(())
}

/// What deleting a child came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Deletion {
    /// Deleted now.
    Gone,
    /// Deleted, and terminating (as a running Pod does for its grace period).
    Terminating,
    /// Gone before, or replaced by another object of the same name.
    AlreadyGone,
}

/// Deletes the object `meta` describes if it is still that one (same uid).
async fn delete_if_unchanged<K>(api: &Api<K>, meta: &ObjectMeta) -> Result<Deletion, Error>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: meta.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let name = meta.name.clone().unwrap_or_default();
    match api.delete(&name, &params).await {
        Ok(Either::Left(_terminating)) => Ok(Deletion::Terminating),
        Ok(Either::Right(_deleted)) => Ok(Deletion::Gone),
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => {
            Ok(Deletion::AlreadyGone)
        }
        Err(err) => Err(err.into()),
    }
}

/// Records an event about the Database.
async fn publish(
    ctx: &Context,
    database: &Database,
    type_: EventType,
    reason: &str,
    action: &str,
    note: String,
) {
    let regarding = database.object_ref(&());
    ctx.manager
        .publish(&regarding, type_, reason, action, Some(note))
        .await;
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

    #[test]
    fn a_new_pod_gets_a_quiet_start_and_an_older_one_none() {
        let now = k8s_openapi::jiff::Timestamp::now();
        let left = quiet_start_left(Some(Time(now))).expect("time left");
        assert!(left <= QUIET_START && left > QUIET_START / 2, "{left:?}");
        let older = now - k8s_openapi::jiff::SignedDuration::from_secs(6);
        assert_eq!(quiet_start_left(Some(Time(older))), None);
        assert_eq!(quiet_start_left(None), None);
    }
}
