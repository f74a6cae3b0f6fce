//! The Memcached controller: for each `memcacheds.cache.example.com` object it runs
//! `memcached:1.6` as a Deployment of the same name with `spec.size`
//! replicas, listening on `spec.containerPort`, and reports in the status
//! whether the Deployment is `Available`, `Progressing` or `Degraded` (as
//! kubebuilder's deploy-image plugin scaffolds it).
//!
//! This file is yours: opctl never overwrites it without `--force`.
//!
//! The image is the manager's `MEMCACHED_IMAGE` variable, which
//! config/manager sets, else `memcached:1.6`. The Deployment carries
//! an ownerReference to its Memcached (controller: true), so the garbage
//! collector deletes it with the Memcached: no finalizer.
//!
//! Cache first: a reconcile reads the Memcached and its Deployment (metadata
//! and status) from the caches [`setup`] makes, never from the API server.
//! The Deployment is applied (server-side apply) only when its cached
//! metadata shows another desired state, and the status is written only
//! when it changes: reconciling a Memcached that is already as it should be
//! costs no request.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, PodSecurityContext, PodSpec, PodTemplateSpec,
    SeccompProfile, SecurityContext,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};

use memcached_operator::api::cache::v1alpha1::Memcached;
use memcached_operator::api::cache::v1alpha1::MemcachedStatus;
use memcached_operator::manager::{self, Controller, Manager, Scope, conditions, find};

// What this controller may do; `opctl manifests` turns these lines into
// config/rbac/role.yaml. `finalizers` lets the Deployment's ownerReference
// set blockOwnerDeletion.
// +opctl:rbac:groups=cache.example.com,resources=memcacheds,verbs=get;list;watch
// +opctl:rbac:groups=cache.example.com,resources=memcacheds/status,verbs=get;patch;update
// +opctl:rbac:groups=cache.example.com,resources=memcacheds/finalizers,verbs=update
// +opctl:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch
// +opctl:rbac:groups=events.k8s.io,resources=events,verbs=create

/// The controller's name in logs and metrics.
const NAME: &str = "memcached";

/// The manager's variable naming the image to run (config/manager sets it).
pub const IMAGE_ENV: &str = "MEMCACHED_IMAGE";
/// The image when [`IMAGE_ENV`] is not set.
pub const DEFAULT_IMAGE: &str = "memcached:1.6";
/// The name of the Deployment's container.
const CONTAINER: &str = "memcached";
/// The name of the container's port.
const PORT_NAME: &str = "memcached";
/// The container's command and its arguments (`--image-container-command`).
const COMMAND: &[&str] = &["memcached", "-m=64", "-o", "modern", "-v"];
/// The user the container runs as.
const RUN_AS_USER: i64 = 1001;

/// Label naming the application: the kind.
const NAME_LABEL: &str = "app.kubernetes.io/name";
/// Label naming the instance: the Memcached's name, unique in its namespace.
const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
/// Label naming who manages the Deployment: this operator.
const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";

/// What every reconcile can use: the manager's context, the cache of the
/// Deployments this controller owns (this scope's) and the image to run.
pub struct Context {
    /// Client, events and shutdown shared by the manager.
    pub manager: manager::Context,
    /// The Deployments' metadata and status (see [`trim`]).
    deployments: Store<Deployment>,
    /// The image the Deployments run.
    image: String,
}

