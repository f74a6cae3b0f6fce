//! Admission webhooks end to end (see `webhooks.rs`): webhooks on a custom
//! resource, `matchPolicy` across its served versions, webhooks behind a
//! Service reached through a route or the stored Service, and webhook
//! configurations validated and taking effect at once.

#[allow(dead_code)]
mod admission_support;
#[allow(dead_code)]
mod support;
#[allow(dead_code)]
mod webhook_env;

use std::time::Duration;

use admission_support::fixtures::{add_label, hook, mutating, url_client, validating, with};
use admission_support::{Pki, Reply, WebhookServer};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use opctl_envtest::Config;
use opctl_envtest::WebhookRoute;
use serde_json::{Value, json};
use support::http::{Http, HttpRequest};
use webhook_env::{
    WIDGET_CRD, add_mutating, add_validating, api_error, denying, namespace, pod, start,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_on_a_custom_resource() {
    let pki = Pki::new();
    // Mutates: sets spec.tier (and an unknown field the schema prunes);
    // removes spec.color, which defaulting then restores.
    let defaulter = WebhookServer::start(&pki, |review| {
        if review["request"]["operation"] != "CREATE" {
            return Reply::allow(review);
        }
        Reply::patch(
            review,
            json!([
                {"op": "add", "path": "/spec/tier", "value": "gold"},
                {"op": "add", "path": "/spec/unknown", "value": 1},
                {"op": "remove", "path": "/spec/color"},
            ]),
        )
    })
    .await;
    // Validates: refuses growing a widget beyond 10.
    let validator = WebhookServer::start(&pki, |review| {
        let size = review["request"]["object"]["spec"]["size"]
            .as_i64()
            .unwrap_or(0);
        if size > 10 {
            Reply::deny(
                review,
                json!({"code": 422, "message": "widgets stay small"}),
            )
        } else {
            Reply::allow(review)
        }
    })
    .await;
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("crd.json"), WIDGET_CRD).expect("crd written");
    let (_env, client) = start(Config {
        crd_paths: vec![dir.path().to_path_buf()],
        ..Config::default()
    })
    .await;
    let rules = json!([{"operations": ["CREATE", "UPDATE"], "apiGroups": ["hooks.example.com"],
                        "apiVersions": ["v1"], "resources": ["widgets"]}]);
    add_mutating(
        &client,
        mutating(
            "widgets",
            vec![with(
                hook(
                    "default.widgets.example.com",
                    url_client(&defaulter, &pki, "/"),
                ),
                "rules",
                rules.clone(),
            )],
        ),
    )
    .await;
    add_validating(
        &client,
        validating(
            "widgets",
            vec![with(
                hook(
                    "validate.widgets.example.com",
                    url_client(&validator, &pki, "/"),
                ),
                "rules",
                rules,
            )],
        ),
    )
    .await;
    let gvk = GroupVersionKind::gvk("hooks.example.com", "v1", "Widget");
    let widgets: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &ApiResource::from_gvk_with_plural(&gvk, "widgets"),
    );
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "hooks.example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1"}, "spec": {"size": 2, "color": "red"},
    }))
    .expect("widget");
    let created = widgets
        .create(&PostParams::default(), &widget)
        .await
        .expect("admitted");
    assert_eq!(
        created.data["spec"],
        json!({"size": 2, "tier": "gold", "color": "blue"})
    );
    let request = &defaulter.received()[0].review["request"];
    assert_eq!(
        request["kind"],
        json!({"group": "hooks.example.com", "version": "v1", "kind": "Widget"})
    );
    assert_eq!(request["resource"]["resource"], "widgets");

    let err = api_error(
        widgets
            .patch(
                "w1",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"size": 11}})),
            )
            .await,
    );
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "admission webhook \"validate.widgets.example.com\" denied the request: widgets stay small"
    );
    let update_call = validator.received().last().cloned().expect("called");
    assert_eq!(update_call.review["request"]["operation"], "UPDATE");
    assert_eq!(
        update_call.review["request"]["oldObject"]["spec"]["size"],
        2
    );
    let stored = widgets.get("w1").await.expect("stored");
    assert_eq!(stored.data["spec"]["size"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn match_policy_equivalent_converts_requests_on_other_versions() {
    let pki = Pki::new();
    let defaulter = WebhookServer::start(&pki, |review| {
        Reply::patch(
            review,
            json!([{"op": "add", "path": "/spec/tier", "value": "gold"}]),
        )
    })
    .await;
    let exact = WebhookServer::start(&pki, Reply::allow).await;
    // The widgets CRD served as v1 (storage) and v2.
    let mut crd: Value = serde_json::from_str(WIDGET_CRD).expect("crd");
    let mut v2 = crd["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    crd["spec"]["versions"]
        .as_array_mut()
        .expect("versions")
        .push(v2);
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("crd.json"), crd.to_string()).expect("crd written");
    let (_env, client) = start(Config {
        crd_paths: vec![dir.path().to_path_buf()],
        ..Config::default()
    })
    .await;
    // Both webhooks name only v1; the default matchPolicy is Equivalent.
    let v1_rules = json!([{"operations": ["CREATE"], "apiGroups": ["hooks.example.com"],
                           "apiVersions": ["v1"], "resources": ["widgets"]}]);
    add_mutating(
        &client,
        mutating(
            "v1-defaulter",
            vec![with(
                hook(
                    "default.widgets.example.com",
                    url_client(&defaulter, &pki, "/"),
                ),
                "rules",
                v1_rules.clone(),
            )],
        ),
    )
    .await;
    add_validating(
        &client,
        validating(
            "v1-exact",
            vec![with(
                with(
                    hook("exact.widgets.example.com", url_client(&exact, &pki, "/")),
                    "rules",
                    v1_rules,
                ),
                "matchPolicy",
                json!("Exact"),
            )],
        ),
    )
    .await;

    let gvk = GroupVersionKind::gvk("hooks.example.com", "v2", "Widget");
    let widgets: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &ApiResource::from_gvk_with_plural(&gvk, "widgets"),
    );
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "hooks.example.com/v2", "kind": "Widget",
        "metadata": {"name": "w2"}, "spec": {"size": 1},
    }))
    .expect("widget");
    let created = widgets
        .create(&PostParams::default(), &widget)
        .await
        .expect("admitted");
    assert_eq!(
        created.types.as_ref().map(|t| t.api_version.as_str()),
        Some("hooks.example.com/v2")
    );
    assert_eq!(created.data["spec"]["tier"], "gold");

    // The webhook saw the request converted to the version its rules name.
    let request = &defaulter.received()[0].review["request"];
    assert_eq!(
        request["kind"],
        json!({"group": "hooks.example.com", "version": "v1", "kind": "Widget"})
    );
    assert_eq!(request["resource"]["version"], "v1");
    assert_eq!(
        request["requestKind"],
        json!({"group": "hooks.example.com", "version": "v2", "kind": "Widget"})
    );
    assert_eq!(request["requestResource"]["version"], "v2");
    assert_eq!(request["object"]["apiVersion"], "hooks.example.com/v1");
    // matchPolicy: Exact leaves the v2 request alone.
    assert_eq!(exact.calls(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_reference_is_reached_through_a_route() {
    let pki = Pki::new();
    let webhook = WebhookServer::start(&pki, |r| Reply::patch(r, add_label("routed", "yes"))).await;
    let route: WebhookRoute = format!("system/webhook-service:443=127.0.0.1:{}", webhook.port)
        .parse()
        .expect("route");
    let (_env, client) = start(Config {
        webhook_routes: vec![route],
        ..Config::default()
    })
    .await;
    let service = json!({
        "service": {"namespace": "system", "name": "webhook-service", "path": "/mutate-v1-pod"},
        "caBundle": pki.ca_bundle(),
    });
    add_mutating(
        &client,
        mutating("routed", vec![hook("routed.example.com", service)]),
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let created = pods
        .create(&PostParams::default(), &pod("p"))
        .await
        .expect("admitted");
    assert_eq!(
        created
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("routed"))
            .map(String::as_str),
        Some("yes")
    );
    let received = &webhook.received()[0];
    assert_eq!(received.uri, "/mutate-v1-pod?timeout=10s");
    // The certificate was checked for the Service's name, not the address.
    assert_eq!(received.host, "webhook-service.system.svc:443");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_reference_is_reached_through_the_stored_service() {
    let pki = Pki::new();
    let webhook =
        WebhookServer::start(&pki, |r| Reply::patch(r, add_label("via", "service"))).await;
    let (_env, client) = start(Config::default()).await;
    namespace(&client, "system", json!({})).await;
    // As a generated project's config/webhook/service.yaml: 443 -> the manager's port.
    let services: Api<Service> = Api::namespaced(client.clone(), "system");
    let service = serde_json::from_value(json!({
        "metadata": {"name": "webhook-service"},
        "spec": {"ports": [{"port": 443, "targetPort": webhook.port, "protocol": "TCP"}],
                 "selector": {"control-plane": "controller-manager"}},
    }))
    .expect("service");
    services
        .create(&PostParams::default(), &service)
        .await
        .expect("service created");
    let reference = json!({
        "service": {"namespace": "system", "name": "webhook-service", "path": "/mutate"},
        "caBundle": pki.ca_bundle(),
    });
    add_mutating(
        &client,
        mutating("by-service", vec![hook("service.example.com", reference)]),
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let created = pods
        .create(&PostParams::default(), &pod("p"))
        .await
        .expect("admitted");
    assert_eq!(
        created
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("via"))
            .map(String::as_str),
        Some("service")
    );
    assert_eq!(webhook.calls(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configurations_are_validated_and_take_effect_at_once() {
    let pki = Pki::new();
    let webhook = WebhookServer::start(&pki, denying("closed", 403)).await;
    let (env, client) = start(Config::default()).await;

    // An invalid configuration is refused with kube-apiserver's causes.
    let http = Http::new(&env.base_url());
    let mut bad = validating("bad", vec![hook("bad", url_client(&webhook, &pki, "/"))]);
    bad["webhooks"][0]
        .as_object_mut()
        .expect("hook")
        .remove("sideEffects");
    let response = http
        .send(
            &HttpRequest::new(
                "POST",
                "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
            )
            .json(&bad),
            Duration::from_secs(10),
        )
        .await
        .expect("answer");
    assert_eq!(response.status, 422);
    let status = response.json().expect("Status");
    let causes: Vec<&str> = status["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .filter_map(|c| c["field"].as_str())
        .collect();
    assert_eq!(causes, ["webhooks[0].name", "webhooks[0].sideEffects"]);

    // Stored configurations are defaulted.
    add_validating(
        &client,
        validating(
            "closed",
            vec![hook("closed.example.com", url_client(&webhook, &pki, "/"))],
        ),
    )
    .await;
    let configs: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let stored = serde_json::to_value(configs.get("closed").await.expect("stored")).expect("json");
    assert_eq!(stored["webhooks"][0]["failurePolicy"], "Fail");
    assert_eq!(stored["webhooks"][0]["timeoutSeconds"], 10);
    assert_eq!(stored["webhooks"][0]["matchPolicy"], "Equivalent");

    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    api_error(pods.create(&PostParams::default(), &pod("a")).await);
    // Narrowing the rules takes effect for the next request...
    configs
        .patch(
            "closed",
            &PatchParams::default(),
            &Patch::Json::<()>(
                serde_json::from_value(json!([
                    {"op": "replace", "path": "/webhooks/0/rules/0/operations", "value": ["UPDATE"]}
                ]))
                .expect("patch"),
            ),
        )
        .await
        .expect("patched");
    pods.create(&PostParams::default(), &pod("b"))
        .await
        .expect("CREATE no longer matches");
    // ...and so does deleting the configuration.
    configs
        .delete("closed", &DeleteParams::default())
        .await
        .expect("deleted");
    pods.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"free": "yes"}}})),
    )
    .await
    .expect("no webhook left");
    assert_eq!(webhook.calls(), 1);
}
