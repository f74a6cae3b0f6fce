//! Containers: names, images, probes, ports, env, mounts and resources.

use std::collections::HashSet;

use serde_json::Value;

use super::fields::{dns_label, list, nonnegative, not_found, present, s};
use super::volumes::relative_path;
use crate::error::Cause;
use crate::name_rules::{
    is_config_map_key, is_env_var_name, is_qualified_name, is_valid_port_name, is_valid_port_num,
};
use crate::quantity;

pub(super) fn containers(
    spec: &Value,
    key: &str,
    path: &str,
    volumes: &HashSet<String>,
    causes: &mut Vec<Cause>,
) {
    let list_path = format!("{path}.{key}");
    let items = list(spec, key);
    if key == "containers" && items.is_empty() {
        causes.push(Cause::required(list_path, ""));
        return;
    }
    let mut names = HashSet::new();
    let earlier: &[&str] = match key {
        "initContainers" => &["containers"],
        "ephemeralContainers" => &["containers", "initContainers"],
        _ => &[],
    };
    for other in earlier {
        for c in list(spec, other) {
            names.insert(s(c, "name").to_string());
        }
    }
    for (i, container) in items.iter().enumerate() {
        let idx = format!("{list_path}[{i}]");
        common(container, &idx, volumes, causes);
        let name = s(container, "name");
        let duplicate = |causes: &mut Vec<Cause>, names: &mut HashSet<String>| {
            if !names.insert(name.to_string()) {
                causes.push(Cause::duplicate(
                    format!("{idx}.name"),
                    &Value::String(name.into()),
                ));
            }
        };
        match key {
            "containers" => {
                duplicate(causes, &mut names);
                lifecycle_and_probes(container, &idx, causes);
                if present(container, "restartPolicy") {
                    causes.push(Cause::forbidden(
                        format!("{idx}.restartPolicy"),
                        "may not be set for non-init containers",
                    ));
                }
            }
            "initContainers" => {
                // A sidecar (restartPolicy Always) has a lifecycle and probes
                // like a container; a regular init container has none.
                let sidecar = s(container, "restartPolicy") == "Always";
                if present(container, "restartPolicy") && !sidecar {
                    causes.push(Cause::not_supported(
                        format!("{idx}.restartPolicy"),
                        &Value::String(s(container, "restartPolicy").into()),
                        &["Always"],
                    ));
                }
                duplicate(causes, &mut names);
                // Init containers run one by one: each is checked on its own.
                host_port_conflicts(std::slice::from_ref(container), &list_path, causes);
                if sidecar {
                    lifecycle_and_probes(container, &idx, causes);
                } else {
                    for field in [
                        "lifecycle",
                        "livenessProbe",
                        "readinessProbe",
                        "startupProbe",
                    ] {
                        if present(container, field) {
                            causes.push(Cause::forbidden(
                                format!("{idx}.{field}"),
                                "may not be set for init containers without restartPolicy=Always",
                            ));
                        }
                    }
                }
            }
            _ => {
                duplicate(causes, &mut names);
                ephemeral_only(spec, container, &idx, causes);
            }
        }
    }
    if key == "containers" {
        host_port_conflicts(items, &list_path, causes);
    }
}

/// `validateContainerCommon`: what every kind of container is held to.
fn common(container: &Value, idx: &str, volumes: &HashSet<String>, causes: &mut Vec<Cause>) {
    let name = s(container, "name");
    if name.is_empty() {
        causes.push(Cause::required(format!("{idx}.name"), ""));
    } else {
        causes.extend(dns_label(name, &format!("{idx}.name")));
    }
    if s(container, "image").is_empty() {
        causes.push(Cause::required(format!("{idx}.image"), ""));
    }
    match s(container, "terminationMessagePolicy") {
        "File" | "FallbackToLogsOnError" => {}
        "" => causes.push(Cause::required(
            format!("{idx}.terminationMessagePolicy"),
            "must be 'File' or 'FallbackToLogsOnError'",
        )),
        other => causes.push(Cause::invalid(
            format!("{idx}.terminationMessagePolicy"),
            &Value::String(other.into()),
            "must be 'File' or 'FallbackToLogsOnError'",
        )),
    }
    container_ports(container, &format!("{idx}.ports"), causes);
    env(container, &format!("{idx}.env"), causes);
    env_from(container, &format!("{idx}.envFrom"), causes);
    volume_mounts(container, volumes, &format!("{idx}.volumeMounts"), causes);
    match s(container, "imagePullPolicy") {
        "Always" | "IfNotPresent" | "Never" => {}
        "" => causes.push(Cause::required(format!("{idx}.imagePullPolicy"), "")),
        other => causes.push(Cause::not_supported(
            format!("{idx}.imagePullPolicy"),
            &Value::String(other.into()),
            &["Always", "IfNotPresent", "Never"],
        )),
    }
    resources(
        container.get("resources"),
        &format!("{idx}.resources"),
        causes,
    );
}

