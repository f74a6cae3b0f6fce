//! The Deployment controller: for every `apps/v1` Deployment in the watched
//! namespaces it keeps a Pod of the same name in the same namespace, whose
//! one container echoes the name every second.
//!
//! The Pod is controlled by the Deployment (an ownerReference with
//! `controller` and `blockOwnerDeletion`), so the garbage collector deletes
//! it with the Deployment: no finalizer holds the Deployment up. A Pod of
//! that name that the Deployment does not control is never touched; a
//! Warning event on the Deployment says why its Pod is missing.
//!
//! Cache first: the controller caches only the metadata of the Deployments
//! and Pods of its namespaces (names, owners; not their specs) and reads
//! nothing else. A Pod is created when the cache shows none of that name (a
//! 409 means the cache has not seen it yet), so a check of a Deployment
//! whose Pod is there costs no request.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};

use simple_deployment::manager::{self, Controller, Manager, Scope, find};

/// A Deployment as cached: its metadata.
pub type CachedDeployment = PartialObjectMeta<Deployment>;

// What this controller may do; `opctl manifests` turns these lines into
// config/rbac/role.yaml. Deployments and Pods are cached (list, watch:
// metadata only), Pods created; nothing is read, updated or deleted.
// +opctl:rbac:groups=apps,resources=deployments,verbs=list;watch
// +opctl:rbac:groups=core,resources=pods,verbs=list;watch;create
// Setting `blockOwnerDeletion` on a Pod needs `update` on the owner's
// finalizers where the OwnerReferencesPermissionEnforcement admission plugin
// runs (OpenShift, hardened clusters); no finalizer is ever written.
// +opctl:rbac:groups=apps,resources=deployments/finalizers,verbs=update

/// The controller's name in logs and metrics.
const NAME: &str = "deployment";

/// The name of the Pod's one container.
pub const CONTAINER: &str = "echo";

/// The label that names the Pod's Deployment.
pub const APP_LABEL: &str = "app";

/// Label values are at most 63 characters; Deployment names may be longer.
const MAX_LABEL_VALUE: usize = 63;

/// How the controller behaves: set from the command line in src/main.rs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The image of the `echo` container.
    pub image: String,
    /// How often a Deployment's Pod is checked when nothing changes.
    pub resync: Duration,
}

/// What every reconcile can use.
pub struct Context {
    /// Client, events and shutdown shared by the manager.
    pub manager: manager::Context,
    /// The controller's settings.
    pub settings: Settings,
    /// The metadata of the Pods of this scope.
    pods: Store<PartialObjectMeta<Pod>>,
}

/// Why a reconcile failed; it is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Kubernetes API call failed.
    #[error("Kubernetes API call failed: {0}")]
    Kube(#[from] kube::Error),
    /// The Deployment cannot have a Pod as specified.
    #[error(transparent)]
    Unbuildable(#[from] Unbuildable),
}

/// Why no Pod can be built for a Deployment.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unbuildable {
    /// Objects read from the API server always have these; anything else is
    /// a bug.
    #[error("the Deployment has no {0}")]
    Missing(&'static str),
    /// The name cannot be the value of the `app` label.
    #[error(
        "the Deployment's name is {0} characters long; a Pod labelled `app: <name>` allows at most 63"
    )]
    NameTooLong(usize),
    /// Not a DNS-1123 subdomain: the API server never lets one through, and
    /// the name is written into a shell command.
    #[error("the Deployment's name {0:?} is not a DNS-1123 subdomain")]
    InvalidName(String),
}

/// Adds this controller to the manager (called from src/main.rs).
pub fn register(manager: Manager, settings: Settings) -> Manager {
    manager.with_controller(NAME, move |scope| setup(scope, &settings), reconcile)
}

/// Sets up the controller for one watched namespace: the metadata of its
/// Deployments and of its Pods; a change to (or the deletion of) a Pod a
/// Deployment owns reconciles that Deployment at once.
fn setup(scope: &Scope, settings: &Settings) -> (Controller<CachedDeployment>, Context) {
    let all = watcher::Config::default().any_semantic();
    let pods = scope.cache_metadata::<Pod>(all.clone());
    let context = Context {
        manager: scope.context().clone(),
        settings: settings.clone(),
        pods: pods.store(),
    };
    let deployments = scope.cache_metadata::<Deployment>(all);
    let controller = deployments.controller().owns(pods);
    (controller, context)
}

