//! Many writers on one object: kube-apiserver answers every write that
//! carries no resourceVersion precondition by reading the object again and
//! retrying inside the server (`GuaranteedUpdate`), so such a write never
//! gets 409, whatever its verb or patch type, and no writer's change is
//! lost. Only a precondition the client sent may fail with 409.

#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;
#[allow(dead_code)]
mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use opctl_envtest::{Config, Envtest, Simulation};
use serde_json::{Value, json};
use support::http::{Http, HttpRequest, HttpResponse};

const GROUP: &str = "contention.example.com";
const NS: &str = "contend";
const MERGE: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

/// Widgets: a custom resource with a status subresource whose status keeps
/// any keys.
fn widget_crd() -> Value {
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{GROUP}")},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": open, "status": open}}},
                "subresources": {"status": {}}}],
        }
    })
}

/// A bare API server (no simulation rewriting the Deployment's status)
/// with the Widget CRD installed.
async fn start() -> (Envtest, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("widgets.json"), widget_crd().to_string()).expect("CRD");
    let env = server::start(Config {
        crd_paths: vec![dir.path().to_path_buf()],
        simulation: Simulation::off(),
        ..Config::default()
    })
    .await;
    (env, dir)
}

async fn send(http: &Http, request: HttpRequest) -> HttpResponse {
    let what = format!("{} {}", request.method, request.target);
    http.send(&request, Duration::from_secs(90))
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"))
}

async fn must(http: &Http, request: HttpRequest, status: u16) -> Value {
    let what = format!("{} {}", request.method, request.target);
    let response = send(http, request).await;
    assert_eq!(response.status, status, "{what}: {}", response.text());
    response.json().unwrap_or(Value::Null)
}

fn patch(target: &str, content_type: &str, body: &Value) -> HttpRequest {
    HttpRequest::new("PATCH", target)
        .header("Content-Type", content_type)
        .with_body(body.to_string())
}

fn put(target: &str, body: &Value) -> HttpRequest {
    HttpRequest::new("PUT", target).json(body)
}

const CM: &str = "/api/v1/namespaces/contend/configmaps/target";
const CM_PUT: &str = "/api/v1/namespaces/contend/configmaps/replaced";
const WIDGET: &str = "/apis/contention.example.com/v1/namespaces/contend/widgets/target";
const DEPLOYMENT: &str = "/apis/apps/v1/namespaces/contend/deployments/target";

/// One kind of unconditional write.
#[derive(Debug, Clone, Copy)]
enum Verb {
    /// Merge patch of one new ConfigMap key.
    Merge,
    /// Merge patch whose value merely reads like a resourceVersion.
    MergeRvText,
    /// JSON patch adding one key (and testing nothing).
    JsonPatch,
    /// Strategic merge patch of one new key.
    Strategic,
    /// Server-side apply of all the writer's keys so far, one field
    /// manager per writer.
    Apply,
    /// Merge patch of the Widget's status (the status subresource).
    StatusMerge,
    /// JSON patch of the Widget's status.
    StatusJsonPatch,
    /// Server-side apply of the Widget's status, one manager per writer.
    StatusApply,
    /// GET then PUT without metadata.resourceVersion.
    Update,
    /// GET then PUT of the Deployment's status without resourceVersion.
    StatusUpdate,
}

const VERBS: [Verb; 10] = [
    Verb::Merge,
    Verb::MergeRvText,
    Verb::JsonPatch,
    Verb::Strategic,
    Verb::Apply,
    Verb::StatusMerge,
    Verb::StatusJsonPatch,
    Verb::StatusApply,
    Verb::Update,
    Verb::StatusUpdate,
];

/// The key writer `w` adds in its `i`-th write.
fn key(verb: Verb, w: usize, i: usize) -> String {
    let prefix = match verb {
        Verb::Merge | Verb::StatusMerge => "m",
        Verb::MergeRvText => "r",
        Verb::JsonPatch | Verb::StatusJsonPatch => "j",
        Verb::Strategic => "s",
        Verb::Apply | Verb::StatusApply => "a",
        Verb::Update | Verb::StatusUpdate => "u",
    };
    format!("{prefix}{w}-{i}")
}

