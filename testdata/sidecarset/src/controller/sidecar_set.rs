//! The SidecarSet controller: keeps each SidecarSet's status true.
//!
//! The status counts the active Pods (not finished, not being deleted) the
//! selector matches in every namespace (`matchedPods`), those of them that
//! carry the current sidecars (`updatedPods`: each container of the spec, by
//! name, with the spec's image), those that are ready (`readyPods`), and
//! those that are both (`updatedReadyPods`). `Ready` is `True` when every
//! matched Pod is updated and ready.
//!
//! Pods change more often than SidecarSets: the controller watches Pods and
//! reconciles the SidecarSets a changed Pod concerns. Injecting the sidecars
//! is the Pod webhook's work (src/webhook/core/v1/pod_defaulting.rs); the
//! controller never changes a Pod. SidecarSets need no finalizer: deleting
//! one leaves the Pods as they are.
//!
//! Cache first: the SidecarSets and the Pods are counted from the manager's
//! caches, and each cached Pod holds only what the counts need ([`PodView`]:
//! its metadata, its containers' names and images, its phase and whether it
//! is Ready), decoded straight from the API server's JSON. The status is
//! written only when a count or condition changes: recounting costs no
//! request.

use std::borrow::Borrow;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use kube::api::Api;
use kube::core::ParseExpressionError;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use serde::Deserialize;

use sidecarset::api::apps::v1alpha1::{SidecarSet, SidecarSetStatus, injected_sidecar_sets};
use sidecarset::manager::{self, Controller, Manager, Projected, Projection, Scope, conditions};

// What this controller may do; `opctl manifests` turns these lines into
// config/rbac/role.yaml.
// +opctl:rbac:groups=apps.kruise.io,resources=sidecarsets,verbs=get;list;watch
// +opctl:rbac:groups=apps.kruise.io,resources=sidecarsets/status,verbs=get;patch;update
// +opctl:rbac:groups=core,resources=pods,verbs=get;list;watch

/// The controller's name in logs and metrics.
const NAME: &str = "sidecar_set";

/// What every reconcile can use.
pub struct Context {
    /// Client, events and shutdown shared by the manager.
    pub manager: manager::Context,
    /// Every Pod, as much of it as the counts need.
    pods: Store<CachedPod>,
}

/// A cached Pod: a Pod as [`PodView`] sees it.
type CachedPod = Projected<Pod, PodView>;

/// Of a Pod, what the counts and the concerned SidecarSets need: its
/// metadata (labels, the injection annotation, deletion), its containers'
/// names and images, its phase and whether it is Ready. serde skips the
/// rest while decoding.
#[derive(Clone, Debug, Default, Deserialize)]
struct PodView {
    metadata: ObjectMeta,
    #[serde(default)]
    spec: Option<SpecView>,
    #[serde(default)]
    status: Option<StatusView>,
}

