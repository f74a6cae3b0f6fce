//! `ValidatePodSpec` and its parts (containers, ports, env, volumes,
//! resources, probes, tolerations), plus Pod create and update rules.

use std::collections::HashSet;

use serde_json::Value;

use super::gofmt::invalid_raw;
use super::meta::{annotations, labels};
use super::names::{
    is_config_map_key, is_dns1123_label, is_dns1123_subdomain, is_env_var_name, is_qualified_name,
    is_valid_label_value, is_valid_port_name, is_valid_port_num,
};
use crate::builtin::quantity;
use crate::error::{Cause, go_value};

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn present(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|x| !x.is_null())
}

fn not_found(field: String, value: &str) -> Cause {
    Cause::new(
        "FieldValueNotFound",
        field,
        format!("Not found: {}", go_value(&Value::String(value.to_string()))),
    )
}

fn dns_label(value: &str, field: &str) -> Vec<Cause> {
    is_dns1123_label(value)
        .into_iter()
        .map(|m| Cause::invalid(field, &Value::String(value.to_string()), &m))
        .collect()
}

fn nonnegative(v: &Value, key: &str, field: String) -> Option<Cause> {
    let n = v.get(key).and_then(Value::as_i64)?;
    (n < 0).then(|| Cause::invalid(field, &Value::from(n), "must be greater than or equal to 0"))
}

/// `ValidatePodSpec`: `path` is `spec` or `spec.template.spec`.
pub(crate) fn pod_spec(spec: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let volumes = self::volumes(spec, &format!("{path}.volumes"), &mut causes);
    containers(spec, "containers", path, &volumes, &mut causes);
    if !list(spec, "initContainers").is_empty() {
        containers(spec, "initContainers", path, &volumes, &mut causes);
    }
    let restart = s(spec, "restartPolicy");
    match restart {
        "Always" | "OnFailure" | "Never" => {}
        "" => causes.push(Cause::required(format!("{path}.restartPolicy"), "")),
        other => causes.push(Cause::not_supported(
            format!("{path}.restartPolicy"),
            &Value::String(other.into()),
            &["Always", "OnFailure", "Never"],
        )),
    }
    match s(spec, "dnsPolicy") {
        "ClusterFirstWithHostNet" | "ClusterFirst" | "Default" | "None" => {}
        "" => causes.push(Cause::required(format!("{path}.dnsPolicy"), "")),
        other => causes.push(Cause::not_supported(
            format!("{path}.dnsPolicy"),
            &Value::String(other.into()),
            &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        )),
    }
    causes.extend(labels(
        spec.get("nodeSelector"),
        &format!("{path}.nodeSelector"),
    ));
    for (i, secret) in list(spec, "imagePullSecrets").iter().enumerate() {
        if s(secret, "name").is_empty() {
            causes.push(Cause::required(
                format!("{path}.imagePullSecrets[{i}].name"),
                "",
            ));
        }
    }
    let sa = s(spec, "serviceAccountName");
    if !sa.is_empty() {
        for msg in is_dns1123_subdomain(sa) {
            causes.push(Cause::invalid(
                format!("{path}.serviceAccountName"),
                &Value::String(sa.into()),
                &msg,
            ));
        }
    }
    let node = s(spec, "nodeName");
    if !node.is_empty() {
        for msg in is_dns1123_subdomain(node) {
            causes.push(Cause::invalid(
                format!("{path}.nodeName"),
                &Value::String(node.into()),
                &msg,
            ));
        }
    }
    if let Some(deadline) = spec.get("activeDeadlineSeconds").and_then(Value::as_i64)
        && !(1..=i64::from(i32::MAX)).contains(&deadline)
    {
        causes.push(Cause::invalid(
            format!("{path}.activeDeadlineSeconds"),
            &Value::from(deadline),
            "must be between 1 and 2147483647, inclusive",
        ));
    }
    for key in ["hostname", "subdomain"] {
        let value = s(spec, key);
        if !value.is_empty() {
            causes.extend(dns_label(value, &format!("{path}.{key}")));
        }
    }
    tolerations(spec, &format!("{path}.tolerations"), &mut causes);
    let class = s(spec, "priorityClassName");
    if !class.is_empty() {
        for msg in is_dns1123_subdomain(class) {
            causes.push(Cause::invalid(
                format!("{path}.priorityClassName"),
                &Value::String(class.into()),
                &msg,
            ));
        }
    }
    if let Some(policy) = spec.get("preemptionPolicy").and_then(Value::as_str)
        && !matches!(policy, "PreemptLowerPriority" | "Never")
    {
        causes.push(Cause::not_supported(
            format!("{path}.preemptionPolicy"),
            &Value::String(policy.into()),
            &["Never", "PreemptLowerPriority"],
        ));
    }
    causes
}