/// Makes sure the Deployment's Pod exists: called on every change of the
/// Deployment or of its Pod, and every `resync` otherwise.
async fn reconcile(deployment: Arc<CachedDeployment>, ctx: Arc<Context>) -> Result<Action, Error> {
    if deployment.metadata.deletion_timestamp.is_some() {
        // The garbage collector removes the Pod once the Deployment is gone.
        return Ok(Action::await_change());
    }
    let resync = Action::requeue(ctx.settings.resync);
    let desired = match desired_pod(&*deployment, &ctx.settings.image) {
        Ok(pod) => pod,
        Err(err @ (Unbuildable::NameTooLong(_) | Unbuildable::InvalidName(_))) => {
            // A name never changes: nothing to retry.
            warn(&ctx, &deployment, "InvalidName", err.to_string()).await;
            return Ok(Action::await_change());
        }
        Err(err) => return Err(err.into()),
    };
    let name = deployment.name_any();
    let namespace = deployment
        .namespace()
        .ok_or(Unbuildable::Missing("metadata.namespace"))?;
    match find(&ctx.pods, &name, Some(&namespace)) {
        // Ours (perhaps terminating: its deletion brings us back here).
        Some(pod) if is_controlled_by(&*pod, &*deployment) => {}
        Some(pod) => {
            let note = format!(
                "Pod {namespace}/{name} exists and is not controlled by this Deployment ({}); \
                 it is left alone, retrying in {}s",
                describe_controller(&*pod),
                ctx.settings.resync.as_secs()
            );
            warn(&ctx, &deployment, "PodNameTaken", note).await;
        }
        None => {
            let pods: Api<Pod> = Api::namespaced(ctx.manager.client.clone(), &namespace);
            // A 409 means a Pod of that name appeared meanwhile: its watch
            // event brings us back here to find out whose it is.
            if ctx.manager.create_if_absent(&pods, None, &desired).await? {
                tracing::info!(pod = %format!("{namespace}/{name}"), "created Pod");
                let note = format!("created Pod {namespace}/{name}");
                ctx.manager
                    .publish(
                        &deployment.object_ref(&()),
                        EventType::Normal,
                        "PodCreated",
                        "CreatePod",
                        Some(note),
                    )
                    .await;
            }
        }
    }
    Ok(resync)
}

/// Records a Warning event on the Deployment (and logs it).
async fn warn(ctx: &Context, deployment: &CachedDeployment, reason: &str, note: String) {
    tracing::warn!(deployment = %ObjectRef::from_obj(deployment), reason, "{note}");
    ctx.manager
        .publish(
            &deployment.object_ref(&()),
            EventType::Warning,
            reason,
            "CreatePod",
            Some(note),
        )
        .await;
}

