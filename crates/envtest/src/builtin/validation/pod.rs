//! `ValidatePodSpec` (containers and volumes in their own modules),
//! tolerations, pod templates, and Pod create and update rules.

use serde_json::Value;

use super::container::{containers, host_network_ports};
use super::fields::{dns_label, list, present, s};
use super::go_syntax::invalid_raw;
use super::meta::{annotations, labels};
use super::pod_scheduling;
use super::volumes::volumes;
use crate::error::Cause;
use crate::name_rules::{is_dns1123_subdomain, is_qualified_name, is_valid_label_value};

/// `ValidatePodSpec`: `path` is `spec` or `spec.template.spec`; `pod_name`
/// is the Pod's own name (none for a template).
pub(crate) fn pod_spec(spec: &Value, path: &str, pod_name: Option<&str>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let volumes = volumes(spec, &format!("{path}.volumes"), pod_name, &mut causes);
    containers(spec, "containers", path, &volumes, &mut causes);
    if !list(spec, "initContainers").is_empty() {
        containers(spec, "initContainers", path, &volumes, &mut causes);
    }
    if !list(spec, "ephemeralContainers").is_empty() {
        containers(spec, "ephemeralContainers", path, &volumes, &mut causes);
    }
    host_network_ports(spec, path, path == "spec", &mut causes);
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
    pod_scheduling::security_context(spec, path, &mut causes);
    for (i, secret) in list(spec, "imagePullSecrets").iter().enumerate() {
        if s(secret, "name").is_empty() {
            causes.push(Cause::required(
                format!("{path}.imagePullSecrets[{i}].name"),
                "",
            ));
        }
    }
    pod_scheduling::affinity(spec, path, &mut causes);
    pod_scheduling::dns_config(spec, path, &mut causes);
    pod_scheduling::readiness_gates(spec, path, &mut causes);
    pod_scheduling::topology_spread(spec, path, &mut causes);
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
    pod_scheduling::host_aliases(spec, path, &mut causes);
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
    if let Some(class) = spec.get("runtimeClassName").and_then(Value::as_str) {
        for msg in is_dns1123_subdomain(class) {
            causes.push(Cause::invalid(
                format!("{path}.runtimeClassName"),
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

pub(super) fn tolerations(spec: &Value, path: &str, causes: &mut Vec<Cause>) {
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
                            super::go_syntax::pointer("int64", !present(toleration, "tolerationSeconds"))
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
    causes.extend(pod_spec(spec, &format!("{path}.spec"), None));
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
    let mut causes = pod_spec(spec, "spec", Some(crate::meta::name(pod)));
    if !list(spec, "ephemeralContainers").is_empty() {
        causes.push(Cause::forbidden(
            "spec.ephemeralContainers",
            "cannot be set on create",
        ));
    }
    causes
}

/// What a Pod update may change: images, activeDeadlineSeconds, added
/// tolerations, removed scheduling gates and terminationGracePeriodSeconds.
pub(crate) fn pod_update(pod: &Value, old: &Value) -> Vec<Cause> {
    let empty = Value::Null;
    let spec = pod.get("spec").unwrap_or(&empty);
    let old_spec = old.get("spec").unwrap_or(&empty);
    let mut causes = pod_spec(spec, "spec", Some(crate::meta::name(pod)));
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
            "schedulingGates",
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
    causes.extend(only_deleted_scheduling_gates(spec, old_spec));
    causes
}

/// `ValidatePodEphemeralContainersUpdate`: the spec as a whole, and the
/// ephemeral containers already there kept as they are (they may only be
/// added).
pub(crate) fn ephemeral_containers_update(pod: &Value, old: &Value) -> Vec<Cause> {
    let empty = Value::Null;
    let spec = pod.get("spec").unwrap_or(&empty);
    let mut causes = pod_spec(spec, "spec", Some(crate::meta::name(pod)));
    let new_list = list(spec, "ephemeralContainers");
    for existing in list(old.get("spec").unwrap_or(&empty), "ephemeralContainers") {
        let name = s(existing, "name");
        match new_list.iter().find(|c| s(c, "name") == name) {
            None => causes.push(Cause::forbidden(
                "spec.ephemeralContainers",
                &format!("existing ephemeral containers {name:?} may not be removed\n"),
            )),
            Some(now) if now != existing => causes.push(Cause::forbidden(
                format!("spec.ephemeralContainers[{name}]"),
                &format!("existing ephemeral containers {name:?} may not be changed\n"),
            )),
            Some(_) => {}
        }
    }
    causes
}

/// Scheduling gates may be removed (that is how a Pod is released to the
/// scheduler), never added.
fn only_deleted_scheduling_gates(spec: &Value, old_spec: &Value) -> Vec<Cause> {
    let gate_name = |gate: &Value| gate.get("name").and_then(Value::as_str).map(str::to_owned);
    let old: Vec<String> = list(old_spec, "schedulingGates")
        .iter()
        .filter_map(gate_name)
        .collect();
    list(spec, "schedulingGates")
        .iter()
        .enumerate()
        .filter_map(|(i, gate)| Some((i, gate_name(gate)?)))
        .filter(|(_, name)| !old.contains(name))
        .map(|(i, name)| {
            Cause::forbidden(
                format!("spec.schedulingGates[{i}].name"),
                &format!("only deletion is allowed, but found new scheduling gate '{name}'"),
            )
        })
        .collect()
}
