//! Validation ratcheting (kube-apiserver v1.30+): after a CRD's schema is
//! tightened, objects stored under the old schema can still be updated as
//! long as the parts that fail the new rules stay as they were.

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use crate::common::{api_error, client, kubectl, namespace};
use crate::server;

fn crd(group: &str, spec_schema: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("dials.{group}")},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": "dials", "singular": "dial", "kind": "Dial"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {
                "openAPIV3Schema": {"type": "object", "properties": {"spec": spec_schema}}}}],
        }
    })
}

fn loose() -> Value {
    json!({"type": "object", "properties": {
        "level": {"type": "integer"},
        "label": {"type": "string"},
        "ports": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"}, "port": {"type": "integer"}}}},
    }})
}

/// The same fields with rules the stored object breaks: a maximum, a CEL
/// rule and a bound on map-list items.
fn strict() -> Value {
    let mut s = loose();
    s["properties"]["level"]["maximum"] = json!(10);
    s["properties"]["label"]["x-kubernetes-validations"] =
        json!([{"rule": "self.size() >= 3", "message": "label too short"}]);
    s["properties"]["ports"]["items"]["properties"]["port"]["maximum"] = json!(1000);
    s
}

fn apply_crd(group: &str, spec_schema: Value) {
    kubectl().ok_stdin(&["apply", "-f", "-"], &crd(group, spec_schema).to_string());
    kubectl().ok(&[
        "wait",
        "--for=condition=Established",
        &format!("crd/dials.{group}"),
    ]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unchanged_invalid_fields_do_not_block_updates() {
    let group = format!("{}.ratchet.example.com", server::unique_name("g"));
    apply_crd(&group, loose());
    let client = client().await;
    let ns = namespace(&client, "ratchet").await;
    let gvk = GroupVersionKind::gvk(&group, "v1", "Dial");
    let api: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &ns,
        &ApiResource::from_gvk_with_plural(&gvk, "dials"),
    );
    let stored = json!({
        "apiVersion": format!("{group}/v1"), "kind": "Dial", "metadata": {"name": "d"},
        "spec": {"level": 50, "label": "x",
            "ports": [{"name": "a", "port": 5000}, {"name": "b", "port": 80}]},
    });
    api.create(
        &Default::default(),
        &serde_json::from_value(stored).expect("a Dial"),
    )
    .await
    .expect("valid under the loose schema");
    apply_crd(&group, strict());

    // Changing only a valid field: the old violations ratchet. The CEL
    // rule's failure comes back as a warning, the schema's are silent.
    let patch =
        json!({"spec": {"ports": [{"name": "a", "port": 5000}, {"name": "b", "port": 81}]}});
    let out = kubectl().run(&[
        "patch",
        &format!("dials.{group}"),
        "d",
        "-n",
        &ns,
        "--type=merge",
        "-p",
        &patch.to_string(),
    ]);
    assert!(out.success(), "{out:?}");
    assert_eq!(
        out.stderr.trim(),
        "Warning: spec.label: Invalid value: \"string\": label too short",
    );
    let d = api.get("d").await.expect("read back");
    assert_eq!(d.data["spec"]["ports"][1]["port"], 81);

    // Changing an invalid value is judged by the new rules.
    let refused = |patch: Value| {
        let api = api.clone();
        async move {
            api_error(
                api.patch("d", &PatchParams::default(), &Patch::Merge(patch))
                    .await,
            )
        }
    };
    let status = refused(json!({"spec": {"level": 40}})).await;
    assert_eq!(status.code, 422);
    assert!(
        status.message.contains(
            "spec.level: Invalid value: 40: spec.level in body should be less than or equal to 10"
        ),
        "{}",
        status.message
    );
    let status = refused(json!({"spec": {"label": "y"}})).await;
    assert!(
        status
            .message
            .contains("spec.label: Invalid value: \"string\": label too short"),
        "{}",
        status.message
    );
    // Map-list items are matched by key: item `a` moved but did not change.
    let moved = api
        .patch(
            "d",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"ports": [
                {"name": "b", "port": 82}, {"name": "a", "port": 5000}]}})),
        )
        .await
        .expect("the unchanged item ratchets wherever it sits");
    assert_eq!(moved.data["spec"]["ports"][1]["port"], 5000);
    let status = refused(json!({"spec": {"ports": [
        {"name": "b", "port": 82}, {"name": "a", "port": 5001}]}}))
    .await;
    assert!(
        status
            .message
            .contains("spec.ports[1].port: Invalid value: 5001"),
        "{}",
        status.message
    );
    let d = api.get("d").await.expect("read back");
    assert_eq!(d.data["spec"]["level"], 50);
    assert_eq!(d.data["spec"]["label"], "x");
}