/// The Pod that `deployment` (a Deployment, or its cached metadata)
/// should have.
pub fn desired_pod(
    deployment: &impl Resource<DynamicType = ()>,
    image: &str,
) -> Result<Pod, Unbuildable> {
    let meta = deployment.meta();
    let name = meta
        .name
        .clone()
        .ok_or(Unbuildable::Missing("metadata.name"))?;
    let namespace = meta
        .namespace
        .clone()
        .ok_or(Unbuildable::Missing("metadata.namespace"))?;
    if !is_dns1123_subdomain(&name) {
        return Err(Unbuildable::InvalidName(name));
    }
    if name.len() > MAX_LABEL_VALUE {
        return Err(Unbuildable::NameTooLong(name.len()));
    }
    let owner = OwnerReference {
        block_owner_deletion: Some(true),
        ..deployment
            .controller_owner_ref(&())
            .ok_or(Unbuildable::Missing("metadata.uid"))?
    };
    // Safe to put in the shell command: a DNS-1123 subdomain holds only
    // lowercase letters, digits, '-' and '.'.
    let script = format!("while true ; do echo {name} ; sleep 1 ; done");
    Ok(Pod {
        metadata: ObjectMeta {
            labels: Some(BTreeMap::from([(APP_LABEL.to_owned(), name.clone())])),
            name: Some(name),
            namespace: Some(namespace),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: CONTAINER.to_owned(),
                image: Some(image.to_owned()),
                command: Some(vec!["bash".to_owned(), "-c".to_owned(), script]),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    })
}

/// Whether `pod`'s controller is `deployment` (this very object: same uid).
pub fn is_controlled_by(pod: &impl Resource, deployment: &impl Resource) -> bool {
    let Some(uid) = deployment.meta().uid.as_deref() else {
        return false;
    };
    pod.owner_references()
        .iter()
        .any(|owner| owner.controller == Some(true) && owner.uid == uid)
}

/// Names the controller of a Pod that is not ours, for the Warning event.
fn describe_controller(pod: &impl Resource) -> String {
    match pod
        .owner_references()
        .iter()
        .find(|owner| owner.controller == Some(true))
    {
        Some(owner) => format!("its controller is {} {}", owner.kind, owner.name),
        None => "it has no controller".to_owned(),
    }
}

/// Lowercase alphanumerics, '-' and '.', at most 253 characters, each
/// dot-separated part starting and ending with an alphanumeric.
fn is_dns1123_subdomain(name: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    name.len() <= 253
        && name.split('.').all(|part| {
            part.starts_with(alnum)
                && part.ends_with(alnum)
                && part.chars().all(|c| alnum(c) || c == '-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(name: &str) -> Deployment {
        Deployment {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some("simple-deployment".to_owned()),
                uid: Some("0b7e6d3c-5f1a-4c36-9d1e-7f3f0c1a2b3c".to_owned()),
                ..ObjectMeta::default()
            },
            ..Deployment::default()
        }
    }

    #[test]
    fn the_pod_echoes_the_deployments_name_in_ubi8() {
        let pod = desired_pod(&deployment("web"), "ubi8").expect("a Pod");
        assert_eq!(pod.metadata.name.as_deref(), Some("web"));
        assert_eq!(pod.metadata.namespace.as_deref(), Some("simple-deployment"));
        let labels = BTreeMap::from([("app".to_owned(), "web".to_owned())]);
        assert_eq!(pod.metadata.labels, Some(labels));
        assert_eq!(pod.metadata.finalizers, None);
        let spec = pod.spec.expect("a spec");
        assert_eq!(spec.containers.len(), 1);
        let container = &spec.containers[0];
        assert_eq!(container.name, "echo");
        assert_eq!(container.image.as_deref(), Some("ubi8"));
        assert_eq!(
            container.command,
            Some(vec![
                "bash".to_owned(),
                "-c".to_owned(),
                "while true ; do echo web ; sleep 1 ; done".to_owned(),
            ])
        );
        assert_eq!(container.args, None);
    }

    #[test]
    fn the_image_is_the_one_given() {
        let pod = desired_pod(&deployment("web"), "registry.example/ubi:9").expect("a Pod");
        let spec = pod.spec.expect("a spec");
        assert_eq!(
            spec.containers[0].image.as_deref(),
            Some("registry.example/ubi:9")
        );
    }

    #[test]
    fn the_pod_is_controlled_by_its_deployment() {
        let owner = deployment("web");
        let pod = desired_pod(&owner, "ubi8").expect("a Pod");
        let references = pod.metadata.owner_references.clone().expect("owners");
        assert_eq!(
            references,
            vec![OwnerReference {
                api_version: "apps/v1".to_owned(),
                kind: "Deployment".to_owned(),
                name: "web".to_owned(),
                uid: "0b7e6d3c-5f1a-4c36-9d1e-7f3f0c1a2b3c".to_owned(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]
        );
        assert!(is_controlled_by(&pod, &owner));
    }

    #[test]
    fn a_pod_of_someone_else_is_not_ours() {
        let owner = deployment("web");
        let mut pod = desired_pod(&owner, "ubi8").expect("a Pod");
        let mut unowned = pod.clone();
        unowned.metadata.owner_references = None;
        assert!(!is_controlled_by(&unowned, &owner));
        assert_eq!(describe_controller(&unowned), "it has no controller");

        // An earlier Deployment of the same name (another uid).
        let mut recreated = owner.clone();
        recreated.metadata.uid = Some("another-uid".to_owned());
        assert!(!is_controlled_by(&pod, &recreated));

        // Owned, but not as controller.
        if let Some(references) = pod.metadata.owner_references.as_mut() {
            references[0].controller = Some(false);
        }
        assert!(!is_controlled_by(&pod, &owner));

        let mut replica_set = unowned;
        replica_set.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "apps/v1".to_owned(),
            kind: "ReplicaSet".to_owned(),
            name: "web-5d8f".to_owned(),
            uid: "rs-uid".to_owned(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]);
        assert!(!is_controlled_by(&replica_set, &owner));
        assert_eq!(
            describe_controller(&replica_set),
            "its controller is ReplicaSet web-5d8f"
        );
    }

    #[test]
    fn names_that_cannot_be_a_label_value_are_refused() {
        let longest = "a".repeat(63);
        assert!(desired_pod(&deployment(&longest), "ubi8").is_ok());
        let too_long = "a".repeat(64);
        assert_eq!(
            desired_pod(&deployment(&too_long), "ubi8").map(|_| ()),
            Err(Unbuildable::NameTooLong(64))
        );
    }

    #[test]
    fn names_that_are_not_subdomains_never_reach_the_shell() {
        for name in ["web; rm -rf /", "Web", "-web", "web-", "a..b", "$(id)", ""] {
            assert_eq!(
                desired_pod(&deployment(name), "ubi8").map(|_| ()),
                Err(Unbuildable::InvalidName(name.to_owned())),
                "{name:?}"
            );
        }
        assert!(desired_pod(&deployment("web.v2-0"), "ubi8").is_ok());
    }

    #[test]
    fn objects_missing_what_the_server_always_sets_are_errors() {
        let mut no_uid = deployment("web");
        no_uid.metadata.uid = None;
        assert_eq!(
            desired_pod(&no_uid, "ubi8").map(|_| ()),
            Err(Unbuildable::Missing("metadata.uid"))
        );
        let mut no_namespace = deployment("web");
        no_namespace.metadata.namespace = None;
        assert_eq!(
            desired_pod(&no_namespace, "ubi8").map(|_| ()),
            Err(Unbuildable::Missing("metadata.namespace"))
        );
        assert!(!is_controlled_by(
            &desired_pod(&deployment("web"), "ubi8").expect("a Pod"),
            &no_uid
        ));
    }
}
