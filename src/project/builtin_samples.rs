//! A small valid object of each built-in kind opctl offers: the e2e tests of
//! a generated controller or webhook for the kind create it, to see it
//! reconciled or the webhook called. A unit test below
//! creates each one in envtest and requires one for every kind of the table
//! of built-in kinds (webhook configurations, admission policies and their
//! bindings aside: they are never sent to webhooks).

use serde_json::{Value, json};

/// The name of every sample except a CRD's and an APIService's (whose names
/// follow their spec).
pub const SAMPLE_NAME: &str = "e2e-sample";

/// A PKCS#10 request (ECDSA P-256, `CN=e2e-webhook, O=e2e`), PEM, base64-encoded
/// as `spec.request` travels; made once with openssl, the key discarded.
const E2E_CERTIFICATE_REQUEST: &str = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIZk1JR0dBZ0VBTUNReEZEQVNCZ05WQkFNTUMyVXlaUzEzWldKb2IyOXJNUXd3Q2dZRFZRUUtEQU5sTW1VdwpXVEFUQmdjcWhrak9QUUlCQmdncWhrak9QUU1CQndOQ0FBVHJ3NUs4aEhjdHdwTjlnLzNGdW82ZmgyVndaSkYzCi9JdTE2WkVKOHhPYkJwdHRYbU90Q2tuSVZDVTBvb0c3S1A1MGtrQzFTWi8vMXZjQjRiT3ZZcDBRb0FBd0NnWUkKS29aSXpqMEVBd0lEU0FBd1JRSWdCMXhLRlBTbkw1Y1RrWU83Y1UrbXZKblh0S0NmSERBTWhsT2h3eStZbk1NQwpJUUNOR1pnem12Ri81VVlhVUJFQlJRV21icU00VS9OdmxSWG1VdVlTblZISDhnPT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUgUkVRVUVTVC0tLS0tCg==";

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
        ("", "PersistentVolumeClaim") => json!({"spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        }}),
        ("", "Pod") => json!({"spec": {
            "containers": [{"name": "app", "image": "busybox"}],
        }}),
        ("", "Service") => json!({"spec": {"ports": [{"port": 80}]}}),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding" | "RoleBinding") => json!({
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        }),
        ("", "PersistentVolume") => json!({"spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/tmp/e2e-sample"},
        }}),
        // Limits on claims only: Pods created next to it stay as they are.
        ("", "LimitRange") => json!({"spec": {
            "limits": [{"type": "PersistentVolumeClaim", "max": {"storage": "1Ti"}}],
        }}),
        ("", "PodTemplate") => json!({"template": pod_template(None)}),
        ("", "ReplicationController") => json!({"spec": {
            "selector": {"app": SAMPLE_NAME},
            "template": pod_template(None),
        }}),
        ("apps", "ControllerRevision") => json!({"revision": 1, "data": {"note": "e2e"}}),
        ("autoscaling", "HorizontalPodAutoscaler") => json!({"spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": SAMPLE_NAME},
            "minReplicas": 1,
            "maxReplicas": 2,
            "metrics": [{"type": "Resource", "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50},
            }}],
        }}),
        ("discovery.k8s.io", "EndpointSlice") => json!({
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"]}],
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
        }),
        ("networking.k8s.io", "Ingress") => json!({"spec": {"rules": [{"http": {"paths": [{
            "path": "/",
            "pathType": "Prefix",
            "backend": {"service": {"name": SAMPLE_NAME, "port": {"number": 80}}},
        }]}}]}}),
        ("networking.k8s.io", "IngressClass") => json!({"spec": {"controller": "example.com/e2e"}}),
        ("networking.k8s.io", "NetworkPolicy") => json!({"spec": {
            "podSelector": selector,
            "policyTypes": ["Ingress"],
        }}),
        ("policy", "PodDisruptionBudget") => {
            json!({"spec": {"minAvailable": 1, "selector": selector}})
        }
        ("scheduling.k8s.io", "PriorityClass") => json!({"value": 1000}),
        ("storage.k8s.io", "StorageClass") => json!({"provisioner": "example.com/e2e"}),
        ("storage.k8s.io", "CSIDriver") => json!({"spec": {"attachRequired": false}}),
        ("storage.k8s.io", "CSINode") => json!({"spec": {"drivers": []}}),
        ("storage.k8s.io", "CSIStorageCapacity") => json!({"storageClassName": "standard"}),
        ("storage.k8s.io", "VolumeAttachment") => json!({"spec": {
            "attacher": "example.com/e2e",
            "nodeName": "node-1",
            "source": {"persistentVolumeName": SAMPLE_NAME},
        }}),
        ("node.k8s.io", "RuntimeClass") => json!({"handler": "runc"}),
        ("certificates.k8s.io", "CertificateSigningRequest") => json!({"spec": {
            "request": E2E_CERTIFICATE_REQUEST,
            "signerName": "example.com/e2e",
            "usages": ["client auth"],
        }}),
        // A local APIService for a group nothing serves: harmless.
        ("apiregistration.k8s.io", "APIService") => json!({"spec": {
            "group": "e2e.example.com",
            "version": "v1alpha1",
            "groupPriorityMinimum": 1000,
            "versionPriority": 15,
        }}),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => json!({"spec": {
            "priorityLevelConfiguration": {"name": "global-default"},
            "matchingPrecedence": 5000,
            "rules": [{
                "subjects": [{"kind": "Group", "group": {"name": "e2e"}}],
                "resourceRules": [{
                    "verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "namespaces": ["*"],
                }],
            }],
        }}),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => json!({"spec": {
            "type": "Limited",
            "limited": {"nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}},
        }}),
        // No spec: a quota without limits constrains nothing else the tests create.
        (
            "",
            "ConfigMap" | "Endpoints" | "Namespace" | "Node" | "ResourceQuota" | "Secret"
            | "ServiceAccount",
        )
        | ("coordination.k8s.io", "Lease")
        | ("rbac.authorization.k8s.io", "ClusterRole" | "Role") => json!({}),
        _ => return None,
    };
    Some(sample)
}

