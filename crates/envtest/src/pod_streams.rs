//! `pods/log`, `exec`, `attach`, `portforward` and the `proxy` subresources:
//! kube-apiserver checks the request against the Pod (Service, Node), then
//! proxies it to the kubelet of the Pod's node (or the backend). envtest runs
//! no containers and proxies no traffic:
//!
//! - a Pod no node runs answers as on a real server (an empty log; an exec
//!   refused because the Pod has no host);
//! - a Pod on a simulated node (see `workloads`) has the log its simulated
//!   kubelet "wrote": a few deterministic lines per container instance,
//!   derived from the container statuses (started, image, how it ended), read
//!   with the kubelet's rules for `container`, `previous`, `tailLines`,
//!   `timestamps`, `sinceSeconds` / `sinceTime` and `limitBytes`; `follow`
//!   ends with what is there. Exec, attach and port forwarding are refused:
//!   no process runs;
//! - a Pod bound to any other node answers with the error a real server
//!   gives when it cannot reach that node's kubelet.

use serde_json::Value;

use crate::error::{ApiError, ApiResult, Cause};

fn container_names(pod: &Value) -> Vec<&str> {
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect()
}

fn all_container_names(pod: &Value) -> Vec<&str> {
    ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .flat_map(|list| {
            pod.pointer(&format!("/spec/{list}"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| c.get("name").and_then(Value::as_str))
        })
        .collect()
}

/// The container a request names, or the only one (kube-apiserver's
/// `validateContainer`).
fn container<'a>(pod: &'a Value, name: &str, requested: Option<&'a str>) -> ApiResult<&'a str> {
    match requested.filter(|c| !c.is_empty()) {
        Some(c) if all_container_names(pod).contains(&c) => Ok(c),
        Some(c) => Err(ApiError::bad_request(format!(
            "container {c} is not valid for pod {name}"
        ))),
        None => match container_names(pod).as_slice() {
            [only] => Ok(only),
            [] => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}"
            ))),
            many => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                many.join(" ")
            ))),
        },
    }
}

