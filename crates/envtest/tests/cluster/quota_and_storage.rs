//! kube-apiserver v1.32's ResourceQuota and DefaultStorageClass admission
//! plugins, through kube-rs and kubectl. Without a resourcequota controller
//! (as in envtest and the recorded cluster) a quota restricts nothing until
//! its `status.hard` is written; then creates are checked against it and
//! charged to `status.used`.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, ResourceQuota, Service};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::common::{api_error, client, kubectl, namespace};
use crate::server;

fn pod(name: &str, cpu: &str) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"containers": [{
        "name": "c", "image": "registry.k8s.io/pause:3.9",
        "resources": {"requests": {"cpu": cpu}}}]}}))
    .expect("pod")
}

fn used(quota: &ResourceQuota) -> Value {
    json!(quota.status.as_ref().and_then(|s| s.used.clone()))
}

#[tokio::test]
async fn quotas_refuse_what_exceeds_them_and_count_what_they_admit() {
    let client = client().await;
    let ns = namespace(&client, "quota").await;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), &ns);
    let hard = json!({"pods": "2", "requests.cpu": "1", "services.nodeports": "1"});
    let quota: ResourceQuota =
        serde_json::from_value(json!({"metadata": {"name": "q"}, "spec": {"hard": hard}})).unwrap();
    quotas
        .create(&PostParams::default(), &quota)
        .await
        .expect("quota");
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    // No status yet: nothing is enforced.
    pods.create(&PostParams::default(), &pod("free", "2"))
        .await
        .expect("unrestricted");

    let status = PatchParams::default();
    let set_status = |status_doc: Value| Patch::Merge(json!({"status": status_doc}));
    quotas
        .patch_status("q", &status, &set_status(json!({"hard": hard})))
        .await
        .expect("status.hard");
    let err = api_error(
        pods.create(&PostParams::default(), &pod("unknown", "100m"))
            .await,
    );
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            403,
            "pods \"unknown\" is forbidden: status unknown for quota: q, resources: pods,requests.cpu"
        )
    );
    quotas
        .patch_status(
            "q",
            &status,
            &set_status(
                json!({"used": {"pods": "0", "requests.cpu": "0", "services.nodeports": "0"}}),
            ),
        )
        .await
        .expect("status.used");
    let no_request: Pod = serde_json::from_value(json!({"metadata": {"name": "bare"},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}}))
    .unwrap();
    let err = api_error(pods.create(&PostParams::default(), &no_request).await);
    assert_eq!(
        err.message,
        "pods \"bare\" is forbidden: failed quota: q: must specify requests.cpu for: c"
    );

    pods.create(&PostParams::default(), &pod("first", "600m"))
        .await
        .expect("fits");
    let charged = quotas.get("q").await.expect("quota");
    assert_eq!(
        used(&charged),
        json!({"pods": "1", "requests.cpu": "600m", "services.nodeports": "0"})
    );
    let entry = charged
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .find(|m| m.manager.as_deref() == Some("kube-apiserver"))
        .expect("usage written by kube-apiserver");
    assert_eq!(entry.subresource.as_deref(), Some("status"));

    let err = api_error(
        pods.create(&PostParams::default(), &pod("second", "600m"))
            .await,
    );
    assert_eq!(
        err.message,
        "pods \"second\" is forbidden: exceeded quota: q, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1"
    );
    // A dry run is checked but never charged.
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    pods.create(&dry, &pod("dry", "100m"))
        .await
        .expect("dry run fits");
    assert_eq!(used(&quotas.get("q").await.unwrap())["pods"], "1");

    // kubectl sees the same refusal for a Service's node ports.
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ports", "namespace": ns},
        "spec": {"type": "NodePort", "selector": {"app": "x"}, "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81}]}});
    let out = kubectl().fails_stdin(&["create", "-f", "-"], &service.to_string());
    assert!(
        out.contains("exceeded quota: q, requested: services.nodeports=2, used: services.nodeports=0, limited: services.nodeports=1"),
        "{out}"
    );
    assert!(
        Api::<Service>::namespaced(client.clone(), &ns)
            .get_opt("ports")
            .await
            .unwrap()
            .is_none()
    );
    // Deleting what was charged lowers nothing (the controller's job).
    pods.delete("first", &DeleteParams::default().grace_period(0))
        .await
        .expect("deleted");
    assert_eq!(used(&quotas.get("q").await.unwrap())["pods"], "1");
}

#[tokio::test]
async fn claims_without_a_class_get_the_default_storage_class() {
    let client = client().await;
    let ns = namespace(&client, "storage").await;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns);
    let claim = |name: &str, class: Option<&str>| -> PersistentVolumeClaim {
        let mut spec = json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}});
        if let Some(class) = class {
            spec["storageClassName"] = json!(class);
        }
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap()
    };
    // A cluster starts without a default class: the claim keeps none.
    let plain = claims
        .create(&PostParams::default(), &claim("before", None))
        .await
        .expect("claim");
    assert_eq!(plain.spec.and_then(|s| s.storage_class_name), None);

    let class_name = server::unique_name("standard");
    let class: StorageClass = serde_json::from_value(json!({
        "metadata": {"name": class_name,
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "example.com/none"
    }))
    .unwrap();
    let classes: Api<StorageClass> = Api::all(client.clone());
    classes
        .create(&PostParams::default(), &class)
        .await
        .expect("class");
    let defaulted = claims
        .create(&PostParams::default(), &claim("after", None))
        .await
        .expect("claim");
    assert_eq!(
        defaulted.spec.and_then(|s| s.storage_class_name),
        Some(class_name.clone())
    );
    // An explicit empty class asks for none.
    let out = kubectl().ok_stdin(
        &["create", "-o", "json", "-f", "-"],
        &json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "none", "namespace": ns},
            "spec": {"storageClassName": "", "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
        .to_string(),
    );
    assert_eq!(crate::common::json(&out)["spec"]["storageClassName"], "");
    classes
        .delete(&class_name, &DeleteParams::default())
        .await
        .expect("class deleted");
}
