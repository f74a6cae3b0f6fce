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

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::core::ParseExpressionError;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};

use sidecarset::api::apps::v1alpha1::{SidecarSet, SidecarSetStatus, injected_sidecar_sets};
use sidecarset::manager::{self, Manager, conditions};

// What this controller may do; `opctl manifests` turns these lines into
// config/rbac/role.yaml.
// +opctl:rbac:groups=apps.kruise.io,resources=sidecarsets,verbs=get;list;watch
// +opctl:rbac:groups=apps.kruise.io,resources=sidecarsets/status,verbs=get;patch;update
// +opctl:rbac:groups=core,resources=pods,verbs=get;list;watch

/// The controller's name in logs and metrics.
const NAME: &str = "sidecar_set";

/// How often a SidecarSet is counted again when nothing seems to change (a
/// Pod relabelled out of a selector it was never injected by is seen then).
const RESYNC: Duration = Duration::from_secs(300);

/// What every reconcile can use.
pub struct Context {
    /// Client, metrics and backoff shared by the manager.
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
    let client = manager.client.clone();
    let controller = Controller::new(
        Api::<SidecarSet>::all(client.clone()),
        watcher::Config::default().any_semantic(),
    );
    let sidecar_sets = controller.store();
    let ctx = Arc::new(Context { manager });
    controller
        .watches(
            Api::<Pod>::all(client),
            watcher::Config::default().any_semantic(),
            move |pod| concerned_sidecar_sets(&pod, &sidecar_sets.state()),
        )
        .graceful_shutdown_on(shutdown.wait_owned())
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            match result {
                Ok((object, _)) => tracing::debug!(%object, "reconciled"),
                Err(err) => tracing::debug!(error = %err, "reconcile failed"),
            }
        })
        .await;
}

/// The SidecarSets whose counts a change of `pod` may change: those that
/// select it now, and those its annotation says were injected into it (it
/// may have just left their selector, or been deleted).
fn concerned_sidecar_sets(
    pod: &Pod,
    sidecar_sets: &[Arc<SidecarSet>],
) -> Vec<ObjectRef<SidecarSet>> {
    let injected = injected_sidecar_sets(pod);
    sidecar_sets
        .iter()
        .filter(|set| injected.contains(&set.name_any().as_str()) || set.selects(pod.labels()))
        .map(|set| ObjectRef::from_obj(&**set))
        .collect()
}

/// Counts the SidecarSet's Pods and writes the status when it changed.
async fn reconcile(object: Arc<SidecarSet>, ctx: Arc<Context>) -> Result<Action, Error> {
    let mut timer = ctx.manager.metrics.reconcile(NAME);
    let key = ObjectRef::from_obj(&*object).to_string();
    let result = count_and_report(&object, &ctx).await;
    match &result {
        Ok(_) => ctx.manager.backoff.succeeded(&key),
        Err(_) => timer.failed(),
    }
    result
}

async fn count_and_report(object: &SidecarSet, ctx: &Context) -> Result<Action, Error> {
    let client = ctx.manager.client.clone();
    let selected = match object.selector() {
        Ok(selector) if !selector.selects_all() => {
            let params = ListParams::default().labels_from(&selector);
            let pods = Api::<Pod>::all(client.clone()).list(&params).await?;
            Ok(pods.items)
        }
        Ok(_) => Ok(Vec::new()), // an empty selector selects nothing
        Err(err) => Err(err),
    };
    let status = status_for(object, selected.as_deref());
    if object.status.as_ref() != Some(&status) {
        let patch = serde_json::json!({
            "apiVersion": SidecarSet::api_version(&()),
            "kind": SidecarSet::kind(&()),
            "status": status,
        });
        let params = PatchParams::apply(manager::NAME).force();
        let api = Api::<SidecarSet>::all(client);
        match api
            .patch_status(&object.name_any(), &params, &Patch::Apply(patch))
            .await
        {
            Ok(_) => {}
            // Deleted while it was being counted: nothing left to report.
            Err(kube::Error::Api(status)) if status.is_not_found() => {
                return Ok(Action::await_change());
            }
            Err(err) => return Err(err.into()),
        }
    }
    Ok(Action::requeue(RESYNC))
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
fn count(object: &SidecarSet, pods: &[Pod]) -> Counts {
    let mut counts = Counts::default();
    for pod in pods.iter().filter(|pod| is_active(pod)) {
        if !object.selects(pod.labels()) {
            continue;
        }
        let updated = object.is_injected_into(pod);
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
fn status_for(
    object: &SidecarSet,
    pods: Result<&[Pod], &ParseExpressionError>,
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
fn is_active(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    pod.metadata.deletion_timestamp.is_none() && !matches!(phase, Some("Succeeded" | "Failed"))
}

/// Whether `pod`'s `Ready` condition is `True` (what the kubelet reports).
fn is_ready(pod: &Pod) -> bool {
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_deref());
    let conditions = conditions.unwrap_or_default();
    conditions
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True")
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
    fn pod(app: &str, log_image: Option<&str>, ready: bool, phase: &str) -> Pod {
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
        let status = status_for(&set, Ok(&[]));
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
        let status = status_for(&set, Err(&err));
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
        let names = |pod: &Pod| -> Vec<String> {
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
