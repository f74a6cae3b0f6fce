//! envtest's admission webhook calls, against real HTTPS webhook servers.

mod admission_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use admission_support::fixtures::*;
use admission_support::{Pki, Reply, SERVICE_NAME, TestCluster, WebhookServer, closed_port};
use opctl_envtest::ApiError;
use opctl_envtest::testing::{
    AdmissionAttributes, GroupVersionKind, GroupVersionResource, Operation, WebhookRoute,
    WebhookRoutes,
};
use serde_json::{Value, json};

#[tokio::test]
async fn mutating_webhooks_run_in_name_order_and_see_earlier_patches() {
    let pki = Pki::new();
    let first = WebhookServer::start(&pki, |r| Reply::patch(r, add_label("first", "yes"))).await;
    let second = WebhookServer::start(&pki, |r| Reply::patch(r, add_label("second", "yes"))).await;
    let third = WebhookServer::start(&pki, Reply::allow).await;
    let reg = registry(TestCluster::default());
    // Configurations run sorted by name, webhooks in list order within one.
    reg.set_configurations(
        &[
            mutating(
                "b-config",
                vec![hook(
                    "third.example.com",
                    url_client(&third, &pki, "/third"),
                )],
            ),
            mutating(
                "a-config",
                vec![
                    hook("first.example.com", url_client(&first, &pki, "/first")),
                    hook("second.example.com", url_client(&second, &pki, "/second")),
                ],
            ),
        ],
        &[],
    );
    let attrs = create_pod("default", pod("p1", json!({"app": "web"})));
    let out = mutate(&reg, &attrs).await.unwrap().unwrap();
    assert_eq!(
        labels_of(&out),
        json!({"app": "web", "first": "yes", "second": "yes"})
    );

    let seen_by_second = &second.received()[0];
    assert_eq!(
        labels_of(&seen_by_second.review["request"]["object"]),
        json!({"app": "web", "first": "yes"})
    );
    let seen_by_third = &third.received()[0];
    assert_eq!(
        labels_of(&seen_by_third.review["request"]["object"]),
        labels_of(&out)
    );

    // The AdmissionReview as kube-apiserver sends it.
    let got = &first.received()[0];
    assert_eq!(got.uri, "/first?timeout=10s");
    assert_eq!(got.host, format!("127.0.0.1:{}", first.port));
    assert_eq!(got.content_type, "application/json");
    let review = &got.review;
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(review["kind"], "AdmissionReview");
    let req = &review["request"];
    assert_eq!(req["uid"].as_str().map(str::len), Some(36));
    assert_eq!(
        req["kind"],
        json!({"group": "", "version": "v1", "kind": "Pod"})
    );
    assert_eq!(
        req["resource"],
        json!({"group": "", "version": "v1", "resource": "pods"})
    );
    assert_eq!(req["requestKind"], req["kind"]);
    assert_eq!(req["requestResource"], req["resource"]);
    assert_eq!(req["operation"], "CREATE");
    assert_eq!(req["name"], "p1");
    assert_eq!(req["namespace"], "default");
    assert_eq!(req["dryRun"], false);
    assert_eq!(req["oldObject"], Value::Null);
    assert_eq!(req["options"]["kind"], "CreateOptions");
    assert_eq!(
        req["userInfo"],
        json!({"username": "system:admin", "groups": ["system:masters", "system:authenticated"]})
    );
    // Each call gets its own uid.
    assert_ne!(req["uid"], seen_by_second.review["request"]["uid"]);
}

