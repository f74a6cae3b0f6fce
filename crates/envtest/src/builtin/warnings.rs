//! The warnings registry strategies return for a write (`WarningsOnCreate`,
//! `WarningsOnUpdate`), which kube-apiserver sends as `Warning` headers:
//! a Pod or ReplicaSet name that is no DNS label, and the pod spec warnings
//! of `pkg/api/pod/warnings.go` for Pods and every pod template (deprecated
//! node labels, annotations and volume plugins, null label selectors,
//! duplicate environment variables, ports, host aliases and pull secrets,
//! fractional byte quantities, a negative grace period).

use std::collections::{BTreeMap, HashSet};

use serde_json::Value;

use super::KindInfo;
use crate::name_rules::is_dns1123_label;
use crate::quantity::Quantity;

/// Where a kind keeps its pod template (`None` for a Pod, whose spec is at
/// the root): the path warnings are reported under.
fn template_path(kind: &KindInfo) -> Option<Option<&'static str>> {
    match (kind.group, kind.kind) {
        ("", "Pod") => Some(None),
        ("", "PodTemplate") => Some(Some("template")),
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet")
        | ("", "ReplicationController")
        | ("batch", "Job") => Some(Some("spec.template")),
        ("batch", "CronJob") => Some(Some("spec.jobTemplate.spec.template")),
        _ => None,
    }
}

/// `WarningsOnCreate`.
pub(crate) fn on_create(kind: &KindInfo, obj: &Value) -> Vec<String> {
    let mut warnings = Vec::new();
    let name = crate::meta::name(obj);
    let name_use = match (kind.group, kind.kind) {
        ("", "Pod") => Some("this is used in the Pod's hostname"),
        ("apps", "ReplicaSet") => Some("this is used in Pod names and hostnames"),
        _ => None,
    };
    if let Some(name_use) = name_use {
        let msgs = is_dns1123_label(name);
        if !msgs.is_empty() {
            warnings.push(format!(
                "metadata.name: {name_use}, which can result in surprising behavior; a DNS label is recommended: [{}]",
                msgs.join(" ")
            ));
        }
    }
    warnings.extend(pod_template(kind, obj));
    warnings
}

/// `WarningsOnUpdate`: the template's warnings again when the update
/// changed the generation (Pods warn on create only).
pub(crate) fn on_update(kind: &KindInfo, obj: &Value, old: &Value) -> Vec<String> {
    if (kind.group, kind.kind) == ("", "Pod") {
        return Vec::new();
    }
    if obj.pointer("/metadata/generation") == old.pointer("/metadata/generation") {
        return Vec::new();
    }
    pod_template(kind, obj)
}

fn pod_template(kind: &KindInfo, obj: &Value) -> Vec<String> {
    let Some(prefix) = template_path(kind) else {
        return Vec::new();
    };
    let template = match prefix {
        None => Some(obj),
        Some(p) => obj.pointer(&format!("/{}", p.replace('.', "/"))),
    };
    let Some(template) = template else {
        return Vec::new();
    };
    let empty = Value::Null;
    let spec = template.get("spec").unwrap_or(&empty);
    let meta = template.get("metadata").unwrap_or(&empty);
    let at = |rest: &str| match prefix {
        None => rest.to_string(),
        Some(p) => format!("{p}.{rest}"),
    };
    pod_spec_and_meta(spec, meta, &at)
}

/// `GetNodeLabelDeprecatedMessage`.
fn deprecated_node_label(key: &str) -> Option<&'static str> {
    Some(match key {
        "beta.kubernetes.io/arch" => "deprecated since v1.14; use \"kubernetes.io/arch\" instead",
        "beta.kubernetes.io/os" => "deprecated since v1.14; use \"kubernetes.io/os\" instead",
        "failure-domain.beta.kubernetes.io/region" => {
            "deprecated since v1.17; use \"topology.kubernetes.io/region\" instead"
        }
        "failure-domain.beta.kubernetes.io/zone" => {
            "deprecated since v1.17; use \"topology.kubernetes.io/zone\" instead"
        }
        "beta.kubernetes.io/instance-type" => {
            "deprecated since v1.17; use \"node.kubernetes.io/instance-type\" instead"
        }
        _ => return None,
    })
}

const DEPRECATED_ANNOTATIONS: &[(&str, &str)] = &[
    (
        "scheduler.alpha.kubernetes.io/critical-pod",
        "non-functional in v1.16+; use the \"priorityClassName\" field instead",
    ),
    (
        "security.alpha.kubernetes.io/sysctls",
        "non-functional in v1.11+; use the \"sysctls\" field instead",
    ),
    (
        "security.alpha.kubernetes.io/unsafe-sysctls",
        "non-functional in v1.11+; use the \"sysctls\" field instead",
    ),
];

