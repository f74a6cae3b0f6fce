//! CRD conversion webhooks called by the envtest server, end to end: a real
//! HTTPS conversion webhook (rcgen + rustls) that reads and answers
//! ConversionReviews with kube-rs's own types, a CRD served as v1 (storage)
//! and v2, and every read and write made through kube-rs in both versions.

#[allow(dead_code)]
mod admission_support;
#[allow(dead_code)]
mod support;
#[allow(dead_code)]
mod webhook_env;

use std::sync::{Arc, Mutex};

use admission_support::{Pki, Reply, WebhookServer, closed_port};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use opctl_envtest::Config;
use serde_json::{Value, json};
use webhook_env::{api_error, start};

const ENGINE_VERSION: &str = "example.com/engine-version";

/// v1 `spec.type: mysql` and v2 `spec.engine: {name: mysql, version: "8.0"}`,
/// the version kept in an annotation while stored as v1, so nothing is lost.
fn convert(obj: &Value, desired: &str) -> Value {
    let mut out = obj.clone();
    out["apiVersion"] = json!(desired);
    let annotations = out["metadata"]
        .as_object_mut()
        .expect("metadata")
        .entry("annotations")
        .or_insert_with(|| json!({}));
    match desired {
        "example.com/v1" => {
            let engine = obj["spec"]["engine"].clone();
            annotations[ENGINE_VERSION] = engine["version"].clone();
            out["spec"] = json!({"type": engine["name"]});
        }
        _ => {
            let version = annotations
                .as_object_mut()
                .and_then(|a| a.remove(ENGINE_VERSION))
                .unwrap_or(json!("latest"));
            if annotations.as_object().is_some_and(|a| a.is_empty()) {
                out["metadata"]
                    .as_object_mut()
                    .expect("metadata")
                    .remove("annotations");
            }
            out["spec"] = json!({"engine": {"name": obj["spec"]["type"], "version": version}});
        }
    }
    out
}

/// How the test webhook answers.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Convert,
    Refuse,
    Rename,
}

/// Answers with kube-rs's ConversionReview types, as a kube-rs operator does.
fn converter(mode: Arc<Mutex<Mode>>) -> impl Fn(&Value) -> Reply + Send + Sync + 'static {
    move |body| {
        let review: ConversionReview =
            serde_json::from_value(body.clone()).expect("kube-rs reads the ConversionReview");
        let request = ConversionRequest::from_review(review).expect("a request");
        let desired = request.desired_api_version.clone();
        let objects: Vec<Value> = request
            .objects
            .iter()
            .map(|o| {
                assert_eq!(o["kind"], "Database", "only Databases are sent: {o}");
                convert(o, &desired)
            })
            .collect();
        let response = ConversionResponse::for_request(request);
        let response = match *mode.lock().unwrap() {
            Mode::Convert => response.success(objects),
            Mode::Rename => response.success(
                objects
                    .into_iter()
                    .map(|mut o| {
                        o["metadata"]["name"] = json!("renamed");
                        o
                    })
                    .collect(),
            ),
            Mode::Refuse => response.failure(kube::core::Status::failure(
                "engine versions cannot be converted today",
                "",
            )),
        };
        Reply::json(
            200,
            serde_json::to_value(response.into_review()).expect("review"),
        )
    }
}

fn crd(client_config: Value) -> Value {
    let schema =
        |spec: Value| json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "databases.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "databases", "singular": "database", "kind": "Database", "listKind": "DatabaseList"},
            "versions": [
                {"name": "v1", "served": true, "storage": true,
                 "schema": schema(json!({"type": "object", "properties": {"type": {"type": "string"}}}))},
                {"name": "v2", "served": true, "storage": false,
                 "schema": schema(json!({"type": "object", "properties": {"engine": {"type": "object", "properties": {
                     "name": {"type": "string"}, "version": {"type": "string"}}}}}))},
            ],
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"], "clientConfig": client_config}},
        },
    })
}

struct Setup {
    _env: opctl_envtest::Envtest,
    client: kube::Client,
    webhook: WebhookServer,
    mode: Arc<Mutex<Mode>>,
}

impl Setup {
    fn api(&self, version: &str) -> Api<DynamicObject> {
        let gvk = GroupVersionKind::gvk("example.com", version, "Database");
        let resource = ApiResource::from_gvk_with_plural(&gvk, "databases");
        Api::namespaced_with(self.client.clone(), "default", &resource)
    }