#[tokio::test]
async fn if_needed_webhooks_are_reinvoked_once_after_a_later_change() {
    let pki = Pki::new();
    // Stamps the number of labels it saw, so a reinvocation is visible.
    let counter = WebhookServer::start(&pki, |r| {
        let seen = r["request"]["object"]["metadata"]["labels"]
            .as_object()
            .map_or(0, |m| m.len());
        Reply::patch(r, add_label("counted", &seen.to_string()))
    })
    .await;
    let never = WebhookServer::start(&pki, Reply::allow).await;
    let adder = WebhookServer::start(&pki, |r| Reply::patch(r, add_label("added", "yes"))).await;
    let reg = registry(TestCluster::default());
    reg.set_configurations(
        &[mutating(
            "m",
            vec![
                with(
                    hook("counter.example.com", url_client(&counter, &pki, "/")),
                    "reinvocationPolicy",
                    json!("IfNeeded"),
                ),
                hook("never.example.com", url_client(&never, &pki, "/")),
                hook("adder.example.com", url_client(&adder, &pki, "/")),
            ],
        )],
        &[],
    );
    let out = mutate(
        &reg,
        &create_pod("default", pod("p", json!({"app": "web"}))),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(
        counter.calls(),
        2,
        "reinvoked after the adder changed the object"
    );
    assert_eq!(
        never.calls(),
        1,
        "reinvocationPolicy Never is not reinvoked"
    );
    assert_eq!(
        adder.calls(),
        1,
        "the last change does not reinvoke its author"
    );
    // Second call saw app, counted and added.
    assert_eq!(out["metadata"]["labels"]["counted"], "3");
    assert_eq!(out["metadata"]["labels"]["added"], "yes");
}

#[tokio::test]
async fn no_reinvocation_when_nothing_changes_afterwards() {
    let pki = Pki::new();
    let first = WebhookServer::start(&pki, |r| Reply::patch(r, add_label("a", "1"))).await;
    let second = WebhookServer::start(&pki, Reply::allow).await;
    let reg = registry(TestCluster::default());
    reg.set_configurations(
        &[mutating(
            "m",
            vec![
                with(
                    hook("first.example.com", url_client(&first, &pki, "/")),
                    "reinvocationPolicy",
                    json!("IfNeeded"),
                ),
                with(
                    hook("second.example.com", url_client(&second, &pki, "/")),
                    "reinvocationPolicy",
                    json!("IfNeeded"),
                ),
            ],
        )],
        &[],
    );
    mutate(&reg, &create_pod("default", pod("p", json!({}))))
        .await
        .unwrap();
    assert_eq!(first.calls(), 1);
    assert_eq!(second.calls(), 1);
}

#[tokio::test]
async fn validating_denial_carries_the_webhook_message_and_code() {
    let pki = Pki::new();
    let denier = WebhookServer::start(&pki, |r| {
        Reply::response(
            r,
            json!({"allowed": false, "warnings": ["careful"],
                   "status": {"code": 403, "reason": "Forbidden", "message": "containers must not be empty"}}),
        )
    })
    .await;
    let reg = registry(TestCluster::default());
    reg.set_configurations(
        &[],
        &[validating(
            "v",
            vec![hook(
                "vsidecarset.kb.io",
                url_client(&denier, &pki, "/validate"),
            )],
        )],
    );
    let out = reg
        .admit_validating(&create_pod("default", pod("p", json!({}))))
        .await;
    let err = out.result.unwrap_err();
    assert_eq!(err.code, 403);
    assert_eq!(err.reason, "Forbidden");
    assert_eq!(
        err.message,
        "admission webhook \"vsidecarset.kb.io\" denied the request: containers must not be empty"
    );
    assert_eq!(
        err.to_status(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "admission webhook \"vsidecarset.kb.io\" denied the request: containers must not be empty",
               "reason": "Forbidden", "code": 403})
    );
    assert_eq!(out.warnings, ["careful"]);
}

#[tokio::test]
async fn denial_without_code_is_400_and_mutating_denials_stop_the_chain() {
    let pki = Pki::new();
    let denier = WebhookServer::start(&pki, |r| Reply::deny(r, json!({"message": "no"}))).await;
    let after = WebhookServer::start(&pki, Reply::allow).await;
    let reg = registry(TestCluster::default());
    reg.set_configurations(
        &[mutating(
            "m",
            vec![
                hook("deny.example.com", url_client(&denier, &pki, "/")),
                hook("after.example.com", url_client(&after, &pki, "/")),
            ],
        )],
        &[],
    );
    let err = mutate(&reg, &create_pod("default", pod("p", json!({}))))
        .await
        .unwrap_err();
    assert_eq!(err.code, 400);
    assert_eq!(err.reason, "");
    assert_eq!(
        err.message,
        "admission webhook \"deny.example.com\" denied the request: no"
    );
    assert_eq!(after.calls(), 0);
}

#[tokio::test]
async fn validating_webhooks_all_run_and_the_first_failure_in_order_wins() {
    let pki = Pki::new();
    let allow = WebhookServer::start(&pki, Reply::allow).await;
    let deny_a = WebhookServer::start(&pki, |r| {
        Reply::deny(r, json!({"code": 422, "message": "a says no"}))
    })
    .await;
    let deny_b = WebhookServer::start(&pki, |r| {
        Reply::deny(r, json!({"code": 403, "message": "b says no"}))
    })
    .await;
    let reg = registry(TestCluster::default());
    reg.set_configurations(
        &[],
        &[
            validating(
                "z",
                vec![hook("b.example.com", url_client(&deny_b, &pki, "/"))],
            ),
            validating(
                "a",
                vec![
                    hook("allow.example.com", url_client(&allow, &pki, "/")),
                    hook("a.example.com", url_client(&deny_a, &pki, "/")),
                ],
            ),
        ],
    );
    let err = validate(&reg, &create_pod("default", pod("p", json!({}))))
        .await
        .unwrap_err();
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "admission webhook \"a.example.com\" denied the request: a says no"
    );
    assert_eq!((allow.calls(), deny_a.calls(), deny_b.calls()), (1, 1, 1));
}

