//! A custom resource served in two versions with one storage version and
//! conversion strategy None, through kube-rs's dynamic API: each write is
//! pruned and defaulted against its own version's schema and stored in the
//! storage version, so what the storage version lacks is lost, and reads in
//! any version show what the storage version keeps (with its defaults).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

use crate::kube_support::{install_crd, setup};

const GROUP: &str = "versions.opctl.test";

fn crd() -> CustomResourceDefinition {
    let schema =
        |spec: Value| json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}});
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("dials.{GROUP}")},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "dials", "singular": "dial", "kind": "Dial"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema(json!({
                    "type": "object",
                    "properties": {
                        "size": {"type": "integer"},
                        "replicas": {"type": "integer", "default": 1},
                    },
                }))},
                {"name": "v1beta1", "served": true, "storage": false, "schema": schema(json!({
                    "type": "object",
                    "properties": {
                        "size": {"type": "integer"},
                        "legacy": {"type": "string"},
                        "mode": {"type": "string", "default": "beta"},
                    },
                }))},
            ],
        },
    }))
    .expect("crd")
}

fn api(client: &Client, ns: &str, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(GROUP, version, "Dial");
    Api::namespaced_with(client.clone(), ns, &ApiResource::from_gvk(&gvk))
}

fn dial(version: &str, name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/{version}"), "kind": "Dial",
        "metadata": {"name": name}, "spec": spec,
    }))
    .expect("dial")
}

fn spec(obj: &DynamicObject) -> &Value {
    &obj.data["spec"]
}

#[tokio::test]
async fn writes_keep_what_the_storage_version_keeps_and_reads_show_it() {
    let (client, ns) = setup("versions").await;
    install_crd(&client, &crd()).await;
    let v1 = api(&client, &ns, "v1");
    let beta = api(&client, &ns, "v1beta1");

    // Written through v1beta1: `legacy` and the v1beta1 default `mode` are
    // lost in storage; the answer is read back from what was stored.
    let created = beta
        .create(
            &PostParams::default(),
            &dial("v1beta1", "d1", json!({"size": 2, "legacy": "x"})),
        )
        .await
        .expect("create through v1beta1");
    assert_eq!(
        created.types.as_ref().map(|t| t.api_version.as_str()),
        Some("versions.opctl.test/v1beta1")
    );
    assert_eq!(spec(&created), &json!({"size": 2}));
    // Through v1: the storage version's default shows.
    let read = v1.get("d1").await.expect("get through v1");
    assert_eq!(spec(&read), &json!({"size": 2, "replicas": 1}));
    // Through v1beta1: v1's fields are pruned, v1beta1's defaults are not applied on read.
    let read = beta.get("d1").await.expect("get through v1beta1");
    assert_eq!(spec(&read), &json!({"size": 2}));

    // A merge patch through v1beta1 setting the v1beta1-only field changes nothing stored.
    let patched = beta
        .patch(
            "d1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"legacy": "y", "size": 3}})),
        )
        .await
        .expect("patch through v1beta1");
    assert_eq!(spec(&patched), &json!({"size": 3}));
    let listed = v1.list(&Default::default()).await.expect("list through v1");
    assert_eq!(listed.items.len(), 1);
    assert_eq!(spec(&listed.items[0]), &json!({"size": 3, "replicas": 1}));

    // Written through v1: everything v1 knows is kept.
    v1.create(
        &PostParams::default(),
        &dial("v1", "d2", json!({"size": 5, "replicas": 4})),
    )
    .await
    .expect("create through v1");
    let read = beta.get("d2").await.expect("get d2 through v1beta1");
    assert_eq!(
        read.types.as_ref().map(|t| t.api_version.as_str()),
        Some("versions.opctl.test/v1beta1")
    );
    assert_eq!(spec(&read), &json!({"size": 5}));
    let read = v1.get("d2").await.expect("get d2 through v1");
    assert_eq!(spec(&read), &json!({"size": 5, "replicas": 4}));
}