fn node_name(pod: &Value) -> &str {
    pod.pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The kubelet of `node` cannot be reached (there is none in envtest).
fn no_kubelet(node: &str) -> ApiError {
    ApiError::new(
        500,
        "InternalError",
        format!(
            "envtest runs no kubelet: the logs and exec sessions of node {node:?} cannot be reached"
        ),
    )
}

/// The node a Pod is bound to, if any, and whether envtest simulates it.
pub(crate) fn node_of(pod: &Value, is_simulated: impl Fn(&str) -> bool) -> Option<(&str, bool)> {
    match node_name(pod) {
        "" => None,
        node => Some((node, is_simulated(node))),
    }
}

/// GET `pods/<name>/log`: the log text (empty for a Pod no node runs,
/// simulated for one a simulated node runs).
pub(crate) fn log(
    pod: &Value,
    name: &str,
    opts: &LogOptions,
    node: Option<(&str, bool)>,
) -> ApiResult<String> {
    opts.validate(name)?;
    let container = container(pod, name, opts.container.as_deref())?;
    match node {
        None => Ok(String::new()),
        Some((_, true)) => simulated_log(pod, name, container, opts),
        Some((node, false)) => Err(no_kubelet(node)),
    }
}

/// GET or POST `pods/<name>/exec` or `attach` (`stream` names which):
/// refused before any stream is opened, as `streamLocation` checks the
/// container and the host before the kubelet is dialled.
pub(crate) fn stream(
    pod: &Value,
    name: &str,
    requested: Option<&str>,
    node: Option<(&str, bool)>,
    stream: &str,
) -> ApiError {
    if let Err(e) = container(pod, name, requested) {
        return e;
    }
    match node {
        None => no_host(name),
        Some((node, true)) => simulated(node, stream),
        Some((node, false)) => no_kubelet(node),
    }
}

/// GET or POST `pods/<name>/portforward`: the host is all
/// `PortForwardLocation` checks.
pub(crate) fn port_forward(name: &str, node: Option<(&str, bool)>) -> ApiError {
    match node {
        None => no_host(name),
        Some((node, true)) => simulated(node, "portforward"),
        Some((node, false)) => no_kubelet(node),
    }
}

fn no_host(name: &str) -> ApiError {
    ApiError::bad_request(format!("pod {name} does not have a host assigned"))
}

/// A simulated kubelet has no processes to stream from.
fn simulated(node: &str, stream: &str) -> ApiError {
    let verb = match stream {
        "attach" => "attach to them",
        "portforward" => "forward ports to them",
        _ => "exec into them",
    };
    ApiError::new(
        500,
        "InternalError",
        format!(
            "the simulated kubelet of node {node:?} runs no containers: opctl envtest cannot {verb}"
        ),
    )
}

/// `pods|services|nodes/<name>/proxy[/...]`: what kube-apiserver checks
/// before dialling (a Pod needs an IP, a Service ready endpoints), then the
/// 503 of a backend that cannot be reached: envtest proxies no traffic.
pub(crate) fn proxy(
    app: &crate::app::App,
    res: &crate::registry::Resource,
    ns: &str,
    name: &str,
) -> ApiError {
    let object = match crate::api::read::get(app, res, ns, name) {
        Ok(object) => object,
        Err(e) => return e,
    };
    let unreachable = |what: String| {
        ApiError::new(
            503,
            "ServiceUnavailable",
            format!("error trying to reach service: opctl envtest proxies no traffic ({what})"),
        )
    };
    match res.plural.as_str() {
        "pods" => {
            let ip = object
                .pointer("/status/podIPs/0/ip")
                .and_then(Value::as_str)
                .unwrap_or("");
            match ip.parse::<std::net::IpAddr>() {
                Ok(addr) if is_global_unicast(addr) => unreachable(format!("pod IP {ip}")),
                _ => ApiError::bad_request("address not allowed"),
            }
        }
        "services" => {
            let endpoints = app.store.get(&std::sync::Arc::from("endpoints"), ns, name);
            let ready = endpoints.as_deref().is_some_and(|e| {
                e.get("subsets")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .any(|s| {
                        s.get("addresses")
                            .and_then(Value::as_array)
                            .is_some_and(|a| !a.is_empty())
                    })
            });
            if ready {
                unreachable(format!("service {name:?}"))
            } else {
                ApiError::new(
                    503,
                    "ServiceUnavailable",
                    format!("no endpoints available for service {name:?}"),
                )
            }
        }
        _ => unreachable(format!("the kubelet of node {name:?}")),
    }
}

/// Go's `IP.IsGlobalUnicast`.
fn is_global_unicast(addr: std::net::IpAddr) -> bool {
    match addr {
        std::net::IpAddr::V4(v4) => {
            !(v4.is_unspecified()
                || v4.is_loopback()
                || v4.is_multicast()
                || v4.is_broadcast()
                || v4.is_link_local())
        }
        std::net::IpAddr::V6(v6) => {
            let link_local = (v6.segments()[0] & 0xffc0) == 0xfe80;
            !(v6.is_unspecified() || v6.is_loopback() || v6.is_multicast() || link_local)
        }
    }
}

/// The query of a `pods/log` request (`PodLogOptions`).
#[derive(Debug, Clone, Default)]
pub(crate) struct LogOptions {
    pub container: Option<String>,
    pub previous: bool,
    pub timestamps: bool,
    pub tail_lines: Option<i64>,
    pub limit_bytes: Option<i64>,
    pub since_seconds: Option<i64>,
    pub since_time: Option<jiff::Timestamp>,
}

fn parse_int(name: &str, value: Option<&str>) -> ApiResult<Option<i64>> {
    value
        .map(|v| {
            v.parse::<i64>().map_err(|_| {
                ApiError::bad_request(format!(
                    "strconv.ParseInt: parsing {v:?}: invalid syntax (query parameter {name})"
                ))
            })
        })
        .transpose()
}

impl LogOptions {
    /// Reads the options from the query parameters `get` returns.
    pub(crate) fn parse<'a>(get: impl Fn(&str) -> Option<&'a str>) -> ApiResult<LogOptions> {
        let flag = |k: &str| {
            get(k).is_some_and(|v| matches!(v, "1" | "t" | "T" | "true" | "TRUE" | "True"))
        };
        let since_time = get("sinceTime")
            .map(|v| {
                v.parse::<jiff::Timestamp>().map_err(|_| {
                    ApiError::bad_request(format!(
                        "parsing time {v:?} as \"2006-01-02T15:04:05Z07:00\": cannot parse {v:?} as \"2006\""
                    ))
                })
            })
            .transpose()?;
        Ok(LogOptions {
            container: get("container").map(str::to_string),
            previous: flag("previous"),
            timestamps: flag("timestamps"),
            tail_lines: parse_int("tailLines", get("tailLines"))?,
            limit_bytes: parse_int("limitBytes", get("limitBytes"))?,
            since_seconds: parse_int("sinceSeconds", get("sinceSeconds"))?,
            since_time,
        })
    }

    /// `ValidatePodLogOptions`.
    fn validate(&self, pod: &str) -> ApiResult<()> {
        let mut causes = Vec::new();
        if let Some(n) = self.tail_lines.filter(|n| *n < 0) {
            causes.push(Cause::invalid(
                "tailLines",
                &Value::from(n),
                "must be greater than or equal to 0",
            ));
        }
        if let Some(n) = self.limit_bytes.filter(|n| *n < 1) {
            causes.push(Cause::invalid(
                "limitBytes",
                &Value::from(n),
                "must be greater than 0",
            ));
        }
        match (self.since_seconds, self.since_time) {
            (Some(_), Some(_)) => causes.push(Cause::forbidden(
                "",
                "at most one of `sinceTime` or `sinceSeconds` may be specified",
            )),
            (Some(n), None) if n < 1 => causes.push(Cause::invalid(
                "sinceSeconds",
                &Value::from(n),
                "must be greater than 0",
            )),
            _ => {}
        }
        if causes.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid("", "PodLogOptions", pod, causes))
        }
    }

    /// The earliest line time the request wants, if it says.
    fn since(&self) -> Option<jiff::Timestamp> {
        self.since_time.or_else(|| {
            let seconds = self.since_seconds?;
            jiff::Timestamp::now()
                .checked_sub(jiff::SignedDuration::from_secs(seconds))
                .ok()
        })
    }
}