/// Why a reconcile failed; it is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Kubernetes API call failed.
    #[error("Kubernetes API call failed: {0}")]
    Kube(#[from] kube::Error),
    /// The object lacks what its Deployment needs (it was not read from
    /// the API server).
    #[error("the object has no {0}")]
    MissingMetadata(&'static str),
}

/// Adds this controller to the manager (called from src/main.rs).
pub fn register(manager: Manager) -> Manager {
    manager.with_controller(NAME, setup, reconcile)
}

/// The image to run: `configured` (the value of [`IMAGE_ENV`]) unless it is
/// unset or empty, else [`DEFAULT_IMAGE`].
fn image(configured: Option<String>) -> String {
    let configured = configured.filter(|image| !image.trim().is_empty());
    configured.unwrap_or_else(|| DEFAULT_IMAGE.to_owned())
}

/// The label selector of the Deployments this controller owns (what its
/// cache of Deployments is limited to).
fn managed_selector() -> String {
    let operator = manager::NAME;
    format!("{MANAGED_BY_LABEL}={operator},{NAME_LABEL}={CONTAINER}")
}

/// What the cache keeps of a Deployment: its metadata and status, not its
/// spec (whose state the desired-hash annotation tells).
fn trim(deployment: &mut Deployment) {
    deployment.spec = None;
}

/// Sets up the controller for one watched scope: the Memcacheds, and the
/// Deployments this operator owns, whose changes trigger their Memcached.
fn setup(scope: &Scope) -> (Controller<Memcached>, Context) {
    let owned = watcher::Config::default()
        .labels(&managed_selector())
        .any_semantic();
    let deployments = scope.cache_trimmed::<Deployment>(owned, trim);
    let context = Context {
        manager: scope.context().clone(),
        deployments: deployments.store(),
        image: image(std::env::var(IMAGE_ENV).ok()),
    };
    let config = watcher::Config::default().any_semantic();
    let objects = scope.cache::<Memcached>(config);
    let controller = objects.controller().owns(deployments);
    (controller, context)
}

/// Brings the Deployment in line with one object, as cached: called on
/// every change of it or of its Deployment, every sync period, and after a
/// failure (with backoff).
async fn reconcile(
    object: Arc<Memcached>, // as cached
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    if object.metadata.deletion_timestamp.is_some() {
        // Being deleted: its Deployment goes with it.
        return Ok(Action::await_change());
    }
    let namespace = object
        .namespace()
        .ok_or(Error::MissingMetadata("namespace"))?;
    let client = ctx.manager.client.clone();
    let api: Api<Memcached> = Api::namespaced(client.clone(), &namespace);
    let deployments: Api<Deployment> = Api::namespaced(client, &namespace);
    let desired = manager::PROJECT.stamp(deployment_for(&object, &ctx.image)?);
    let name = object.name_any();
    let cached = find(&ctx.deployments, &name, Some(namespace.as_str()));

    let written = match ctx
        .manager
        .apply_owned(&deployments, cached.as_deref(), desired.clone())
        .await
    {
        Ok(written) => written,
        Err(err) => {
            let message = format!("cannot put Deployment {name} in place: {err}");
            let status = status_for(&object, &Rollout::Failed(message.clone()));
            match set_status(&ctx, &api, &object, status).await {
                Ok(true) => {
                    let warning = EventType::Warning;
                    publish(&ctx, &object, warning, "DeploymentFailed", message).await;
                }
                Ok(false) => {}
                Err(status_err) => {
                    tracing::warn!(name = %name, error = %status_err, "cannot report the failure");
                }
            }
            return Err(err.into());
        }
    };
    if written {
        let (reason, verb) = match cached {
            None => ("Created", "created"),
            Some(_) => ("Updated", "updated"),
        };
        let note = format!(
            "Deployment {name} {verb}: {} replica(s) of {}",
            object.spec.size, ctx.image
        );
        publish(&ctx, &object, EventType::Normal, reason, note).await;
    }

    // A Deployment written now is not in the cache yet: its change brings
    // another reconcile.
    let rollout = if written {
        Rollout::Pending
    } else {
        rollout_of(cached.as_deref(), &desired)
    };
    set_status(&ctx, &api, &object, status_for(&object, &rollout)).await?;
    Ok(Action::await_change())
}

/// Writes `status` unless the cached one says so already; returns whether
/// it wrote (false also when the object is gone).
async fn set_status(
    ctx: &Context,
    api: &Api<Memcached>,
    object: &Memcached,
    status: MemcachedStatus,
) -> Result<bool, kube::Error> {
    let current = object.status.as_ref();
    ctx.manager
        .apply_status_if_changed(api, object, current, &status)
        .await
}

/// Records an event about the object.
async fn publish(
    ctx: &Context,
    object: &Memcached, // the event is about it
    type_: EventType,
    reason: &str,
    note: String,
) {
    let regarding = object.object_ref(&());
    ctx.manager
        .publish(&regarding, type_, reason, "Reconcile", Some(note))
        .await;
}

/// The labels of the Deployment of the Memcached `name` and of its Pods.
fn labels(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (NAME_LABEL.to_owned(), CONTAINER.to_owned()),
        (INSTANCE_LABEL.to_owned(), name.to_owned()),
        (MANAGED_BY_LABEL.to_owned(), manager::NAME.to_owned()),
    ])
}