/// `validateLifecycle` and the three probe validations of a container (or
/// sidecar).
fn lifecycle_and_probes(container: &Value, idx: &str, causes: &mut Vec<Cause>) {
    if let Some(lifecycle) = container.get("lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = lifecycle.get(hook).filter(|h| !h.is_null()) {
                handler(h, &format!("{idx}.lifecycle.{hook}"), causes);
            }
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        let Some(p) = container.get(probe).filter(|p| !p.is_null()) else {
            continue;
        };
        let probe_path = format!("{idx}.{probe}");
        handler(p, &probe_path, causes);
        for field in [
            "initialDelaySeconds",
            "timeoutSeconds",
            "periodSeconds",
            "successThreshold",
            "failureThreshold",
        ] {
            causes.extend(nonnegative(p, field, format!("{probe_path}.{field}")));
        }
        if let Some(grace) = p
            .get("terminationGracePeriodSeconds")
            .and_then(Value::as_i64)
        {
            if grace <= 0 {
                causes.push(Cause::invalid(
                    format!("{probe_path}.terminationGracePeriodSeconds"),
                    &Value::from(grace),
                    "must be greater than 0",
                ));
            }
            if probe == "readinessProbe" {
                causes.push(Cause::invalid(
                    format!("{probe_path}.terminationGracePeriodSeconds"),
                    &Value::from(grace),
                    "must not be set for readinessProbes",
                ));
            }
        }
        if probe != "readinessProbe"
            && let Some(threshold) = p.get("successThreshold").and_then(Value::as_i64)
            && threshold != 1
        {
            causes.push(Cause::invalid(
                format!("{probe_path}.successThreshold"),
                &Value::from(threshold),
                "must be 1",
            ));
        }
    }
}

/// The fields `validateFieldAllowList` refuses in an ephemeral container.
const NOT_FOR_EPHEMERAL: &[&str] = &[
    "ports",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
];

/// `validateEphemeralContainers`' own rules: the target container must be a
/// regular or init container, and probes, lifecycle, ports, resources and
/// sub-paths have no place in a debugging container.
fn ephemeral_only(spec: &Value, container: &Value, idx: &str, causes: &mut Vec<Cause>) {
    let target = s(container, "targetContainerName");
    if !target.is_empty() {
        let known = ["containers", "initContainers"]
            .iter()
            .flat_map(|k| list(spec, k))
            .any(|c| s(c, "name") == target);
        if !known {
            causes.push(not_found(format!("{idx}.targetContainerName"), target));
        }
    }
    const TEXT: &str = "cannot be set for an Ephemeral Container";
    for field in NOT_FOR_EPHEMERAL {
        let set = match container.get(*field) {
            None | Some(Value::Null) => false,
            Some(Value::Object(m)) => !m.values().all(Value::is_null),
            Some(Value::Array(a)) => !a.is_empty(),
            Some(Value::String(v)) => !v.is_empty(),
            Some(_) => true,
        };
        if set {
            causes.push(Cause::forbidden(format!("{idx}.{field}"), TEXT));
        }
    }
    for (i, mount) in list(container, "volumeMounts").iter().enumerate() {
        for field in ["subPath", "subPathExpr"] {
            if !s(mount, field).is_empty() {
                causes.push(Cause::forbidden(
                    format!("{idx}.volumeMounts[{i}].{field}"),
                    TEXT,
                ));
            }
        }
    }
}

/// `checkHostPortConflicts`: a host port (with its protocol and host IP)
/// may be claimed once across the containers of one list.
fn host_port_conflicts(items: &[Value], list_path: &str, causes: &mut Vec<Cause>) {
    let mut claimed = HashSet::new();
    for (ci, container) in items.iter().enumerate() {
        for (pi, port) in list(container, "ports").iter().enumerate() {
            let host_port = port.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
            if host_port == 0 {
                continue;
            }
            let claim = format!("{}/{}/{host_port}", s(port, "protocol"), s(port, "hostIP"));
            if !claimed.insert(claim.clone()) {
                causes.push(Cause::duplicate(
                    format!("{list_path}[{ci}].ports[{pi}].hostPort"),
                    &Value::String(claim),
                ));
            }
        }
    }
}

