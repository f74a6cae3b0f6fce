//! The kubelet of a simulated Node: no container runs, but a bound Pod's
//! status goes through the steps a kubelet reports: the sandbox
//! (PodReadyToStartContainers, podIP, hostIP), init containers one after
//! the other, then the containers (started, ready after a delay when they
//! have a readiness probe), Job containers exiting 0, and graceful deletion.
//!
//! Failure is requested per image (see `docs/envtest-workloads.md`): an
//! image reference containing `envtest-image-pull-error` is never pulled
//! (ErrImagePull, then ImagePullBackOff); one containing `envtest-crashloop`
//! exits 1 after running a while (CrashLoopBackOff under restartPolicy
//! Always or OnFailure, a Failed Pod under Never).
//!
//! Each step is planned from the Pod alone plus the time since the
//! kubelet's last write to it, so the simulation is level-triggered: a
//! missed change is caught on the next look.

use std::time::Duration;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::client::{self, ConditionStyle};
use super::config::Timing;
use crate::meta;

pub(crate) const PULL_ERROR_PATTERN: &str = "envtest-image-pull-error";
pub(crate) const CRASHLOOP_PATTERN: &str = "envtest-crashloop";
/// Crash-loop back-off doubles from `Timing::run` up to this many times.
const MAX_BACKOFF_DOUBLINGS: u32 = 6;

/// What the kubelet does next with a Pod.
#[derive(Debug)]
pub(crate) enum Plan {
    /// Write this status (and record these events: type, reason, message).
    Write {
        status: Value,
        events: Vec<(&'static str, &'static str, String)>,
    },
    /// Look again after this long.
    After(Duration),
    /// The containers stopped: remove the deleted Pod.
    Remove,
    /// Nothing will change on its own.
    Idle,
}

/// The Node-side facts a Pod's status needs.
pub(crate) struct Site<'a> {
    pub host_ip: &'a str,
    /// The Pod's IP if it gets one now.
    pub pod_ip: &'a str,
}

/// The image reference as a container runtime reports it
/// (`nginx` → `docker.io/library/nginx:latest`).
pub(crate) fn normalize_image(image: &str) -> String {
    let (first, _) = image.split_once('/').unwrap_or(("", image));
    let mut full = if !image.contains('/') {
        format!("docker.io/library/{image}")
    } else if first.contains('.') || first.contains(':') || first == "localhost" {
        image.to_string()
    } else {
        format!("docker.io/{image}")
    };
    let last = full.rsplit('/').next().unwrap_or("");
    if !last.contains(':') && !full.contains('@') {
        full.push_str(":latest");
    }
    full
}