/// The request of writer `w`'s `i`-th write (a GET comes first for updates).
async fn write(http: &Http, verb: Verb, w: usize, i: usize) -> HttpResponse {
    let k = key(verb, w, i);
    let applied_keys = |i: usize| -> serde_json::Map<String, Value> {
        (0..=i)
            .map(|j| (key(verb, w, j), Value::String("v".into())))
            .collect()
    };
    let request = match verb {
        Verb::Merge => patch(CM, MERGE, &json!({"data": {k: "v"}})),
        Verb::MergeRvText => patch(
            CM,
            MERGE,
            &json!({"data": {k: format!("{{\"metadata\":{{\"resourceVersion\":\"{i}\"}}}}")}}),
        ),
        Verb::JsonPatch => patch(
            CM,
            JSON_PATCH,
            &json!([{"op": "add", "path": format!("/data/{k}"), "value": "v"}]),
        ),
        Verb::Strategic => patch(CM, STRATEGIC, &json!({"data": {k: "v"}})),
        Verb::Apply => patch(
            &format!("{CM}?fieldManager=cm-applier-{w}"),
            APPLY,
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "target", "namespace": NS}, "data": applied_keys(i)}),
        ),
        Verb::StatusMerge => patch(
            &format!("{WIDGET}/status"),
            MERGE,
            &json!({"status": {k: "v"}}),
        ),
        Verb::StatusJsonPatch => patch(
            &format!("{WIDGET}/status"),
            JSON_PATCH,
            &json!([{"op": "add", "path": format!("/status/{k}"), "value": "v"}]),
        ),
        Verb::StatusApply => patch(
            &format!("{WIDGET}/status?fieldManager=status-applier-{w}"),
            APPLY,
            &json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Widget",
                "metadata": {"name": "target", "namespace": NS}, "status": applied_keys(i)}),
        ),
        Verb::Update => {
            let mut cm = must(http, HttpRequest::new("GET", CM_PUT), 200).await;
            cm["metadata"]
                .as_object_mut()
                .expect("metadata")
                .remove("resourceVersion");
            cm["data"] = json!({"writer": k});
            put(CM_PUT, &cm)
        }
        Verb::StatusUpdate => {
            let mut d = must(http, HttpRequest::new("GET", DEPLOYMENT), 200).await;
            d["metadata"]
                .as_object_mut()
                .expect("metadata")
                .remove("resourceVersion");
            d["status"] = json!({"observedGeneration": (w * 1000 + i) as u64});
            put(&format!("{DEPLOYMENT}/status"), &d)
        }
    };
    send(http, request).await
}

/// What a write's answer must show of that write.
fn shows_write(verb: Verb, w: usize, i: usize, body: &Value) -> bool {
    let k = key(verb, w, i);
    match verb {
        Verb::Merge | Verb::MergeRvText | Verb::JsonPatch | Verb::Strategic | Verb::Apply => {
            body["data"].get(&k).is_some()
        }
        Verb::StatusMerge | Verb::StatusJsonPatch | Verb::StatusApply => {
            body["status"].get(&k).is_some()
        }
        Verb::Update => body["data"]["writer"] == k.as_str(),
        Verb::StatusUpdate => body["status"]["observedGeneration"] == (w * 1000 + i) as u64,
    }
}

async fn set_up(http: &Http) {
    must(
        http,
        HttpRequest::new("POST", "/api/v1/namespaces")
            .json(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})),
        201,
    )
    .await;
    for (name, data) in [("target", json!({"seed": "v"})), ("replaced", json!({}))] {
        must(
            http,
            HttpRequest::new("POST", "/api/v1/namespaces/contend/configmaps").json(
                &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}),
            ),
            201,
        )
        .await;
    }
    must(
        http,
        HttpRequest::new("POST", "/apis/contention.example.com/v1/namespaces/contend/widgets").json(
            &json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Widget", "metadata": {"name": "target"}, "spec": {}}),
        ),
        201,
    )
    .await;
    // The JSON patches add under /status, which must exist first.
    must(
        http,
        patch(
            &format!("{WIDGET}/status"),
            MERGE,
            &json!({"status": {"seed": "v"}}),
        ),
        200,
    )
    .await;
    must(
        http,
        HttpRequest::new("POST", "/apis/apps/v1/namespaces/contend/deployments").json(&json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "target"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "t"}},
                "template": {"metadata": {"labels": {"app": "t"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}
        })),
        201,
    )
    .await;
}