/// One run of a container, as its status records it.
struct Instance<'a> {
    /// How many times the container had restarted when this run started.
    restart: i64,
    image: &'a str,
    started_at: &'a str,
    /// `(exit code, reason, finishedAt)` once it ended.
    ended: Option<(i64, &'a str, &'a str)>,
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn instance<'a>(status: &'a Value, state: &'a Value, restart: i64) -> Instance<'a> {
    let terminated = state.get("terminated");
    Instance {
        restart,
        image: text(status, "/image"),
        started_at: state
            .pointer("/running/startedAt")
            .or_else(|| terminated.and_then(|t| t.get("startedAt")))
            .and_then(Value::as_str)
            .unwrap_or(""),
        ended: terminated.map(|t| {
            (
                t.get("exitCode").and_then(Value::as_i64).unwrap_or(0),
                text(t, "/reason"),
                text(t, "/finishedAt"),
            )
        }),
    }
}

/// The run whose log the kubelet reads (`validateContainerLogStatus`), or
/// its refusal (a 400 carrying the kubelet's text, as kube-apiserver relays it).
fn pick<'a>(pod: &str, name: &str, status: &'a Value, previous: bool) -> ApiResult<Instance<'a>> {
    let restarts = status
        .get("restartCount")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let state = status.get("state").unwrap_or(&Value::Null);
    let last = status.get("lastState").unwrap_or(&Value::Null);
    let last_run = last
        .get("terminated")
        .filter(|t| !text(t, "/containerID").is_empty());
    let refuse = |what: String| Err(ApiError::bad_request(what));
    if previous {
        return match last_run {
            Some(_) => Ok(instance(status, last, restarts - 1)),
            None => refuse(format!(
                "previous terminated container {name:?} in pod {pod:?} not found"
            )),
        };
    }
    if state.get("running").is_some() {
        return Ok(instance(status, state, restarts));
    }
    if let Some(terminated) = state.get("terminated") {
        if !text(terminated, "/containerID").is_empty() {
            return Ok(instance(status, state, restarts));
        }
        return match last_run {
            Some(_) => Ok(instance(status, last, restarts - 1)),
            None => refuse(format!("container {name:?} in pod {pod:?} is terminated")),
        };
    }
    if last_run.is_some() {
        return Ok(instance(status, last, restarts - 1));
    }
    match text(state, "/waiting/reason") {
        "" if state.get("waiting").is_none() => refuse(format!(
            "container {name:?} in pod {pod:?} is waiting to start - no logs yet"
        )),
        "ErrImagePull" => refuse(format!(
            "container {name:?} in pod {pod:?} is waiting to start: image can't be pulled"
        )),
        "ImagePullBackOff" => refuse(format!(
            "container {name:?} in pod {pod:?} is waiting to start: trying and failing to pull image"
        )),
        reason => refuse(format!(
            "container {name:?} in pod {pod:?} is waiting to start: {reason}"
        )),
    }
}

