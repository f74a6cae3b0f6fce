//! Custom resource features of issue 3 that the recorded transcripts do not
//! exercise, end to end through HTTP and kube-rs: schema validation of every
//! supported kind (int-or-string, embedded resources, maps, nullable,
//! formats, bounds, CEL rules including transition rules), pruning and
//! `fieldValidation`, several served versions with one storage version, and
//! the `/scale` subresource.

#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;
#[allow(dead_code)]
mod support;

use std::time::Duration;

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, Error};
use opctl_envtest::{Config, Envtest};
use serde_json::{Value, json};
use support::http::{Http, HttpRequest, HttpResponse};

const GROUP: &str = "features.example.com";

fn spec_schema() -> Value {
    json!({
        "type": "object",
        "required": ["size"],
        "x-kubernetes-validations": [
            {"rule": "self.replicas <= self.maxReplicas", "message": "replicas must not exceed maxReplicas"}
        ],
        "properties": {
            "size": {"type": "integer", "minimum": 1, "maximum": 10},
            "replicas": {"type": "integer", "default": 1},
            "maxReplicas": {"type": "integer", "default": 5},
            "mode": {"type": "string", "enum": ["fast", "slow"], "default": "fast",
                     "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "mode is immutable"}]},
            "port": {"x-kubernetes-int-or-string": true},
            "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "note": {"type": "string", "nullable": true},
            "when": {"type": "string", "format": "date-time"},
            "template": {
                "type": "object",
                "x-kubernetes-embedded-resource": true,
                "properties": {"spec": {"type": "object", "properties": {"image": {"type": "string"}}}}
            }
        }
    })
}

fn gizmo_crd() -> Value {
    let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": spec_schema(),
        "status": {"type": "object", "properties": {
            "replicas": {"type": "integer"}, "selector": {"type": "string"}}}
    }}});
    let version = |name: &str, storage: bool| {
        json!({
            "name": name, "served": true, "storage": storage, "schema": schema,
            "subresources": {"status": {}, "scale": {
                "specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.selector"}},
        })
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("gizmos.{GROUP}")},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"},
            "versions": [version("v1", true), version("v2", false)],
        }
    })
}

/// A fresh server with the Gizmo CRD Established, its kube-rs client and a raw client.
async fn start() -> (Envtest, Client, Http, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("gizmos.json"), gizmo_crd().to_string()).expect("CRD written");
    let env = server::start(Config {
        crd_paths: vec![dir.path().to_path_buf()],
        ..Config::default()
    })
    .await;
    let kubeconfig = Kubeconfig::from_yaml(&env.kubeconfig_yaml()).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube-rs config");
    let client = Client::try_from(config).expect("client");
    let http = Http::new(&env.base_url());
    (env, client, http, dir)
}

fn gizmos(client: &Client, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(GROUP, version, "Gizmo");
    Api::namespaced_with(
        client.clone(),
        "default",
        &ApiResource::from_gvk_with_plural(&gvk, "gizmos"),
    )
}

fn gizmo(name: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Gizmo", "metadata": {"name": name}, "spec": spec})
}

fn path(version: &str, rest: &str) -> String {
    format!("/apis/{GROUP}/{version}/namespaces/default/gizmos{rest}")
}

async fn send(http: &Http, request: HttpRequest) -> (HttpResponse, Value) {
    let response = http
        .send(&request, Duration::from_secs(10))
        .await
        .expect("an answer");
    let body = response.json().unwrap_or(Value::Null);
    (response, body)
}

/// `field: message` of each cause of a Status.
fn causes(status: &Value) -> Vec<String> {
    status["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{}: {}",
                c["field"].as_str().unwrap_or(""),
                c["message"].as_str().unwrap_or("")
            )
        })
        .collect()
}