/// `validatePodHostNetworkDeps`: with the host's network a container port is
/// its host port (a template may leave the host port 0: it is defaulted
/// when its Pods are made).
pub(super) fn host_network_ports(spec: &Value, path: &str, is_pod: bool, causes: &mut Vec<Cause>) {
    if spec.get("hostNetwork").and_then(Value::as_bool) != Some(true) {
        return;
    }
    for (ci, container) in list(spec, "containers").iter().enumerate() {
        for (pi, port) in list(container, "ports").iter().enumerate() {
            let host_port = port.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
            let container_port = port
                .get("containerPort")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            if (is_pod || host_port != 0) && host_port != container_port {
                causes.push(Cause::invalid(
                    format!("{path}.containers[{ci}].ports[{pi}].hostPort"),
                    &Value::from(host_port),
                    "must match `containerPort` when `hostNetwork` is true",
                ));
            }
        }
    }
}

fn port_num_or_name(port: Option<&Value>, field: &str, causes: &mut Vec<Cause>) {
    match port {
        Some(Value::Number(n)) => {
            let n = n.as_i64().unwrap_or(0);
            for msg in is_valid_port_num(n) {
                causes.push(Cause::invalid(field, &Value::from(n), &msg));
            }
        }
        Some(Value::String(name)) => {
            for msg in is_valid_port_name(name) {
                causes.push(Cause::invalid(field, &Value::String(name.clone()), &msg));
            }
        }
        _ => {
            for msg in is_valid_port_num(0) {
                causes.push(Cause::invalid(field, &Value::from(0), &msg));
            }
        }
    }
}

fn handler(h: &Value, path: &str, causes: &mut Vec<Cause>) {
    let kinds: Vec<&str> = ["exec", "httpGet", "tcpSocket", "grpc"]
        .into_iter()
        .filter(|k| present(h, k))
        .collect();
    match kinds.as_slice() {
        [] => causes.push(Cause::required(path, "must specify a handler type")),
        [_] => {}
        [_, rest @ ..] => {
            for k in rest {
                causes.push(Cause::forbidden(
                    format!("{path}.{k}"),
                    "may not specify more than 1 handler type",
                ));
            }
        }
    }
    if let Some(exec) = h.get("exec").filter(|e| !e.is_null())
        && list(exec, "command").is_empty()
    {
        causes.push(Cause::required(format!("{path}.exec.command"), ""));
    }
    if let Some(http) = h.get("httpGet").filter(|e| !e.is_null()) {
        if s(http, "path").is_empty() {
            causes.push(Cause::required(format!("{path}.httpGet.path"), ""));
        }
        port_num_or_name(http.get("port"), &format!("{path}.httpGet.port"), causes);
        let scheme = s(http, "scheme");
        if !matches!(scheme, "HTTP" | "HTTPS") {
            causes.push(Cause::not_supported(
                format!("{path}.httpGet.scheme"),
                &Value::String(scheme.into()),
                &["HTTP", "HTTPS"],
            ));
        }
    }
    if let Some(tcp) = h.get("tcpSocket").filter(|e| !e.is_null()) {
        port_num_or_name(tcp.get("port"), &format!("{path}.tcpSocket.port"), causes);
    }
}

fn container_ports(container: &Value, path: &str, causes: &mut Vec<Cause>) {
    let mut names = HashSet::new();
    for (i, port) in list(container, "ports").iter().enumerate() {
        let idx = format!("{path}[{i}]");
        let name = s(port, "name");
        if !name.is_empty() {
            let msgs = is_valid_port_name(name);
            if !msgs.is_empty() {
                for msg in msgs {
                    causes.push(Cause::invalid(
                        format!("{idx}.name"),
                        &Value::String(name.into()),
                        &msg,
                    ));
                }
            } else if !names.insert(name.to_string()) {
                causes.push(Cause::duplicate(
                    format!("{idx}.name"),
                    &Value::String(name.into()),
                ));
            }
        }
        let container_port = port
            .get("containerPort")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if container_port == 0 {
            causes.push(Cause::required(format!("{idx}.containerPort"), ""));
        } else {
            for msg in is_valid_port_num(container_port) {
                causes.push(Cause::invalid(
                    format!("{idx}.containerPort"),
                    &Value::from(container_port),
                    &msg,
                ));
            }
        }
        let host_port = port.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
        if host_port != 0 {
            for msg in is_valid_port_num(host_port) {
                causes.push(Cause::invalid(
                    format!("{idx}.hostPort"),
                    &Value::from(host_port),
                    &msg,
                ));
            }
        }
        match s(port, "protocol") {
            "TCP" | "UDP" | "SCTP" => {}
            "" => causes.push(Cause::required(format!("{idx}.protocol"), "")),
            other => causes.push(Cause::not_supported(
                format!("{idx}.protocol"),
                &Value::String(other.into()),
                &["SCTP", "TCP", "UDP"],
            )),
        }
    }
}

