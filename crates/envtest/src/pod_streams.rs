//! `pods/log` and `pods/exec`: kube-apiserver checks the request against
//! the Pod, then proxies it to the kubelet of the Pod's node. envtest runs
//! no containers: a Pod no node runs answers as on a real server (an empty
//! log; an exec refused because the Pod has no host); a Pod on a simulated
//! node (see `workloads`) has an empty log (its containers write nothing)
//! and refuses exec; a Pod bound to any other node answers with the error
//! a real server gives when it cannot reach that node's kubelet.

use serde_json::Value;

use crate::error::{ApiError, ApiResult};

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
pub fn node_of(pod: &Value, is_simulated: impl Fn(&str) -> bool) -> Option<(&str, bool)> {
    match node_name(pod) {
        "" => None,
        node => Some((node, is_simulated(node))),
    }
}

/// GET `pods/<name>/log`: the log text (empty for a Pod no node runs and
/// for one a simulated node runs).
pub fn log(
    pod: &Value,
    name: &str,
    requested: Option<&str>,
    node: Option<(&str, bool)>,
) -> ApiResult<String> {
    container(pod, name, requested)?;
    match node {
        None | Some((_, true)) => Ok(String::new()),
        Some((node, false)) => Err(no_kubelet(node)),
    }
}

/// GET or POST `pods/<name>/exec`: refused before any stream is opened.
pub fn exec(
    pod: &Value,
    name: &str,
    requested: Option<&str>,
    node: Option<(&str, bool)>,
) -> ApiError {
    if let Some(phase @ ("Succeeded" | "Failed")) =
        pod.pointer("/status/phase").and_then(Value::as_str)
    {
        return ApiError::bad_request(format!(
            "cannot exec into a container in a completed pod; current phase is {phase}"
        ));
    }
    if let Err(e) = container(pod, name, requested) {
        return e;
    }
    match node {
        None => ApiError::bad_request(format!("pod {name} does not have a host assigned")),
        Some((node, true)) => ApiError::new(
            500,
            "InternalError",
            format!(
                "the simulated kubelet of node {node:?} runs no containers: opctl envtest cannot exec into them"
            ),
        ),
        Some((node, false)) => no_kubelet(node),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pod_without_a_node_has_an_empty_log_and_refuses_exec() {
        let pod = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}, "status": {"phase": "Pending"}});
        assert_eq!(log(&pod, "p", Some("a"), None).unwrap(), "");
        assert_eq!(
            log(&pod, "p", None, None).unwrap_err().message,
            "a container name must be specified for pod p, choose one of: [a b]"
        );
        assert_eq!(
            log(&pod, "p", Some("c"), None).unwrap_err().message,
            "container c is not valid for pod p"
        );
        assert_eq!(
            exec(&pod, "p", Some("a"), None).message,
            "pod p does not have a host assigned"
        );
        let done =
            json!({"spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Succeeded"}});
        assert_eq!(
            exec(&done, "p", None, None).message,
            "cannot exec into a container in a completed pod; current phase is Succeeded"
        );
    }

    #[test]
    fn a_simulated_node_has_empty_logs_and_another_node_cannot_be_reached() {
        let pod = json!({"spec": {"nodeName": "n1", "containers": [{"name": "a"}]}});
        let simulated = node_of(&pod, |n| n == "n1");
        assert_eq!(simulated, Some(("n1", true)));
        assert_eq!(log(&pod, "p", None, simulated).unwrap(), "");
        assert_eq!(exec(&pod, "p", None, simulated).code, 500);
        let absent = node_of(&pod, |_| false);
        assert_eq!(
            log(&pod, "p", None, absent).unwrap_err().message,
            "envtest runs no kubelet: the logs and exec sessions of node \"n1\" cannot be reached"
        );
    }
}