/// 40 writers (4 per kind of write), 16 writes each, all at once on the
/// same objects: no 409, every answer shows its write, and every key a
/// patch or apply added is still there at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unconditional_writes_never_conflict_and_lose_nothing() {
    const PER_VERB: usize = 4;
    const WRITES: usize = 16;
    let (env, _dir) = start().await;
    let http = Http::new(&env.base_url());
    set_up(&http).await;

    let mut writers = Vec::new();
    for (n, verb) in VERBS
        .iter()
        .cycle()
        .take(VERBS.len() * PER_VERB)
        .enumerate()
    {
        let verb = *verb;
        let http = Http::new(&env.base_url());
        writers.push(tokio::spawn(async move {
            let mut failures = Vec::new();
            for i in 0..WRITES {
                let response = write(&http, verb, n, i).await;
                let body = response.json().unwrap_or(Value::Null);
                if response.status != 200 || !shows_write(verb, n, i, &body) {
                    failures.push(format!(
                        "{verb:?} writer {n} write {i}: {} {}",
                        response.status,
                        support::http::truncate(&response.text(), 300)
                    ));
                }
            }
            failures
        }));
    }
    let mut failures = Vec::new();
    for writer in writers {
        failures.extend(writer.await.expect("writer task"));
    }
    let conflicts = failures.iter().filter(|f| f.contains(": 409 ")).count();
    assert!(
        failures.is_empty(),
        "{} of {} unconditional writes failed ({conflicts} with 409):\n{}",
        failures.len(),
        VERBS.len() * PER_VERB * WRITES,
        failures.join("\n")
    );

    let cm = must(&http, HttpRequest::new("GET", CM), 200).await;
    let widget = must(&http, HttpRequest::new("GET", WIDGET), 200).await;
    let mut missing = BTreeSet::new();
    for (n, verb) in VERBS
        .iter()
        .cycle()
        .take(VERBS.len() * PER_VERB)
        .enumerate()
    {
        let holder = match verb {
            Verb::Update | Verb::StatusUpdate => continue,
            Verb::StatusMerge | Verb::StatusJsonPatch | Verb::StatusApply => &widget["status"],
            _ => &cm["data"],
        };
        for i in 0..WRITES {
            let k = key(*verb, n, i);
            if holder.get(&k).is_none() {
                missing.insert(format!("{verb:?}:{k}"));
            }
        }
    }
    assert!(missing.is_empty(), "keys lost: {missing:?}");
    // Each applier still owns its own keys (nobody took them over).
    let managers: BTreeSet<&str> = cm["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
        .iter()
        .filter(|e| e["operation"] == "Apply")
        .filter_map(|e| e["manager"].as_str())
        .collect();
    assert_eq!(
        managers.len(),
        PER_VERB,
        "appliers of the ConfigMap: {managers:?}"
    );
    env.shutdown().await;
}

/// A precondition the client sent still fails with 409 when stale, for
/// every verb that can carry one, and the refused write changes nothing; a
/// current one is accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_precondition_still_conflicts() {
    let (env, _dir) = start().await;
    let http = Http::new(&env.base_url());
    set_up(&http).await;
    let stale = must(&http, HttpRequest::new("GET", CM), 200).await["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion")
        .to_string();
    let bumped = must(
        &http,
        patch(CM, MERGE, &json!({"data": {"bump": "v"}})),
        200,
    )
    .await;
    let current = bumped["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion")
        .to_string();
    let widget_stale =
        must(&http, HttpRequest::new("GET", WIDGET), 200).await["metadata"]["resourceVersion"]
            .as_str()
            .expect("resourceVersion")
            .to_string();
    must(
        &http,
        patch(
            &format!("{WIDGET}/status"),
            MERGE,
            &json!({"status": {"bump": "v"}}),
        ),
        200,
    )
    .await;

    let mut stale_put = bumped.clone();
    stale_put["metadata"]["resourceVersion"] = json!(stale);
    stale_put["data"]["stale-put"] = json!("v");
    let cases = [
        (
            "merge patch",
            patch(
                CM,
                MERGE,
                &json!({"metadata": {"resourceVersion": stale}, "data": {"stale-merge": "v"}}),
            ),
        ),
        (
            "JSON patch",
            patch(
                CM,
                JSON_PATCH,
                &json!([{"op": "replace", "path": "/metadata/resourceVersion", "value": stale},
                        {"op": "add", "path": "/data/stale-json", "value": "v"}]),
            ),
        ),
        (
            "strategic merge patch",
            patch(
                CM,
                STRATEGIC,
                &json!({"metadata": {"resourceVersion": stale}, "data": {"stale-strategic": "v"}}),
            ),
        ),
        (
            "apply",
            patch(
                &format!("{CM}?fieldManager=stale-applier"),
                APPLY,
                &json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "target", "namespace": NS, "resourceVersion": stale},
                    "data": {"stale-apply": "v"}}),
            ),
        ),
        ("update", put(CM, &stale_put)),
        (
            "status merge patch",
            patch(
                &format!("{WIDGET}/status"),
                MERGE,
                &json!({"metadata": {"resourceVersion": widget_stale}, "status": {"stale-status": "v"}}),
            ),
        ),
    ];
    for (what, request) in cases {
        let response = send(&http, request).await;
        assert_eq!(response.status, 409, "{what}: {}", response.text());
        let status = response.json().expect("a Status");
        assert_eq!(status["reason"], "Conflict", "{what}: {status}");
        assert!(
            status["message"]
                .as_str()
                .unwrap_or_default()
                .ends_with("the object has been modified; please apply your changes to the latest version and try again"),
            "{what}: {status}"
        );
    }
    let cm = must(&http, HttpRequest::new("GET", CM), 200).await;
    assert_eq!(
        cm["metadata"]["resourceVersion"], current,
        "a refused write changed the ConfigMap: {cm}"
    );
    let widget = must(&http, HttpRequest::new("GET", WIDGET), 200).await;
    assert!(widget["status"].get("stale-status").is_none(), "{widget}");

    // The current resourceVersion is a precondition that holds.
    let fresh = must(
        &http,
        patch(
            CM,
            MERGE,
            &json!({"metadata": {"resourceVersion": current}, "data": {"fresh": "v"}}),
        ),
        200,
    )
    .await;
    assert_eq!(fresh["data"]["fresh"], "v");
    env.shutdown().await;
}

