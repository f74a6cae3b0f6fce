//! Set-up shared by the cluster tests.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};

use crate::server;
use crate::support::kubectl::Kubectl;

pub fn kubectl() -> Kubectl {
    Kubectl::new(&server::shared().kubeconfig)
}

/// kube-rs's configuration for the shared server.
pub async fn config() -> kube::Config {
    let yaml = std::fs::read_to_string(&server::shared().kubeconfig).expect("kubeconfig");
    let kubeconfig = Kubeconfig::from_yaml(&yaml).expect("kubeconfig parses");
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube-rs accepts the kubeconfig")
}

/// An administrator's client.
pub async fn client() -> Client {
    Client::try_from(config().await).expect("client")
}

/// An administrator's client that gives up at the first 429: kube-rs
/// retries 429s (up to 15 times, backing off), which would hide a refused
/// eviction behind minutes of retries.
pub async fn client_without_retries() -> Client {
    let mut config = config().await;
    config.default_retry = false;
    Client::try_from(config).expect("client")
}

/// A client acting as `user` (kube-rs's `impersonate`), with `groups`.
pub async fn client_as(user: &str, groups: &[&str]) -> Client {
    let mut config = config().await;
    config.auth_info.impersonate = Some(user.to_string());
    if !groups.is_empty() {
        config.auth_info.impersonate_groups = Some(groups.iter().map(|g| g.to_string()).collect());
    }
    Client::try_from(config).expect("client")
}

/// A fresh namespace for one test.
pub async fn namespace(client: &Client, prefix: &str) -> String {
    let ns = server::unique_name(prefix);
    let object: Namespace =
        serde_json::from_value(json!({"metadata": {"name": ns}})).expect("namespace");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("creating namespace {ns}: {e}"));
    ns
}

/// The API error of a failed call (a success fails the test).
pub fn api_error<T: std::fmt::Debug>(result: kube::Result<T>) -> kube::core::Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// kubectl's JSON output.
pub fn json(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("kubectl printed no JSON ({e}):\n{out}"))
}

/// Retries `check` for up to 10 s (controllers act asynchronously).
pub async fn eventually<T>(what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
