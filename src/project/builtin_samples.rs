//! A small valid object of each built-in kind a webhook can be scaffolded
//! for: the e2e test of a generated webhook creates it to see the webhook
//! called. Each one is checked against `opctl envtest` by the opctl suite
//! (tests/builtin_samples.rs).

use serde_json::{Value, json};

/// The name of every sample except a CRD's (whose name follows its spec).
pub const SAMPLE_NAME: &str = "e2e-webhook";

/// A pod template that every workload kind can use.
fn pod_template(restart_policy: Option<&str>) -> Value {
    let mut spec = json!({
        "containers": [{"name": "app", "image": "busybox"}],
    });
    if let Some(policy) = restart_policy {
        spec["restartPolicy"] = json!(policy);
    }
    json!({
        "metadata": {"labels": {"app": SAMPLE_NAME}},
        "spec": spec,
    })
}

/// The fields besides apiVersion, kind and metadata of the sample of
/// `api_group` `kind`; None for a kind opctl has no sample of.
fn fields(api_group: &str, kind: &str) -> Option<Value> {
    let selector = json!({"matchLabels": {"app": SAMPLE_NAME}});
    let sample = match (api_group, kind) {
        ("apiextensions.k8s.io", "CustomResourceDefinition") => json!({"spec": {
            "group": "e2e.example.com",
            "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object"}},
            }],
        }}),
        ("apps", "DaemonSet" | "Deployment" | "ReplicaSet") => json!({"spec": {
            "selector": selector,
            "template": pod_template(None),
        }}),
        ("apps", "StatefulSet") => json!({"spec": {
            "selector": selector,
            "serviceName": SAMPLE_NAME,
            "template": pod_template(None),
        }}),
        ("autoscaling", "HorizontalPodAutoscaler") => json!({"spec": {
            "maxReplicas": 2,
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": SAMPLE_NAME},
        }}),
        ("batch", "CronJob") => json!({"spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {"spec": {"template": pod_template(Some("Never"))}},
        }}),
        ("batch", "Job") => json!({"spec": {"template": pod_template(Some("Never"))}}),
        ("", "Event") => json!({
            "involvedObject": {"kind": "Pod", "name": SAMPLE_NAME, "namespace": "default"},
            "reason": "Testing",
            "message": "an event for the webhook e2e test",
            "type": "Normal",
        }),
        ("events.k8s.io", "Event") => json!({
            "eventTime": "2024-01-01T00:00:00.000000Z",
            "reportingController": "example.com/e2e",
            "reportingInstance": "e2e",
            "action": "Testing",
            "reason": "Testing",
            "type": "Normal",
            "regarding": {"kind": "Pod", "name": SAMPLE_NAME, "namespace": "default"},
        }),
        ("", "PersistentVolume") => json!({"spec": {
            "accessModes": ["ReadWriteOnce"],
            "capacity": {"storage": "1Gi"},
            "hostPath": {"path": "/tmp/e2e-webhook"},
        }}),
        ("", "PersistentVolumeClaim") => json!({"spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        }}),
        ("", "Pod") => json!({"spec": {
            "containers": [{"name": "app", "image": "busybox"}],
        }}),
        ("", "Service") => json!({"spec": {"ports": [{"port": 80}]}}),
        ("discovery.k8s.io", "EndpointSlice") => json!({"addressType": "IPv4", "endpoints": []}),
        ("networking.k8s.io", "Ingress") => json!({"spec": {
            "defaultBackend": {"service": {"name": SAMPLE_NAME, "port": {"number": 80}}},
        }}),
        ("networking.k8s.io", "IngressClass") => json!({"spec": {"controller": "example.com/e2e"}}),
        ("networking.k8s.io", "NetworkPolicy") => json!({"spec": {"podSelector": {}}}),
        ("policy", "PodDisruptionBudget") => json!({"spec": {"minAvailable": 1, "selector": selector}}),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding" | "RoleBinding") => json!({
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        }),
        ("scheduling.k8s.io", "PriorityClass") => json!({"value": 1000}),
        ("storage.k8s.io", "StorageClass") => json!({"provisioner": "example.com/e2e"}),
        (
            "",
            "ConfigMap" | "Endpoints" | "Namespace" | "Node" | "Secret" | "ServiceAccount",
        )
        | ("coordination.k8s.io", "Lease")
        | ("rbac.authorization.k8s.io", "ClusterRole" | "Role") => json!({}),
        _ => return None,
    };
    Some(sample)
}

/// The sample object of the built-in kind `api_group` `kind` (version v1,
/// v2 for autoscaling), as a JSON object with apiVersion, kind and a name.
pub fn e2e_object(api_group: &str, kind: &str) -> Option<Value> {
    let known = super::builtin::BUILTIN_KINDS
        .iter()
        .find(|k| k.api_group == api_group && k.kind == kind)?;
    let api_version = if api_group.is_empty() {
        known.version.to_owned()
    } else {
        format!("{api_group}/{}", known.version)
    };
    let name = if kind == "CustomResourceDefinition" {
        "widgets.e2e.example.com"
    } else {
        SAMPLE_NAME
    };
    let mut object = json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name},
    });
    if let (Some(map), Value::Object(extra)) = (object.as_object_mut(), fields(api_group, kind)?) {
        map.extend(extra);
    }
    Some(object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::builtin::BUILTIN_KINDS;

    #[test]
    fn every_kind_a_webhook_can_be_made_for_has_a_sample() {
        for k in BUILTIN_KINDS {
            let sample = e2e_object(k.api_group, k.kind);
            if k.api_group == "admissionregistration.k8s.io" {
                assert!(sample.is_none(), "{}", k.kind);
                continue;
            }
            let sample = sample.unwrap_or_else(|| panic!("no sample of {}", k.kind));
            assert_eq!(sample["kind"], k.kind);
            assert!(sample["metadata"]["name"].is_string());
        }
    }
}
