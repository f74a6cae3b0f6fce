//! What a Database's Pod says about its database server, read from the
//! status its kubelet reports: ready, still starting, or failing in a way
//! that needs someone's hand (a crash loop, an image that cannot be
//! pulled). The Pod cache holds of each Pod only what this module and the
//! reconcile read, decoded straight into [`PodView`] (a projection: the
//! rest of the Pod is skipped while decoding, never held).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use opctl_runtime::{Projected, Projection};
use serde::Deserialize;

/// A cached Pod: a Pod as [`PodView`] sees it.
pub type CachedPod = Projected<k8s_openapi::api::core::v1::Pod, PodView>;

/// Of a Pod, its metadata (which the reconcile compares with the desired
/// Pod) and the parts of its status that tell its health.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct PodView {
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub status: Option<PodStatusView>,
}

impl Projection for PodView {
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// The health of a Pod in its status.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStatusView {
    #[serde(default)]
    pub phase: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    /// The Ready condition is True (of the conditions, the one read).
    #[serde(
        default,
        rename = "conditions",
        deserialize_with = "opctl_runtime::ready_from_conditions"
    )]
    pub ready: bool,
    #[serde(default)]
    pub init_container_statuses: Vec<ContainerView>,
    #[serde(default)]
    pub container_statuses: Vec<ContainerView>,
}

/// The health of one container in its Pod's status.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerView {
    pub name: String,
    #[serde(default)]
    pub image: String,
    #[serde(default)]
    pub ready: bool,
    #[serde(default)]
    pub state: StateView,
    #[serde(default)]
    pub last_state: StateView,
}

/// A container's state: why it waits, and how it last ended.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct StateView {
    #[serde(default)]
    pub waiting: Option<WaitingView>,
    #[serde(default)]
    pub terminated: Option<TerminatedView>,
}

/// Why a container waits.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct WaitingView {
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
}

/// How a container ended.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminatedView {
    #[serde(default)]
    pub exit_code: i32,
}

/// The state of a Database's server, as its Pod shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum PodHealth {
    /// The Pod is Ready: the server takes connections.
    Ready,
    /// Not Ready yet, and nothing has gone wrong (scheduling, pulling,
    /// starting; or no Pod in the cache yet).
    #[default]
    Starting,
    /// Not Ready because something keeps failing. `reason` is stable
    /// while the failure lasts (a crash loop alternates between running and
    /// back-off, an image pull between `ErrImagePull` and `ImagePullBackOff`),
    /// so that the Database's status does not flap with it.
    Failing {
        reason: &'static str,
        message: String,
    },
}

/// The reason reported for a container that keeps exiting with an error.
pub const CRASH_LOOP: &str = "CrashLoopBackOff";
/// The reason reported for a container whose image cannot be pulled.
pub const IMAGE_PULL: &str = "ImagePullBackOff";
/// The reason reported for a Pod that ended in phase `Failed`.
pub const POD_FAILED: &str = "PodFailed";

/// The health of the server in `pod` (named `name`), or
/// [`PodHealth::Starting`] when the cache has no Pod yet.
pub fn health(name: &str, pod: Option<&PodView>) -> PodHealth {
    let Some(status) = pod.and_then(|pod| pod.status.as_ref()) else {
        return PodHealth::Starting;
    };
    if status.phase.as_deref() == Some("Failed") {
        let why = status.reason.as_deref().unwrap_or("its containers exited");
        return PodHealth::Failing {
            reason: POD_FAILED,
            message: format!("Pod {name} failed: {why}"),
        };
    }
    if status.ready {
        return PodHealth::Ready;
    }
    let containers = status.container_statuses.iter();
    for container in status.init_container_statuses.iter().chain(containers) {
        if let Some(failing) = failing(name, container) {
            return failing;
        }
    }
    PodHealth::Starting
}

/// Why `container` (of Pod `name`) keeps its Pod from being Ready, if it
/// is failing rather than starting.
fn failing(name: &str, container: &ContainerView) -> Option<PodHealth> {
    let waiting = container.state.waiting.as_ref();
    let waiting_reason = waiting.and_then(|waiting| waiting.reason.as_deref());
    let image = &container.image;
    let terminated = container.last_state.terminated.as_ref();
    let crashed_before = terminated.is_some_and(|terminated| terminated.exit_code != 0);
    match waiting_reason {
        Some("ErrImagePull" | "ImagePullBackOff" | "InvalidImageName") => {
            Some(PodHealth::Failing {
                reason: IMAGE_PULL,
                message: format!(
                    "Pod {name}: the image {image} of container {} cannot be pulled",
                    container.name
                ),
            })
        }
        Some("CreateContainerConfigError" | "CreateContainerError") => {
            let why = waiting.and_then(|waiting| waiting.message.clone());
            Some(PodHealth::Failing {
                reason: "CreateContainerError",
                message: format!(
                    "Pod {name}: container {} cannot be created: {}",
                    container.name,
                    why.unwrap_or_default()
                ),
            })
        }
        // Between two runs of a crashing container, and while it runs
        // again after a crash without being ready: the same failure.
        Some("CrashLoopBackOff") => Some(crash_loop(name, container)),
        _ if crashed_before && !container.ready => Some(crash_loop(name, container)),
        _ => None,
    }
}

