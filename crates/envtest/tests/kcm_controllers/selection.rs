//! `Config::controllers` (`--controllers`) decides what runs.

use std::time::Duration;

use serde_json::{Value, json};

use crate::api::{names, own};
use opctl_envtest::{Config, Controller, Controllers, Simulation};

/// Long enough for any controller to have acted, were it running (they act
/// within milliseconds).
const QUIET: Duration = Duration::from_millis(1500);

fn deployment(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

fn replica_set(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"rs": name}},
            "template": {"metadata": {"labels": {"rs": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

#[tokio::test]
async fn with_no_controller_the_server_is_a_bare_kube_apiserver() {
    let api = own(Config {
        simulation: Simulation::off(),
        controllers: Controllers::none(),
        ..Config::default()
    });
    let ns = api.namespace("bare").await;
    api.create(
        &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        deployment("web"),
    )
    .await;
    api.create(
        &format!("/api/v1/namespaces/{ns}/resourcequotas"),
        json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
            "spec": {"hard": {"pods": "1"}}}),
    )
    .await;
    tokio::time::sleep(QUIET).await;
    // No serviceaccount or root-CA publisher, no workload or quota controller.
    assert!(
        api.items(&format!("/api/v1/namespaces/{ns}/serviceaccounts"))
            .await
            .is_empty()
    );
    assert!(
        api.items(&format!("/api/v1/namespaces/{ns}/configmaps"))
            .await
            .is_empty()
    );
    assert!(
        api.items(&format!("/apis/apps/v1/namespaces/{ns}/replicasets"))
            .await
            .is_empty()
    );
    let quota = api
        .get(&format!("/api/v1/namespaces/{ns}/resourcequotas/q"))
        .await
        .expect("the quota");
    assert_eq!(quota["status"], json!({}), "{quota}");
    // kube-apiserver's own objects: admin/edit/view not aggregated, no StorageClass.
    let admin = api
        .get("/apis/rbac.authorization.k8s.io/v1/clusterroles/admin")
        .await
        .expect("admin");
    assert_eq!(admin["rules"], Value::Null, "{admin}");
    assert!(admin["aggregationRule"].is_object());
    assert!(
        api.items("/apis/storage.k8s.io/v1/storageclasses")
            .await
            .is_empty()
    );
    assert!(api.items("/api/v1/nodes").await.is_empty());
    // Without the namespace controller a deleted namespace stays Terminating.
    api.delete(&format!("/api/v1/namespaces/{ns}")).await;
    tokio::time::sleep(QUIET).await;
    let namespace = api
        .get(&format!("/api/v1/namespaces/{ns}"))
        .await
        .expect("still there");
    assert_eq!(namespace["status"]["phase"], "Terminating");
    assert_eq!(
        names(
            &api.items(&format!("/apis/apps/v1/namespaces/{ns}/deployments"))
                .await
        ),
        ["web"]
    );
}

#[tokio::test]
async fn the_transcripts_recording_runs_its_five_controllers() {
    let api = own(Config {
        simulation: Simulation::off(),
        controllers: Controllers::transcript_recording(),
        ..Config::default()
    });
    let ns = api.namespace("recorded").await;
    api.until(
        &format!("/api/v1/namespaces/{ns}/serviceaccounts/default"),
        "the serviceaccount controller's default ServiceAccount",
        |sa| sa.is_some(),
    )
    .await;
    let admin = api
        .get("/apis/rbac.authorization.k8s.io/v1/clusterroles/admin")
        .await
        .expect("admin");
    assert!(
        admin["rules"].as_array().is_some_and(|r| !r.is_empty()),
        "aggregated: {admin}"
    );
    api.create(
        &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        deployment("web"),
    )
    .await;
    tokio::time::sleep(QUIET).await;
    assert!(
        api.items(&format!("/api/v1/namespaces/{ns}/configmaps"))
            .await
            .is_empty(),
        "no root-CA publisher in the recording"
    );
    assert!(
        api.items(&format!("/apis/apps/v1/namespaces/{ns}/replicasets"))
            .await
            .is_empty(),
        "no Deployment controller in the recording"
    );
    // The namespace and garbage collector controllers empty and remove it.
    api.delete(&format!("/api/v1/namespaces/{ns}")).await;
    api.until(
        &format!("/api/v1/namespaces/{ns}"),
        "the namespace gone",
        |n| n.is_none(),
    )
    .await;
}

#[tokio::test]
async fn a_controller_left_out_does_nothing_while_the_others_work() {
    let api = own(Config {
        simulation: Simulation::off(),
        controllers: "*,-deployment-controller".parse().expect("valid"),
        ..Config::default()
    });
    assert_eq!(
        "*,-deployment-controller".parse::<Controllers>(),
        Ok(Controllers::all().without(Controller::Deployment))
    );
    let ns = api.namespace("partial").await;
    api.create(
        &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        deployment("web"),
    )
    .await;
    api.create(
        &format!("/apis/apps/v1/namespaces/{ns}/replicasets"),
        replica_set("by-hand"),
    )
    .await;
    let pods = api
        .until_items(
            &format!("/api/v1/namespaces/{ns}/pods"),
            "the ReplicaSet's Pods",
            |pods| pods.len() == 2,
        )
        .await;
    assert!(
        names(&pods).iter().all(|n| n.starts_with("by-hand-")),
        "{pods:?}"
    );
    api.until(
        &format!("/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt"),
        "the root-CA publisher's ConfigMap",
        |cm| cm.is_some(),
    )
    .await;
    tokio::time::sleep(QUIET).await;
    let sets = api
        .items(&format!("/apis/apps/v1/namespaces/{ns}/replicasets"))
        .await;
    assert_eq!(
        names(&sets),
        ["by-hand"],
        "the Deployment got no ReplicaSet"
    );
}