/// The Deployment `object` asks for: `spec.size` replicas of `image`,
/// owned by the object, locked down as the restricted Pod Security Standard
/// asks.
fn deployment_for(
    object: &Memcached, // read from the API server: named, with a uid
    image: &str,
) -> Result<Deployment, Error> {
    let name = object.metadata.name.clone();
    let name = name.ok_or(Error::MissingMetadata("name"))?;
    let namespace = object.metadata.namespace.clone();
    let namespace = namespace.ok_or(Error::MissingMetadata("namespace"))?;
    let mut owner = object
        .controller_owner_ref(&())
        .ok_or(Error::MissingMetadata("uid"))?;
    owner.block_owner_deletion = Some(true);
    let labels = labels(&name);
    let selector = BTreeMap::from([
        (NAME_LABEL.to_owned(), CONTAINER.to_owned()),
        (INSTANCE_LABEL.to_owned(), name.clone()),
    ]);
    let container = Container {
        name: CONTAINER.to_owned(),
        image: Some(image.to_owned()),
        image_pull_policy: Some("IfNotPresent".to_owned()),
        command: Some(COMMAND.iter().map(|arg| (*arg).to_owned()).collect()),
        ports: Some(vec![ContainerPort {
            name: Some(PORT_NAME.to_owned()),
            container_port: object.spec.container_port,
            protocol: Some("TCP".to_owned()),
            ..ContainerPort::default()
        }]),
        security_context: Some(SecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(RUN_AS_USER),
            allow_privilege_escalation: Some(false),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".to_owned()]),
                ..Capabilities::default()
            }),
            ..SecurityContext::default()
        }),
        ..Container::default()
    };
    Ok(Deployment {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(namespace),
            labels: Some(labels.clone()),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(object.spec.size),
            selector: LabelSelector {
                match_labels: Some(selector),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    security_context: Some(PodSecurityContext {
                        run_as_non_root: Some(true),
                        seccomp_profile: Some(SeccompProfile {
                            type_: "RuntimeDefault".to_owned(),
                            ..SeccompProfile::default()
                        }),
                        ..PodSecurityContext::default()
                    }),
                    containers: vec![container],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    })
}

/// Where the Deployment of a Memcached stands.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Rollout {
    /// Written now, or not yet seen by the cache as it was written.
    Pending,
    /// Rolling out: `available` of `wanted` replicas updated and available.
    Progressing { available: i32, wanted: i32 },
    /// The Deployment's controller gave up on the rollout
    /// (ProgressDeadlineExceeded), with its message.
    Stalled(String),
    /// Every replica asked for is updated and available.
    Available { replicas: i32 },
    /// The Deployment could not be written, with why.
    Failed(String),
}

/// The rollout of the cached Deployment `cached` (metadata and status),
/// as `desired` (stamped with its hash) asks for it.
fn rollout_of(cached: Option<&Deployment>, desired: &Deployment) -> Rollout {
    let current = |cached: &&Deployment| manager::PROJECT.is_current(*cached, desired);
    let Some(cached) = cached.filter(current) else {
        return Rollout::Pending;
    };
    let wanted = desired.spec.as_ref().and_then(|spec| spec.replicas);
    let wanted = wanted.unwrap_or(1);
    let status = cached.status.clone().unwrap_or_default();
    let stalled = status.conditions.iter().flatten().find(|c| {
        c.type_ == "Progressing"
            && c.status == "False"
            && c.reason.as_deref() == Some("ProgressDeadlineExceeded")
    });
    if let Some(stalled) = stalled {
        return Rollout::Stalled(stalled.message.clone().unwrap_or_default());
    }
    let observed = status.observed_generation.is_some()
        && status.observed_generation >= cached.metadata.generation;
    let available = status.available_replicas.unwrap_or_default();
    let rolled_out = observed
        && status.replicas.unwrap_or_default() == wanted
        && status.updated_replicas.unwrap_or_default() == wanted
        && available == wanted;
    if rolled_out {
        Rollout::Available { replicas: wanted }
    } else {
        Rollout::Progressing { available, wanted }
    }
}

