//! What the registry strategies of kube-apiserver v1.32 do to writes,
//! through kube-rs: which changes bump `metadata.generation` per kind, and
//! what a status write may change besides the status.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSIDriver, StorageClass};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::common::{client, namespace};
use crate::server;

#[tokio::test]
async fn a_deployments_generation_follows_its_spec_and_annotations_only() {
    let client = client().await;
    let ns = namespace(&client, "generation").await;
    let api: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .expect("deployment");
    api.create(&PostParams::default(), &deployment)
        .await
        .expect("created");
    let patch = |body| Patch::Merge(body);
    let params = PatchParams::default();
    let generation = |d: &Deployment| d.metadata.generation.unwrap_or(0);

    let labelled = api
        .patch(
            "web",
            &params,
            &patch(json!({"metadata": {"labels": {"tier": "fe"}}})),
        )
        .await
        .expect("labelled");
    assert_eq!(generation(&labelled), 1, "labels do not bump it");
    let annotated = api
        .patch(
            "web",
            &params,
            &patch(json!({"metadata": {"annotations": {"note": "x"}}})),
        )
        .await
        .expect("annotated");
    assert_eq!(generation(&annotated), 2, "annotations do");
    let scaled = api
        .patch("web", &params, &patch(json!({"spec": {"replicas": 3}})))
        .await
        .expect("scaled");
    assert_eq!(generation(&scaled), 3, "the spec does");

    // A status write (as kube-controller-manager writes the revision) keeps
    // its annotations, not its labels, and leaves the generation alone.
    let status = api
        .patch_status(
            "web",
            &params,
            &patch(json!({
                "metadata": {"annotations": {"deployment.kubernetes.io/revision": "1"}, "labels": {"tier": "be"}},
                "status": {"observedGeneration": 3},
            })),
        )
        .await
        .expect("status written");
    assert_eq!(generation(&status), 3);
    let annotations = status.metadata.annotations.clone().expect("annotations");
    assert_eq!(annotations["deployment.kubernetes.io/revision"], "1");
    assert_eq!(status.metadata.labels.expect("labels")["tier"], "fe");
    assert_eq!(status.status.and_then(|s| s.observed_generation), Some(3));
}

#[tokio::test]
async fn a_priority_class_keeps_generation_one() {
    let client = client().await;
    let api: Api<PriorityClass> = Api::all(client);
    let name = server::unique_name("gen-pc");
    let class: PriorityClass =
        serde_json::from_value(json!({"metadata": {"name": name}, "value": 1000}))
            .expect("priority class");
    let created = api
        .create(&PostParams::default(), &class)
        .await
        .expect("created");
    assert_eq!(created.metadata.generation, Some(1));
    let changed = api
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"description": "changed", "metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .expect("patched");
    assert_eq!(changed.metadata.generation, Some(1));
    api.delete(&name, &Default::default())
        .await
        .expect("deleted");
}

#[tokio::test]
async fn csi_kinds_refuse_a_put_without_resource_version() {
    let client = client().await;
    let drivers: Api<CSIDriver> = Api::all(client.clone());
    let name = server::unique_name("csi.example.com");
    let driver: CSIDriver =
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": {}})).expect("driver");
    let mut created = drivers
        .create(&PostParams::default(), &driver)
        .await
        .expect("created");
    created.metadata.resource_version = None;
    let refused = drivers
        .replace(&name, &PostParams::default(), &created)
        .await
        .expect_err("a CSIDriver needs its resourceVersion");
    let kube::Error::Api(status) = refused else {
        panic!("not an API error: {refused:?}")
    };
    assert_eq!(status.code, 422);
    // The generic store names the resource where the kind would be.
    assert_eq!(
        status.message,
        format!(
            "csidrivers.storage.k8s.io \"{name}\" is invalid: metadata.resourceVersion: \
             Invalid value: 0x0: must be specified for an update"
        )
    );
    drivers
        .delete(&name, &Default::default())
        .await
        .expect("deleted");

    // A StorageClass's strategy allows it.
    let classes: Api<StorageClass> = Api::all(client);
    let name = server::unique_name("unconditional");
    let class: StorageClass =
        serde_json::from_value(json!({"metadata": {"name": name}, "provisioner": "example.com/p"}))
            .expect("class");
    let mut created = classes
        .create(&PostParams::default(), &class)
        .await
        .expect("created");
    created.metadata.resource_version = None;
    created.metadata.labels = Some([("a".to_string(), "b".to_string())].into());
    classes
        .replace(&name, &PostParams::default(), &created)
        .await
        .expect("a StorageClass is updated without it");
    classes
        .delete(&name, &Default::default())
        .await
        .expect("deleted");
}