/// The lines the simulated kubelet reports for one run: (time, text).
fn lines<'a>(name: &str, run: &Instance<'a>) -> Vec<(&'a str, String)> {
    let mut out = vec![
        (
            run.started_at,
            format!(
                "opctl envtest: started container {name:?} (restart {}) from image {}",
                run.restart, run.image
            ),
        ),
        (
            run.started_at,
            "opctl envtest: the simulation runs no process, so nothing else is logged".to_string(),
        ),
    ];
    if let Some((code, reason, finished)) = run.ended {
        let why = if run
            .image
            .contains(crate::workloads::kubelet::CRASHLOOP_PATTERN)
        {
            format!(
                ": its image reference contains {:?}",
                crate::workloads::kubelet::CRASHLOOP_PATTERN
            )
        } else {
            String::new()
        };
        out.push((
            finished,
            format!("opctl envtest: container {name:?} exited with code {code} ({reason}){why}"),
        ));
    }
    out
}

/// `2026-12-01T10:00:00.000000000Z`: the kubelet's fixed-width RFC 3339.
fn kubelet_time(t: &str) -> String {
    match t.parse::<jiff::Timestamp>() {
        Ok(ts) => ts.strftime("%Y-%m-%dT%H:%M:%S.%9fZ").to_string(),
        Err(_) => t.to_string(),
    }
}

