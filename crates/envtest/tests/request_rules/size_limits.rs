//! Size limits as kube-apiserver v1.32 and its etcd enforce them: the copy
//! operations of one JSON patch may add at most 3 MiB, an object etcd would
//! refuse to store (over 1.5 MiB) is a 500 `etcdserver: request is too
//! large`, and a refused write changes nothing. Also the reset of field
//! tracking with `managedFields: [{}]`.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use crate::common::{api_error, client, kubectl, namespace};
use crate::server;

/// `count` JSON-patch operations copying `/data/a` (or `/spec/a`) to new keys.
fn copies(parent: &str, count: usize) -> Patch<()> {
    let ops: Vec<Value> = (0..count)
        .map(|i| json!({"op": "copy", "from": format!("/{parent}/a"), "path": format!("/{parent}/c{i}")}))
        .collect();
    Patch::Json(serde_json::from_value(Value::Array(ops)).expect("a JSON patch"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_patch_copies_may_add_three_mebibytes() {
    let client = client().await;
    let ns = namespace(&client, "copies").await;
    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "big"}, "data": {"a": "x".repeat(16 * 1024)}
    }))
    .unwrap();
    let created = api
        .create(&PostParams::default(), &cm)
        .await
        .expect("created");
    let params = PatchParams::default();
    // 200 copies of 16 KiB: over the copy limit, the generic 422.
    let status = api_error(api.patch("big", &params, &copies("data", 200)).await);
    assert_eq!(
        (status.code, status.message.as_str()),
        (
            422,
            "the server rejected our request due to an error in our request"
        )
    );
    // 190 copies pass the copy limit; the ConfigMap is then too large.
    let status = api_error(api.patch("big", &params, &copies("data", 190)).await);
    assert_eq!(
        status.message,
        "ConfigMap \"big\" is invalid: []: Too long: may not be more than 1048576 bytes"
    );
    let after = api.get("big").await.expect("still there");
    assert_eq!(
        after.metadata.resource_version,
        created.metadata.resource_version
    );
}

fn crd(group: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("blobs.{group}")},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": "blobs", "singular": "blob", "kind": "Blob"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {
                "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}],
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_etcd_cannot_store_are_refused() {
    let group = format!("{}.size.example.com", server::unique_name("g"));
    kubectl().ok_stdin(&["apply", "-f", "-"], &crd(&group).to_string());
    kubectl().ok(&[
        "wait",
        "--for=condition=Established",
        &format!("crd/blobs.{group}"),
    ]);
    let client = client().await;
    let ns = namespace(&client, "blobs").await;
    let gvk = GroupVersionKind::gvk(&group, "v1", "Blob");
    let api: Api<DynamicObject> = Api::namespaced_with(
        client,
        &ns,
        &ApiResource::from_gvk_with_plural(&gvk, "blobs"),
    );
    let blob = |name: &str, size: usize| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": format!("{group}/v1"), "kind": "Blob",
            "metadata": {"name": name}, "spec": {"a": "x".repeat(size)}
        }))
        .unwrap()
    };
    let too_large = |status: kube::core::Status| {
        assert_eq!(
            (status.code, status.reason.as_str(), status.message.as_str()),
            (500, "", "etcdserver: request is too large")
        );
    };
    too_large(api_error(
        api.create(&PostParams::default(), &blob("huge", 1600 * 1024))
            .await,
    ));
    // A dry run never reaches etcd.
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    api.create(&dry, &blob("huge", 1600 * 1024))
        .await
        .expect("a dry run is not stored");
    assert!(api.get_opt("huge").await.expect("GET").is_none());

    // 1 MiB is stored; copying it once more (2 MiB) is not.
    let stored = api
        .create(&PostParams::default(), &blob("mib", 1024 * 1024))
        .await
        .expect("1 MiB fits");
    let grow = PatchParams::default();
    too_large(api_error(api.patch("mib", &grow, &copies("spec", 1)).await));
    let after = api.get("mib").await.expect("still there");
    assert_eq!(
        after.metadata.resource_version,
        stored.metadata.resource_version
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn managed_fields_of_one_empty_entry_reset_field_tracking() {
    let client = client().await;
    let ns = namespace(&client, "reset").await;
    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "tracked"}, "data": {"a": "1"}}))
            .unwrap();
    let created = api
        .create(
            &PostParams {
                field_manager: Some("first".into()),
                ..Default::default()
            },
            &cm,
        )
        .await
        .expect("created");
    assert!(
        created
            .metadata
            .managed_fields
            .is_some_and(|m| !m.is_empty())
    );
    let reset = json!({"metadata": {"managedFields": [{}]}, "data": {"b": "2"}});
    let params = PatchParams {
        field_manager: Some("second".into()),
        ..Default::default()
    };
    let patched = api
        .patch("tracked", &params, &Patch::Merge(&reset))
        .await
        .expect("patched");
    assert_eq!(patched.metadata.managed_fields, None, "tracking is reset");
    assert_eq!(
        patched
            .data
            .as_ref()
            .and_then(|d| d.get("b"))
            .map(String::as_str),
        Some("2")
    );
    // An unmanaged object stays unmanaged through updates...
    let touch = json!({"data": {"c": "3"}});
    let touched = api
        .patch("tracked", &params, &Patch::Merge(&touch))
        .await
        .expect("patched");
    assert_eq!(touched.metadata.managed_fields, None);
    // ...until someone applies: then, as on a cluster, the fields that were
    // there before belong to `before-first-apply`, the applied ones to the applier.
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "tracked"}, "data": {"d": "4"}});
    let applied = api
        .patch(
            "tracked",
            &PatchParams::apply("applier"),
            &Patch::Apply(&applied),
        )
        .await
        .expect("applied");
    let managers: Vec<String> = applied
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert_eq!(managers, ["applier", "before-first-apply"]);
}
