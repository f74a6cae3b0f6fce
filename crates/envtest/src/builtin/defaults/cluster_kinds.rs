//! Defaults of the policy, networking, autoscaling, discovery, scheduling,
//! storage and node kinds and of PersistentVolumes (their `defaults.go` in
//! kube-apiserver v1.32).

use serde_json::{Map, Value, json};

use crate::builtin::KindInfo;
use crate::builtin::shape::{default_str, default_value, object_at, objects_mut};

pub(super) fn apply(kind: &KindInfo, obj: &mut Value) {
    match (kind.group, kind.kind) {
        ("", "PersistentVolume") => {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                default_str(spec, "persistentVolumeReclaimPolicy", "Retain");
                default_str(spec, "volumeMode", "Filesystem");
            }
            if let Some(status) = object_at(obj, "status") {
                default_str(status, "phase", "Pending");
            }
        }
        ("", "LimitRange") => limit_range(obj),
        ("networking.k8s.io", "NetworkPolicy") => network_policy(obj),
        ("networking.k8s.io", "IngressClass") => {
            if let Some(parameters) = obj
                .pointer_mut("/spec/parameters")
                .and_then(Value::as_object_mut)
            {
                default_str(parameters, "scope", "Cluster");
            }
        }
        ("discovery.k8s.io", "EndpointSlice") => endpoint_slice(obj),
        ("scheduling.k8s.io", "PriorityClass") => {
            if let Some(root) = obj.as_object_mut() {
                default_str(root, "preemptionPolicy", "PreemptLowerPriority");
            }
        }
        ("storage.k8s.io", "StorageClass") => {
            if let Some(root) = obj.as_object_mut() {
                default_str(root, "reclaimPolicy", "Delete");
                default_str(root, "volumeBindingMode", "Immediate");
            }
        }
        ("storage.k8s.io", "CSIDriver") => {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                default_value(spec, "attachRequired", json!(true));
                default_value(spec, "podInfoOnMount", json!(false));
                default_value(spec, "storageCapacity", json!(false));
                default_str(spec, "fsGroupPolicy", "ReadWriteOnceWithFSType");
                default_value(spec, "requiresRepublish", json!(false));
                default_value(spec, "seLinuxMount", json!(false));
                default_value(spec, "volumeLifecycleModes", json!(["Persistent"]));
            }
        }
        ("autoscaling", "HorizontalPodAutoscaler") => {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                default_value(spec, "minReplicas", json!(1));
                if kind.version == "v2" {
                    // Without metrics an autoscaler aims at 80% CPU.
                    default_value(
                        spec,
                        "metrics",
                        json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]),
                    );
                }
            }
        }
        _ => {}
    }
}

fn default_protocols(rule: &mut Map<String, Value>) {
    for port in objects_mut(rule, "ports") {
        default_str(port, "protocol", "TCP");
    }
}

fn network_policy(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for direction in ["ingress", "egress"] {
        for rule in objects_mut(spec, direction) {
            default_protocols(rule);
        }
    }
    let has_types = spec
        .get("policyTypes")
        .and_then(Value::as_array)
        .is_some_and(|types| !types.is_empty());
    if !has_types {
        let egress = spec
            .get("egress")
            .and_then(Value::as_array)
            .is_some_and(|rules| !rules.is_empty());
        let mut types = vec![json!("Ingress")];
        if egress {
            types.push(json!("Egress"));
        }
        spec.insert("policyTypes".into(), Value::Array(types));
    }
}

fn endpoint_slice(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    for port in objects_mut(root, "ports") {
        default_value(port, "name", json!(""));
        default_str(port, "protocol", "TCP");
    }
    for endpoint in objects_mut(root, "endpoints") {
        default_value(endpoint, "conditions", json!({}));
    }
}

/// A `Container` item's missing defaults: the limit from `max`, the request
/// from the limit, else from `min`.
fn limit_range(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for item in objects_mut(spec, "limits") {
        if item.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        let copy = |item: &Map<String, Value>, from: &str| -> Map<String, Value> {
            item.get(from)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        };
        let mut default = copy(item, "default");
        for (k, v) in copy(item, "max") {
            default.entry(k).or_insert(v);
        }
        let mut request = copy(item, "defaultRequest");
        for (k, v) in default.clone().into_iter().chain(copy(item, "min")) {
            request.entry(k).or_insert(v);
        }
        for (key, map) in [("default", default), ("defaultRequest", request)] {
            if !map.is_empty() {
                item.insert(key.into(), Value::Object(map));
            }
        }
    }
}