fn simulated_log(pod: &Value, pod_name: &str, name: &str, opts: &LogOptions) -> ApiResult<String> {
    let status = [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ]
    .iter()
    .filter_map(|list| {
        pod.pointer(&format!("/status/{list}"))
            .and_then(Value::as_array)
    })
    .flatten()
    .find(|s| s.get("name").and_then(Value::as_str) == Some(name));
    let Some(status) = status else {
        return Err(ApiError::bad_request(format!(
            "container {name:?} in pod {pod_name:?} is not available"
        )));
    };
    let run = pick(pod_name, name, status, opts.previous)?;
    let mut lines = lines(name, &run);
    if let Some(tail) = opts.tail_lines {
        let keep = usize::try_from(tail).unwrap_or(0).min(lines.len());
        lines.drain(..lines.len() - keep);
    }
    if let Some(since) = opts.since() {
        lines.retain(|(t, _)| t.parse::<jiff::Timestamp>().is_ok_and(|t| t >= since));
    }
    let mut out = String::new();
    for (time, line) in lines {
        if opts.timestamps {
            out.push_str(&kubelet_time(time));
            out.push(' ');
        }
        out.push_str(&line);
        out.push('\n');
    }
    if let Some(limit) = opts.limit_bytes.and_then(|l| usize::try_from(l).ok()) {
        let mut cut = limit.min(out.len());
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of(container: Option<&str>) -> LogOptions {
        LogOptions {
            container: container.map(str::to_string),
            ..LogOptions::default()
        }
    }

    #[test]
    fn a_pod_without_a_node_has_an_empty_log_and_refuses_exec() {
        let pod = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}, "status": {"phase": "Pending"}});
        assert_eq!(log(&pod, "p", &of(Some("a")), None).unwrap(), "");
        assert_eq!(
            log(&pod, "p", &of(None), None).unwrap_err().message,
            "a container name must be specified for pod p, choose one of: [a b]"
        );
        assert_eq!(
            log(&pod, "p", &of(Some("c")), None).unwrap_err().message,
            "container c is not valid for pod p"
        );
        for kind in ["exec", "attach"] {
            assert_eq!(
                stream(&pod, "p", Some("a"), None, kind).message,
                "pod p does not have a host assigned"
            );
            // The container is checked first.
            assert_eq!(
                stream(&pod, "p", Some("c"), None, kind).message,
                "container c is not valid for pod p"
            );
        }
        // Port forwarding names no container.
        assert_eq!(
            port_forward("p", None).message,
            "pod p does not have a host assigned"
        );
        // A completed Pod is refused by kubectl, not by the server: the
        // server's answer is the host's.
        let done =
            json!({"spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Succeeded"}});
        assert_eq!(
            stream(&done, "p", None, None, "exec").message,
            "pod p does not have a host assigned"
        );
    }

    #[test]
    fn another_node_cannot_be_reached_and_a_simulated_one_refuses_exec() {
        let pod = json!({"spec": {"nodeName": "n1", "containers": [{"name": "a"}]}});
        let simulated = node_of(&pod, |n| n == "n1");
        assert_eq!(simulated, Some(("n1", true)));
        assert_eq!(stream(&pod, "p", None, simulated, "exec").code, 500);
        assert_eq!(
            port_forward("p", simulated).message,
            "the simulated kubelet of node \"n1\" runs no containers: opctl envtest cannot forward ports to them"
        );
        let absent = node_of(&pod, |_| false);
        assert_eq!(
            log(&pod, "p", &of(None), absent).unwrap_err().message,
            "envtest runs no kubelet: the logs and exec sessions of node \"n1\" cannot be reached"
        );
    }

    fn crash_looping() -> Value {
        json!({"spec": {"nodeName": "n1", "containers": [{"name": "app"}]}, "status": {"containerStatuses": [{
            "name": "app", "image": "example.com/app:envtest-crashloop", "restartCount": 2,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "containerID": "containerd://b",
                "startedAt": "2026-12-01T10:00:10Z", "finishedAt": "2026-12-01T10:00:20Z"}},
        }]}})
    }

    #[test]
    fn simulated_logs_tell_how_the_last_run_went() {
        let pod = crash_looping();
        let node = Some(("n1", true));
        let text = log(&pod, "p", &of(None), node).unwrap();
        assert_eq!(
            text,
            "opctl envtest: started container \"app\" (restart 1) from image example.com/app:envtest-crashloop\n\
             opctl envtest: the simulation runs no process, so nothing else is logged\n\
             opctl envtest: container \"app\" exited with code 1 (Error): its image reference contains \"envtest-crashloop\"\n"
        );
        // In a crash loop the previous run is the one that crashed last.
        assert_eq!(
            log(
                &pod,
                "p",
                &LogOptions {
                    previous: true,
                    ..of(None)
                },
                node
            )
            .unwrap(),
            text
        );
        let tail = LogOptions {
            tail_lines: Some(1),
            timestamps: true,
            ..of(None)
        };
        assert_eq!(
            log(&pod, "p", &tail, node).unwrap(),
            "2026-12-01T10:00:20.000000000Z opctl envtest: container \"app\" exited with code 1 (Error): its image reference contains \"envtest-crashloop\"\n"
        );
        let limited = LogOptions {
            limit_bytes: Some(13),
            ..of(None)
        };
        assert_eq!(log(&pod, "p", &limited, node).unwrap(), "opctl envtest");
    }

    #[test]
    fn waiting_and_first_runs_answer_as_the_kubelet_does() {
        let node = Some(("n1", true));
        let running = json!({"spec": {"containers": [{"name": "web"}]}, "status": {"containerStatuses": [{
            "name": "web", "image": "docker.io/library/nginx:latest", "restartCount": 0,
            "state": {"running": {"startedAt": "2026-12-01T10:00:00Z"}}}]}});
        assert_eq!(
            log(&running, "p", &of(None), node).unwrap().lines().count(),
            2
        );
        assert_eq!(
            log(
                &running,
                "p",
                &LogOptions {
                    previous: true,
                    ..of(None)
                },
                node
            )
            .unwrap_err()
            .message,
            "previous terminated container \"web\" in pod \"p\" not found"
        );
        let pulling = json!({"spec": {"containers": [{"name": "web"}]}, "status": {"containerStatuses": [{
            "name": "web", "restartCount": 0, "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}});
        let err = log(&pulling, "p", &of(None), node).unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            (
                400,
                "container \"web\" in pod \"p\" is waiting to start: trying and failing to pull image"
            )
        );
        let bad = LogOptions {
            tail_lines: Some(-1),
            ..of(None)
        };
        assert_eq!(
            log(&running, "p", &bad, node).unwrap_err().message,
            "PodLogOptions \"p\" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0"
        );
    }
}
