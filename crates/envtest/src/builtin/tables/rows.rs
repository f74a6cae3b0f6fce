//! One row of cells per object, as the printers compute them.

use serde_json::{Value, json};

use crate::builtin::KindInfo;
use crate::duration::{age, human_duration};

fn timestamp(value: Option<&Value>) -> Option<jiff::Timestamp> {
    value.and_then(Value::as_str).and_then(|s| s.parse().ok())
}

/// `translateTimestampSince`: `<unknown>` for a zero time.
fn since(value: Option<&Value>, now: jiff::Timestamp) -> String {
    age(value.and_then(Value::as_str), now)
}

fn s<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn int(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn len_at(obj: &Value, pointer: &str) -> usize {
    match obj.pointer(pointer) {
        Some(Value::Array(a)) => a.len(),
        Some(Value::Object(o)) => o.len(),
        _ => 0,
    }
}

/// `labels.FormatLabels`: sorted `k=v` pairs, `<none>` when empty.
fn format_labels(map: Option<&Value>) -> String {
    let Some(map) = map.and_then(Value::as_object).filter(|m| !m.is_empty()) else {
        return "<none>".into();
    };
    let mut pairs: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    pairs.sort();
    pairs.join(",")
}

fn containers_and_images(obj: &Value, pointer: &str) -> (String, String) {
    let list = obj.pointer(pointer).and_then(Value::as_array);
    let names: Vec<&str> = list.into_iter().flatten().map(|c| s(c, "/name")).collect();
    let images: Vec<&str> = list.into_iter().flatten().map(|c| s(c, "/image")).collect();
    (names.join(","), images.join(","))
}

/// When a container last terminated before restarting.
fn finished_at(status: &Value) -> Option<jiff::Timestamp> {
    timestamp(status.pointer("/lastState/terminated/finishedAt"))
}

fn pod_row(pod: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let total = len_at(pod, "/spec/containers");
    let mut reason = s(pod, "/status/phase").to_string();
    if !s(pod, "/status/reason").is_empty() {
        reason = s(pod, "/status/reason").to_string();
    }
    let mut restarts = 0;
    let mut last_restart: Option<jiff::Timestamp> = None;
    let mut ready = 0;
    let mut initializing = false;
    let init_total = len_at(pod, "/spec/initContainers");
    for (i, status) in pod
        .pointer("/status/initContainerStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        restarts += int(status, "/restartCount");
        last_restart = last_restart.max(finished_at(status));
        let terminated = status.pointer("/state/terminated").filter(|t| !t.is_null());
        let waiting_reason = s(status, "/state/waiting/reason");
        match terminated {
            Some(t) if int(t, "/exitCode") == 0 => continue,
            Some(t) => {
                reason = if s(t, "/reason").is_empty() {
                    if int(t, "/signal") != 0 {
                        format!("Init:Signal:{}", int(t, "/signal"))
                    } else {
                        format!("Init:ExitCode:{}", int(t, "/exitCode"))
                    }
                } else {
                    format!("Init:{}", s(t, "/reason"))
                };
            }
            None if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" => {
                reason = format!("Init:{waiting_reason}");
            }
            None => reason = format!("Init:{i}/{init_total}"),
        }
        initializing = true;
        break;
    }
    if !initializing {
        restarts = 0;
        let mut has_running = false;
        let statuses = pod
            .pointer("/status/containerStatuses")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        for status in statuses.iter().rev() {
            restarts += int(status, "/restartCount");
            last_restart = last_restart.max(finished_at(status));
            let terminated = status.pointer("/state/terminated").filter(|t| !t.is_null());
            if !s(status, "/state/waiting/reason").is_empty() {
                reason = s(status, "/state/waiting/reason").to_string();
            } else if let Some(t) = terminated {
                reason = if !s(t, "/reason").is_empty() {
                    s(t, "/reason").to_string()
                } else if int(t, "/signal") != 0 {
                    format!("Signal:{}", int(t, "/signal"))
                } else {
                    format!("ExitCode:{}", int(t, "/exitCode"))
                };
            } else if status.get("ready").and_then(Value::as_bool) == Some(true)
                && status
                    .pointer("/state/running")
                    .is_some_and(|r| !r.is_null())
            {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            let pod_ready = pod
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|c| s(c, "/type") == "Ready" && s(c, "/status") == "True");
            reason = if pod_ready {
                "Running".into()
            } else {
                "NotReady".into()
            };
        }
    }
    if pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|d| !d.is_null())
    {
        reason = if s(pod, "/status/reason") == "NodeLost" {
            "Unknown".into()
        } else {
            "Terminating".into()
        };
    }
    let or_none = |v: &str| {
        if v.is_empty() {
            "<none>".to_string()
        } else {
            v.to_string()
        }
    };
    let pod_ip = pod
        .pointer("/status/podIPs/0/ip")
        .and_then(Value::as_str)
        .unwrap_or("");
    let gates = pod
        .pointer("/spec/readinessGates")
        .and_then(Value::as_array);
    let readiness = match gates.filter(|g| !g.is_empty()) {
        None => "<none>".to_string(),
        Some(gates) => {
            let conditions = pod.pointer("/status/conditions").and_then(Value::as_array);
            let met = gates
                .iter()
                .filter(|g| {
                    conditions.into_iter().flatten().any(|c| {
                        s(c, "/type") == s(g, "/conditionType") && s(c, "/status") == "True"
                    })
                })
                .count();
            format!("{met}/{}", gates.len())
        }
    };
    vec![
        json!(s(pod, "/metadata/name")),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(match last_restart {
            Some(at) => format!(
                "{restarts} ({} ago)",
                human_duration(now.as_second() - at.as_second())
            ),
            None => restarts.to_string(),
        }),
        json!(since(pod.pointer("/metadata/creationTimestamp"), now)),
        json!(or_none(pod_ip)),
        json!(or_none(s(pod, "/spec/nodeName"))),
        json!(or_none(s(pod, "/status/nominatedNodeName"))),
        json!(readiness),
    ]
}

