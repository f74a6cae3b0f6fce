//! The fields Go's encoder always writes: non-pointer structs (`status: {}`,
//! `resources: {}`), zero times (`creationTimestamp: null` in templates,
//! an Event's `eventTime: null`) and strings and numbers without `omitempty`.
//! k8s-openapi leaves these out when unset.

use serde_json::{Map, Value, json};

use super::de::Seg;
use crate::builtin::KindInfo;
use crate::builtin::shape::{ensure, object_at, objects_mut, pod_spec_pointer, template_pointer};

/// Whether an empty list or map at `parents.key` is written by Go even when
/// empty (no `omitempty`), so the round trip must keep it.
pub(super) fn always_written(parents: &[Seg], key: &str) -> bool {
    match key {
        "containers" => true,
        "rules" => parents.is_empty(),
        "verbs" => matches!(parents, [Seg::Key(k), Seg::Index(_)] if k == "rules"),
        "admissionReviewVersions" => {
            matches!(parents, [Seg::Key(k), Seg::Index(_)] if k == "webhooks")
        }
        _ => false,
    }
}

fn object_mut<'a>(obj: &'a mut Value, pointer: &str) -> Option<&'a mut Map<String, Value>> {
    obj.pointer_mut(pointer).and_then(Value::as_object_mut)
}

/// An embedded ObjectMeta: Go writes its zero `creationTimestamp` as null.
fn template_meta(template: &mut Value) {
    if let Some(meta) = object_at(template, "metadata") {
        ensure(meta, "creationTimestamp", Value::Null);
    }
}

fn pod_spec(spec: &mut Map<String, Value>) {
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for container in objects_mut(spec, list) {
            ensure(container, "resources", json!({}));
        }
    }
}

/// Adds what Go would write for `kind` and k8s-openapi left out.
/// The fields of a Node's `nodeInfo`, all written by Go even when empty.
const NODE_INFO: [&str; 10] = [
    "machineID",
    "systemUUID",
    "bootID",
    "kernelVersion",
    "osImage",
    "containerRuntimeVersion",
    "kubeletVersion",
    "kubeProxyVersion",
    "operatingSystem",
    "architecture",
];

