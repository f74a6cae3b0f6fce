//! kube-rs clients of an envtest server (included next to `server.rs` by
//! the test binaries that drive the server through kube-rs).

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::json;

use super::server;

/// A client for the server a kubeconfig names.
pub async fn client_for(kubeconfig_yaml: &str) -> Client {
    let kubeconfig = Kubeconfig::from_yaml(kubeconfig_yaml)
        .unwrap_or_else(|e| panic!("envtest's kubeconfig does not parse: {e}"));
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap_or_else(|e| panic!("kube-rs refuses envtest's kubeconfig: {e}"));
    Client::try_from(config).unwrap_or_else(|e| panic!("no client: {e}"))
}

/// A client of the shared server.
pub async fn shared_client() -> Client {
    let shared = server::shared();
    let yaml = std::fs::read_to_string(&shared.kubeconfig)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", shared.kubeconfig.display()));
    client_for(&yaml).await
}

/// Creates namespace `ns`.
pub async fn create_namespace(client: &Client, ns: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let object: Namespace =
        serde_json::from_value(json!({"metadata": {"name": ns}})).expect("namespace");
    namespaces
        .create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("creating namespace {ns}: {e}"));
}

/// A client of the shared server and a fresh namespace.
pub async fn setup(prefix: &str) -> (Client, String) {
    let client = shared_client().await;
    let ns = server::unique_name(prefix);
    create_namespace(&client, &ns).await;
    (client, ns)
}

/// Creates `crd` (a 409 means an earlier test did) and waits until it is Established.
pub async fn install_crd(client: &Client, crd: &CustomResourceDefinition) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = crd.metadata.name.clone().unwrap_or_default();
    match crds.create(&PostParams::default(), crd).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(e) => panic!("creating the CRD {name}: {e}"),
    }
    let established = await_condition(crds, &name, conditions::is_crd_established());
    tokio::time::timeout(Duration::from_secs(20), established)
        .await
        .unwrap_or_else(|_| panic!("the CRD {name} did not become Established within 20 s"))
        .unwrap_or_else(|e| panic!("waiting for the CRD {name}: {e}"));
}

/// The Status of a failed call; anything else fails the test.
pub fn api_status(result: Result<impl std::fmt::Debug, kube::Error>) -> Box<kube::core::Status> {
    match result {
        Err(kube::Error::Api(status)) => status,
        other => panic!("expected an API error Status, got {other:?}"),
    }
}