impl Projection for PodView {
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
struct SpecView {
    #[serde(default)]
    containers: Vec<ContainerView>,
}

#[derive(Clone, Debug, Default, Deserialize)]
struct ContainerView {
    name: String,
    #[serde(default)]
    image: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
struct StatusView {
    #[serde(default)]
    phase: Option<String>,
    /// The Ready condition is True (of the conditions, the one read).
    #[serde(
        default,
        rename = "conditions",
        deserialize_with = "manager::ready_from_conditions"
    )]
    ready: bool,
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

/// Sets up the controller: the SidecarSets, and the Pods of every
/// namespace (as [`PodView`]s), whose changes reconcile the SidecarSets
/// they concern.
fn setup(scope: &Scope) -> (Controller<SidecarSet>, Context) {
    let everything = watcher::Config::default().any_semantic();
    let pods = scope.cache_projected::<Pod, PodView>(everything.clone());
    let context = Context {
        manager: scope.context().clone(),
        pods: pods.store(),
    };
    let sidecar_sets = scope.cache::<SidecarSet>(everything);
    let cached = sidecar_sets.store();
    let controller = sidecar_sets.controller().watches(pods, move |pod| {
        concerned_sidecar_sets(&pod, &cached.state())
    });
    (controller, context)
}

/// The SidecarSets whose counts a change of `pod` may change: those that
/// select it now, and those its annotation says were injected into it (it
/// may have just left their selector, or been deleted).
fn concerned_sidecar_sets(
    pod: &CachedPod,
    sidecar_sets: &[Arc<SidecarSet>],
) -> Vec<ObjectRef<SidecarSet>> {
    let injected = injected_sidecar_sets(pod);
    sidecar_sets
        .iter()
        .filter(|set| injected.contains(&set.name_any().as_str()) || set.selects(pod.labels()))
        .map(|set| ObjectRef::from_obj(&**set))
        .collect()
}

/// Counts the SidecarSet's Pods in the cache and writes the status when it
/// changed.
async fn reconcile(object: Arc<SidecarSet>, ctx: Arc<Context>) -> Result<Action, Error> {
    let pods = ctx.pods.state();
    let selector = object.selector();
    let status = status_for(&object, selector.as_ref().map(|_| pods.as_slice()));
    let api = Api::<SidecarSet>::all(ctx.manager.client.clone());
    let current = object.status.as_ref();
    ctx.manager
        .apply_status_if_changed(&api, &object, current, &status)
        .await?;
    Ok(Action::await_change())
}

/// The counts of a status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    matched: i32,
    updated: i32,
    ready: i32,
    updated_ready: i32,
}

/// Counts `pods` (those the selector matched) for `object`.
fn count<P: Borrow<CachedPod>>(object: &SidecarSet, pods: &[P]) -> Counts {
    let mut counts = Counts::default();
    for pod in pods.iter().map(Borrow::borrow).filter(|pod| is_active(pod)) {
        if !object.selects(pod.labels()) {
            continue;
        }
        let containers = pod.spec.iter().flat_map(|spec| spec.containers.iter());
        let updated =
            object.is_carried_by(containers.map(|c| (c.name.as_str(), c.image.as_deref())));
        let ready = is_ready(pod);
        counts.matched += 1;
        counts.updated += i32::from(updated);
        counts.ready += i32::from(ready);
        counts.updated_ready += i32::from(updated && ready);
    }
    counts
}

/// The status of `object` for the Pods its selector matched, or the error of
/// a selector that cannot be read.
fn status_for<P: Borrow<CachedPod>>(
    object: &SidecarSet,
    pods: Result<&[P], &ParseExpressionError>,
) -> SidecarSetStatus {
    let generation = object.metadata.generation;
    let mut status = object.status.clone().unwrap_or_default();
    status.observed_generation = generation;
    let counts = match pods {
        Ok(pods) => count(object, pods),
        Err(_) => Counts::default(),
    };
    status.matched_pods = counts.matched;
    status.updated_pods = counts.updated;
    status.ready_pods = counts.ready;
    status.updated_ready_pods = counts.updated_ready;
    let ready = match pods {
        Err(err) => {
            let message = format!("the selector cannot be used: {}", err.0);
            conditions::ready(false, "InvalidSelector", message, generation)
        }
        Ok(_) if counts.updated < counts.matched => {
            let missing = counts.matched - counts.updated;
            let message = format!(
                "{missing} of {} matched Pods do not carry the current sidecars \
                 (created before this version of the SidecarSet, or while its webhook was unavailable)",
                counts.matched
            );
            conditions::ready(false, "PodsNotUpdated", message, generation)
        }
        Ok(_) if counts.updated_ready < counts.matched => {
            let waiting = counts.matched - counts.updated_ready;
            let message = format!("{waiting} of {} matched Pods are not ready", counts.matched);
            conditions::ready(false, "PodsNotReady", message, generation)
        }
        Ok(_) if counts.matched == 0 => {
            let message = "no Pod matches the selector";
            conditions::ready(true, "NoMatchingPods", message, generation)
        }
        Ok(_) => {
            let message = format!(
                "all {} matched Pods carry the current sidecars and are ready",
                counts.matched
            );
            conditions::ready(true, "AllPodsReady", message, generation)
        }
    };
    conditions::set(&mut status.conditions, ready);
    status
}