fn crash_loop(name: &str, container: &ContainerView) -> PodHealth {
    PodHealth::Failing {
        reason: CRASH_LOOP,
        message: format!(
            "Pod {name}: container {} keeps exiting with an error",
            container.name
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Pod with `status`, as the cache holds it.
    fn pod(status: serde_json::Value) -> CachedPod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "orders"},
            "spec": {"containers": [{"name": "mongo", "image": "mongo:4.0"}]},
            "status": status,
        }))
        .expect("a Pod")
    }

    fn container(
        state: serde_json::Value,
        last: serde_json::Value,
        ready: bool,
    ) -> serde_json::Value {
        serde_json::json!({
            "name": "mongo", "image": "mongo:4.0", "imageID": "", "restartCount": 1,
            "ready": ready, "state": state, "lastState": last,
        })
    }

    #[test]
    fn no_pod_yet_is_starting() {
        assert_eq!(health("orders", None), PodHealth::Starting);
    }

    #[test]
    fn a_ready_pod_is_ready_and_a_pending_one_is_starting() {
        let ready = pod(serde_json::json!({
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
        }));
        assert_eq!(health("orders", Some(&ready)), PodHealth::Ready);
        let pending = pod(serde_json::json!({"phase": "Pending"}));
        assert_eq!(health("orders", Some(&pending)), PodHealth::Starting);
    }

    #[test]
    fn a_crash_loop_is_one_failure_whether_waiting_or_running_again() {
        let backing_off = pod(serde_json::json!({
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [container(
                serde_json::json!({"waiting": {"reason": "CrashLoopBackOff"}}),
                serde_json::json!({"terminated": {"exitCode": 1}}),
                false,
            )],
        }));
        let running_again = pod(serde_json::json!({
            "phase": "Running",
            "containerStatuses": [container(
                serde_json::json!({"running": {}}),
                serde_json::json!({"terminated": {"exitCode": 1}}),
                false,
            )],
        }));
        let first = health("orders", Some(&backing_off));
        assert_eq!(health("orders", Some(&running_again)), first);
        assert!(
            matches!(
                first,
                PodHealth::Failing {
                    reason: CRASH_LOOP,
                    ..
                }
            ),
            "{first:?}"
        );
    }

    #[test]
    fn a_pull_failure_is_one_failure_in_both_of_its_states() {
        let reasons = ["ErrImagePull", "ImagePullBackOff"].map(|reason| {
            let pending = pod(serde_json::json!({
                "phase": "Pending",
                "containerStatuses": [container(
                    serde_json::json!({"waiting": {"reason": reason}}),
                    serde_json::json!({}),
                    false,
                )],
            }));
            health("orders", Some(&pending))
        });
        assert_eq!(reasons[0], reasons[1]);
        assert!(matches!(
            reasons[0],
            PodHealth::Failing {
                reason: IMAGE_PULL,
                ..
            }
        ));
    }

    #[test]
    fn of_the_conditions_only_ready_counts() {
        let scheduled = pod(serde_json::json!({
            "phase": "Pending",
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "False", "reason": "ContainersNotReady"},
            ],
        }));
        assert!(!scheduled.status.as_ref().expect("a status").ready);
        assert_eq!(health("orders", Some(&scheduled)), PodHealth::Starting);
    }

    #[test]
    fn the_cache_holds_what_health_reads_of_a_whole_pod() {
        let crashing = pod(serde_json::json!({
            "phase": "Running",
            "podIP": "10.0.0.1",
            "conditions": [
                {"type": "Ready", "status": "False", "reason": "ContainersNotReady"},
                {"type": "PodScheduled", "status": "True"},
            ],
            "containerStatuses": [container(
                serde_json::json!({"waiting": {"reason": "CrashLoopBackOff"}}),
                serde_json::json!({"terminated": {"exitCode": 1, "reason": "Error"}}),
                false,
            )],
        }));
        assert_eq!(crashing.metadata.name.as_deref(), Some("orders"));
        let status = crashing.status.as_ref().expect("a status");
        assert_eq!(status.phase.as_deref(), Some("Running"));
        assert_eq!(
            status.container_statuses[0]
                .last_state
                .terminated
                .as_ref()
                .map(|t| t.exit_code),
            Some(1)
        );
        assert_eq!(
            health("orders", Some(&crashing)),
            PodHealth::Failing {
                reason: CRASH_LOOP,
                message: "Pod orders: container mongo keeps exiting with an error".to_owned(),
            }
        );
    }
}
