//! Defaults of the core, RBAC, admission and apiextensions kinds.

use crate::builtin::validation::admission_policies;
use crate::builtin::validation::webhook_configurations::{self, ConfigurationKind};
use base64::Engine;
use serde_json::{Map, Value, json};

use crate::builtin::KindInfo;
use crate::builtin::shape::{default_str, default_value, object_at, objects_mut};

pub(super) fn apply(kind: &KindInfo, obj: &mut Value) {
    match (kind.group, kind.kind) {
        ("", "Service") => service(obj),
        ("", "Secret") => secret(obj),
        ("", "Namespace") => namespace(obj),
        ("", "PersistentVolumeClaim") => {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                default_str(spec, "volumeMode", "Filesystem");
            }
            if let Some(status) = object_at(obj, "status") {
                default_str(status, "phase", "Pending");
            }
        }
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            if let Some(role_ref) = obj.get_mut("roleRef").and_then(Value::as_object_mut) {
                default_str(role_ref, "apiGroup", "rbac.authorization.k8s.io");
            }
            if let Some(root) = obj.as_object_mut() {
                for subject in objects_mut(root, "subjects") {
                    let kind = subject.get("kind").and_then(Value::as_str).unwrap_or("");
                    if matches!(kind, "User" | "Group") {
                        default_str(subject, "apiGroup", "rbac.authorization.k8s.io");
                    }
                }
            }
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            admission_policies::default_policy(obj);
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            admission_policies::default_binding(obj);
        }
        ("admissionregistration.k8s.io", webhook_kind) => {
            let kind = if webhook_kind == "MutatingWebhookConfiguration" {
                ConfigurationKind::Mutating
            } else {
                ConfigurationKind::Validating
            };
            webhook_configurations::default_configuration(kind, obj);
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => crd(obj),
        _ => {}
    }
}

fn service(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    default_str(spec, "sessionAffinity", "None");
    let affinity = spec
        .get("sessionAffinity")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if affinity == "None" {
        spec.remove("sessionAffinityConfig");
    } else if affinity == "ClientIP" {
        let has_timeout = spec
            .get("sessionAffinityConfig")
            .and_then(|c| c.get("clientIP"))
            .and_then(|c| c.get("timeoutSeconds"))
            .is_some_and(|t| !t.is_null());
        if !has_timeout {
            spec.insert(
                "sessionAffinityConfig".into(),
                json!({"clientIP": {"timeoutSeconds": 10800}}),
            );
        }
    }
    default_str(spec, "type", "ClusterIP");
    let service_type = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    for port in objects_mut(spec, "ports") {
        default_str(port, "protocol", "TCP");
        let unset = match port.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(Value::Number(n)) => n.as_i64() == Some(0),
            Some(Value::String(s)) => s.is_empty(),
            Some(_) => false,
        };
        if unset && let Some(number) = port.get("port").cloned() {
            port.insert("targetPort".into(), number);
        }
    }
    let node_ports = matches!(service_type.as_str(), "NodePort" | "LoadBalancer");
    if node_ports {
        default_str(spec, "externalTrafficPolicy", "Cluster");
    }
    if node_ports || service_type == "ClusterIP" {
        default_value(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if service_type == "LoadBalancer" {
        default_value(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
}

fn secret(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    default_str(root, "type", "Opaque");
    // v1 conversion folds stringData into data (stringData wins).
    if let Some(Value::Object(string_data)) = root.remove("stringData") {
        let data = root.entry("data").or_insert_with(|| json!({}));
        if !data.is_object() {
            *data = json!({});
        }
        if let Some(data) = data.as_object_mut() {
            for (key, value) in string_data {
                let text = value.as_str().unwrap_or("");
                let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
                data.insert(key, Value::String(encoded));
            }
        }
    }
    let data_sorted = root
        .get_mut("data")
        .and_then(Value::as_object_mut)
        .map(|data| {
            let mut entries: Vec<(String, Value)> = std::mem::take(data).into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            entries.into_iter().collect::<Map<String, Value>>()
        });
    if let Some(sorted) = data_sorted {
        if sorted.is_empty() {
            root.remove("data");
        } else {
            root.insert("data".into(), Value::Object(sorted));
        }
    }
}

fn namespace(obj: &mut Value) {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !name.is_empty()
        && let Some(meta) = object_at(obj, "metadata")
        && let Some(labels) = object_at_map(meta, "labels")
    {
        labels.insert("kubernetes.io/metadata.name".into(), Value::String(name));
    }
    if let Some(status) = object_at(obj, "status") {
        default_str(status, "phase", "Active");
    }
}

fn object_at_map<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    let entry = map.entry(key.to_string()).or_insert_with(|| json!({}));
    if !entry.is_object() {
        *entry = json!({});
    }
    entry.as_object_mut()
}

fn crd(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if !kind.is_empty() {
            default_str(names, "singular", &kind.to_lowercase());
            default_str(names, "listKind", &format!("{kind}List"));
        }
    }
    default_value(spec, "conversion", json!({"strategy": "None"}));
    if let Some(service) = spec
        .get_mut("conversion")
        .and_then(|c| c.get_mut("webhook"))
        .and_then(|w| w.get_mut("clientConfig"))
        .and_then(|c| c.get_mut("service"))
        .and_then(Value::as_object_mut)
    {
        default_value(service, "port", json!(443));
    }
}