const FIELD_PATHS: &[&str] = &[
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.podIP",
    "status.podIPs",
];

fn env(container: &Value, path: &str, causes: &mut Vec<Cause>) {
    for (i, var) in list(container, "env").iter().enumerate() {
        let idx = format!("{path}[{i}]");
        let name = s(var, "name");
        if name.is_empty() {
            causes.push(Cause::required(format!("{idx}.name"), ""));
        } else {
            for msg in is_env_var_name(name) {
                causes.push(Cause::invalid(
                    format!("{idx}.name"),
                    &Value::String(name.into()),
                    &msg,
                ));
            }
        }
        let Some(from) = var.get("valueFrom").filter(|v| !v.is_null()) else {
            continue;
        };
        let from_path = format!("{idx}.valueFrom");
        let sources: Vec<&str> = [
            "fieldRef",
            "resourceFieldRef",
            "configMapKeyRef",
            "secretKeyRef",
        ]
        .into_iter()
        .filter(|k| present(from, k))
        .collect();
        if let Some(field_ref) = from.get("fieldRef").filter(|v| !v.is_null()) {
            let fp = s(field_ref, "fieldPath");
            if s(field_ref, "apiVersion").is_empty() {
                causes.push(Cause::required(
                    format!("{from_path}.fieldRef.apiVersion"),
                    "",
                ));
            }
            if fp.is_empty() {
                causes.push(Cause::required(
                    format!("{from_path}.fieldRef.fieldPath"),
                    "",
                ));
            } else {
                let base = fp.split('[').next().unwrap_or(fp);
                let subscripted = base != fp;
                let ok = if subscripted {
                    matches!(base, "metadata.annotations" | "metadata.labels")
                } else {
                    FIELD_PATHS.contains(&fp)
                        && !matches!(fp, "metadata.annotations" | "metadata.labels")
                };
                if !ok {
                    causes.push(Cause::not_supported(
                        format!("{from_path}.fieldRef.fieldPath"),
                        &Value::String(fp.into()),
                        FIELD_PATHS,
                    ));
                }
            }
        }
        for (key, name_field) in [("configMapKeyRef", "name"), ("secretKeyRef", "name")] {
            if let Some(reference) = from.get(key).filter(|v| !v.is_null()) {
                if s(reference, name_field).is_empty() {
                    causes.push(Cause::required(format!("{from_path}.{key}.name"), ""));
                }
                let k = s(reference, "key");
                if k.is_empty() {
                    causes.push(Cause::required(format!("{from_path}.{key}.key"), ""));
                } else {
                    for msg in is_config_map_key(k) {
                        causes.push(Cause::invalid(
                            format!("{from_path}.{key}.key"),
                            &Value::String(k.into()),
                            &msg,
                        ));
                    }
                }
            }
        }
        if let Some(resource_ref) = from.get("resourceFieldRef").filter(|v| !v.is_null())
            && s(resource_ref, "resource").is_empty()
        {
            causes.push(Cause::required(
                format!("{from_path}.resourceFieldRef.resource"),
                "",
            ));
        }
        if !s(var, "value").is_empty() {
            causes.push(Cause::invalid(
                from_path.clone(),
                &Value::String(String::new()),
                "may not be specified when `value` is not empty",
            ));
        }
        match sources.len() {
            0 => causes.push(Cause::invalid(
                from_path,
                &Value::String(String::new()),
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
            )),
            1 => {}
            _ => causes.push(Cause::invalid(
                from_path,
                &Value::String(String::new()),
                "may not have more than one field specified at a time",
            )),
        }
    }
}