fn service_row(svc: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let service_type = s(svc, "/spec/type");
    let cluster_ip = svc
        .pointer("/spec/clusterIPs/0")
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    let external: Vec<String> = svc
        .pointer("/spec/externalIPs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    let external_ip = match service_type {
        "ClusterIP" | "NodePort" if !external.is_empty() => external.join(","),
        "ClusterIP" | "NodePort" => "<none>".into(),
        "LoadBalancer" => {
            let mut ips: Vec<String> = svc
                .pointer("/status/loadBalancer/ingress")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|i| {
                    let ip = s(i, "/ip");
                    let host = s(i, "/hostname");
                    if !ip.is_empty() {
                        Some(ip.to_string())
                    } else if !host.is_empty() {
                        Some(host.to_string())
                    } else {
                        None
                    }
                })
                .collect();
            ips.extend(external);
            if ips.is_empty() {
                "<pending>".into()
            } else {
                ips.join(",")
            }
        }
        "ExternalName" => s(svc, "/spec/externalName").to_string(),
        _ => "<unknown>".into(),
    };
    let ports: Vec<String> = svc
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| {
            let node_port = int(p, "/nodePort");
            if node_port > 0 {
                format!("{}:{node_port}/{}", int(p, "/port"), s(p, "/protocol"))
            } else {
                format!("{}/{}", int(p, "/port"), s(p, "/protocol"))
            }
        })
        .collect();
    vec![
        json!(s(svc, "/metadata/name")),
        json!(service_type),
        json!(cluster_ip),
        json!(external_ip),
        json!(if ports.is_empty() {
            "<none>".to_string()
        } else {
            ports.join(",")
        }),
        json!(since(svc.pointer("/metadata/creationTimestamp"), now)),
        json!(format_labels(svc.pointer("/spec/selector"))),
    ]
}

