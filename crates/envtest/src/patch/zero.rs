//! The Go zero value of each built-in kind, as kube-apiserver's field manager
//! sees it.
//!
//! The real server compares typed Go objects: a non-pointer struct field is
//! always there (as `{}`), a slice without `omitempty` is `null`, a string
//! without `omitempty` is `""`. That decides whether a create records `.` for
//! a node (`f:spec` of a Deployment has none, `f:data` of a ConfigMap has
//! one) and whether a field set to its zero value is owned at all (an Event's
//! `reportingComponent: ""` is not). Only the spine outside lists matters:
//! list items are new as a whole. Custom resources are untyped: their zero
//! value is empty.

use serde_json::{Map, Value, json};

fn pod_template() -> Value {
    json!({"metadata": {"creationTimestamp": null}, "spec": {"containers": null}})
}

/// The zero object of a built-in kind (without apiVersion/kind), or `None`
/// for kinds this table does not know (custom resources).
pub(super) fn zero_object(api_version: &str, kind: &str) -> Option<Value> {
    let body = match (api_version, kind) {
        ("v1", "ConfigMap" | "Secret" | "ServiceAccount" | "Endpoints") => json!({}),
        ("v1", "Namespace") => json!({"spec": {}, "status": {}}),
        ("v1", "Pod") => json!({"spec": {"containers": null}, "status": {}}),
        ("v1", "PodTemplate") => json!({"template": pod_template()}),
        ("v1", "Service") => json!({"spec": {}, "status": {"loadBalancer": {}}}),
        ("v1", "ReplicationController") => json!({"spec": {}, "status": {"replicas": 0}}),
        ("v1", "PersistentVolumeClaim") => json!({"spec": {"resources": {}}, "status": {}}),
        ("v1", "PersistentVolume") => json!({"spec": {}, "status": {}}),
        ("v1", "LimitRange") => json!({"spec": {"limits": null}}),
        ("v1", "ResourceQuota") => json!({"spec": {}, "status": {}}),
        ("policy/v1", "PodDisruptionBudget") => json!({
            "spec": {},
            "status": {
                "disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0,
                "expectedPods": 0
            }
        }),
        ("networking.k8s.io/v1", "NetworkPolicy") => json!({"spec": {"podSelector": {}}}),
        ("networking.k8s.io/v1", "Ingress") => json!({"spec": {}, "status": {"loadBalancer": {}}}),
        ("networking.k8s.io/v1", "IngressClass") => json!({"spec": {}}),
        ("autoscaling/v2", "HorizontalPodAutoscaler") => json!({
            "spec": {"scaleTargetRef": {"kind": "", "name": ""}, "maxReplicas": 0},
            "status": {"desiredReplicas": 0}
        }),
        ("autoscaling/v1", "HorizontalPodAutoscaler") => json!({
            "spec": {"scaleTargetRef": {"kind": "", "name": ""}, "maxReplicas": 0},
            "status": {"currentReplicas": 0, "desiredReplicas": 0}
        }),
        ("storage.k8s.io/v1", "CSIDriver") => json!({"spec": {}}),
        ("v1", "Event") => json!({
            "involvedObject": {}, "source": {},
            "firstTimestamp": null, "lastTimestamp": null, "eventTime": null,
            "reportingComponent": "", "reportingInstance": ""
        }),
        ("events.k8s.io/v1", "Event") => json!({
            "eventTime": null, "regarding": {}, "deprecatedSource": {},
            "deprecatedFirstTimestamp": null, "deprecatedLastTimestamp": null
        }),
        ("coordination.k8s.io/v1", "Lease") => json!({"spec": {}}),
        ("discovery.k8s.io/v1", "EndpointSlice") => {
            json!({"addressType": "", "endpoints": null, "ports": null})
        }
        ("apps/v1", "Deployment") => json!({
            "spec": {"template": pod_template(), "strategy": {}},
            "status": {}
        }),
        ("apps/v1", "StatefulSet") => json!({
            "spec": {"template": pod_template(), "serviceName": "", "updateStrategy": {}},
            "status": {"replicas": 0, "availableReplicas": 0}
        }),
        ("apps/v1", "DaemonSet") => json!({
            "spec": {"template": pod_template(), "updateStrategy": {}},
            "status": {
                "currentNumberScheduled": 0, "numberMisscheduled": 0,
                "desiredNumberScheduled": 0, "numberReady": 0
            }
        }),
        ("apps/v1", "ReplicaSet") => json!({
            "spec": {"template": pod_template()},
            "status": {"replicas": 0}
        }),
        ("batch/v1", "Job") => json!({"spec": {"template": pod_template()}, "status": {}}),
        ("batch/v1", "CronJob") => json!({
            "spec": {
                "schedule": "",
                "jobTemplate": {
                    "metadata": {"creationTimestamp": null},
                    "spec": {"template": pod_template()}
                }
            },
            "status": {}
        }),
        ("rbac.authorization.k8s.io/v1", "Role" | "ClusterRole") => json!({"rules": null}),
        ("rbac.authorization.k8s.io/v1", "RoleBinding" | "ClusterRoleBinding") => {
            json!({"roleRef": {"apiGroup": "", "kind": "", "name": ""}})
        }
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => json!({
            "spec": {"group": "", "names": {"plural": "", "kind": ""}, "scope": "", "versions": null},
            "status": {"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": null}
        }),
        (
            "admissionregistration.k8s.io/v1",
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
        ) => json!({}),
        _ => return None,
    };
    let mut obj = match body {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    obj.insert("metadata".to_string(), json!({"creationTimestamp": null}));
    Some(Value::Object(obj))
}

/// `obj` as the typed Go object would show it: every field of the kind's zero
/// value that `obj` lacks is filled in (recursively through objects).
pub(super) fn typed_view(obj: &Value) -> Value {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    match zero_object(api_version, kind) {
        Some(zero) => overlay(obj, &zero),
        None => obj.clone(),
    }
}

/// The object a create is compared against: the zero value for a built-in
/// kind, an empty object (with apiVersion and kind) for a custom resource.
pub(super) fn empty_view(new: &Value) -> Value {
    let mut base = Map::new();
    for key in ["apiVersion", "kind"] {
        if let Some(v) = new.get(key) {
            base.insert(key.to_string(), v.clone());
        }
    }
    typed_view(&Value::Object(base))
}

fn overlay(obj: &Value, zero: &Value) -> Value {
    match (obj, zero) {
        (Value::Object(o), Value::Object(z)) => {
            let mut out = o.clone();
            for (key, zv) in z {
                match out.get_mut(key) {
                    Some(existing) => {
                        if existing.is_object() && zv.is_object() {
                            *existing = overlay(existing, zv);
                        }
                    }
                    None => {
                        out.insert(key.clone(), zv.clone());
                    }
                }
            }
            Value::Object(out)
        }
        _ => obj.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_view_fills_struct_fields_only_where_missing() {
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                       "spec": {"strategy": {"type": "Recreate"}}});
        let v = typed_view(&d);
        assert_eq!(v["spec"]["strategy"], json!({"type": "Recreate"}));
        assert_eq!(v["spec"]["template"]["spec"]["containers"], Value::Null);
        assert_eq!(v["status"], json!({}));
        let cr = json!({"apiVersion": "example.com/v1", "kind": "Widget"});
        assert_eq!(typed_view(&cr), cr);
        assert_eq!(
            empty_view(&json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}})),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"creationTimestamp": null}})
        );
    }
}
