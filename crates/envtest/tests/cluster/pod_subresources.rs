//! The Pod subresources kube-apiserver v1.32 serves besides status and
//! binding, and `/api/v1` discovery listing them as it does: ephemeral
//! containers (kube-rs's own `can_operate_on_ephemeral_containers`),
//! attach, port forwarding and the proxies answered before any stream is
//! opened, the legacy `bindings` resource, and the verbs each subresource
//! refuses.

use k8s_openapi::api::core::v1::{EphemeralContainer, Pod, Service};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::common::{api_error, client, client_without_retries, namespace};

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "kube-rs-test"}},
        "spec": {"restartPolicy": "Never", "containers": [{
            "name": "busybox", "image": "busybox:stable", "command": ["sh", "-c", "sleep 2"],
        }]}
    }))
    .expect("pod")
}

/// Sends `method` to `path` with `body`: the status code and the answer.
async fn send(client: &Client, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let builder = axum::http::Request::builder().method(method).uri(path);
    let request = match body {
        Some(b) => builder
            .header("Content-Type", "application/json")
            .body(serde_json::to_vec(&b).expect("JSON")),
        None => builder.body(Vec::new()),
    }
    .expect("request");
    match client.request_text(request).await {
        Ok(text) => (
            200,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        ),
        Err(kube::Error::Api(s)) => (s.code, json!({"message": s.message, "reason": s.reason})),
        Err(other) => panic!("{method} {path}: {other}"),
    }
}

/// kube-rs's `can_operate_on_ephemeral_containers`, step by step.
#[tokio::test]
async fn ephemeral_containers_are_read_replaced_and_patched() {
    let client = client().await;
    let ns = namespace(&client, "ephemeral").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let name = "ephemeral-container-test";
    pods.create(&PostParams::default(), &pod(name))
        .await
        .expect("created");
    let current = pods.get_ephemeral_containers(name).await.expect("get");
    assert_eq!(current.spec.expect("spec").ephemeral_containers, None);

    let first: EphemeralContainer = serde_json::from_value(json!({
        "name": "myephemeralcontainer1", "image": "busybox:stable", "command": ["sh", "-c", "sleep 2"],
    }))
    .expect("container");
    let replacement: Pod = serde_json::from_value(json!({
        "metadata": {"name": name}, "spec": {"ephemeralContainers": [first]}
    }))
    .expect("pod");
    let replaced = pods
        .replace_ephemeral_containers(name, &PostParams::default(), &replacement)
        .await
        .expect("replaced");
    let spec = replaced.spec.expect("spec");
    let containers = spec.ephemeral_containers.expect("ephemeral containers");
    assert_eq!(containers.len(), 1);
    assert_eq!(containers[0].name, first.name);
    assert_eq!(containers[0].image, first.image);
    assert_eq!(containers[0].command, first.command);
    // Defaulted like any container; the rest of the spec is the stored one.
    assert_eq!(
        containers[0].termination_message_policy.as_deref(),
        Some("File")
    );
    assert_eq!(spec.containers[0].name, "busybox");

    let second: EphemeralContainer = serde_json::from_value(json!({
        "name": "myephemeralcontainer2", "image": "busybox:stable", "command": ["sh", "-c", "sleep 1"],
    }))
    .expect("container");
    let patch: Pod =
        serde_json::from_value(json!({"spec": {"ephemeralContainers": [second]}})).expect("pod");
    let patched = pods
        .patch_ephemeral_containers(name, &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .expect("patched");
    let containers = patched
        .spec
        .expect("spec")
        .ephemeral_containers
        .expect("ephemeral containers");
    assert_eq!(containers.len(), 2, "merged by name");
    // The strategic merge puts the patch's items first.
    assert_eq!(containers[0].name, "myephemeralcontainer2");
    let again = pods
        .get_ephemeral_containers(name)
        .await
        .expect("get")
        .spec
        .expect("spec")
        .ephemeral_containers
        .expect("ephemeral containers");
    assert_eq!(again, containers);

    // Only the ephemeral containers change through the subresource, and
    // existing ones stay as they are.
    let path = format!("/api/v1/namespaces/{ns}/pods/{name}/ephemeralcontainers");
    let (code, answer) = send(
        &client,
        "PATCH",
        &path,
        Some(json!([
            {"op": "replace", "path": "/metadata/labels/app", "value": "changed"},
            {"op": "replace", "path": "/spec/containers/0/image", "value": "busybox:1"},
            {"op": "add", "path": "/spec/ephemeralContainers/-", "value": {"name": "third", "image": "busybox"}}
        ])),
    )
    .await;
    assert_eq!(code, 415, "{answer}");
    let request = axum::http::Request::patch(path.clone())
        .header("Content-Type", "application/json-patch+json")
        .body(
            serde_json::to_vec(&json!([
                {"op": "replace", "path": "/metadata/labels/app", "value": "changed"},
                {"op": "replace", "path": "/spec/containers/0/image", "value": "busybox:1"},
                {"op": "add", "path": "/spec/ephemeralContainers/-", "value": {"name": "third", "image": "busybox"}}
            ]))
            .unwrap(),
        )
        .unwrap();
    let after: Pod = client.request(request).await.expect("patched");
    assert_eq!(
        after.metadata.labels.expect("labels")["app"],
        "kube-rs-test"
    );
    assert_eq!(
        after.spec.as_ref().expect("spec").containers[0]
            .image
            .as_deref(),
        Some("busybox:stable")
    );
    assert_eq!(
        after
            .spec
            .expect("spec")
            .ephemeral_containers
            .map(|l| l.len()),
        Some(3)
    );
    let request = axum::http::Request::patch(path)
        .header("Content-Type", "application/json-patch+json")
        .body(
            serde_json::to_vec(&json!([
                {"op": "remove", "path": "/spec/ephemeralContainers/0"},
                {"op": "add", "path": "/spec/ephemeralContainers/-", "value": {"name": "probe", "image": "busybox",
                    "ports": [{"containerPort": 80}], "targetContainerName": "nope"}}
            ]))
            .unwrap(),
        )
        .unwrap();
    let err = api_error(client.request::<Pod>(request).await);
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        format!(
            "Pod \"{name}\" is invalid: [spec.ephemeralContainers[2].targetContainerName: Not found: \"nope\", spec.ephemeralContainers[2].ports: Forbidden: cannot be set for an Ephemeral Container, spec.ephemeralContainers: Forbidden: existing ephemeral containers \"myephemeralcontainer2\" may not be removed\n]"
        )
    );
}

