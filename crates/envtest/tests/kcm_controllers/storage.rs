//! StorageObjectInUseProtection and the protection controllers.

use std::time::Duration;

use serde_json::json;

use crate::api::{no_nodes, with_nodes};

#[tokio::test]
async fn a_claim_in_use_is_held_until_its_pod_goes_and_its_volume_follows() {
    let api = with_nodes();
    let ns = api.namespace("inuse").await;
    let claim_path = format!("/api/v1/namespaces/{ns}/persistentvolumeclaims/data");
    api.create(
        &format!("/api/v1/namespaces/{ns}/persistentvolumeclaims"),
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    )
    .await;
    api.create(
        &format!("/api/v1/namespaces/{ns}/pods"),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "user"},
            "spec": {"containers": [{"name": "c", "image": "nginx",
                "volumeMounts": [{"name": "d", "mountPath": "/d"}]}],
                "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}}),
    )
    .await;
    let claim = api
        .until(&claim_path, "the claim bound", |c| {
            c.is_some_and(|c| c["status"]["phase"] == "Bound")
        })
        .await
        .expect("claim");
    let volume = claim["spec"]["volumeName"]
        .as_str()
        .expect("volume")
        .to_string();
    let pv = api
        .get(&format!("/api/v1/persistentvolumes/{volume}"))
        .await
        .expect("pv");
    assert_eq!(
        pv["metadata"]["finalizers"],
        json!(["kubernetes.io/pv-protection"])
    );
    api.until(
        &format!("/api/v1/namespaces/{ns}/pods/user"),
        "the Pod running",
        |p| p.is_some_and(|p| p["status"]["phase"] == "Running"),
    )
    .await;
    api.delete(&claim_path).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let held = api.get(&claim_path).await.expect("held by its finalizer");
    assert!(held["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(
        held["metadata"]["finalizers"],
        json!(["kubernetes.io/pvc-protection"])
    );
    api.delete(&format!("/api/v1/namespaces/{ns}/pods/user"))
        .await;
    api.until(&claim_path, "the claim gone", |c| c.is_none())
        .await;
    api.until(
        &format!("/api/v1/persistentvolumes/{volume}"),
        "its volume released and deleted",
        |v| v.is_none(),
    )
    .await;
}

#[tokio::test]
async fn an_unbound_volume_goes_at_once_and_a_finalizer_taken_off_comes_back() {
    let api = no_nodes();
    let name = crate::server::unique_name("pv");
    let path = format!("/api/v1/persistentvolumes/{name}");
    let pv = api
        .create(
            "/api/v1/persistentvolumes",
            json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                    "hostPath": {"path": "/tmp/x"}}}),
        )
        .await;
    assert_eq!(
        pv["metadata"]["finalizers"],
        json!(["kubernetes.io/pv-protection"])
    );
    // The controller adds the finalizer where it is missing.
    api.patch(&path, json!({"metadata": {"finalizers": null}}))
        .await;
    api.until(&path, "the finalizer back", |v| {
        v.is_some_and(|v| v["metadata"]["finalizers"] == json!(["kubernetes.io/pv-protection"]))
    })
    .await;
    api.until(&path, "Available", |v| {
        v.is_some_and(|v| v["status"]["phase"] == "Available")
    })
    .await;
    api.delete(&path).await;
    api.until(&path, "the volume gone", |v| v.is_none()).await;
}