    /// The desiredAPIVersion of every review the webhook received since `from`.
    fn reviews_since(&self, from: usize) -> Vec<String> {
        self.webhook.received()[from..]
            .iter()
            .map(|r| {
                r.review["request"]["desiredAPIVersion"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    }
}

/// The webhook and a server with the CRD; `client_config` from the webhook's port and CA.
async fn setup(client_config: impl Fn(&WebhookServer, &Pki) -> Value) -> Setup {
    let pki = Pki::new();
    let mode = Arc::new(Mutex::new(Mode::Convert));
    let webhook = WebhookServer::start(&pki, converter(Arc::clone(&mode))).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let definition = crd(client_config(&webhook, &pki));
    std::fs::write(dir.path().join("crd.json"), definition.to_string()).expect("crd written");
    let (env, client) = start(Config {
        crd_paths: vec![dir.path().to_path_buf()],
        ..Config::default()
    })
    .await;
    Setup {
        _env: env,
        client,
        webhook,
        mode,
    }
}

fn by_url(webhook: &WebhookServer, pki: &Pki) -> Value {
    json!({"url": webhook.url("/convert"), "caBundle": pki.ca_bundle()})
}

fn database(version: &str, name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": format!("example.com/{version}"), "kind": "Database",
        "metadata": {"name": name}, "spec": spec,
    }))
    .expect("database")
}

fn json_of(obj: &DynamicObject) -> Value {
    serde_json::to_value(obj).expect("json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_are_stored_in_the_storage_version_and_read_in_either() {
    let s = setup(by_url).await;
    let (v1, v2) = (s.api("v1"), s.api("v2"));

    // A create in v2 is converted to v1 to be stored, and back for the answer.
    let engine = json!({"engine": {"name": "mysql", "version": "8.0"}});
    let created = v2
        .create(
            &PostParams::default(),
            &database("v2", "orders", engine.clone()),
        )
        .await
        .expect("created in v2");
    assert_eq!(json_of(&created)["apiVersion"], "example.com/v2");
    assert_eq!(json_of(&created)["spec"], engine);
    assert_eq!(s.reviews_since(0), ["example.com/v1", "example.com/v2"]);
    let sent = &s.webhook.received()[0];
    assert_eq!(sent.uri, "/convert?timeout=30s");
    assert_eq!(
        sent.review["request"]["objects"][0]["apiVersion"],
        "example.com/v2"
    );
    // What was stored is v1: its answer to the v2 read came from v1.
    let stored = &s.webhook.received()[1].review["request"]["objects"][0];
    assert_eq!(stored["apiVersion"], "example.com/v1");
    assert_eq!(stored["spec"], json!({"type": "mysql"}));
    assert_eq!(stored["metadata"]["annotations"][ENGINE_VERSION], "8.0");

    // Reads in the storage version call nothing; reads in v2 convert.
    let calls = s.webhook.calls();
    let as_v1 = json_of(&v1.get("orders").await.expect("v1 read"));
    assert_eq!(as_v1["spec"], json!({"type": "mysql"}));
    assert_eq!(s.webhook.calls(), calls);
    let as_v2 = json_of(&v2.get("orders").await.expect("v2 read"));
    assert_eq!(as_v2["spec"], engine);
    assert_eq!(as_v2["metadata"]["uid"], as_v1["metadata"]["uid"]);
    assert_eq!(
        as_v2["metadata"]["resourceVersion"],
        as_v1["metadata"]["resourceVersion"]
    );
    assert!(as_v2["metadata"].get("annotations").is_none(), "{as_v2}");

    // A create in v1 needs no conversion; lists in v2 convert every item.
    let mut users = database("v1", "users", json!({"type": "mongo"}));
    users.metadata.finalizers = Some(vec!["example.com/keep".to_string()]);
    v1.create(&PostParams::default(), &users)
        .await
        .expect("created in v1");
    let calls = s.webhook.calls();
    let listed = v2.list(&ListParams::default()).await.expect("v2 list");
    let specs: Vec<Value> = listed
        .items
        .iter()
        .map(|o| json_of(o)["spec"].clone())
        .collect();
    assert_eq!(
        specs,
        [
            engine.clone(),
            json!({"engine": {"name": "mongo", "version": "latest"}})
        ]
    );
    assert_eq!(s.webhook.calls(), calls + 2);

    // A patch in v2 applies to the v2 view and is stored as v1.
    let patched = v2
        .patch(
            "orders",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"engine": {"version": "8.4"}}})),
        )
        .await
        .expect("patched in v2");
    assert_eq!(json_of(&patched)["spec"]["engine"]["version"], "8.4");
    let as_v1 = json_of(&v1.get("orders").await.expect("v1 read"));
    assert_eq!(as_v1["metadata"]["annotations"][ENGINE_VERSION], "8.4");
    assert_eq!(as_v1["spec"], json!({"type": "mysql"}));

    // A replace in v1 keeps what v2 added (the annotation) and reads back in v2.
    let mut replaced = v1.get("orders").await.expect("v1 read");
    replaced.data["spec"]["type"] = json!("mariadb");
    v1.replace("orders", &PostParams::default(), &replaced)
        .await
        .expect("replaced in v1");
    let as_v2 = json_of(&v2.get("orders").await.expect("v2 read"));
    assert_eq!(
        as_v2["spec"],
        json!({"engine": {"name": "mariadb", "version": "8.4"}})
    );

    // A watch in v2 sees converted objects.
    let events: Vec<_> = v2
        .watch(&WatchParams::default().timeout(1), "0")
        .await
        .expect("watch")
        .try_collect()
        .await
        .expect("events");
    let added: Vec<Value> = events
        .iter()
        .filter_map(|e| match e {
            WatchEvent::Added(o) => Some(json_of(o)["spec"]["engine"]["name"].clone()),
            _ => None,
        })
        .collect();
    assert_eq!(added, [json!("mariadb"), json!("mongo")]);

    // A delete in v2 of an object a finalizer holds answers with the v2 object.
    let deleted = v2
        .delete("users", &DeleteParams::default())
        .await
        .expect("deleted");
    let deleted = json_of(&deleted.left().expect("the terminating object"));
    assert_eq!(deleted["spec"]["engine"]["name"], "mongo");
    assert!(deleted["metadata"]["deletionTimestamp"].is_string());

    // A delete that removes the object at once answers with a Status, which
    // is not converted.
    v1.create(
        &PostParams::default(),
        &database("v1", "gone", json!({"type": "mysql"})),
    )
    .await
    .expect("created");
    let status = v2
        .delete("gone", &DeleteParams::default())
        .await
        .expect("deleted")
        .right()
        .expect("a Status");
    assert!(status.is_success(), "{status:?}");
}

