//! JSON patches as kube-apiserver v1.32 applies them (its json-patch
//! library, evanphx/json-patch v4, departs from RFC 6902): `replace` of a
//! missing member adds it, `test` of a missing member passes for `null`,
//! `copy` of a missing member copies `null`, negative array indices count
//! from the end; what fails is the generic 422 and changes nothing.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::common::{client, namespace};

/// Sends `ops` as a JSON patch of the ConfigMap `name`: the status code and
/// the answer.
async fn patch(client: &Client, ns: &str, name: &str, ops: Value) -> (u16, Value) {
    let request = axum::http::Request::patch(format!("/api/v1/namespaces/{ns}/configmaps/{name}"))
        .header("Content-Type", "application/json-patch+json")
        .body(serde_json::to_vec(&ops).expect("JSON"))
        .expect("request");
    match client.request_text(request).await {
        Ok(text) => (200, serde_json::from_str(&text).expect("JSON answer")),
        Err(kube::Error::Api(status)) => (status.code, json!({"message": status.message})),
        Err(other) => panic!("PATCH failed: {other}"),
    }
}

const REJECTED: &str = "the server rejected our request due to an error in our request";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_patches_follow_the_go_library_kube_apiserver_uses() {
    let client = client().await;
    let ns = namespace(&client, "jsonpatch").await;
    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "p", "labels": {"a": "1"}}, "data": {"a": "1", "b": "2"}
    }))
    .expect("configmap");
    api.create(&PostParams::default(), &cm)
        .await
        .expect("created");

    // replace of a missing member adds it.
    let (code, answer) = patch(
        &client,
        &ns,
        "p",
        json!([{"op": "replace", "path": "/data/c", "value": "3"}]),
    )
    .await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["data"], json!({"a": "1", "b": "2", "c": "3"}));

    // test of a missing member passes for null (kube-rs's finalizer helper
    // relies on this), fails for anything else.
    let (code, answer) = patch(
        &client,
        &ns,
        "p",
        json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/f"]}
        ]),
    )
    .await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["metadata"]["finalizers"], json!(["example.com/f"]));
    let (code, answer) = patch(
        &client,
        &ns,
        "p",
        json!([{"op": "test", "path": "/metadata/annotations", "value": {}}]),
    )
    .await;
    assert_eq!((code, answer["message"].as_str()), (422, Some(REJECTED)));

    // Negative indices count from the end.
    let (code, answer) = patch(
        &client,
        &ns,
        "p",
        json!([
            {"op": "add", "path": "/metadata/finalizers/-1", "value": "example.com/g"},
            {"op": "test", "path": "/metadata/finalizers/-1", "value": "example.com/g"},
            {"op": "remove", "path": "/metadata/finalizers/-2"}
        ]),
    )
    .await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["metadata"]["finalizers"], json!(["example.com/g"]));

    // copy of a missing member copies null, which a string map reads as "".
    let (code, answer) = patch(
        &client,
        &ns,
        "p",
        json!([{"op": "copy", "from": "/data/nope", "path": "/data/d"}]),
    )
    .await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["data"]["d"], json!(""));

    // move of a missing member, and into its own child, fail and change nothing.
    let before = api.get("p").await.expect("get");
    for ops in [
        json!([{"op": "move", "from": "/data/nope", "path": "/data/e"}]),
        json!([{"op": "move", "from": "/data", "path": "/data/x"}]),
        json!([{"op": "replace", "path": "/metadata/finalizers/5", "value": "x"}]),
        json!([{"op": "add", "path": "", "value": {}}]),
    ] {
        let (code, answer) = patch(&client, &ns, "p", ops.clone()).await;
        assert_eq!(
            (code, answer["message"].as_str()),
            (422, Some(REJECTED)),
            "{ops}"
        );
    }
    let after = api.get("p").await.expect("get");
    assert_eq!(
        after.metadata.resource_version, before.metadata.resource_version,
        "refused patches change nothing"
    );

    // Clean up the finalizer so the namespace can go.
    let (code, answer) = patch(
        &client,
        &ns,
        "p",
        json!([{"op": "remove", "path": "/metadata/finalizers"}]),
    )
    .await;
    assert_eq!(code, 200, "{answer}");
}