#[tokio::test]
async fn unreachable_webhook_fails_closed_or_open_by_policy() {
    let pki = Pki::new();
    let port = closed_port().await;
    let client =
        json!({"url": format!("https://127.0.0.1:{port}/validate"), "caBundle": pki.ca_bundle()});
    let reg = registry(TestCluster::default());
    reg.set_configurations(
        &[],
        &[validating(
            "v",
            vec![hook("down.example.com", client.clone())],
        )],
    );
    let err = validate(&reg, &create_pod("default", pod("p", json!({}))))
        .await
        .unwrap_err();
    let expected = format!(
        "failed calling webhook \"down.example.com\": failed to call webhook: Post \"https://127.0.0.1:{port}/validate?timeout=10s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
    );
    assert_eq!(err.code, 500);
    assert_eq!(err.reason, "InternalError");
    assert_eq!(err.message, format!("Internal error occurred: {expected}"));
    assert_eq!(
        err.to_status()["details"]["causes"][0]["message"],
        json!(expected)
    );

    reg.set_configurations(
        &[mutating(
            "m",
            vec![with(
                hook("down.example.com", client.clone()),
                "failurePolicy",
                json!("Ignore"),
            )],
        )],
        &[validating(
            "v",
            vec![with(
                hook("down.example.com", client),
                "failurePolicy",
                json!("Ignore"),
            )],
        )],
    );
    let attrs = create_pod("default", pod("p", json!({"a": "b"})));
    assert_eq!(mutate(&reg, &attrs).await.unwrap(), attrs.object);
    validate(&reg, &attrs).await.unwrap();
}

#[tokio::test]
async fn slow_webhook_times_out_as_a_call_failure() {
    let pki = Pki::new();
    let slow = WebhookServer::start(&pki, |r| Reply::allow(r).after(Duration::from_secs(3))).await;
    let reg = registry(TestCluster::default());
    let slow_hook = with(
        hook("slow.example.com", url_client(&slow, &pki, "/slow")),
        "timeoutSeconds",
        json!(1),
    );
    reg.set_configurations(&[], &[validating("v", vec![slow_hook.clone()])]);
    let err = validate(&reg, &create_pod("default", pod("p", json!({}))))
        .await
        .unwrap_err();
    assert_eq!(err.code, 500);
    assert_eq!(
        err.message,
        format!(
            "Internal error occurred: failed calling webhook \"slow.example.com\": failed to call webhook: Post \"https://127.0.0.1:{}/slow?timeout=1s\": context deadline exceeded",
            slow.port
        )
    );
    assert_eq!(slow.received()[0].uri, "/slow?timeout=1s");

    reg.set_configurations(
        &[],
        &[validating(
            "v",
            vec![with(slow_hook, "failurePolicy", json!("Ignore"))],
        )],
    );
    validate(&reg, &create_pod("default", pod("p", json!({}))))
        .await
        .unwrap();
}

/// Runs one mutating webhook answering `reply` under both failure policies.
async fn bad_answer(reply: fn(&Value) -> Reply) -> (ApiError, Option<Value>, WebhookServer) {
    let pki = Pki::new();
    let server = WebhookServer::start(&pki, reply).await;
    let reg = registry(TestCluster::default());
    let attrs = create_pod("default", pod("p", json!({"app": "web"})));
    let h = hook("bad.example.com", url_client(&server, &pki, "/m"));
    reg.set_configurations(&[mutating("m", vec![h.clone()])], &[]);
    let err = mutate(&reg, &attrs).await.unwrap_err();
    reg.set_configurations(
        &[mutating(
            "m",
            vec![with(h, "failurePolicy", json!("Ignore"))],
        )],
        &[],
    );
    let ignored = mutate(&reg, &attrs).await.unwrap();
    assert_eq!(ignored, attrs.object, "Ignore leaves the object untouched");
    (err, ignored, server)
}

fn failure_reason(err: &ApiError) -> String {
    assert_eq!(err.code, 500, "{err:?}");
    assert_eq!(err.reason, "InternalError");
    err.message
        .strip_prefix("Internal error occurred: failed calling webhook \"bad.example.com\": ")
        .unwrap_or_else(|| panic!("unexpected message {:?}", err.message))
        .to_string()
}