/// The storageVersionHash discovery shows for databases in example.com/v1.
async fn storage_version_hash(client: &kube::Client) -> String {
    let request = axum::http::Request::get("/apis/example.com/v1")
        .body(Vec::new())
        .expect("request");
    let list: Value = client.request(request).await.expect("discovery");
    list["resources"]
        .as_array()
        .and_then(|rs| rs.iter().find(|r| r["name"] == "databases"))
        .map(|r| {
            r["storageVersionHash"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .expect("databases in discovery")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_storage_version_is_recorded_and_old_objects_still_convert() {
    // Reached as a Service: no such Service exists, so its port is the webhook's on loopback.
    let s = setup(|webhook, pki| {
        json!({"service": {"namespace": "system", "name": "webhook-service",
                           "path": "/convert", "port": webhook.port},
               "caBundle": pki.ca_bundle()})
    })
    .await;
    let (v1, v2) = (s.api("v1"), s.api("v2"));
    v1.create(
        &PostParams::default(),
        &database("v1", "old", json!({"type": "mongo"})),
    )
    .await
    .expect("created in v1");
    let received = s.webhook.received();
    assert!(received.is_empty(), "{received:?}");

    let crds: Api<CustomResourceDefinition> = Api::all(s.client.clone());
    let status = |crd: CustomResourceDefinition| {
        crd.status
            .and_then(|st| st.stored_versions)
            .unwrap_or_default()
    };
    let crd = crds.get("databases.example.com").await.expect("crd");
    assert_eq!(status(crd), ["v1"]);
    let hash_before = storage_version_hash(&s.client).await;
    crds.patch(
        "databases.example.com",
        &PatchParams::default(),
        &Patch::Json::<()>(
            serde_json::from_value(json!([
                {"op": "replace", "path": "/spec/versions/0/storage", "value": false},
                {"op": "replace", "path": "/spec/versions/1/storage", "value": true},
            ]))
            .expect("patch"),
        ),
    )
    .await
    .expect("v2 is the storage version");
    let crd = crds.get("databases.example.com").await.expect("crd");
    assert_eq!(status(crd), ["v1", "v2"]);
    // As kube-apiserver's CRD handler, envtest starts serving the new storage
    // version when its CRD controller sees the update: a client that needs it
    // waits for discovery to show the new storage version hash.
    let mut waited = 0;
    while storage_version_hash(&s.client).await == hash_before {
        assert!(waited < 100, "the storage version hash never changed");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        waited += 1;
    }

    // Writes in v1 are now converted to v2; the object stored as v1 still reads in v2.
    let calls = s.webhook.calls();
    v1.create(
        &PostParams::default(),
        &database("v1", "new", json!({"type": "mysql"})),
    )
    .await
    .expect("created in v1");
    assert_eq!(s.reviews_since(calls), ["example.com/v2", "example.com/v1"]);
    let received = s.webhook.received();
    assert_eq!(
        received[calls].host,
        "webhook-service.system.svc:".to_string() + &s.webhook.port.to_string()
    );
    let old = json_of(&v2.get("old").await.expect("v2 read"));
    assert_eq!(old["spec"]["engine"]["name"], "mongo");
    let new = json_of(&v2.get("new").await.expect("v2 read"));
    assert_eq!(new["spec"]["engine"]["name"], "mysql");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_read_as_kube_apiservers() {
    let s = setup(by_url).await;
    let (v1, v2) = (s.api("v1"), s.api("v2"));
    v1.create(
        &PostParams::default(),
        &database("v1", "a", json!({"type": "mongo"})),
    )
    .await
    .expect("created in v1");
    *s.mode.lock().unwrap() = Mode::Refuse;

    // A write that must be converted fails as an internal error...
    let err = api_error(
        v2.create(
            &PostParams::default(),
            &database("v2", "b", json!({"engine": {"name": "mysql"}})),
        )
        .await,
    );
    assert_eq!(err.code, 500);
    assert_eq!(err.reason, "InternalError");
    assert_eq!(
        err.message,
        "Internal error occurred: conversion webhook for example.com/v2, Kind=Database failed: engine versions cannot be converted today"
    );
    // ...and a read as a 500 without a reason.
    let err = api_error(v2.get("a").await);
    assert_eq!((err.code, err.reason.as_str()), (500, ""));
    assert_eq!(
        err.message,
        "conversion webhook for example.com/v1, Kind=Database failed: engine versions cannot be converted today"
    );
    assert_eq!(api_error(v2.list(&ListParams::default()).await).code, 500);
    // Reads in the storage version need no webhook.
    v1.get("a").await.expect("v1 read");

    // A watch ends with an ERROR event.
    let mut events = Box::pin(
        v2.watch(&WatchParams::default().timeout(5), "0")
            .await
            .expect("watch"),
    );
    match events.next().await {
        Some(Ok(WatchEvent::Error(e))) => {
            assert_eq!((e.code, e.reason.as_str()), (500, "InternalError"));
            assert!(
                e.message
                    .starts_with("conversion webhook for example.com/v1")
            );
        }
        other => panic!("expected an ERROR event, got {other:?}"),
    }

    // A webhook may not change the name.
    *s.mode.lock().unwrap() = Mode::Rename;
    let err = api_error(v2.get("a").await);
    assert_eq!(
        err.message,
        "conversion webhook for example.com/v1, Kind=Database returned invalid object: must have the same name: a != renamed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_webhook_is_reported_with_gos_words() {
    let port = closed_port().await;
    let s = setup(move |_, pki| {
        json!({"url": format!("https://127.0.0.1:{port}/convert"), "caBundle": pki.ca_bundle()})
    })
    .await;
    let err = api_error(
        s.api("v2")
            .create(
                &PostParams::default(),
                &database("v2", "b", json!({"engine": {"name": "mysql"}})),
            )
            .await,
    );
    assert_eq!(
        err.message,
        format!(
            "Internal error occurred: conversion webhook for example.com/v2, Kind=Database failed: Post \"https://127.0.0.1:{port}/convert?timeout=30s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        )
    );
}