/// Deprecated volume plugins: the JSON key, the name Go's field path
/// prints, and the message.
const DEPRECATED_VOLUMES: &[(&str, &str, &str)] = &[
    (
        "photonPersistentDisk",
        "photonPersistentDisk",
        "deprecated in v1.11, non-functional in v1.16+",
    ),
    ("gitRepo", "gitRepo", "deprecated in v1.11"),
    (
        "scaleIO",
        "scaleIO",
        "deprecated in v1.16, non-functional in v1.22+",
    ),
    (
        "flocker",
        "flocker",
        "deprecated in v1.22, non-functional in v1.25+",
    ),
    (
        "storageos",
        "storageOS",
        "deprecated in v1.22, non-functional in v1.25+",
    ),
    (
        "quobyte",
        "quobyte",
        "deprecated in v1.22, non-functional in v1.25+",
    ),
    (
        "glusterfs",
        "glusterfs",
        "deprecated in v1.25, non-functional in v1.26+",
    ),
    (
        "cephfs",
        "cephfs",
        "deprecated in v1.28, non-functional in v1.31+",
    ),
    (
        "rbd",
        "rbd",
        "deprecated in v1.28, non-functional in v1.31+",
    ),
];

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `warningsForPodSpecAndMeta`.
fn pod_spec_and_meta(spec: &Value, meta: &Value, at: &dyn Fn(&str) -> String) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(selector) = spec.get("nodeSelector").and_then(Value::as_object) {
        for key in selector.keys() {
            if let Some(msg) = deprecated_node_label(key) {
                warnings.push(format!(
                    "{}: {msg}",
                    at(&format!("spec.nodeSelector[{key}]"))
                ));
            }
        }
    }
    for (i, c) in list(spec, "topologySpreadConstraints").iter().enumerate() {
        let path = at(&format!("spec.topologySpreadConstraints[{i}]"));
        let key = text(c, "topologyKey");
        if let Some(msg) = deprecated_node_label(key) {
            warnings.push(format!("{path}.topologyKey: {key} is {msg}"));
        }
        if c.get("labelSelector").is_none_or(Value::is_null) {
            warnings.push(format!(
                "{path}.labelSelector: a null labelSelector results in matching no pod"
            ));
        }
    }
    let annotations = meta.get("annotations").and_then(Value::as_object);
    for (key, msg) in DEPRECATED_ANNOTATIONS {
        if annotations.is_some_and(|a| a.contains_key(*key)) {
            warnings.push(format!(
                "{}: {msg}",
                at(&format!("metadata.annotations[{key}]"))
            ));
        }
    }
    for (i, volume) in list(spec, "volumes").iter().enumerate() {
        for (key, plugin, msg) in DEPRECATED_VOLUMES {
            if volume.get(*key).is_some_and(|v| !v.is_null()) {
                warnings.push(format!(
                    "{}: {msg}",
                    at(&format!("spec.volumes[{i}].{plugin}"))
                ));
            }
        }
    }
    let mut seen = HashSet::new();
    for (i, alias) in list(spec, "hostAliases").iter().enumerate() {
        let ip = text(alias, "ip");
        if !seen.insert(ip) {
            warnings.push(format!(
                "{}: duplicate ip {}",
                at(&format!("spec.hostAliases[{i}].ip")),
                crate::gofmt::quote(ip)
            ));
        }
    }
    let secrets = list(spec, "imagePullSecrets");
    let mut seen = HashSet::new();
    for (i, secret) in secrets.iter().enumerate() {
        let name = text(secret, "name");
        if secrets.len() > 1 && !seen.insert(name) {
            warnings.push(format!(
                "{}: duplicate name {}",
                at(&format!("spec.imagePullSecrets[{i}].name")),
                crate::gofmt::quote(name)
            ));
        }
    }
    for (i, secret) in secrets.iter().enumerate() {
        if text(secret, "name").is_empty() {
            warnings.push(format!(
                "{}: invalid empty name \"\"",
                at(&format!("spec.imagePullSecrets[{i}].name"))
            ));
        }
    }
    let containers = containers_with_paths(spec);
    for (path, c) in &containers {
        let path = at(path);
        for which in ["limits", "requests"] {
            for resource in ["memory", "ephemeral-storage"] {
                let Some(value) = c.pointer(&format!("/resources/{which}/{resource}")) else {
                    continue;
                };
                let Some(q) = crate::quantity::from_json(value) else {
                    continue;
                };
                if fractional(&q) {
                    warnings.push(format!(
                        "{path}.resources.{which}[{resource}]: fractional byte value {} is invalid, must be an integer",
                        crate::gofmt::quote(&q.canonical())
                    ));
                }
            }
        }
        let mut names = HashSet::new();
        for (i, env) in list(c, "env").iter().enumerate() {
            let name = text(env, "name");
            if names.insert(name) {
                continue;
            }
            let reference = format!("$({name})");
            let value = text(env, "value");
            let from = env.get("valueFrom").is_some_and(|v| !v.is_null());
            if from || value == reference || !value.contains(&reference) {
                warnings.push(format!(
                    "{path}.env[{i}]: hides previous definition of {}, which may be dropped when using apply",
                    crate::gofmt::quote(name)
                ));
            }
        }
    }
    warnings.extend(port_warnings(&containers, at));
    if let Some(grace) = spec
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64)
        && grace < 0
    {
        warnings.push(format!(
            "{}: must be >= 0; negative values are invalid and will be treated as 1",
            at("spec.terminationGracePeriodSeconds")
        ));
    }
    for kind in ["podAffinity", "podAntiAffinity"] {
        let Some(affinity) = spec.pointer(&format!("/affinity/{kind}")) else {
            continue;
        };
        let required = "requiredDuringSchedulingIgnoredDuringExecution";
        for (i, term) in list(affinity, required).iter().enumerate() {
            if term.get("labelSelector").is_none_or(Value::is_null) {
                warnings.push(format!(
                    "{}: a null labelSelector results in matching no pod",
                    at(&format!(
                        "spec.affinity.{kind}.{required}[{i}].labelSelector"
                    ))
                ));
            }
        }
        let preferred = "preferredDuringSchedulingIgnoredDuringExecution";
        for (i, term) in list(affinity, preferred).iter().enumerate() {
            if term
                .pointer("/podAffinityTerm/labelSelector")
                .is_none_or(Value::is_null)
            {
                warnings.push(format!(
                    "{}: a null labelSelector results in matching no pod",
                    at(&format!(
                        "spec.affinity.{kind}.{preferred}[{i}].podAffinityTerm.labelSelector"
                    ))
                ));
            }
        }
    }
    warnings
}