#[tokio::test]
async fn malformed_json_answer() {
    let (err, _, _) = bad_answer(|_| Reply::raw(200, Some("application/json"), "not json")).await;
    assert_eq!(
        failure_reason(&err),
        "failed to call webhook: couldn't get version/kind; json parse error: invalid character 'o' in literal null (expecting 'u')"
    );
}

#[tokio::test]
async fn wrong_uid_answer() {
    let (err, _, server) =
        bad_answer(|r| Reply::response(r, json!({"uid": "not-the-uid", "allowed": true}))).await;
    let uid = server.received()[0].review["request"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        failure_reason(&err),
        format!(
            "received invalid webhook response: expected response.uid={uid:?}, got \"not-the-uid\""
        )
    );
}

#[tokio::test]
async fn wrong_kind_answer() {
    let (err, _, _) = bad_answer(|r| {
        let uid = r["request"]["uid"].clone();
        Reply::json(200, json!({"response": {"uid": uid, "allowed": true}}))
    })
    .await;
    assert_eq!(
        failure_reason(&err),
        "received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got /, Kind="
    );
}

#[tokio::test]
async fn non_json_patch_type_answer() {
    let (err, _, _) = bad_answer(|r| {
        Reply::response(r, json!({"allowed": true, "patchType": "JSONMergePatch", "patch": "W3sib3AiOiJhZGQiLCJwYXRoIjoiL3giLCJ2YWx1ZSI6MX1d"}))
    })
    .await;
    assert_eq!(
        failure_reason(&err),
        "unsupported patch type \"JSONMergePatch\""
    );
}

#[tokio::test]
async fn http_error_answer() {
    let (err, _, _) = bad_answer(|_| Reply::raw(500, Some("text/plain"), "boom")).await;
    assert_eq!(
        failure_reason(&err),
        "failed to call webhook: an error on the server (\"boom\") has prevented the request from succeeding"
    );
}

#[tokio::test]
async fn patch_that_does_not_apply_is_an_internal_error_whatever_the_policy() {
    let pki = Pki::new();
    let server = WebhookServer::start(&pki, |r| {
        Reply::patch(
            r,
            json!([{"op": "replace", "path": "/spec/missing/field", "value": 1}]),
        )
    })
    .await;
    let reg = registry(TestCluster::default());
    reg.set_configurations(
        &[mutating(
            "m",
            vec![with(
                hook("bad.example.com", url_client(&server, &pki, "/")),
                "failurePolicy",
                json!("Ignore"),
            )],
        )],
        &[],
    );
    let err = mutate(&reg, &create_pod("default", pod("p", json!({}))))
        .await
        .unwrap_err();
    assert_eq!(err.code, 500);
    assert_eq!(
        err.message,
        "Internal error occurred: replace operation does not apply: doc is missing path: /spec/missing/field: missing value"
    );
}

#[tokio::test]
async fn undecodable_patch_is_a_call_failure() {
    let (err, _, _) = bad_answer(|r| {
        // base64 of `{"op":"add"}`: an object, not a list of operations.
        Reply::response(
            r,
            json!({"allowed": true, "patchType": "JSONPatch", "patch": "eyJvcCI6ImFkZCJ9"}),
        )
    })
    .await;
    assert_eq!(
        failure_reason(&err),
        "received undecodable patch in webhook response: json: cannot unmarshal object into Go value of type jsonpatch.Patch"
    );
}