fn env_from(container: &Value, path: &str, causes: &mut Vec<Cause>) {
    for (i, source) in list(container, "envFrom").iter().enumerate() {
        let idx = format!("{path}[{i}]");
        let prefix = s(source, "prefix");
        if !prefix.is_empty() {
            for msg in is_env_var_name(prefix) {
                causes.push(Cause::invalid(
                    format!("{idx}.prefix"),
                    &Value::String(prefix.into()),
                    &msg,
                ));
            }
        }
        let refs: Vec<&str> = ["configMapRef", "secretRef"]
            .into_iter()
            .filter(|k| present(source, k))
            .collect();
        for key in &refs {
            if source.get(*key).is_some_and(|r| s(r, "name").is_empty()) {
                causes.push(Cause::required(format!("{idx}.{key}.name"), ""));
            }
        }
        match refs.len() {
            0 => causes.push(Cause::invalid(
                idx,
                &Value::String(String::new()),
                "must specify one of: `configMapRef` or `secretRef`",
            )),
            1 => {}
            _ => causes.push(Cause::invalid(
                idx,
                &Value::String(String::new()),
                "may not have more than one field specified at a time",
            )),
        }
    }
}

fn volume_mounts(
    container: &Value,
    volumes: &HashSet<String>,
    path: &str,
    causes: &mut Vec<Cause>,
) {
    let mut mount_points = HashSet::new();
    for (i, mount) in list(container, "volumeMounts").iter().enumerate() {
        let idx = format!("{path}[{i}]");
        let name = s(mount, "name");
        if name.is_empty() {
            causes.push(Cause::required(format!("{idx}.name"), ""));
        }
        if !volumes.contains(name) {
            causes.push(not_found(format!("{idx}.name"), name));
        }
        let mount_path = s(mount, "mountPath");
        if mount_path.is_empty() {
            causes.push(Cause::required(format!("{idx}.mountPath"), ""));
        }
        if !mount_points.insert(mount_path.to_string()) {
            causes.push(Cause::invalid(
                format!("{idx}.mountPath"),
                &Value::String(mount_path.into()),
                "must be unique",
            ));
        }
        let sub_path = s(mount, "subPath");
        if !sub_path.is_empty() {
            relative_path(sub_path, &format!("{path}.subPath"), causes);
        }
    }
}

fn is_standard_container_resource(name: &str) -> bool {
    matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-")
}

/// `ValidateResourceRequirements` (container `resources`).
pub(crate) fn resources(requirements: Option<&Value>, path: &str, causes: &mut Vec<Cause>) {
    let Some(requirements) = requirements else {
        return;
    };
    let limits = requirements.get("limits").and_then(Value::as_object);
    let requests = requirements.get("requests").and_then(Value::as_object);
    let mut check_name_and_value = |kind: &str, name: &str, value: &Value| {
        let field = format!("{path}.{kind}[{name}]");
        for msg in is_qualified_name(name) {
            causes.push(Cause::invalid(
                field.clone(),
                &Value::String(name.into()),
                &msg,
            ));
        }
        if !name.contains('/') && !is_standard_container_resource(name) {
            causes.push(Cause::invalid(
                field.clone(),
                &Value::String(name.into()),
                "must be a standard resource for containers",
            ));
        }
        if let Some(q) = quantity::from_json(value)
            && q.nanos() < 0
        {
            causes.push(Cause::invalid(
                field,
                &Value::String(q.canonical()),
                "must be greater than or equal to 0",
            ));
        }
    };
    let mut sorted_limits: Vec<_> = limits.into_iter().flatten().collect();
    sorted_limits.sort_by(|a, b| a.0.cmp(b.0));
    for (name, value) in &sorted_limits {
        check_name_and_value("limits", name, value);
    }
    let mut sorted_requests: Vec<_> = requests.into_iter().flatten().collect();
    sorted_requests.sort_by(|a, b| a.0.cmp(b.0));
    for (name, value) in &sorted_requests {
        check_name_and_value("requests", name, value);
    }
    for (name, value) in sorted_requests {
        let overcommit = !name.starts_with("hugepages-") && !name.contains('/');
        let request = quantity::from_json(value);
        match limits
            .and_then(|l| l.get(name))
            .and_then(quantity::from_json)
        {
            Some(limit) => {
                let Some(request) = request else { continue };
                if request.nanos() != limit.nanos() && !overcommit {
                    causes.push(Cause::invalid(
                        format!("{path}.requests"),
                        &Value::String(request.canonical()),
                        &format!("must be equal to {name} limit"),
                    ));
                } else if request.nanos() > limit.nanos() {
                    causes.push(Cause::invalid(
                        format!("{path}.requests"),
                        &Value::String(request.canonical()),
                        &format!("must be less than or equal to {name} limit"),
                    ));
                }
            }
            None if !overcommit => causes.push(Cause::required(
                format!("{path}.limits"),
                "Limit must be set for non overcommitable resources",
            )),
            None => {}
        }
    }
}