fn event_row(event: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let event = if crate::builtin::events::is_events_v1_shape(event) {
        crate::builtin::events::events_v1_to_core(event)
    } else {
        event.clone()
    };
    let zero = |p: &str| event.pointer(p).is_none_or(Value::is_null);
    let first = if zero("/firstTimestamp") {
        since(event.pointer("/eventTime"), now)
    } else {
        since(event.pointer("/firstTimestamp"), now)
    };
    let mut last = if zero("/lastTimestamp") {
        first.clone()
    } else {
        since(event.pointer("/lastTimestamp"), now)
    };
    let mut count = int(&event, "/count");
    if event.get("series").is_some_and(|x| !x.is_null()) {
        last = since(event.pointer("/series/lastObservedTime"), now);
        count = int(&event, "/series/count");
    } else if count == 0 {
        count = 1;
    }
    let kind = s(&event, "/involvedObject/kind").to_lowercase();
    let name = s(&event, "/involvedObject/name");
    let target = if name.is_empty() {
        kind
    } else {
        format!("{kind}/{name}")
    };
    let component = [
        s(&event, "/source/component"),
        s(&event, "/reportingComponent"),
    ]
    .into_iter()
    .find(|v| !v.is_empty())
    .unwrap_or("");
    let instance = [s(&event, "/source/host"), s(&event, "/reportingInstance")]
        .into_iter()
        .find(|v| !v.is_empty())
        .unwrap_or("");
    let source = if component.is_empty() {
        "<unknown>".to_string()
    } else if instance.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {instance}")
    };
    vec![
        json!(last),
        json!(s(&event, "/type")),
        json!(s(&event, "/reason")),
        json!(target),
        json!(s(&event, "/involvedObject/fieldPath")),
        json!(source),
        json!(s(&event, "/message").trim()),
        json!(first),
        json!(count),
        json!(s(&event, "/metadata/name")),
    ]
}