#[tokio::test]
async fn ca_bundle_is_verified() {
    let pki = Pki::new();
    let other = Pki::new();
    let server = WebhookServer::start(&pki, Reply::allow).await;
    let reg = registry(TestCluster::default());
    // Both test CAs have the same subject, so Go names the one it tried.
    let wrong_ca = json!({"url": server.url("/v"), "caBundle": other.ca_bundle()});
    reg.set_configurations(
        &[],
        &[validating(
            "v",
            vec![hook("tls.example.com", wrong_ca.clone())],
        )],
    );
    let err = validate(&reg, &create_pod("default", pod("p", json!({}))))
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        format!(
            "Internal error occurred: failed calling webhook \"tls.example.com\": failed to call webhook: Post \"https://127.0.0.1:{}/v?timeout=10s\": tls: failed to verify certificate: x509: certificate signed by unknown authority (possibly because of \"x509: ECDSA verification failure\" while trying to verify candidate authority certificate \"envtest test CA\")",
            server.port
        )
    );
    assert_eq!(server.calls(), 0);

    // The name verified is the URL's host (localhost is in the certificate)...
    let by_name =
        json!({"url": format!("https://localhost:{}/v", server.port), "caBundle": pki.ca_bundle()});
    reg.set_configurations(
        &[],
        &[validating("v", vec![hook("tls.example.com", by_name)])],
    );
    validate(&reg, &create_pod("default", pod("p", json!({}))))
        .await
        .unwrap();
    assert_eq!(server.calls(), 1);

    // ...or <name>.<namespace>.svc for a Service, wherever the route leads.
    let other_service = json!({"service": {"namespace": "system", "name": "other-service", "port": 443}, "caBundle": pki.ca_bundle()});
    let route: WebhookRoute = format!("system/other-service:443=127.0.0.1:{}", server.port)
        .parse()
        .unwrap();
    reg.set_routes([route].into_iter().collect());
    reg.set_configurations(
        &[],
        &[validating(
            "v",
            vec![hook("tls.example.com", other_service)],
        )],
    );
    let err = validate(&reg, &create_pod("default", pod("p", json!({}))))
        .await
        .unwrap_err();
    assert!(
        err.message.ends_with(
            "tls: failed to verify certificate: x509: certificate is valid for localhost, webhook-service.system.svc, not other-service.system.svc"
        ),
        "{}",
        err.message
    );

    reg.set_configurations(
        &[],
        &[validating(
            "v",
            vec![with(
                hook("tls.example.com", wrong_ca),
                "failurePolicy",
                json!("Ignore"),
            )],
        )],
    );
    validate(&reg, &create_pod("default", pod("p", json!({}))))
        .await
        .unwrap();
}

#[tokio::test]
async fn service_references_follow_routes_then_the_service_then_loopback() {
    let pki = Pki::new();
    let server = WebhookServer::start(&pki, |r| Reply::patch(r, add_label("via", "service"))).await;
    let client = json!({
        "service": {"namespace": "system", "name": "webhook-service", "path": "/mutate-v1-pod"},
        "caBundle": pki.ca_bundle()
    });
    let attrs = create_pod("default", pod("p", json!({})));

    // The stored Service maps port 443 to the manager's port on loopback.
    let cluster = TestCluster::default().with_service(
        "system",
        "webhook-service",
        json!({"spec": {"ports": [{"port": 443, "targetPort": server.port}]}}),
    );
    let reg = registry(cluster);
    reg.set_configurations(
        &[mutating("m", vec![hook("svc.example.com", client.clone())])],
        &[],
    );
    let out = mutate(&reg, &attrs).await.unwrap().unwrap();
    assert_eq!(out["metadata"]["labels"]["via"], "service");
    let got = &server.received()[0];
    assert_eq!(got.uri, "/mutate-v1-pod?timeout=10s");
    assert_eq!(got.host, format!("{SERVICE_NAME}:443"));

    // An explicit route wins; without one and without a Service, 127.0.0.1:<port>.
    let reg = registry(TestCluster::default());
    let other_port = closed_port().await;
    let with_port = json!({
        "service": {"namespace": "system", "name": "webhook-service", "path": "/m", "port": other_port},
        "caBundle": pki.ca_bundle()
    });
    reg.set_configurations(
        &[mutating("m", vec![hook("svc.example.com", with_port)])],
        &[],
    );
    let err = mutate(&reg, &attrs).await.unwrap_err();
    assert!(
        err.message.ends_with(&format!(
            "Post \"https://{SERVICE_NAME}:{other_port}/m?timeout=10s\": dial tcp 127.0.0.1:{other_port}: connect: connection refused"
        )),
        "{}",
        err.message
    );
    let route: WebhookRoute = format!(
        "system/webhook-service:{other_port}=127.0.0.1:{}",
        server.port
    )
    .parse()
    .unwrap();
    reg.set_routes([route].into_iter().collect::<WebhookRoutes>());
    mutate(&reg, &attrs).await.unwrap();
    assert_eq!(server.calls(), 2);
}

fn selector_hook(server: &WebhookServer, pki: &Pki, field: &str, selector: Value) -> Value {
    let h = hook("sel.example.com", url_client(server, pki, "/"));
    let h = with(h, field, selector);
    with(
        h,
        "rules",
        json!([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]),
    )
}