#[tokio::test]
async fn streams_and_proxies_are_refused_before_any_stream_opens() {
    // kube-rs retries a 503 for a while; the first answer is the one to see.
    let client = client_without_retries().await;
    let ns = namespace(&client, "streams").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    pods.create(&PostParams::default(), &pod("p"))
        .await
        .expect("created");
    let base = format!("/api/v1/namespaces/{ns}/pods/p");
    for (method, sub) in [
        ("POST", "attach?container=busybox&stdout=true"),
        ("GET", "portforward?ports=80"),
        ("POST", "exec?command=ls&stdout=true"),
    ] {
        let (code, answer) = send(&client, method, &format!("{base}/{sub}"), None).await;
        assert_eq!(
            (code, answer["message"].as_str()),
            (400, Some("pod p does not have a host assigned")),
            "{sub}"
        );
    }
    let (code, answer) = send(
        &client,
        "POST",
        &format!("{base}/attach?container=other"),
        None,
    )
    .await;
    assert_eq!(
        (code, answer["message"].as_str()),
        (400, Some("container other is not valid for pod p"))
    );
    // A Pod without an IP cannot be proxied to; a Service without endpoints
    // has nothing to proxy to.
    let (code, answer) = send(&client, "GET", &format!("{base}/proxy/healthz"), None).await;
    assert_eq!(
        (code, answer["message"].as_str()),
        (400, Some("address not allowed"))
    );
    let services: Api<Service> = Api::namespaced(client.clone(), &ns);
    let svc: Service = serde_json::from_value(json!({"metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}}}))
    .expect("service");
    services
        .create(&PostParams::default(), &svc)
        .await
        .expect("created");
    let (code, answer) = send(
        &client,
        "GET",
        &format!("/api/v1/namespaces/{ns}/services/web/proxy/"),
        None,
    )
    .await;
    assert_eq!(
        (code, answer["message"].as_str()),
        (503, Some("no endpoints available for service \"web\""))
    );
    let (code, _) = send(&client, "GET", &format!("{base}/nope"), None).await;
    assert_eq!(code, 404);

    // Subresources that only create refuse a GET, as the route has none.
    for sub in ["eviction", "binding"] {
        let (code, answer) = send(&client, "GET", &format!("{base}/{sub}"), None).await;
        assert_eq!(
            (code, answer["reason"].as_str()),
            (405, Some("MethodNotAllowed")),
            "{sub}: {answer}"
        );
    }
    let (code, _) = send(
        &client,
        "DELETE",
        &format!("{base}/ephemeralcontainers"),
        None,
    )
    .await;
    assert_eq!(code, 405);

    // The legacy `bindings` resource binds the Pod its Binding names.
    let (code, answer) = send(
        &client,
        "POST",
        &format!("/api/v1/namespaces/{ns}/bindings"),
        Some(
            json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}),
        ),
    )
    .await;
    assert_eq!(
        (code, answer["status"].as_str()),
        (200, Some("Success")),
        "{answer}"
    );
    let bound = pods.get("p").await.expect("get");
    assert_eq!(
        bound.spec.expect("spec").node_name.as_deref(),
        Some("node-1")
    );
    let (code, _) = send(
        &client,
        "GET",
        &format!("/api/v1/namespaces/{ns}/bindings"),
        None,
    )
    .await;
    assert_eq!(code, 405);
}

/// `/api/v1` lists the resources the recorded v1.32.13 server lists, in its
/// order, each as it does (the transcripts' 01 #3).
#[tokio::test]
async fn core_discovery_lists_what_kube_apiserver_lists() {
    let client = client().await;
    let recorded: Value =
        serde_json::from_str(include_str!("../fixtures/transcripts/01-discovery.json"))
            .expect("transcript");
    let step = recorded["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|s| s["request"]["path"] == "/api/v1")
        .expect("the /api/v1 step");
    let expected = step["response"]["body"]["resources"]
        .as_array()
        .expect("resources");
    let (code, served) = send(&client, "GET", "/api/v1", None).await;
    assert_eq!(code, 200);
    let served = served["resources"].as_array().expect("resources").clone();
    let names = |list: &[Value]| {
        list.iter()
            .map(|r| r["name"].as_str().unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&served), names(expected));
    for (got, want) in served.iter().zip(expected) {
        assert_eq!(got, want);
    }
}