/// The status of `obj` at its current generation for `rollout`: its
/// `Available`, `Progressing` and `Degraded` conditions.
fn status_for(
    obj: &Memcached, // as cached
    rollout: &Rollout,
) -> MemcachedStatus {
    let generation = obj.metadata.generation;
    let name = obj.name_any();
    let in_place = format!("Deployment {name} is in place");
    // (Available, Progressing, Degraded): each status, reason and message.
    let (available, progressing, degraded) = match rollout {
        Rollout::Pending => {
            let message = format!("Deployment {name} is being rolled out");
            (
                (false, "Reconciling", message.clone()),
                (true, "Reconciling", message),
                (false, "Reconciled", in_place),
            )
        }
        Rollout::Progressing { available, wanted } => {
            let message = format!("{available} of {wanted} replica(s) available");
            (
                (false, "RollingOut", message.clone()),
                (true, "RollingOut", message),
                (false, "Reconciled", in_place),
            )
        }
        Rollout::Stalled(why) => (
            (false, "ProgressDeadlineExceeded", why.clone()),
            (false, "ProgressDeadlineExceeded", why.clone()),
            (true, "ProgressDeadlineExceeded", why.clone()),
        ),
        Rollout::Available { replicas } => {
            let message = format!("{replicas} replica(s) available");
            (
                (true, "RolledOut", message.clone()),
                (false, "RolledOut", message),
                (false, "Reconciled", in_place),
            )
        }
        Rollout::Failed(why) => (
            (false, "DeploymentFailed", why.clone()),
            (false, "DeploymentFailed", why.clone()),
            (true, "DeploymentFailed", why.clone()),
        ),
    };
    let mut status = obj.status.clone().unwrap_or_default();
    status.observed_generation = generation;
    for (type_, (value, reason, message)) in [
        (conditions::AVAILABLE, available),
        (conditions::PROGRESSING, progressing),
        (conditions::DEGRADED, degraded),
    ] {
        let condition = conditions::new(type_, value, reason, message, generation);
        conditions::set(&mut status.conditions, condition);
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    use k8s_openapi::api::apps::v1::DeploymentStatus;

    use memcached_operator::api::cache::v1alpha1::MemcachedSpec;

    fn object_at(generation: i64, size: i32) -> Memcached {
        let spec = MemcachedSpec {
            size,
            ..MemcachedSpec::default()
        };
        let mut object = Memcached::new("test", spec);
        object.metadata.namespace = Some("default".to_owned());
        object.metadata.uid = Some("0b5e7c5a-1a7e-4c3b-9d59-5e0c1b1f8e1d".to_owned());
        object.metadata.generation = Some(generation);
        object
    }

    /// The status and reason of the condition of `type_` in `status`, which
    /// must be at the status's generation.
    fn condition(
        status: &MemcachedStatus, // as status_for made it
        type_: &str,
    ) -> (String, String) {
        let found = conditions::find(&status.conditions, type_);
        let found = found.unwrap_or_else(|| panic!("a {type_} condition"));
        assert_eq!(found.observed_generation, status.observed_generation);
        (found.status.clone(), found.reason.clone())
    }

    fn pair(status: &str, reason: &str) -> (String, String) {
        (status.to_owned(), reason.to_owned())
    }

    /// The Deployment `object` asks for, stamped with its hash.
    fn stamped(object: &Memcached) -> Deployment {
        let desired = deployment_for(object, DEFAULT_IMAGE);
        manager::PROJECT.stamp(desired.expect("a Deployment"))
    }

    /// `desired` as the cache shows it once its controller reports `ready`
    /// of its replicas updated and available.
    fn cached(desired: &Deployment, ready: i32) -> Deployment {
        let mut cached = desired.clone();
        cached.spec = None;
        cached.metadata.generation = Some(1);
        cached.status = Some(DeploymentStatus {
            observed_generation: Some(1),
            replicas: Some(ready),
            updated_replicas: Some(ready),
            available_replicas: Some(ready),
            ..DeploymentStatus::default()
        });
        cached
    }

    #[test]
    fn the_deployment_runs_the_image_with_the_size_and_is_owned() {
        let object = object_at(1, 3);
        let deployment = deployment_for(&object, DEFAULT_IMAGE).expect("a Deployment");
        assert_eq!(deployment.metadata.name.as_deref(), Some("test"));
        assert_eq!(deployment.metadata.namespace.as_deref(), Some("default"));
        let owners = deployment.metadata.owner_references.clone();
        let owners = owners.unwrap_or_default();
        assert_eq!(owners.len(), 1);
        assert_eq!(owners[0].kind, "Memcached");
        assert_eq!(owners[0].controller, Some(true));
        let spec = deployment.spec.expect("a spec");
        assert_eq!(spec.replicas, Some(3));
        let selected = spec.selector.match_labels.unwrap_or_default();
        let template_labels = spec.template.metadata.and_then(|m| m.labels);
        let template_labels = template_labels.unwrap_or_default();
        let in_template = |(k, v): (&String, &String)| template_labels.get(k) == Some(v);
        assert!(selected.iter().all(in_template));
        let pod = spec.template.spec.expect("a Pod spec");
        let pod_security = pod.security_context.expect("a Pod security context");
        assert_eq!(pod_security.run_as_non_root, Some(true));
        let seccomp = pod_security.seccomp_profile.map(|p| p.type_);
        assert_eq!(seccomp.as_deref(), Some("RuntimeDefault"));
        let container = &pod.containers[0];
        assert_eq!(container.image.as_deref(), Some(DEFAULT_IMAGE));
        let command = container.command.clone().unwrap_or_default();
        assert_eq!(command, COMMAND);
        let ports = container.ports.clone().unwrap_or_default();
        assert_eq!(ports[0].container_port, 11211);
        let security = container.security_context.clone();
        let security = security.expect("a security context");
        assert_eq!(security.run_as_non_root, Some(true));
        assert_eq!(security.run_as_user, Some(1001));
        assert_eq!(security.allow_privilege_escalation, Some(false));
        let dropped = security.capabilities.and_then(|c| c.drop);
        assert_eq!(dropped, Some(vec!["ALL".to_owned()]));
    }

    #[test]
    fn the_image_can_be_overridden() {
        assert_eq!(image(None), DEFAULT_IMAGE);
        assert_eq!(image(Some(String::new())), DEFAULT_IMAGE);
        let mirror = "mirror.example.com/app:2";
        assert_eq!(image(Some(mirror.to_owned())), mirror);
    }

    #[test]
    fn an_object_not_read_from_the_api_server_has_no_deployment() {
        let mut object = object_at(1, 1);
        object.metadata.uid = None;
        assert!(matches!(
            deployment_for(&object, DEFAULT_IMAGE),
            Err(Error::MissingMetadata("uid"))
        ));
    }

    #[test]
    fn the_status_follows_the_rollout() {
        let object = object_at(2, 2);
        let desired = stamped(&object);
        assert_eq!(rollout_of(None, &desired), Rollout::Pending);
        let partly = cached(&desired, 1);
        let progressing = rollout_of(Some(&partly), &desired);
        let wanted = Rollout::Progressing {
            available: 1,
            wanted: 2,
        };
        assert_eq!(progressing, wanted);
        let status = status_for(&object, &progressing);
        assert_eq!(status.observed_generation, Some(2));
        let available = condition(&status, conditions::AVAILABLE);
        assert_eq!(available, pair("False", "RollingOut"));
        let progressing = condition(&status, conditions::PROGRESSING);
        assert_eq!(progressing, pair("True", "RollingOut"));
        let degraded = condition(&status, conditions::DEGRADED);
        assert_eq!(degraded, pair("False", "Reconciled"));

        let done = rollout_of(Some(&cached(&desired, 2)), &desired);
        assert_eq!(done, Rollout::Available { replicas: 2 });
        let status = status_for(&object, &done);
        let available = condition(&status, conditions::AVAILABLE);
        assert_eq!(available, pair("True", "RolledOut"));
        let progressing = condition(&status, conditions::PROGRESSING);
        assert_eq!(progressing, pair("False", "RolledOut"));
    }

    #[test]
    fn a_deployment_written_for_another_spec_is_not_available_yet() {
        let desired = stamped(&object_at(1, 1));
        let resized = stamped(&object_at(2, 3));
        let seen = cached(&desired, 1);
        assert_eq!(rollout_of(Some(&seen), &resized), Rollout::Pending);
    }

    #[test]
    fn a_failed_write_is_degraded() {
        let object = object_at(1, 1);
        let failed = Rollout::Failed("refused".to_owned());
        let status = status_for(&object, &failed);
        let degraded = condition(&status, conditions::DEGRADED);
        assert_eq!(degraded, pair("True", "DeploymentFailed"));
        let available = condition(&status, conditions::AVAILABLE);
        assert_eq!(available, pair("False", "DeploymentFailed"));
    }

    #[test]
    fn an_up_to_date_status_is_left_alone() {
        let mut object = object_at(2, 1);
        let available = Rollout::Available { replicas: 1 };
        object.status = Some(status_for(&object, &available));
        assert_eq!(object.status, Some(status_for(&object, &available)));
        object.metadata.generation = Some(3);
        assert_ne!(object.status, Some(status_for(&object, &available)));
    }
}