#[tokio::test]
async fn namespace_selector_uses_namespace_labels() {
    let pki = Pki::new();
    let server = WebhookServer::start(&pki, Reply::allow).await;
    let cluster = TestCluster::default()
        .with_namespace("injected", &[("sidecar-injection", "enabled")])
        .with_namespace("plain", &[]);
    let reg = registry(cluster);
    let selector = json!({"matchLabels": {"sidecar-injection": "enabled"}});
    reg.set_configurations(
        &[],
        &[validating(
            "v",
            vec![selector_hook(&server, &pki, "namespaceSelector", selector)],
        )],
    );

    validate(&reg, &create_pod("injected", pod("p", json!({}))))
        .await
        .unwrap();
    assert_eq!(server.calls(), 1);
    validate(&reg, &create_pod("plain", pod("p", json!({}))))
        .await
        .unwrap();
    assert_eq!(
        server.calls(),
        1,
        "not called in a namespace without the label"
    );

    // Cluster-scoped objects other than namespaces are never exempted.
    let node = AdmissionAttributes::new(
        Operation::Create,
        GroupVersionKind::new("", "v1", "Node"),
        GroupVersionResource::new("", "v1", "nodes"),
        "",
        "n1",
    )
    .with_object(json!({"metadata": {"name": "n1"}}));
    validate(&reg, &node).await.unwrap();
    assert_eq!(server.calls(), 2);

    // A namespace being created is judged by its own new labels.
    let ns = |labels: Value| {
        AdmissionAttributes::new(
            Operation::Create,
            GroupVersionKind::new("", "v1", "Namespace"),
            GroupVersionResource::new("", "v1", "namespaces"),
            "",
            "fresh",
        )
        .with_object(json!({"metadata": {"name": "fresh", "labels": labels}}))
    };
    validate(&reg, &ns(json!({}))).await.unwrap();
    assert_eq!(server.calls(), 2);
    validate(&reg, &ns(json!({"sidecar-injection": "enabled"})))
        .await
        .unwrap();
    assert_eq!(server.calls(), 3);

    // A namespaced request in a namespace that does not exist: 404 from the look-up.
    let err = validate(&reg, &create_pod("missing", pod("p", json!({}))))
        .await
        .unwrap_err();
    assert_eq!(err.code, 404);
    assert_eq!(err.message, "namespaces \"missing\" not found");
}

#[tokio::test]
async fn object_selector_matches_new_or_old_object() {
    let pki = Pki::new();
    let server = WebhookServer::start(&pki, Reply::allow).await;
    let reg = registry(TestCluster::default());
    let selector =
        json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]});
    reg.set_configurations(
        &[],
        &[validating(
            "v",
            vec![selector_hook(&server, &pki, "objectSelector", selector)],
        )],
    );

    validate(&reg, &create_pod("default", pod("p", json!({"app": "db"}))))
        .await
        .unwrap();
    assert_eq!(server.calls(), 0);
    validate(
        &reg,
        &create_pod("default", pod("p", json!({"app": "web"}))),
    )
    .await
    .unwrap();
    assert_eq!(server.calls(), 1);

    // An update that removes the label still matches through the old object.
    let mut update = create_pod("default", pod("p", json!({})));
    update.operation = Operation::Update;
    update.old_object = Some(pod("p", json!({"app": "web"})));
    validate(&reg, &update).await.unwrap();
    assert_eq!(server.calls(), 2);
}

#[tokio::test]
async fn rules_match_operation_resource_subresource_and_scope() {
    let pki = Pki::new();
    let server = WebhookServer::start(&pki, Reply::allow).await;
    let reg = registry(TestCluster::default());
    let h = with(
        hook("rules.example.com", url_client(&server, &pki, "/")),
        "rules",
        json!([
            {"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/status"]},
            {"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["*"], "scope": "Cluster"}
        ]),
    );
    reg.set_configurations(&[], &[validating("v", vec![h])]);

    validate(&reg, &create_pod("default", pod("p", json!({}))))
        .await
        .unwrap();
    assert_eq!(server.calls(), 0, "CREATE pods is not in the rules");
    let mut status = create_pod("default", pod("p", json!({}))).with_subresource("status");
    status.operation = Operation::Update;
    status.old_object = status.object.clone();
    validate(&reg, &status).await.unwrap();
    assert_eq!(server.calls(), 1);
    assert_eq!(
        server.received()[0].review["request"]["subResource"],
        "status"
    );

    let deployment = AdmissionAttributes::new(
        Operation::Create,
        GroupVersionKind::new("apps", "v1", "Deployment"),
        GroupVersionResource::new("apps", "v1", "deployments"),
        "default",
        "d",
    )
    .with_object(json!({"metadata": {"name": "d"}}));
    validate(&reg, &deployment).await.unwrap();
    assert_eq!(
        server.calls(),
        1,
        "a namespaced deployment is outside scope Cluster"
    );
}