fn image_id(image: &str) -> String {
    let normalized = normalize_image(image);
    let repo = normalized
        .rsplit_once(':')
        .filter(|(_, tag)| !tag.contains('/'))
        .map(|(r, _)| r)
        .unwrap_or(&normalized);
    let digest = Sha256::digest(normalized.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{repo}@sha256:{hex}")
}

fn container_id() -> String {
    let a = uuid::Uuid::new_v4().simple().to_string();
    let b = uuid::Uuid::new_v4().simple().to_string();
    format!("containerd://{a}{b}")
}

fn names(spec: &Value, field: &str) -> Vec<Value> {
    meta::get_path(spec, &[field])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn image_of(c: &Value) -> &str {
    client::str_at(c, &["image"])
}

fn has_readiness_probe(c: &Value) -> bool {
    c.get("readinessProbe").is_some_and(|p| !p.is_null())
}

fn state_kind(status: &Value) -> &str {
    status
        .get("state")
        .and_then(Value::as_object)
        .and_then(|s| s.keys().next())
        .map(String::as_str)
        .unwrap_or("")
}

fn waiting(name: &str, image: &str, reason: &str, message: Option<String>, restarts: i64) -> Value {
    let mut w = json!({"reason": reason});
    if let Some(m) = message {
        w["message"] = json!(m);
    }
    json!({
        "name": name, "image": normalize_image(image), "imageID": "",
        "ready": false, "started": false, "restartCount": restarts,
        "state": {"waiting": w},
    })
}

fn running(name: &str, image: &str, ready: bool, restarts: i64, last: Option<Value>) -> Value {
    let now = meta::now_rfc3339();
    let mut s = json!({
        "name": name, "image": normalize_image(image), "imageID": image_id(image),
        "containerID": container_id(),
        "ready": ready, "started": true, "restartCount": restarts,
        "state": {"running": {"startedAt": now}},
    });
    if let Some(l) = last {
        s["lastState"] = l;
    }
    s
}

fn terminated_state(prev: &Value, exit_code: i64) -> Value {
    let started = prev
        .pointer("/state/running/startedAt")
        .cloned()
        .unwrap_or_else(|| json!(meta::now_rfc3339()));
    json!({"terminated": {
        "exitCode": exit_code,
        "reason": if exit_code == 0 { "Completed" } else { "Error" },
        "startedAt": started,
        "finishedAt": meta::now_rfc3339(),
        "containerID": prev.get("containerID").cloned().unwrap_or(Value::Null),
    }})
}

fn terminated(prev: &Value, exit_code: i64) -> Value {
    let mut s = prev.clone();
    s["state"] = terminated_state(prev, exit_code);
    s["ready"] = json!(false);
    s["started"] = json!(false);
    s
}

/// Whether this Pod's containers run to completion (a Job's Pods).
fn runs_to_completion(pod: &Value) -> bool {
    client::controller_uid(pod, "Job").is_some()
}

/// What each container does next: (delay, new status, event).
type Step = (
    Duration,
    Value,
    Option<(&'static str, &'static str, String)>,
);

/// The next step of one (regular) container, given its status.
fn container_step(pod: &Value, spec: &Value, status: &Value, timing: &Timing) -> Option<Step> {
    let name = client::str_at(spec, &["name"]);
    let image = image_of(spec);
    let restarts = status
        .get("restartCount")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let policy = match client::str_at(pod, &["spec", "restartPolicy"]) {
        "" => "Always",
        p => p,
    };
    match state_kind(status) {
        "waiting" => {
            let reason = client::str_at(status, &["state", "waiting", "reason"]);
            match reason {
                "ErrImagePull" => Some((
                    timing.start,
                    waiting(
                        name,
                        image,
                        "ImagePullBackOff",
                        Some(format!("Back-off pulling image \"{image}\"")),
                        restarts,
                    ),
                    Some((
                        "Normal",
                        "BackOff",
                        format!("Back-off pulling image \"{image}\""),
                    )),
                )),
                "ImagePullBackOff" => None,
                "CrashLoopBackOff" => {
                    let doublings = (restarts.max(1) as u32 - 1).min(MAX_BACKOFF_DOUBLINGS);
                    let last = status.get("lastState").cloned();
                    Some((
                        timing.run * 2u32.pow(doublings),
                        running(name, image, false, restarts, last),
                        None,
                    ))
                }
                // PodInitializing / ContainerCreating: start now.
                _ => Some((
                    timing.start,
                    start(spec, restarts, None),
                    started_event(name, image),
                )),
            }
        }
        "running" => {
            let reported = client::str_at(status, &["image"]);
            if reported != normalize_image(image) {
                // The image was changed in place: the kubelet restarts the container.
                let last = json!({"terminated": terminated_state(status, 0)["terminated"]});
                return Some((
                    timing.start,
                    start(spec, restarts + 1, Some(last)),
                    started_event(name, image),
                ));
            }
            if image.contains(CRASHLOOP_PATTERN) {
                let ended = terminated(status, 1);
                if policy == "Never" {
                    return Some((timing.run, ended, None));
                }
                let mut s = waiting(
                    name,
                    image,
                    "CrashLoopBackOff",
                    Some(format!(
                        "back-off {}s restarting failed container={name} pod={}_{}({})",
                        10u64 << (restarts as u32).min(MAX_BACKOFF_DOUBLINGS + 1),
                        meta::name(pod),
                        meta::namespace(pod),
                        meta::uid(pod)
                    )),
                    restarts + 1,
                );
                s["lastState"] = json!({"terminated": ended["state"]["terminated"]});
                s["containerID"] = status.get("containerID").cloned().unwrap_or(Value::Null);
                s["imageID"] = status.get("imageID").cloned().unwrap_or(Value::Null);
                return Some((
                    timing.run,
                    s,
                    Some((
                        "Warning",
                        "BackOff",
                        format!(
                            "Back-off restarting failed container {name} in pod {}_{}({})",
                            meta::name(pod),
                            meta::namespace(pod),
                            meta::uid(pod)
                        ),
                    )),
                ));
            }
            if runs_to_completion(pod) {
                return Some((timing.run, terminated(status, 0), None));
            }
            let ready = status.get("ready").and_then(Value::as_bool) == Some(true);
            if !ready {
                let mut s = status.clone();
                s["ready"] = json!(true);
                return Some((timing.ready, s, None));
            }
            None
        }
        "terminated" => {
            let code = status
                .pointer("/state/terminated/exitCode")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            let restart = policy == "Always" || (policy == "OnFailure" && code != 0);
            restart.then(|| {
                let last = json!({"terminated": status["state"]["terminated"].clone()});
                (
                    timing.start,
                    start(spec, restarts + 1, Some(last)),
                    started_event(name, image),
                )
            })
        }
        _ => Some((
            timing.start,
            start(spec, restarts, None),
            started_event(name, image),
        )),
    }
}

fn started_event(name: &str, image: &str) -> Option<(&'static str, &'static str, String)> {
    if image.contains(PULL_ERROR_PATTERN) {
        Some((
            "Warning",
            "Failed",
            format!(
                "Failed to pull image \"{image}\": rpc error: code = NotFound desc = failed to pull and unpack image \"{}\": not found (simulated by opctl envtest)",
                normalize_image(image)
            ),
        ))
    } else {
        Some(("Normal", "Started", format!("Started container {name}")))
    }
}

/// A container starting: running (ready at once unless it has a readiness
/// probe), or waiting on an image that cannot be pulled.
fn start(spec: &Value, restarts: i64, last: Option<Value>) -> Value {
    let name = client::str_at(spec, &["name"]);
    let image = image_of(spec);
    if image.contains(PULL_ERROR_PATTERN) {
        return waiting(
            name,
            image,
            "ErrImagePull",
            Some(format!(
                "failed to pull and unpack image \"{}\": not found (simulated by opctl envtest)",
                normalize_image(image)
            )),
            restarts,
        );
    }
    let ready = !has_readiness_probe(spec) && !image.contains(CRASHLOOP_PATTERN);
    running(name, image, ready, restarts, last)
}

fn status_list(pod: &Value, field: &str) -> Vec<Value> {
    meta::get_path(pod, &["status", field])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn find_status<'a>(list: &'a [Value], name: &str) -> Option<&'a Value> {
    list.iter()
        .find(|s| s.get("name").and_then(Value::as_str) == Some(name))
}

/// Plans the kubelet's next step for a Pod bound to its Node, `elapsed`
/// after its last write to the Pod.
pub(crate) fn plan(pod: &Value, timing: &Timing, elapsed: Duration, site: &Site<'_>) -> Plan {
    if meta::is_deleting(pod) {
        let grace = meta::metadata(pod)
            .and_then(|m| m.get("deletionGracePeriodSeconds"))
            .and_then(Value::as_u64)
            .unwrap_or(30);
        let stop = timing.stop.min(Duration::from_secs(grace));
        return if elapsed >= stop {
            Plan::Remove
        } else {
            Plan::After(stop - elapsed)
        };
    }
    let phase = client::str_at(pod, &["status", "phase"]);
    if matches!(phase, "Succeeded" | "Failed") {
        return Plan::Idle;
    }
    let spec = pod.get("spec").cloned().unwrap_or_default();
    let inits = names(&spec, "initContainers");
    let mains = names(&spec, "containers");
    let mut init_status = status_list(pod, "initContainerStatuses");
    let mut main_status = status_list(pod, "containerStatuses");
    let sandbox = !client::str_at(pod, &["status", "podIP"]).is_empty();
    let mut events = Vec::new();

    let delay;
    if !sandbox {
        delay = timing.start;
        if elapsed < delay {
            return Plan::After(delay - elapsed);
        }
        init_status = inits
            .iter()
            .map(|c| {
                waiting(
                    client::str_at(c, &["name"]),
                    image_of(c),
                    "PodInitializing",
                    None,
                    0,
                )
            })
            .collect();
        main_status = mains
            .iter()
            .map(|c| {
                let reason = if inits.is_empty() {
                    "ContainerCreating"
                } else {
                    "PodInitializing"
                };
                waiting(client::str_at(c, &["name"]), image_of(c), reason, None, 0)
            })
            .collect();
        let mut status = pod_status(pod, &inits, &init_status, &mains, &main_status);
        status["podIP"] = json!(site.pod_ip);
        status["podIPs"] = json!([{"ip": status["podIP"].clone()}]);
        status["hostIP"] = json!(site.host_ip);
        status["hostIPs"] = json!([{"ip": site.host_ip}]);
        status["startTime"] = json!(meta::now_rfc3339());
        return Plan::Write { status, events };
    }

    // Init containers run one at a time, in order.
    let pending_init = inits.iter().position(|c| {
        find_status(&init_status, client::str_at(c, &["name"]))
            .and_then(|s| s.pointer("/state/terminated/exitCode"))
            .and_then(Value::as_i64)
            != Some(0)
    });
    if let Some(i) = pending_init {
        let c = &inits[i];
        let name = client::str_at(c, &["name"]);
        let current = find_status(&init_status, name).cloned().unwrap_or_default();
        let (d, next, event) = match state_kind(&current) {
            "running" if !image_of(c).contains(CRASHLOOP_PATTERN) => {
                (timing.start, terminated(&current, 0), None)
            }
            _ => match container_step(pod, c, &current, timing) {
                Some(step) => step,
                None => return Plan::Idle,
            },
        };
        if elapsed < d {
            return Plan::After(d - elapsed);
        }
        if let Some(slot) = init_status
            .iter_mut()
            .find(|s| s.get("name").and_then(Value::as_str) == Some(name))
        {
            *slot = next;
        }
        events.extend(event);
        let status = pod_status(pod, &inits, &init_status, &mains, &main_status);
        return Plan::Write { status, events };
    }

    // Regular containers: every step due now is taken together.
    let mut soonest: Option<Duration> = None;
    let mut changed = false;
    for c in &mains {
        let name = client::str_at(c, &["name"]);
        let current = find_status(&main_status, name).cloned().unwrap_or_default();
        let Some((d, next, event)) = container_step(pod, c, &current, timing) else {
            continue;
        };
        if elapsed >= d {
            match main_status
                .iter_mut()
                .find(|s| s.get("name").and_then(Value::as_str) == Some(name))
            {
                Some(slot) => *slot = next,
                None => main_status.push(next),
            }
            events.extend(event);
            changed = true;
        } else {
            soonest = Some(soonest.map_or(d - elapsed, |s: Duration| s.min(d - elapsed)));
        }
    }
    if changed {
        let status = pod_status(pod, &inits, &init_status, &mains, &main_status);
        return Plan::Write { status, events };
    }
    soonest.map_or(Plan::Idle, Plan::After)
}

fn unfinished(list: &[Value], statuses: &[Value], done: impl Fn(&Value) -> bool) -> Vec<String> {
    list.iter()
        .map(|c| client::str_at(c, &["name"]).to_string())
        .filter(|n| !find_status(statuses, n).is_some_and(&done))
        .collect()
}

/// The Pod's status from its containers' statuses: phase and conditions as the kubelet derives them.
/// The status a kubelet posts again for a Pod it runs whose Ready
/// condition disagrees with its containers (the node lifecycle controller
/// marked it not Ready while the Node was not Ready); `None` when they agree.
pub(crate) fn restated(pod: &Value) -> Option<Value> {
    if meta::is_deleting(pod) || client::str_at(pod, &["status", "podIP"]).is_empty() {
        return None;
    }
    let spec = pod.get("spec").cloned().unwrap_or_default();
    let status = pod_status(
        pod,
        &names(&spec, "initContainers"),
        &status_list(pod, "initContainerStatuses"),
        &names(&spec, "containers"),
        &status_list(pod, "containerStatuses"),
    );
    let ready = |v: &Value| {
        v.get("conditions")
            .and_then(Value::as_array)
            .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
            .and_then(|c| c.get("status"))
            .cloned()
    };
    (ready(&status) != pod.get("status").and_then(ready)).then_some(status)
}

fn pod_status(
    pod: &Value,
    inits: &[Value],
    init_status: &[Value],
    mains: &[Value],
    main_status: &[Value],
) -> Value {
    let mut status = pod.get("status").cloned().unwrap_or_else(|| json!({}));
    let exit = |s: &Value| {
        s.pointer("/state/terminated/exitCode")
            .and_then(Value::as_i64)
    };
    let policy = client::str_at(pod, &["spec", "restartPolicy"]);
    let initializing = unfinished(inits, init_status, |s| exit(s) == Some(0));
    let unready = unfinished(mains, main_status, |s| {
        s.get("ready").and_then(Value::as_bool) == Some(true)
    });
    let all_terminated = !mains.is_empty()
        && mains.iter().all(|c| {
            find_status(main_status, client::str_at(c, &["name"]))
                .is_some_and(|s| exit(s).is_some())
        });
    let init_failed =
        policy == "Never" && init_status.iter().any(|s| exit(s).is_some_and(|c| c != 0));
    let phase = if init_failed
        || (all_terminated
            && policy == "Never"
            && main_status.iter().any(|s| exit(s).is_some_and(|c| c != 0)))
    {
        "Failed"
    } else if all_terminated && main_status.iter().all(|s| exit(s) == Some(0)) && policy != "Always"
    {
        "Succeeded"
    } else if !initializing.is_empty()
        || main_status.iter().any(|s| {
            s.get("started").and_then(Value::as_bool) != Some(true)
                && s.get("lastState").is_none()
                && exit(s).is_none()
        })
    {
        "Pending"
    } else {
        "Running"
    };
    let terminal = matches!(phase, "Succeeded" | "Failed");
    let list = |names: &[String]| format!("[{}]", names.join(" "));
    let mut conditions = client::conditions(pod);
    let mut set = |cond: Value| {
        client::set_condition(&mut conditions, cond, ConditionStyle::Pod);
    };
    set(
        json!({"type": "PodReadyToStartContainers", "status": if terminal { "False" } else { "True" }}),
    );
    if initializing.is_empty() {
        set(json!({"type": "Initialized", "status": "True"}));
    } else {
        set(
            json!({"type": "Initialized", "status": "False", "reason": "ContainersNotInitialized",
            "message": format!("containers with incomplete status: {}", list(&initializing))}),
        );
    }
    let ready = if terminal {
        let reason = if phase == "Succeeded" {
            "PodCompleted"
        } else {
            "PodFailed"
        };
        json!({"status": "False", "reason": reason})
    } else if unready.is_empty() {
        json!({"status": "True"})
    } else {
        json!({"status": "False", "reason": "ContainersNotReady",
            "message": format!("containers with unready status: {}", list(&unready))})
    };
    for kind in ["ContainersReady", "Ready"] {
        let mut c = ready.clone();
        c["type"] = json!(kind);
        set(c);
    }
    set(json!({"type": "PodScheduled", "status": "True"}));
    let order = [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ];
    conditions.sort_by_key(|c| {
        order
            .iter()
            .position(|o| c.get("type").and_then(Value::as_str) == Some(o))
            .unwrap_or(order.len())
    });
    let map: &mut Map<String, Value> = match status.as_object_mut() {
        Some(m) => m,
        None => return status,
    };
    map.insert("phase".into(), json!(phase));
    map.insert("conditions".into(), json!(conditions));
    if !inits.is_empty() {
        map.insert("initContainerStatuses".into(), json!(init_status));
    }
    map.insert("containerStatuses".into(), json!(main_status));
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> Site<'static> {
        Site {
            host_ip: "172.18.0.2",
            pod_ip: "10.244.1.2",
        }
    }

    fn step(pod: &mut Value) -> Plan {
        let plan = plan(pod, &Timing::default(), Duration::from_secs(60), &site());
        if let Plan::Write { status, .. } = &plan {
            pod["status"] = status.clone();
        }
        plan
    }

    fn phase(pod: &Value) -> &str {
        client::str_at(pod, &["status", "phase"])
    }

    #[test]
    fn images_are_normalized_as_a_runtime_reports_them() {
        assert_eq!(normalize_image("nginx"), "docker.io/library/nginx:latest");
        assert_eq!(
            normalize_image("bitnami/redis:7"),
            "docker.io/bitnami/redis:7"
        );
        assert_eq!(
            normalize_image("localhost:5000/app"),
            "localhost:5000/app:latest"
        );
        assert_eq!(
            normalize_image("quay.io/x/y@sha256:ab"),
            "quay.io/x/y@sha256:ab"
        );
    }

    #[test]
    fn init_containers_run_first_then_the_containers_become_ready() {
        let mut pod = json!({"metadata": {"name": "p", "namespace": "n"}, "spec": {
            "nodeName": "envtest-node-1",
            "initContainers": [{"name": "a", "image": "busybox"}, {"name": "b", "image": "busybox"}],
            "containers": [{"name": "c", "image": "nginx", "readinessProbe": {"httpGet": {"port": 80}}}],
        }, "status": {"phase": "Pending"}});
        assert!(matches!(step(&mut pod), Plan::Write { .. }));
        assert_eq!(pod["status"]["podIP"], "10.244.1.2");
        assert_eq!(phase(&pod), "Pending");
        step(&mut pod); // a runs
        assert!(pod["status"]["initContainerStatuses"][0]["state"]["running"].is_object());
        step(&mut pod); // a done
        step(&mut pod); // b runs
        step(&mut pod); // b done
        assert!(client::condition_true(&pod, "Initialized"));
        step(&mut pod); // c runs, not ready (probe)
        assert_eq!(phase(&pod), "Running");
        assert!(!client::condition_true(&pod, "Ready"));
        assert_eq!(pod["status"]["containerStatuses"][0]["started"], true);
        step(&mut pod); // c ready
        assert!(client::condition_true(&pod, "Ready"));
        assert!(client::condition_true(&pod, "ContainersReady"));
        assert!(matches!(step(&mut pod), Plan::Idle));
    }

    #[test]
    fn crashloop_and_pull_error_images_fail_as_requested() {
        let mut pod = json!({"metadata": {"name": "p", "namespace": "n", "uid": "u"}, "spec": {
            "containers": [{"name": "c", "image": "example.com/app:envtest-crashloop"}],
        }});
        step(&mut pod);
        step(&mut pod); // running
        step(&mut pod); // crashed
        let c = &pod["status"]["containerStatuses"][0];
        assert_eq!(c["state"]["waiting"]["reason"], "CrashLoopBackOff");
        assert_eq!(c["restartCount"], 1);
        assert_eq!(c["lastState"]["terminated"]["exitCode"], 1);
        assert_eq!(phase(&pod), "Running");
        assert!(!client::condition_true(&pod, "Ready"));

        let mut pod = json!({"metadata": {"name": "p", "namespace": "n"}, "spec": {
            "containers": [{"name": "c", "image": "app:envtest-image-pull-error"}],
        }});
        step(&mut pod);
        step(&mut pod);
        assert_eq!(
            pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"],
            "ErrImagePull"
        );
        step(&mut pod);
        assert_eq!(
            pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"],
            "ImagePullBackOff"
        );
        assert_eq!(phase(&pod), "Pending");
        assert!(matches!(step(&mut pod), Plan::Idle));
    }

    #[test]
    fn job_pods_complete_and_deleted_pods_wait_for_their_grace() {
        let mut pod = json!({"metadata": {"name": "p", "namespace": "n", "ownerReferences": [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "j1", "controller": true}]},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}});
        step(&mut pod);
        step(&mut pod);
        step(&mut pod);
        assert_eq!(phase(&pod), "Succeeded");
        assert_eq!(
            pod["status"]["containerStatuses"][0]["state"]["terminated"]["reason"],
            "Completed"
        );
        let deleting = json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30}});
        assert!(matches!(
            plan(&deleting, &Timing::default(), Duration::ZERO, &site()),
            Plan::After(_)
        ));
        assert!(matches!(
            plan(
                &deleting,
                &Timing::default(),
                Duration::from_secs(1),
                &site()
            ),
            Plan::Remove
        ));
    }
}
