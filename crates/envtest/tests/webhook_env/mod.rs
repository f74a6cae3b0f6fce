//! What the webhook tests share: a fresh server per test (webhook
//! configurations act on the whole server) with a kube-rs client, and
//! builders for configurations, Pods and a custom resource.

use crate::admission_support::Reply;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Error};
use opctl_envtest::{Config, Envtest};
use serde_json::{Value, json};

/// A fresh server and a kube-rs client of it.
pub async fn start(config: Config) -> (Envtest, Client) {
    let env = match Envtest::start(config).await {
        Ok(env) => env,
        Err(e) => panic!("envtest did not start: {e:#}"),
    };
    let kubeconfig = Kubeconfig::from_yaml(&env.kubeconfig_yaml()).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube-rs accepts the kubeconfig");
    let client = Client::try_from(config).expect("client");
    (env, client)
}

pub async fn add_mutating(client: &Client, configuration: Value) {
    let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let typed = serde_json::from_value(configuration).expect("a MutatingWebhookConfiguration");
    api.create(&PostParams::default(), &typed)
        .await
        .expect("configuration stored");
}

pub async fn add_validating(client: &Client, configuration: Value) {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let typed = serde_json::from_value(configuration).expect("a ValidatingWebhookConfiguration");
    api.create(&PostParams::default(), &typed)
        .await
        .expect("configuration stored");
}

pub async fn namespace(client: &Client, name: &str, labels: Value) {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}))
        .expect("namespace");
    api.create(&PostParams::default(), &ns)
        .await
        .expect("namespace created");
}

pub fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
    }))
    .expect("pod")
}

/// The API error of a refused request.
pub fn api_error(result: Result<impl std::fmt::Debug, Error>) -> kube::core::Status {
    match result {
        Err(Error::Api(status)) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Deny everything with `message` and `code`.
pub fn denying(
    message: &'static str,
    code: u16,
) -> impl Fn(&Value) -> Reply + Send + Sync + 'static {
    move |review| {
        Reply::deny(
            review,
            json!({"code": code, "message": message, "reason": "Forbidden"}),
        )
    }
}

pub const WIDGET_CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.hooks.example.com"},
  "spec": {
    "group": "hooks.example.com", "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "subresources": {"status": {}},
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
          "size": {"type": "integer", "minimum": 1},
          "color": {"type": "string", "default": "blue"},
          "tier": {"type": "string"}}},
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}}}}]
  }
}"#;