#[tokio::test]
async fn dry_run_is_passed_through_and_side_effects_are_honoured() {
    let pki = Pki::new();
    let server = WebhookServer::start(&pki, Reply::allow).await;
    let reg = registry(TestCluster::default());
    let attrs = create_pod("default", pod("p", json!({}))).with_dry_run(true);

    reg.set_configurations(
        &[],
        &[validating(
            "v",
            vec![hook("none.example.com", url_client(&server, &pki, "/"))],
        )],
    );
    validate(&reg, &attrs).await.unwrap();
    assert_eq!(server.received()[0].review["request"]["dryRun"], true);

    for side_effects in ["Some", "Unknown"] {
        let h = with(
            hook("effects.example.com", url_client(&server, &pki, "/")),
            "sideEffects",
            json!(side_effects),
        );
        reg.set_configurations(
            &[],
            &[validating(
                "v",
                vec![with(h.clone(), "failurePolicy", json!("Ignore"))],
            )],
        );
        let err = validate(&reg, &attrs).await.unwrap_err();
        assert_eq!(err.code, 400);
        assert_eq!(err.reason, "BadRequest");
        assert_eq!(
            err.message,
            "admission webhook \"effects.example.com\" does not support dry run"
        );
        // Without dry run the webhook is called as usual.
        reg.set_configurations(&[], &[validating("v", vec![h])]);
        validate(&reg, &attrs.clone().with_dry_run(false))
            .await
            .unwrap();
    }
    assert_eq!(server.calls(), 3);
}

#[tokio::test]
async fn delete_sends_the_old_object_and_refuses_patches() {
    let pki = Pki::new();
    let server = WebhookServer::start(&pki, |r| Reply::patch(r, add_label("x", "y"))).await;
    let reg = registry(TestCluster::default());
    let h = with(
        hook("del.example.com", url_client(&server, &pki, "/")),
        "rules",
        json!([{"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]),
    );
    reg.set_configurations(&[mutating("m", vec![h])], &[]);
    let attrs = AdmissionAttributes::new(
        Operation::Delete,
        GroupVersionKind::new("", "v1", "Pod"),
        GroupVersionResource::new("", "v1", "pods"),
        "default",
        "p",
    )
    .with_old_object(pod("p", json!({})));
    let err = mutate(&reg, &attrs).await.unwrap_err();
    assert_eq!(err.code, 500);
    assert_eq!(
        err.message,
        "Internal error occurred: admission webhook \"del.example.com\" attempted to modify the object, which is not supported for this operation"
    );
    let req = &server.received()[0].review["request"];
    assert_eq!(req["object"], Value::Null);
    assert_eq!(req["oldObject"]["metadata"]["name"], "p");
}

#[tokio::test]
async fn match_conditions_filter_calls_and_fail_closed_on_errors() {
    let pki = Pki::new();
    let server = WebhookServer::start(&pki, Reply::allow).await;
    let reg = registry(TestCluster::default());
    let conditions = json!([
        {"name": "not-system", "expression": "!request.namespace.startsWith('kube-')"},
        {"name": "labelled", "expression": "has(object.metadata.labels) && 'app' in object.metadata.labels"}
    ]);
    let h = with(
        hook("cel.example.com", url_client(&server, &pki, "/")),
        "matchConditions",
        conditions,
    );
    reg.set_configurations(&[], &[validating("v", vec![h])]);
    validate(&reg, &create_pod("default", pod("p", json!({"app": "x"}))))
        .await
        .unwrap();
    assert_eq!(server.calls(), 1);
    validate(
        &reg,
        &create_pod("default", pod("p", json!({"other": "x"}))),
    )
    .await
    .unwrap();
    assert_eq!(server.calls(), 1, "a false condition skips the webhook");

    let broken = json!([{"name": "broken", "expression": "object.spec.nothing.here == 1"}]);
    let h = with(
        hook("cel.example.com", url_client(&server, &pki, "/")),
        "matchConditions",
        broken,
    );
    reg.set_configurations(&[], &[validating("v", vec![h.clone()])]);
    let err = validate(&reg, &create_pod("default", pod("p", json!({}))))
        .await
        .unwrap_err();
    assert_eq!(err.code, 403);
    assert!(
        err.message.starts_with("pods \"p\" is forbidden: expression 'object.spec.nothing.here == 1' resulted in error: "),
        "{}",
        err.message
    );
    reg.set_configurations(
        &[],
        &[validating(
            "v",
            vec![with(h, "failurePolicy", json!("Ignore"))],
        )],
    );
    validate(&reg, &create_pod("default", pod("p", json!({}))))
        .await
        .unwrap();
    assert_eq!(server.calls(), 1);
}

#[tokio::test]
async fn webhook_configurations_are_never_sent_to_webhooks() {
    let pki = Pki::new();
    let server = WebhookServer::start(&pki, |r| Reply::deny(r, json!({"message": "no"}))).await;
    let reg = registry(TestCluster::default());
    let everything = with(
        hook("all.example.com", url_client(&server, &pki, "/")),
        "rules",
        json!([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]),
    );
    reg.set_configurations(&[], &[validating("v", vec![everything])]);
    let attrs = AdmissionAttributes::new(
        Operation::Create,
        GroupVersionKind::new(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
        ),
        GroupVersionResource::new(
            "admissionregistration.k8s.io",
            "v1",
            "validatingwebhookconfigurations",
        ),
        "",
        "v2",
    )
    .with_object(json!({"metadata": {"name": "v2"}}));
    validate(&reg, &attrs).await.unwrap();
    assert_eq!(server.calls(), 0);
}

#[tokio::test]
async fn unknown_admission_review_versions_fail_the_call() {
    let pki = Pki::new();
    let server = WebhookServer::start(&pki, Reply::allow).await;
    let reg = registry(TestCluster::default());
    let h = with(
        hook("v2.example.com", url_client(&server, &pki, "/")),
        "admissionReviewVersions",
        json!(["v2"]),
    );
    reg.set_configurations(&[], &[validating("v", vec![h])]);
    let err = validate(&reg, &create_pod("default", pod("p", json!({}))))
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "Internal error occurred: failed calling webhook \"v2.example.com\": could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)"
    );
    assert_eq!(server.calls(), 0);
}

#[tokio::test]
async fn no_webhooks_leaves_requests_alone() {
    let reg = registry(TestCluster::default());
    assert!(!reg.has_mutating() && !reg.has_validating());
    let attrs = create_pod("default", pod("p", json!({"a": "b"})));
    let out = reg.admit_mutating(&attrs).await;
    assert_eq!(out.result.unwrap(), attrs.object);
    assert!(out.warnings.is_empty());
    validate(&reg, &attrs).await.unwrap();
}

#[tokio::test]
async fn concurrent_requests_share_one_registry() {
    let pki = Pki::new();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    let server = WebhookServer::start(&pki, move |r| {
        seen.fetch_add(1, Ordering::SeqCst);
        Reply::patch(r, add_label("n", "1"))
    })
    .await;
    let reg = Arc::new(registry(TestCluster::default()));
    reg.set_configurations(
        &[mutating(
            "m",
            vec![hook("m.example.com", url_client(&server, &pki, "/"))],
        )],
        &[],
    );
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let reg = Arc::clone(&reg);
            tokio::spawn(async move {
                let attrs = create_pod("default", pod(&format!("p{i}"), json!({})));
                reg.admit_mutating(&attrs).await.result
            })
        })
        .collect();
    for task in tasks {
        let out = task.await.unwrap().unwrap().unwrap();
        assert_eq!(out["metadata"]["labels"]["n"], "1");
    }
    assert_eq!(count.load(Ordering::SeqCst), 8);
}