/// `ValidateVolumes`; returns the names of the valid volumes.
fn volumes(spec: &Value, path: &str, causes: &mut Vec<Cause>) -> HashSet<String> {
    const SOURCES: &[&str] = &[
        "hostPath",
        "emptyDir",
        "gcePersistentDisk",
        "awsElasticBlockStore",
        "gitRepo",
        "secret",
        "nfs",
        "iscsi",
        "glusterfs",
        "persistentVolumeClaim",
        "rbd",
        "flexVolume",
        "cinder",
        "cephfs",
        "flocker",
        "downwardAPI",
        "fc",
        "azureFile",
        "configMap",
        "vsphereVolume",
        "quobyte",
        "azureDisk",
        "photonPersistentDisk",
        "projected",
        "portworxVolume",
        "scaleIO",
        "storageos",
        "csi",
        "ephemeral",
        "image",
    ];
    let mut names = HashSet::new();
    for (i, volume) in list(spec, "volumes").iter().enumerate() {
        let idx = format!("{path}[{i}]");
        let mut errs = Vec::new();
        let sources: Vec<&str> = SOURCES
            .iter()
            .copied()
            .filter(|src| present(volume, src))
            .collect();
        match sources.as_slice() {
            [] => errs.push(Cause::required(idx.clone(), "must specify a volume type")),
            [one] => volume_source(volume, one, &idx, &mut errs),
            [first, rest @ ..] => {
                volume_source(volume, first, &idx, &mut errs);
                for other in rest {
                    errs.push(Cause::forbidden(
                        format!("{idx}.{other}"),
                        "may not specify more than 1 volume type",
                    ));
                }
            }
        }
        let name = s(volume, "name");
        if name.is_empty() {
            errs.push(Cause::required(format!("{idx}.name"), ""));
        } else {
            errs.extend(dns_label(name, &format!("{idx}.name")));
        }
        if names.contains(name) {
            errs.push(Cause::duplicate(
                format!("{idx}.name"),
                &Value::String(name.into()),
            ));
        }
        if errs.is_empty() {
            names.insert(name.to_string());
        } else {
            causes.extend(errs);
        }
    }
    names
}

fn default_mode(src: &Value, path: &str, errs: &mut Vec<Cause>) {
    if let Some(mode) = src.get("defaultMode").and_then(Value::as_i64)
        && !(0..=0o777).contains(&mode)
    {
        errs.push(Cause::invalid(
            format!("{path}.defaultMode"),
            &Value::from(mode),
            "must be a number between 0 and 0777 (octal), both inclusive",
        ));
    }
}