/// The sample object of the built-in kind `api_group` `kind`, as a JSON
/// object with apiVersion, kind and a name; None for the
/// `admissionregistration.k8s.io` kinds (never sent to webhooks) and kinds
/// opctl does not offer.
pub fn e2e_object(api_group: &str, kind: &str) -> Option<Value> {
    let known = super::builtin::kinds().find(|k| k.group == api_group && k.kind == kind)?;
    let api_version = if api_group.is_empty() {
        known.version.to_owned()
    } else {
        format!("{api_group}/{}", known.version)
    };
    // Names that follow the spec: a CRD's `<plural>.<group>`, an APIService's `<version>.<group>`.
    let name = match kind {
        "CustomResourceDefinition" => "widgets.e2e.example.com",
        "APIService" => "v1alpha1.e2e.example.com",
        _ => SAMPLE_NAME,
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
    use crate::project::builtin;
    use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, PostParams};

    /// The samples are what the generated e2e tests create: the API server
    /// must accept each one as it is.
    #[tokio::test]
    async fn envtest_accepts_every_sample() {
        let (envtest, client) = builtin::tests::envtest_client().await;
        let mut refused = Vec::new();
        for k in builtin::kinds() {
            let Some(sample) = e2e_object(k.group, k.kind) else {
                continue;
            };
            let resource = ApiResource {
                group: k.group.to_owned(),
                version: k.version.to_owned(),
                api_version: sample["apiVersion"].as_str().unwrap_or_default().to_owned(),
                kind: k.kind.to_owned(),
                plural: k.plural.to_owned(),
            };
            let api: Api<DynamicObject> = if k.namespaced {
                Api::namespaced_with(client.clone(), "default", &resource)
            } else {
                Api::all_with(client.clone(), &resource)
            };
            let object: DynamicObject = serde_json::from_value(sample).expect("an object");
            match api.create(&PostParams::default(), &object).await {
                // Both Event APIs store the same objects: make room for the next.
                Ok(created) => {
                    let name = created.metadata.name.unwrap_or_default();
                    api.delete(&name, &DeleteParams::default())
                        .await
                        .unwrap_or_else(|err| panic!("cannot delete {}: {err}", k.kind));
                }
                Err(err) => refused.push(format!("{}: {err}", k.kind)),
            }
        }
        envtest.shutdown().await;
        assert!(
            refused.is_empty(),
            "envtest refuses samples:\n{}",
            refused.join("\n")
        );
    }

    #[test]
    fn every_kind_offered_has_a_sample() {
        for k in builtin::kinds() {
            let sample = e2e_object(k.group, k.kind);
            if k.group == "admissionregistration.k8s.io" {
                assert!(sample.is_none(), "{}", k.kind);
                continue;
            }
            let sample = sample.unwrap_or_else(|| {
                panic!("no sample of {} in src/project/builtin_samples.rs", k.kind)
            });
            assert_eq!(sample["kind"], k.kind);
            assert!(sample["metadata"]["name"].is_string());
        }
    }
}