fn created_at(obj: &Value) -> Value {
    match timestamp(obj.pointer("/metadata/creationTimestamp")) {
        Some(t) => json!(jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%SZ", t).unwrap_or_default()),
        None => Value::Null,
    }
}

pub(super) fn row(kind: &KindInfo, obj: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let name = json!(s(obj, "/metadata/name"));
    let age = json!(since(obj.pointer("/metadata/creationTimestamp"), now));
    let template_containers = |pointer: &str| containers_and_images(obj, pointer);
    if let Some(cells) = super::control_plane::row(kind, obj, name.clone(), age.clone()) {
        return cells;
    }
    if let Some(cells) = super::storage::row(kind, obj, name.clone(), age.clone()) {
        return cells;
    }
    if let Some(cells) = super::autoscaling::row(kind, obj, name.clone(), age.clone()) {
        return cells;
    }
    if let Some(cells) = super::nodes::row(kind, obj, name.clone(), age.clone()) {
        return cells;
    }
    match (kind.group, kind.kind) {
        ("", "Pod") => pod_row(obj, now),
        ("", "Service") => service_row(obj, now),
        ("", "ConfigMap") => vec![
            name,
            json!(len_at(obj, "/data") + len_at(obj, "/binaryData")),
            age,
        ],
        ("", "Secret") => vec![
            name,
            json!(s(obj, "/type")),
            json!(len_at(obj, "/data")),
            age,
        ],
        ("", "ServiceAccount") => vec![name, json!(len_at(obj, "/secrets")), age],
        ("", "Namespace") => vec![name, json!(s(obj, "/status/phase")), age],
        ("", "Endpoints") => {
            let mut endpoints = Vec::new();
            for subset in obj
                .pointer("/subsets")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let ports: Vec<i64> = subset
                    .get("ports")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|p| int(p, "/port"))
                    .collect();
                for address in subset
                    .get("addresses")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if ports.is_empty() {
                        endpoints.push(s(address, "/ip").to_string());
                    }
                    for port in &ports {
                        endpoints.push(format!("{}:{port}", s(address, "/ip")));
                    }
                }
            }
            let text = match endpoints.len() {
                0 => "<none>".to_string(),
                n if n > 3 => format!("{} + {} more...", endpoints[..3].join(","), n - 3),
                _ => endpoints.join(","),
            };
            vec![name, json!(text), age]
        }
        ("", "Event") | ("events.k8s.io", "Event") => event_row(obj, now),
        ("apps", "Deployment") => {
            let (containers, images) = template_containers("/spec/template/spec/containers");
            vec![
                name,
                json!(format!(
                    "{}/{}",
                    int(obj, "/status/readyReplicas"),
                    int(obj, "/spec/replicas")
                )),
                json!(int(obj, "/status/updatedReplicas")),
                json!(int(obj, "/status/availableReplicas")),
                age,
                json!(containers),
                json!(images),
                json!(crate::selectors::format_label_selector(
                    obj.pointer("/spec/selector")
                )),
            ]
        }
        ("apps", "ReplicaSet") | ("", "ReplicationController") => {
            let (containers, images) = template_containers("/spec/template/spec/containers");
            // A ReplicationController's selector is a plain label map.
            let selector = if kind.group.is_empty() {
                format_labels(obj.pointer("/spec/selector"))
            } else {
                crate::selectors::format_label_selector(obj.pointer("/spec/selector"))
            };
            vec![
                name,
                json!(int(obj, "/spec/replicas")),
                json!(int(obj, "/status/replicas")),
                json!(int(obj, "/status/readyReplicas")),
                age,
                json!(containers),
                json!(images),
                json!(selector),
            ]
        }
        ("apps", "StatefulSet") => {
            let (containers, images) = template_containers("/spec/template/spec/containers");
            vec![
                name,
                json!(format!(
                    "{}/{}",
                    int(obj, "/status/readyReplicas"),
                    int(obj, "/spec/replicas")
                )),
                age,
                json!(containers),
                json!(images),
            ]
        }
        ("apps", "DaemonSet") => {
            let (containers, images) = template_containers("/spec/template/spec/containers");
            vec![
                name,
                json!(int(obj, "/status/desiredNumberScheduled")),
                json!(int(obj, "/status/currentNumberScheduled")),
                json!(int(obj, "/status/numberReady")),
                json!(int(obj, "/status/updatedNumberScheduled")),
                json!(int(obj, "/status/numberAvailable")),
                json!(format_labels(
                    obj.pointer("/spec/template/spec/nodeSelector")
                )),
                age,
                json!(containers),
                json!(images),
                json!(crate::selectors::format_label_selector(
                    obj.pointer("/spec/selector")
                )),
            ]
        }
        ("batch", "Job") => {
            let succeeded = int(obj, "/status/succeeded");
            let completions = match obj.pointer("/spec/completions").and_then(Value::as_i64) {
                Some(c) => format!("{succeeded}/{c}"),
                None => {
                    let parallelism = int(obj, "/spec/parallelism");
                    if parallelism > 1 {
                        format!("{succeeded}/1 of {parallelism}")
                    } else {
                        format!("{succeeded}/1")
                    }
                }
            };
            let start = timestamp(obj.pointer("/status/startTime"));
            let end = timestamp(obj.pointer("/status/completionTime"));
            let duration = match (start, end) {
                (None, _) => String::new(),
                (Some(start), None) => human_duration(now.as_second() - start.as_second()),
                (Some(start), Some(end)) => human_duration(end.as_second() - start.as_second()),
            };
            let (containers, images) = template_containers("/spec/template/spec/containers");
            vec![
                name,
                json!(job_status(obj)),
                json!(completions),
                json!(duration),
                age,
                json!(containers),
                json!(images),
                json!(crate::selectors::format_label_selector(
                    obj.pointer("/spec/selector")
                )),
            ]
        }
        ("batch", "CronJob") => {
            let suspend = match obj.pointer("/spec/suspend").and_then(Value::as_bool) {
                Some(true) => "True",
                Some(false) => "False",
                None => "<unset>",
            };
            let last = match obj
                .pointer("/status/lastScheduleTime")
                .filter(|v| !v.is_null())
            {
                Some(t) => since(Some(t), now),
                None => "<none>".into(),
            };
            let (containers, images) =
                template_containers("/spec/jobTemplate/spec/template/spec/containers");
            vec![
                name,
                json!(s(obj, "/spec/schedule")),
                json!(suspend),
                json!(len_at(obj, "/status/active")),
                json!(last),
                age,
                json!(containers),
                json!(images),
                json!(crate::selectors::format_label_selector(
                    obj.pointer("/spec/jobTemplate/spec/selector")
                )),
            ]
        }
        ("coordination.k8s.io", "Lease") => vec![name, json!(s(obj, "/spec/holderIdentity")), age],
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole")
        | ("apiextensions.k8s.io", "CustomResourceDefinition") => vec![name, created_at(obj)],
        ("rbac.authorization.k8s.io", _) => {
            let mut users = Vec::new();
            let mut groups = Vec::new();
            let mut accounts = Vec::new();
            for subject in obj
                .pointer("/subjects")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match s(subject, "/kind") {
                    "User" => users.push(s(subject, "/name").to_string()),
                    "Group" => groups.push(s(subject, "/name").to_string()),
                    "ServiceAccount" => accounts.push(format!(
                        "{}/{}",
                        s(subject, "/namespace"),
                        s(subject, "/name")
                    )),
                    _ => {}
                }
            }
            vec![
                name,
                json!(format!(
                    "{}/{}",
                    s(obj, "/roleRef/kind"),
                    s(obj, "/roleRef/name")
                )),
                age,
                json!(users.join(", ")),
                json!(groups.join(", ")),
                json!(accounts.join(", ")),
            ]
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            let param_kind = match obj.pointer("/spec/paramKind").filter(|v| !v.is_null()) {
                Some(_) => format!(
                    "{}/{}",
                    s(obj, "/spec/paramKind/apiVersion"),
                    s(obj, "/spec/paramKind/kind")
                ),
                None => "<unset>".to_string(),
            };
            vec![
                name,
                json!(len_at(obj, "/spec/validations")),
                json!(param_kind),
                age,
            ]
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            let param_ref = match obj.pointer("/spec/paramRef").filter(|v| !v.is_null()) {
                Some(_) => {
                    let target = match s(obj, "/spec/paramRef/name") {
                        "" => crate::selectors::format_label_selector(
                            obj.pointer("/spec/paramRef/selector"),
                        ),
                        name => name.to_string(),
                    };
                    match s(obj, "/spec/paramRef/namespace") {
                        "" => target,
                        ns => format!("{ns}/{target}"),
                    }
                }
                None => "<unset>".to_string(),
            };
            vec![
                name,
                json!(s(obj, "/spec/policyName")),
                json!(param_ref),
                age,
            ]
        }
        ("admissionregistration.k8s.io", _) => vec![name, json!(len_at(obj, "/webhooks")), age],
        _ => vec![name, age],
    }
}

/// printJob's STATUS: the first condition of each type decides, in this
/// order of precedence, and a Job being deleted is Terminating unless it
/// already ended.
fn job_status(job: &Value) -> &'static str {
    let holds = |kind: &str| {
        job.pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
            .is_some_and(|c| c.get("status").and_then(Value::as_str) == Some("True"))
    };
    if holds("Complete") {
        "Complete"
    } else if holds("Failed") {
        "Failed"
    } else if job
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        "Terminating"
    } else if holds("Suspended") {
        "Suspended"
    } else if holds("FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    }
}