fn volume_source(volume: &Value, source: &str, idx: &str, errs: &mut Vec<Cause>) {
    let Some(src) = volume.get(source) else {
        return;
    };
    let path = format!("{idx}.{source}");
    match source {
        "configMap" => {
            if s(src, "name").is_empty() {
                errs.push(Cause::required(format!("{path}.name"), ""));
            }
            default_mode(src, &path, errs);
            key_to_paths(src, &path, errs);
        }
        "secret" => {
            if s(src, "secretName").is_empty() {
                errs.push(Cause::required(format!("{path}.secretName"), ""));
            }
            default_mode(src, &path, errs);
            key_to_paths(src, &path, errs);
        }
        "hostPath" if s(src, "path").is_empty() => {
            errs.push(Cause::required(format!("{path}.path"), ""));
        }
        "persistentVolumeClaim" if s(src, "claimName").is_empty() => {
            errs.push(Cause::required(format!("{path}.claimName"), ""));
        }
        "emptyDir" => {
            if let Some(limit) = src.get("sizeLimit").and_then(quantity::from_json)
                && limit.nanos() < 0
            {
                errs.push(Cause::forbidden(
                    format!("{path}.sizeLimit"),
                    "SizeLimit field must be a valid resource quantity",
                ));
            }
        }
        "downwardAPI" | "projected" => default_mode(src, &path, errs),
        "nfs" => {
            if s(src, "server").is_empty() {
                errs.push(Cause::required(format!("{path}.server"), ""));
            }
            if s(src, "path").is_empty() {
                errs.push(Cause::required(format!("{path}.path"), ""));
            }
        }
        "csi" if s(src, "driver").is_empty() => {
            errs.push(Cause::required(format!("{path}.driver"), ""));
        }
        _ => {}
    }
}

fn key_to_paths(src: &Value, path: &str, errs: &mut Vec<Cause>) {
    for (i, item) in list(src, "items").iter().enumerate() {
        let item_path = format!("{path}.items[{i}]");
        if s(item, "key").is_empty() {
            errs.push(Cause::required(format!("{item_path}.key"), ""));
        }
        let p = s(item, "path");
        if p.is_empty() {
            errs.push(Cause::required(format!("{item_path}.path"), ""));
        } else {
            relative_path(p, &format!("{item_path}.path"), errs);
        }
        if let Some(mode) = item.get("mode").and_then(Value::as_i64)
            && !(0..=0o777).contains(&mode)
        {
            errs.push(Cause::invalid(
                format!("{item_path}.mode"),
                &Value::from(mode),
                "must be a number between 0 and 0777 (octal), both inclusive",
            ));
        }
    }
}

/// `validateLocalDescendingPath`.
fn relative_path(p: &str, field: &str, errs: &mut Vec<Cause>) {
    if p.starts_with('/') {
        errs.push(Cause::invalid(
            field,
            &Value::String(p.into()),
            "must be a relative path",
        ));
    }
    if p.split('/').any(|part| part == "..") {
        errs.push(Cause::invalid(
            field,
            &Value::String(p.into()),
            "must not contain '..'",
        ));
    }
}