/// Go's `MilliValue() % 1000 != 0`: a byte count that is not whole.
fn fractional(q: &Quantity) -> bool {
    q.nanos() % 1_000_000_000 != 0
}

/// Every container with its path, in `VisitContainersWithPath`'s order.
fn containers_with_paths(spec: &Value) -> Vec<(String, &Value)> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|key| {
            list(spec, key)
                .iter()
                .enumerate()
                .map(move |(i, c)| (format!("spec.{key}[{i}]"), c))
        })
        .collect()
}

/// Ports claimed twice, or in ways whose outcome is undefined.
fn port_warnings(containers: &[(String, &Value)], at: &dyn Fn(&str) -> String) -> Vec<String> {
    let mut warnings = Vec::new();
    let mut claimed: BTreeMap<String, Vec<(String, &Value)>> = BTreeMap::new();
    for (path, c) in containers {
        for (i, port) in list(c, "ports").iter().enumerate() {
            let field = at(&format!("{path}.ports[{i}]"));
            let host_ip = text(port, "hostIP");
            let host_port = port.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
            let container_port = port
                .get("containerPort")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            let protocol = text(port, "protocol");
            if !host_ip.is_empty() && host_port == 0 {
                warnings.push(format!(
                    "{field}: hostIP set without hostPort: {{Name:{} HostPort:{host_port} ContainerPort:{container_port} Protocol:{protocol} HostIP:{host_ip}}}",
                    text(port, "name")
                ));
            }
            let key = format!("{container_port}/{protocol}");
            for (other_field, other) in claimed.get(&key).into_iter().flatten() {
                let other_ip = text(other, "hostIP");
                let other_port = other.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
                if host_ip == other_ip && host_port == other_port {
                    warnings.push(format!(
                        "{field}: duplicate port definition with {other_field}"
                    ));
                } else if host_port == 0 || other_port == 0 {
                    warnings.push(format!(
                        "{field}: overlapping port definition with {other_field}"
                    ));
                } else if host_port == other_port && (host_ip.is_empty() != other_ip.is_empty()) {
                    warnings.push(format!(
                        "{field}: dangerously ambiguous port definition with {other_field}"
                    ));
                }
            }
            claimed.entry(key).or_default().push((field, port));
        }
    }
    warnings
}
