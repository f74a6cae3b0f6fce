//! Builders for the configurations and requests the admission tests use.

use std::sync::Arc;

use opctl_envtest::ApiError;
use opctl_envtest::testing::{
    AdmissionAttributes, GroupVersionKind, GroupVersionResource, Operation, WebhookRegistry,
};
use serde_json::{Value, json};

use super::{Pki, TestCluster, WebhookServer};

pub fn pod(name: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}
    })
}

pub fn create_pod(namespace: &str, object: Value) -> AdmissionAttributes {
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    AdmissionAttributes::new(
        Operation::Create,
        GroupVersionKind::new("", "v1", "Pod"),
        GroupVersionResource::new("", "v1", "pods"),
        namespace,
        &name,
    )
    .with_object(object)
    .with_options(json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}))
}

pub fn url_client(server: &WebhookServer, pki: &Pki, path: &str) -> Value {
    json!({"url": server.url(path), "caBundle": pki.ca_bundle()})
}

/// A webhook on Pod CREATE/UPDATE with the fields `opctl create webhook` writes.
pub fn hook(name: &str, client: Value) -> Value {
    json!({
        "name": name,
        "clientConfig": client,
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    })
}

pub fn with(mut hook: Value, field: &str, value: Value) -> Value {
    hook[field] = value;
    hook
}

pub fn configuration(kind: &str, name: &str, hooks: Vec<Value>) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": name}, "webhooks": hooks
    })
}

pub fn mutating(name: &str, hooks: Vec<Value>) -> Value {
    configuration("MutatingWebhookConfiguration", name, hooks)
}

pub fn validating(name: &str, hooks: Vec<Value>) -> Value {
    configuration("ValidatingWebhookConfiguration", name, hooks)
}

pub fn registry(cluster: TestCluster) -> WebhookRegistry {
    WebhookRegistry::new(Arc::new(cluster.with_namespace("default", &[])))
}

pub fn labels_of(object: &Value) -> Value {
    object["metadata"]["labels"].clone()
}

pub fn add_label(key: &str, value: &str) -> Value {
    json!([{"op": "add", "path": format!("/metadata/labels/{key}"), "value": value}])
}

pub async fn mutate(
    reg: &WebhookRegistry,
    attrs: &AdmissionAttributes,
) -> Result<Option<Value>, ApiError> {
    reg.admit_mutating(attrs).await.result
}

pub async fn validate(reg: &WebhookRegistry, attrs: &AdmissionAttributes) -> Result<(), ApiError> {
    reg.admit_validating(attrs).await.result
}