fn containers(
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
    if key == "initContainers" {
        for c in list(spec, "containers") {
            names.insert(s(c, "name").to_string());
        }
    }
    for (i, container) in items.iter().enumerate() {
        let idx = format!("{list_path}[{i}]");
        let name = s(container, "name");
        if name.is_empty() {
            causes.push(Cause::required(format!("{idx}.name"), ""));
        } else {
            causes.extend(dns_label(name, &format!("{idx}.name")));
        }
        if !names.insert(name.to_string()) {
            causes.push(Cause::duplicate(
                format!("{idx}.name"),
                &Value::String(name.into()),
            ));
        }
        if s(container, "image").is_empty() {
            causes.push(Cause::required(format!("{idx}.image"), ""));
        }
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

fn tolerations(spec: &Value, path: &str, causes: &mut Vec<Cause>) {
    for (i, toleration) in list(spec, "tolerations").iter().enumerate() {
        let idx = format!("{path}[{i}]");
        let key = s(toleration, "key");
        let operator = s(toleration, "operator");
        let effect = s(toleration, "effect");
        let value = s(toleration, "value");
        if !key.is_empty() {
            for msg in is_qualified_name(key) {
                causes.push(Cause::invalid(
                    format!("{idx}.key"),
                    &Value::String(key.into()),
                    &msg,
                ));
            }
        }
        if key.is_empty() && operator != "Exists" {
            causes.push(Cause::invalid(
                format!("{idx}.operator"),
                &Value::String(operator.into()),
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if present(toleration, "tolerationSeconds") && effect != "NoExecute" {
            causes.push(Cause::invalid(
                format!("{idx}.effect"),
                &Value::String(effect.into()),
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        match operator {
            "Equal" | "" => {
                let errs = is_valid_label_value(value);
                if !errs.is_empty() {
                    causes.push(Cause::invalid(
                        format!("{idx}.operator"),
                        &Value::String(value.into()),
                        &errs.join(";"),
                    ));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    causes.push(invalid_raw(
                        format!("{idx}.operator"),
                        &format!(
                            "core.Toleration{{Key:{key:?}, Operator:{operator:?}, Value:{value:?}, Effect:{effect:?}, TolerationSeconds:{}}}",
                            super::gofmt::pointer("int64", !present(toleration, "tolerationSeconds"))
                        ),
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            other => causes.push(Cause::not_supported(
                format!("{idx}.operator"),
                &Value::String(other.into()),
                &["Equal", "Exists"],
            )),
        }
        if !effect.is_empty() && !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute")
        {
            causes.push(Cause::not_supported(
                format!("{idx}.effect"),
                &Value::String(effect.into()),
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            ));
        }
    }
}

/// `ValidatePodTemplateSpec` at `path` (`spec.template`).
pub(crate) fn template(template: Option<&Value>, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let empty = Value::Null;
    let template = template.unwrap_or(&empty);
    let meta = template.get("metadata").unwrap_or(&empty);
    causes.extend(labels(meta.get("labels"), &format!("{path}.labels")));
    causes.extend(annotations(
        meta.get("annotations"),
        &format!("{path}.annotations"),
    ));
    let spec = template.get("spec").unwrap_or(&empty);
    causes.extend(pod_spec(spec, &format!("{path}.spec")));
    if !list(spec, "ephemeralContainers").is_empty() {
        causes.push(Cause::forbidden(
            format!("{path}.spec.ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    causes
}

/// Pod-specific create rules after the spec.
pub(crate) fn pod_create(pod: &Value) -> Vec<Cause> {
    let empty = Value::Null;
    let spec = pod.get("spec").unwrap_or(&empty);
    let mut causes = pod_spec(spec, "spec");
    if !list(spec, "ephemeralContainers").is_empty() {
        causes.push(Cause::forbidden(
            "spec.ephemeralContainers",
            "cannot be set on create",
        ));
    }
    causes
}

/// What a Pod update may change: images, activeDeadlineSeconds, added
/// tolerations and terminationGracePeriodSeconds.
pub(crate) fn pod_update(pod: &Value, old: &Value) -> Vec<Cause> {
    let empty = Value::Null;
    let spec = pod.get("spec").unwrap_or(&empty);
    let old_spec = old.get("spec").unwrap_or(&empty);
    let mut causes = pod_spec(spec, "spec");
    let mut mutated = old_spec.clone();
    if let (Some(m), Some(new)) = (mutated.as_object_mut(), spec.as_object()) {
        for key in ["containers", "initContainers"] {
            let new_list = new.get(key).and_then(Value::as_array);
            if let (Some(old_list), Some(new_list)) =
                (m.get_mut(key).and_then(Value::as_array_mut), new_list)
                && old_list.len() == new_list.len()
            {
                for (o, n) in old_list.iter_mut().zip(new_list) {
                    if let (Some(o), Some(image)) = (o.as_object_mut(), n.get("image")) {
                        o.insert("image".into(), image.clone());
                    }
                }
            }
        }
        for key in [
            "activeDeadlineSeconds",
            "tolerations",
            "terminationGracePeriodSeconds",
        ] {
            match new.get(key) {
                Some(v) => {
                    m.insert(key.into(), v.clone());
                }
                None => {
                    m.remove(key);
                }
            }
        }
    }
    if &mutated != spec {
        causes.push(Cause::forbidden(
            "spec",
            "pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations) or `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
        ));
    }
    let old_tolerations = list(old_spec, "tolerations");
    let new_tolerations = list(spec, "tolerations");
    if old_tolerations.iter().any(|t| !new_tolerations.contains(t)) {
        causes.push(Cause::forbidden(
            "spec.tolerations",
            "existing toleration can not be modified except its tolerationSeconds",
        ));
    }
    causes
}