/// 16 field managers apply their own key to an object that does not exist
/// yet, all at once: one creates it (201), the others find it created and
/// apply to it (200); none gets AlreadyExists, and every key is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_applies_that_create_never_conflict() {
    const APPLIERS: usize = 16;
    let (env, _dir) = start().await;
    let http = Http::new(&env.base_url());
    set_up(&http).await;
    let mut appliers = Vec::new();
    for w in 0..APPLIERS {
        let http = Http::new(&env.base_url());
        appliers.push(tokio::spawn(async move {
            let request = patch(
                &format!("/api/v1/namespaces/contend/configmaps/born?fieldManager=creator-{w}"),
                APPLY,
                &json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "born", "namespace": NS}, "data": {format!("k{w}"): "v"}}),
            );
            let response = send(&http, request).await;
            (response.status, response.text())
        }));
    }
    let mut statuses = Vec::new();
    for applier in appliers {
        let (status, text) = applier.await.expect("applier task");
        assert!(status == 200 || status == 201, "{status}: {text}");
        statuses.push(status);
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "exactly one apply creates: {statuses:?}"
    );
    let born = must(
        &http,
        HttpRequest::new("GET", "/api/v1/namespaces/contend/configmaps/born"),
        200,
    )
    .await;
    for w in 0..APPLIERS {
        assert_eq!(born["data"][format!("k{w}")], "v", "{born}");
    }
    env.shutdown().await;
}

/// DELETEs without preconditions of an object held by a finalizer, at the
/// same time as patches of it: every DELETE answers 200 (the first marks it
/// terminating, the others find it so), every patch 200, nothing is lost;
/// the object goes once its finalizer is removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deletes_racing_patches_never_conflict() {
    const WRITERS: usize = 8;
    const WRITES: usize = 10;
    let (env, _dir) = start().await;
    let http = Http::new(&env.base_url());
    set_up(&http).await;
    let doomed = "/api/v1/namespaces/contend/configmaps/doomed";
    must(
        &http,
        HttpRequest::new("POST", "/api/v1/namespaces/contend/configmaps").json(&json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "doomed", "finalizers": ["example.com/keep"]}, "data": {}})),
        201,
    )
    .await;
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let http = Http::new(&env.base_url());
        tasks.push(tokio::spawn(async move {
            let mut failures = Vec::new();
            for i in 0..WRITES {
                let request = if w % 2 == 0 {
                    HttpRequest::new("DELETE", doomed)
                } else {
                    patch(doomed, MERGE, &json!({"data": {format!("k{w}-{i}"): "v"}}))
                };
                let what = format!("{} by {w}", request.method);
                let response = send(&http, request).await;
                if response.status != 200 {
                    failures.push(format!("{what}: {} {}", response.status, response.text()));
                }
            }
            failures
        }));
    }
    let mut failures = Vec::new();
    for task in tasks {
        failures.extend(task.await.expect("task"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let cm = must(&http, HttpRequest::new("GET", doomed), 200).await;
    assert!(cm["metadata"]["deletionTimestamp"].is_string(), "{cm}");
    for w in (1..WRITERS).step_by(2) {
        for i in 0..WRITES {
            assert_eq!(cm["data"][format!("k{w}-{i}")], "v", "{cm}");
        }
    }
    must(
        &http,
        patch(doomed, MERGE, &json!({"metadata": {"finalizers": null}})),
        200,
    )
    .await;
    let gone = send(&http, HttpRequest::new("GET", doomed)).await;
    assert_eq!(gone.status, 404, "{}", gone.text());
    env.shutdown().await;
}