#[tokio::test]
async fn no_ca_bundle_means_system_roots() {
    let pki = Pki::new();
    let server = WebhookServer::start(&pki, Reply::allow).await;
    let reg = registry(TestCluster::default());
    let client = json!({"url": server.url("/v")});
    reg.set_configurations(
        &[],
        &[validating("v", vec![hook("roots.example.com", client)])],
    );
    let err = validate(&reg, &create_pod("default", pod("p", json!({}))))
        .await
        .unwrap_err();
    assert!(
        err.message
            .ends_with("x509: certificate signed by unknown authority"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn v1beta1_only_webhooks_get_a_v1beta1_review() {
    let pki = Pki::new();
    // v1beta1 answers were never checked for uid or kind.
    let server = WebhookServer::start(&pki, |_| {
        Reply::json(
            200,
            json!({"response": {"uid": "anything", "allowed": true,
                   "patch": "W3sib3AiOiJhZGQiLCJwYXRoIjoiL21ldGFkYXRhL2xhYmVscy92MWJldGExIiwidmFsdWUiOiJ5ZXMifV0="}}),
        )
    })
    .await;
    let reg = registry(TestCluster::default());
    let h = with(
        hook("old.example.com", url_client(&server, &pki, "/")),
        "admissionReviewVersions",
        json!(["v1beta1"]),
    );
    reg.set_configurations(&[mutating("m", vec![h])], &[]);
    let out = mutate(&reg, &create_pod("default", pod("p", json!({}))))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out["metadata"]["labels"]["v1beta1"], "yes");
    assert_eq!(
        server.received()[0].review["apiVersion"],
        "admission.k8s.io/v1beta1"
    );
}
