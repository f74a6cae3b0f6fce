//! A small valid object of each built-in kind that `opctl envtest` serves:
//! the e2e test of a generated webhook creates it to see the webhook called.
//! A unit test below creates each one in envtest. Webhooks for the other
//! built-in kinds get no e2e test (envtest could not run it).

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
        ("", "ConfigMap" | "Endpoints" | "Namespace" | "Node" | "Secret" | "ServiceAccount")
        | ("coordination.k8s.io", "Lease")
        | ("rbac.authorization.k8s.io", "ClusterRole" | "Role") => json!({}),
        _ => return None,
    };
    Some(sample)
}

/// The sample object of the built-in kind `api_group` `kind`, as a JSON
/// object with apiVersion, kind and a name; None for kinds envtest does not
/// serve (and webhook configurations, which are never sent to webhooks).
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
    use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, PostParams};
    use kube::config::{KubeConfigOptions, Kubeconfig};

    /// The samples are what the generated e2e tests create: the API server
    /// must accept each one as it is.
    #[tokio::test]
    async fn envtest_accepts_every_sample() {
        let envtest = opctl_envtest::Envtest::start(opctl_envtest::Config::default())
            .await
            .expect("envtest starts");
        let kubeconfig = Kubeconfig::from_yaml(&envtest.kubeconfig_yaml()).expect("kubeconfig");
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .expect("client configuration");
        let client = kube::Client::try_from(config).expect("a client");
        let mut refused = Vec::new();
        for k in BUILTIN_KINDS {
            let Some(sample) = e2e_object(k.api_group, k.kind) else {
                continue;
            };
            let resource = ApiResource {
                group: k.api_group.to_owned(),
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

    /// The built-in kinds opctl knows that envtest does not serve.
    const NOT_IN_ENVTEST: &[&str] = &[
        "EndpointSlice",
        "HorizontalPodAutoscaler",
        "Ingress",
        "IngressClass",
        "NetworkPolicy",
        "PersistentVolume",
        "PodDisruptionBudget",
        "PriorityClass",
        "StorageClass",
    ];

    #[test]
    fn every_kind_envtest_serves_has_a_sample() {
        for k in BUILTIN_KINDS {
            let sample = e2e_object(k.api_group, k.kind);
            if k.api_group == "admissionregistration.k8s.io" || NOT_IN_ENVTEST.contains(&k.kind) {
                assert!(sample.is_none(), "{}", k.kind);
                continue;
            }
            let sample = sample.unwrap_or_else(|| panic!("no sample of {}", k.kind));
            assert_eq!(sample["kind"], k.kind);
            assert!(sample["metadata"]["name"].is_string());
        }
    }
}