pub(super) fn go_zero_values(kind: &KindInfo, obj: &mut Value) {
    if let Some(pointer) = template_pointer(kind)
        && let Some(template) = obj.pointer_mut(pointer)
    {
        template_meta(template);
        if template.get("spec").is_none()
            && let Some(map) = template.as_object_mut()
        {
            map.insert("spec".into(), json!({"containers": null}));
        }
    }
    if let Some(pointer) = pod_spec_pointer(kind)
        && let Some(spec) = object_mut(obj, &pointer)
    {
        pod_spec(spec);
    }
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    match (kind.group, kind.kind) {
        ("", "Pod") | ("", "Namespace") | ("", "PersistentVolumeClaim") | ("", "ResourceQuota") => {
            ensure(root, "spec", json!({}));
            ensure(root, "status", json!({}));
        }
        ("", "Service") => {
            ensure(root, "spec", json!({}));
            if let Some(status) = object_at(obj, "status") {
                ensure(status, "loadBalancer", json!({}));
            }
        }
        ("", "Node") => {
            ensure(root, "spec", json!({}));
            ensure(root, "status", json!({}));
            if let Some(status) = object_at(obj, "status") {
                ensure(
                    status,
                    "daemonEndpoints",
                    json!({"kubeletEndpoint": {"Port": 0}}),
                );
                ensure(status, "nodeInfo", json!({}));
                if let Some(info) = status.get_mut("nodeInfo").and_then(Value::as_object_mut) {
                    for field in NODE_INFO {
                        ensure(info, field, json!(""));
                    }
                }
                for cond in objects_mut(status, "conditions") {
                    ensure(cond, "lastHeartbeatTime", Value::Null);
                    ensure(cond, "lastTransitionTime", Value::Null);
                }
            }
        }
        // Neither list is `omitempty`: an EndpointSlice without endpoints
        // or ports shows both as null.
        ("discovery.k8s.io", "EndpointSlice") => {
            ensure(root, "endpoints", Value::Null);
            ensure(root, "ports", Value::Null);
        }
        ("", "LimitRange") | ("coordination.k8s.io", "Lease") => {
            ensure(root, "spec", json!({}));
        }
        ("", "Event") => {
            ensure(root, "involvedObject", json!({}));
            ensure(root, "source", json!({}));
            ensure(root, "firstTimestamp", Value::Null);
            ensure(root, "lastTimestamp", Value::Null);
            ensure(root, "eventTime", Value::Null);
            ensure(root, "reportingComponent", json!(""));
            ensure(root, "reportingInstance", json!(""));
        }
        ("events.k8s.io", "Event") => {
            ensure(root, "eventTime", Value::Null);
            ensure(root, "regarding", json!({}));
            ensure(root, "deprecatedSource", json!({}));
            ensure(root, "deprecatedFirstTimestamp", Value::Null);
            ensure(root, "deprecatedLastTimestamp", Value::Null);
        }
        ("apps", "Deployment") => {
            if let Some(spec) = root.get_mut("spec").and_then(Value::as_object_mut) {
                ensure(spec, "strategy", json!({}));
            }
            ensure(root, "status", json!({}));
        }
        ("apps", "StatefulSet") => {
            if let Some(spec) = root.get_mut("spec").and_then(Value::as_object_mut) {
                ensure(spec, "updateStrategy", json!({}));
                for claim in objects_mut(spec, "volumeClaimTemplates") {
                    let meta = claim.entry("metadata").or_insert_with(|| json!({}));
                    if let Some(meta) = meta.as_object_mut() {
                        ensure(meta, "creationTimestamp", Value::Null);
                    }
                    ensure(claim, "spec", json!({}));
                    ensure(claim, "status", json!({}));
                }
            }
            if let Some(status) = object_at(obj, "status") {
                ensure(status, "replicas", json!(0));
                ensure(status, "availableReplicas", json!(0));
            }
        }
        ("apps", "DaemonSet") => {
            if let Some(spec) = root.get_mut("spec").and_then(Value::as_object_mut) {
                ensure(spec, "updateStrategy", json!({}));
            }
            if let Some(status) = object_at(obj, "status") {
                for key in [
                    "currentNumberScheduled",
                    "numberMisscheduled",
                    "desiredNumberScheduled",
                    "numberReady",
                ] {
                    ensure(status, key, json!(0));
                }
            }
        }
        ("apps", "ReplicaSet") => {
            if let Some(status) = object_at(obj, "status") {
                ensure(status, "replicas", json!(0));
            }
        }
        ("apps", "ControllerRevision") => {
            ensure(root, "revision", json!(0));
        }
        ("batch", "Job") => {
            ensure(root, "status", json!({}));
        }
        ("batch", "CronJob") => {
            if let Some(job_template) = obj.pointer_mut("/spec/jobTemplate") {
                template_meta(job_template);
            }
            if let Some(root) = obj.as_object_mut() {
                ensure(root, "status", json!({}));
            }
        }
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => {
            ensure(root, "rules", Value::Null);
            for rule in objects_mut(root, "rules") {
                ensure(rule, "verbs", Value::Null);
            }
        }
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            for subject in objects_mut(root, "subjects") {
                ensure(subject, "kind", json!(""));
                ensure(subject, "name", json!(""));
            }
            if let Some(role_ref) = object_at(obj, "roleRef") {
                for key in ["apiGroup", "kind", "name"] {
                    ensure(role_ref, key, json!(""));
                }
            }
        }
        ("admissionregistration.k8s.io", _) => {
            for webhook in objects_mut(root, "webhooks") {
                ensure(webhook, "clientConfig", json!({}));
                ensure(webhook, "admissionReviewVersions", Value::Null);
            }
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            if let Some(spec) = object_at(obj, "spec") {
                ensure(spec, "versions", Value::Null);
                for version in objects_mut(spec, "versions") {
                    ensure(version, "served", json!(false));
                    ensure(version, "storage", json!(false));
                }
                if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
                    ensure(names, "plural", json!(""));
                    ensure(names, "kind", json!(""));
                } else {
                    spec.insert("names".into(), json!({"plural": "", "kind": ""}));
                }
            }
            if let Some(status) = object_at(obj, "status") {
                ensure(status, "conditions", Value::Null);
                ensure(status, "acceptedNames", json!({"plural": "", "kind": ""}));
                ensure(status, "storedVersions", Value::Null);
            }
        }
        _ => {}
    }
}