fn api_error<T: std::fmt::Debug>(result: Result<T, Error>) -> kube::core::Status {
    match result {
        Err(Error::Api(status)) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_types_formats_and_bounds_are_validated() {
    let (_env, _client, http, _dir) = start().await;
    let valid = gizmo(
        "ok",
        json!({
            "size": 3, "port": "http", "name": "abc", "labels": {"a": "b"},
            "note": null, "when": "2025-01-02T03:04:05Z", "extra": {"free": {"form": [1, 2]}},
        }),
    );
    let (response, created) =
        send(&http, HttpRequest::new("POST", path("v1", "")).json(&valid)).await;
    assert_eq!(response.status, 201, "{created}");
    // Defaults applied, nullable null kept, preserved fields kept.
    assert_eq!(created["spec"]["replicas"], 1);
    assert_eq!(created["spec"]["maxReplicas"], 5);
    assert_eq!(created["spec"]["mode"], "fast");
    assert_eq!(created["spec"]["note"], Value::Null);
    assert_eq!(created["spec"]["extra"], json!({"free": {"form": [1, 2]}}));
    let numeric_port = gizmo("port", json!({"size": 3, "port": 8080}));
    let (response, _) = send(
        &http,
        HttpRequest::new("POST", path("v1", "")).json(&numeric_port),
    )
    .await;
    assert_eq!(response.status, 201, "int-or-string takes an integer too");

    let invalid = gizmo(
        "bad",
        json!({
            "size": 0, "port": true, "mode": "bogus", "name": "TooLongName",
            "labels": {"a": 1}, "when": "yesterday",
        }),
    );
    let (response, status) = send(
        &http,
        HttpRequest::new("POST", path("v1", "")).json(&invalid),
    )
    .await;
    assert_eq!(response.status, 422, "{status}");
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(status["details"]["kind"], "Gizmo");
    assert_eq!(status["details"]["group"], GROUP);
    let got = causes(&status);
    for expected in [
        "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1",
        "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
        "spec.mode: Unsupported value: \"bogus\": supported values: \"fast\", \"slow\"",
        // The first failing string check is reported alone, as kube-openapi does.
        "spec.name: Too long: may not be more than 8 bytes",
        "spec.labels.a: Invalid value: \"integer\": spec.labels.a in body must be of type string: \"integer\"",
        "spec.when: Invalid value: \"yesterday\": spec.when in body must be of type date-time: \"yesterday\"",
    ] {
        assert!(
            got.iter().any(|c| c == expected),
            "missing {expected:?} in {got:#?}"
        );
    }

    let (response, status) = send(
        &http,
        HttpRequest::new("POST", path("v1", "")).json(&gizmo("nosize", json!({}))),
    )
    .await;
    assert_eq!(response.status, 422);
    // A missing required field keeps the CEL rules from running, as in kube-apiserver.
    assert_eq!(
        causes(&status),
        [
            "spec.size: Required value",
            "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ]
    );
    // Nothing invalid was stored.
    let (_, list) = send(&http, HttpRequest::new("GET", path("v1", ""))).await;
    let names: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["ok", "port"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cel_rules_and_transition_rules_are_enforced() {
    let (_env, client, _http, _dir) = start().await;
    let api = gizmos(&client, "v1");
    let typed = |v: Value| -> DynamicObject { serde_json::from_value(v).expect("gizmo") };

    let err = api_error(
        api.create(
            &PostParams::default(),
            &typed(gizmo("cel", json!({"size": 1, "replicas": 7}))),
        )
        .await,
    );
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        format!(
            "Gizmo.{GROUP} \"cel\" is invalid: spec: Invalid value: replicas must not exceed maxReplicas"
        )
    );
    api.create(
        &PostParams::default(),
        &typed(gizmo(
            "cel",
            json!({"size": 1, "replicas": 2, "mode": "slow"}),
        )),
    )
    .await
    .expect("valid under the rules");

    // A transition rule (oldSelf) runs on update only.
    let err = api_error(
        api.patch(
            "cel",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"mode": "fast"}})),
        )
        .await,
    );
    assert_eq!(
        err.message,
        format!(
            "Gizmo.{GROUP} \"cel\" is invalid: spec.mode: Invalid value: \"fast\": mode is immutable"
        )
    );
    let patched = api
        .patch(
            "cel",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 2}})),
        )
        .await
        .expect("other fields still change");
    assert_eq!(patched.data["spec"]["mode"], "slow");
    assert_eq!(patched.data["spec"]["size"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_resources_keep_their_metadata_and_are_checked() {
    let (_env, _client, http, _dir) = start().await;
    let with_template = gizmo(
        "embedded",
        json!({"size": 1, "template": {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "inner", "labels": {"app": "x"}},
            "spec": {"image": "nginx", "unknown": true},
        }}),
    );
    let (response, created) = send(
        &http,
        HttpRequest::new("POST", path("v1", "")).json(&with_template),
    )
    .await;
    assert_eq!(response.status, 201, "{created}");
    // apiVersion, kind and metadata of an embedded resource are kept
    // although the schema does not list them; unknown fields are pruned.
    assert_eq!(
        created["spec"]["template"],
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "inner", "labels": {"app": "x"}},
               "spec": {"image": "nginx"}})
    );

    let without_kind = gizmo(
        "nokind",
        json!({"size": 1, "template": {"metadata": {"name": "a/b"}, "spec": {}}}),
    );
    let (response, status) = send(
        &http,
        HttpRequest::new("POST", path("v1", "")).json(&without_kind),
    )
    .await;
    assert_eq!(response.status, 422, "{status}");
    // As kube-apiserver: apiVersion and kind required, the embedded
    // metadata validated (names as path segments).
    let got = causes(&status);
    for expected in [
        "spec.template.apiVersion: Required value",
        "spec.template.kind: Required value",
        "spec.template.metadata.name: Invalid value: \"a/b\": may not contain '/'",
    ] {
        assert!(
            got.iter().any(|c| c == expected),
            "missing {expected:?} in {got:#?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_fields_are_pruned_warned_about_or_refused() {
    let (_env, _client, http, _dir) = start().await;
    let body = |name: &str| gizmo(name, json!({"size": 1, "bogus": 1}));

    let (response, created) = send(
        &http,
        HttpRequest::new("POST", path("v1", "?fieldValidation=Ignore")).json(&body("ignored")),
    )
    .await;
    assert_eq!(response.status, 201);
    assert!(created["spec"].get("bogus").is_none(), "pruned: {created}");
    assert!(response.warnings.is_empty());

    let (response, created) = send(
        &http,
        HttpRequest::new("POST", path("v1", "?fieldValidation=Warn")).json(&body("warned")),
    )
    .await;
    assert_eq!(response.status, 201);
    assert!(created["spec"].get("bogus").is_none());
    assert_eq!(
        response.warnings,
        ["299 - \"unknown field \\\"spec.bogus\\\"\""]
    );

    let (response, status) = send(
        &http,
        HttpRequest::new("POST", path("v1", "?fieldValidation=Strict")).json(&body("strict")),
    )
    .await;
    assert_eq!(response.status, 400);
    assert_eq!(
        status["message"],
        "Gizmo in version \"v1\" cannot be handled as a Gizmo: strict decoding error: unknown field \"spec.bogus\""
    );
    let (response, _) = send(&http, HttpRequest::new("GET", path("v1", "/strict"))).await;
    assert_eq!(response.status, 404, "nothing stored under Strict");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_versions_share_one_storage_version() {
    let (_env, client, http, _dir) = start().await;
    let v1 = gizmos(&client, "v1");
    let v2 = gizmos(&client, "v2");
    let created = v2
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": format!("{GROUP}/v2"), "kind": "Gizmo",
                "metadata": {"name": "both"}, "spec": {"size": 4},
            }))
            .expect("gizmo"),
        )
        .await
        .expect("created through v2");
    assert_eq!(
        created.types.as_ref().map(|t| t.api_version.as_str()),
        Some("features.example.com/v2")
    );
    let through_v1 = v1.get("both").await.expect("read through v1");
    assert_eq!(
        through_v1.types.as_ref().map(|t| t.api_version.as_str()),
        Some("features.example.com/v1")
    );
    assert_eq!(through_v1.data["spec"]["size"], 4);
    assert_eq!(
        through_v1.metadata.resource_version,
        created.metadata.resource_version
    );
    // An update through one version is seen through the other.
    v1.patch(
        "both",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"size": 5}})),
    )
    .await
    .expect("patched through v1");
    assert_eq!(v2.get("both").await.expect("v2").data["spec"]["size"], 5);

    // Stored in v1 (the storage version); discovery prefers v2, as
    // kube-apiserver orders versions (v2 before v1).
    let (_, crd) = send(
        &http,
        HttpRequest::new(
            "GET",
            format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.{GROUP}"),
        ),
    )
    .await;
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
    let (_, group) = send(&http, HttpRequest::new("GET", format!("/apis/{GROUP}"))).await;
    assert_eq!(group["preferredVersion"]["version"], "v2");
    let versions: Vec<&str> = group["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .filter_map(|v| v["version"].as_str())
        .collect();
    assert_eq!(versions, ["v2", "v1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scale_subresource_reads_and_writes_replicas() {
    let (_env, client, http, _dir) = start().await;
    let api = gizmos(&client, "v1");
    api.create(
        &PostParams::default(),
        &serde_json::from_value(gizmo("scaled", json!({"size": 1, "replicas": 2}))).expect("gizmo"),
    )
    .await
    .expect("created");
    api.patch_status(
        "scaled",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"replicas": 2, "selector": "app=scaled"}})),
    )
    .await
    .expect("status written");

    let scale = api.get_scale("scaled").await.expect("GET /scale");
    let scale = serde_json::to_value(scale).expect("json");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"], json!({"replicas": 2}));
    assert_eq!(
        scale["status"],
        json!({"replicas": 2, "selector": "app=scaled"})
    );

    let scaled = api
        .patch_scale(
            "scaled",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 4}})),
        )
        .await
        .expect("PATCH /scale");
    assert_eq!(scaled.spec.and_then(|s| s.replicas), Some(4));
    let object = api.get("scaled").await.expect("object");
    assert_eq!(object.data["spec"]["replicas"], 4);
    assert_eq!(object.metadata.generation, Some(2), "a spec change");

    // The object's own rules still apply to a write through /scale.
    let (response, status) = send(
        &http,
        HttpRequest::new("PATCH", path("v1", "/scaled/scale"))
            .header("Content-Type", "application/merge-patch+json")
            .with_body(r#"{"spec":{"replicas":9}}"#),
    )
    .await;
    assert_eq!(response.status, 422, "{status}");
    assert_eq!(
        causes(&status),
        ["spec: Invalid value: replicas must not exceed maxReplicas"]
    );
}