/// Whether `pod` counts: neither finished nor being deleted.
fn is_active(pod: &PodView) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    pod.metadata.deletion_timestamp.is_none() && !matches!(phase, Some("Succeeded" | "Failed"))
}

/// Whether `pod`'s `Ready` condition is `True`.
fn is_ready(pod: &PodView) -> bool {
    pod.status.as_ref().is_some_and(|status| status.ready)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sidecarset::api::apps::v1alpha1::INJECTED_ANNOTATION;

    fn sidecar_set(name: &str, image: &str) -> SidecarSet {
        let mut set: SidecarSet = serde_json::from_value(serde_json::json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "SidecarSet",
            "metadata": {"name": name},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "containers": [{"name": "log", "image": image}],
            },
        }))
        .expect("a SidecarSet");
        set.metadata.generation = Some(2);
        set
    }

    /// A Pod labelled `app`, with or without the `log` sidecar at `image`,
    /// ready or not, in `phase`.
    fn pod(app: &str, log_image: Option<&str>, ready: bool, phase: &str) -> CachedPod {
        let mut containers = vec![serde_json::json!({"name": "app", "image": "nginx"})];
        if let Some(image) = log_image {
            containers.push(serde_json::json!({"name": "log", "image": image}));
        }
        let ready = if ready { "True" } else { "False" };
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "default", "labels": {"app": app}},
            "spec": {"containers": containers},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": ready}]},
        }))
        .expect("a Pod")
    }

    fn ready_condition(status: &SidecarSetStatus) -> (&str, &str, &str) {
        let ready = conditions::find(&status.conditions, conditions::READY);
        let ready = ready.expect("a Ready condition");
        (
            ready.status.as_str(),
            ready.reason.as_str(),
            ready.message.as_str(),
        )
    }

    #[test]
    fn pods_are_counted_as_matched_updated_and_ready() {
        let set = sidecar_set("log", "fluentd:2");
        let pods = [
            pod("web", Some("fluentd:2"), true, "Running"), // updated, ready
            pod("web", Some("fluentd:2"), false, "Pending"), // updated
            pod("web", Some("fluentd:1"), true, "Running"), // ready, old sidecar
            pod("web", None, false, "Pending"),             // missed the webhook
            pod("api", Some("fluentd:2"), true, "Running"), // not selected
            pod("web", Some("fluentd:2"), false, "Succeeded"), // finished
        ];
        let counts = count(&set, &pods);
        assert_eq!(
            counts,
            Counts {
                matched: 4,
                updated: 2,
                ready: 2,
                updated_ready: 1
            }
        );
    }

    #[test]
    fn a_whole_pod_decodes_into_what_the_counts_need() {
        let pod: CachedPod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]},
                    {"name": "log", "image": "fluentd:2", "args": ["-v"]},
                ],
                "nodeName": "node-1",
            },
            "status": {
                "phase": "Running",
                "podIP": "10.0.0.1",
                "conditions": [
                    {"type": "PodScheduled", "status": "True"},
                    {"type": "Ready", "status": "True"},
                ],
            },
        }))
        .expect("a Pod");
        let containers = &pod.spec.as_ref().expect("a spec").containers;
        assert_eq!(containers[1].image.as_deref(), Some("fluentd:2"));
        assert!(is_ready(&pod) && is_active(&pod));
        let counts = count(&sidecar_set("log", "fluentd:2"), &[pod]);
        assert_eq!(
            counts,
            Counts {
                matched: 1,
                updated: 1,
                ready: 1,
                updated_ready: 1
            }
        );
    }

    #[test]
    fn a_pod_being_deleted_is_not_counted() {
        let set = sidecar_set("log", "fluentd:2");
        let mut deleting = pod("web", Some("fluentd:2"), true, "Running");
        let now = k8s_openapi::jiff::Timestamp::now();
        deleting.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now));
        assert_eq!(count(&set, &[deleting]), Counts::default());
    }

    #[test]
    fn the_status_reports_the_counts_at_the_observed_generation() {
        let set = sidecar_set("log", "fluentd:2");
        let pods = [
            pod("web", Some("fluentd:2"), true, "Running"),
            pod("web", Some("fluentd:2"), false, "Pending"),
        ];
        let status = status_for(&set, Ok(&pods));
        assert_eq!(status.observed_generation, Some(2));
        assert_eq!(
            (status.matched_pods, status.updated_pods, status.ready_pods),
            (2, 2, 1)
        );
        assert_eq!(status.updated_ready_pods, 1);
        let (ready, reason, message) = ready_condition(&status);
        assert_eq!((ready, reason), ("False", "PodsNotReady"));
        assert_eq!(message, "1 of 2 matched Pods are not ready");
    }

    #[test]
    fn ready_means_every_matched_pod_is_updated_and_ready() {
        let set = sidecar_set("log", "fluentd:2");
        let status = status_for(&set, Ok(&[pod("web", Some("fluentd:2"), true, "Running")]));
        let (ready, reason, message) = ready_condition(&status);
        assert_eq!((ready, reason), ("True", "AllPodsReady"));
        assert_eq!(
            message,
            "all 1 matched Pods carry the current sidecars and are ready"
        );
        let status = status_for::<CachedPod>(&set, Ok(&[]));
        let (ready, reason, message) = ready_condition(&status);
        assert_eq!((ready, reason), ("True", "NoMatchingPods"));
        assert_eq!(message, "no Pod matches the selector");
        let status = status_for(&set, Ok(&[pod("web", None, true, "Running")]));
        let (ready, reason, message) = ready_condition(&status);
        assert_eq!((ready, reason), ("False", "PodsNotUpdated"));
        assert!(
            message.starts_with("1 of 1 matched Pods do not carry"),
            "{message}"
        );
    }

    #[test]
    fn an_unreadable_selector_counts_nothing_and_says_why() {
        let set = sidecar_set("log", "fluentd:2");
        let err = ParseExpressionError("Invalid expression operator".to_owned());
        let status = status_for::<CachedPod>(&set, Err(&err));
        assert_eq!(status.matched_pods, 0);
        let (ready, reason, message) = ready_condition(&status);
        assert_eq!((ready, reason), ("False", "InvalidSelector"));
        assert!(message.contains("Invalid expression operator"), "{message}");
    }

    #[test]
    fn an_up_to_date_status_is_left_alone() {
        let mut set = sidecar_set("log", "fluentd:2");
        let pods = [pod("web", Some("fluentd:2"), true, "Running")];
        set.status = Some(status_for(&set, Ok(&pods)));
        assert_eq!(set.status, Some(status_for(&set, Ok(&pods))));
        set.metadata.generation = Some(3);
        assert_ne!(set.status, Some(status_for(&set, Ok(&pods))));
    }

    #[test]
    fn a_pod_concerns_the_sidecar_sets_that_select_it_or_were_injected_into_it() {
        let sets: Vec<Arc<SidecarSet>> = ["a", "b", "c"]
            .into_iter()
            .map(|name| Arc::new(sidecar_set(name, "fluentd")))
            .collect();
        let mut other: SidecarSet = (*sets[2]).clone();
        other.spec.selector.match_labels = Some([("app".to_owned(), "api".to_owned())].into());
        let sets = vec![sets[0].clone(), sets[1].clone(), Arc::new(other)];
        let names = |pod: &CachedPod| -> Vec<String> {
            concerned_sidecar_sets(pod, &sets)
                .into_iter()
                .map(|r| r.name)
                .collect()
        };
        assert_eq!(names(&pod("web", None, false, "Pending")), ["a", "b"]);
        assert_eq!(names(&pod("api", None, false, "Pending")), ["c"]);
        // Relabelled out of a and b's selector, still annotated by a.
        let mut moved = pod("db", Some("fluentd"), false, "Pending");
        moved
            .annotations_mut()
            .insert(INJECTED_ANNOTATION.to_owned(), "a".to_owned());
        assert_eq!(names(&moved), ["a"]);
    }
}
