//! What a Database's Pod says about its database server, read from the
//! status its kubelet reports: ready, still starting, or failing in a way
//! that needs someone's hand (a crash loop, an image that cannot be
//! pulled). The Pod cache keeps only what this module reads ([`trim`]).

use k8s_openapi::api::core::v1::{ContainerStatus, Pod, PodCondition, PodStatus};

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
pub fn health(name: &str, pod: Option<&Pod>) -> PodHealth {
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
    if is_ready(status) {
        return PodHealth::Ready;
    }
    let containers = status.container_statuses.iter().flatten();
    for container in status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(containers)
    {
        if let Some(failing) = failing(name, container) {
            return failing;
        }
    }
    PodHealth::Starting
}

fn is_ready(status: &PodStatus) -> bool {
    let mut conditions = status.conditions.iter().flatten();
    conditions.any(|condition| condition.type_ == "Ready" && condition.status == "True")
}

/// Why `container` (of Pod `name`) keeps its Pod from being Ready, if it
/// is failing rather than starting.
fn failing(name: &str, container: &ContainerStatus) -> Option<PodHealth> {
    let state = container.state.as_ref();
    let waiting = state.and_then(|state| state.waiting.as_ref());
    let waiting_reason = waiting.and_then(|waiting| waiting.reason.as_deref());
    let image = &container.image;
    let crashed_before = container.last_state.as_ref().is_some_and(|last| {
        let terminated = last.terminated.as_ref();
        terminated.is_some_and(|terminated| terminated.exit_code != 0)
    });
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

fn crash_loop(name: &str, container: &ContainerStatus) -> PodHealth {
    PodHealth::Failing {
        reason: CRASH_LOOP,
        message: format!(
            "Pod {name}: container {} keeps exiting with an error",
            container.name
        ),
    }
}

/// Keeps of a cached Pod only what [`health`] reads and what a reconcile
/// compares (its metadata): a Database's cache then costs little per Pod.
pub fn trim(pod: &mut Pod) {
    pod.spec = None;
    if let Some(status) = pod.status.as_mut() {
        let ready = status.conditions.take().map(|conditions| {
            let ready = conditions.into_iter().filter(|c| c.type_ == "Ready");
            ready.map(bare_condition).collect()
        });
        *status = PodStatus {
            phase: status.phase.take(),
            reason: status.reason.take(),
            conditions: ready,
            container_statuses: status.container_statuses.take().map(bare_containers),
            init_container_statuses: status.init_container_statuses.take().map(bare_containers),
            ..PodStatus::default()
        };
    }
}

fn bare_condition(condition: PodCondition) -> PodCondition {
    PodCondition {
        type_: condition.type_,
        status: condition.status,
        ..PodCondition::default()
    }
}

fn bare_containers(statuses: Vec<ContainerStatus>) -> Vec<ContainerStatus> {
    statuses
        .into_iter()
        .map(|status| ContainerStatus {
            name: status.name,
            image: status.image,
            ready: status.ready,
            state: status.state,
            last_state: status.last_state,
            ..ContainerStatus::default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(status: serde_json::Value) -> Pod {
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
    fn trimming_keeps_what_health_reads() {
        let mut crashing = pod(serde_json::json!({
            "phase": "Running",
            "podIP": "10.0.0.1",
            "conditions": [
                {"type": "Ready", "status": "False", "reason": "ContainersNotReady"},
                {"type": "PodScheduled", "status": "True"},
            ],
            "containerStatuses": [container(
                serde_json::json!({"waiting": {"reason": "CrashLoopBackOff"}}),
                serde_json::json!({"terminated": {"exitCode": 1}}),
                false,
            )],
        }));
        let before = health("orders", Some(&crashing));
        trim(&mut crashing);
        assert_eq!(health("orders", Some(&crashing)), before);
        assert_eq!(crashing.spec, None);
        let status = crashing.status.expect("a status");
        assert_eq!(status.pod_ip, None);
        assert_eq!(status.conditions.map(|c| c.len()), Some(1));
    }
}
