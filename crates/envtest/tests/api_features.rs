//! API behaviour of issue 3 that the recorded transcripts do not exercise
//! (or exercise only in v1.24's shape), through HTTP and kube-rs: streaming
//! lists, 410 Gone as an HTTP status, `dryRun=All` on every verb,
//! `fieldValidation` on built-in kinds, names validated per kind, node port
//! allocation, and every built-in kind the issue names.

#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;
#[allow(dead_code)]
mod support;

use std::fmt::Debug;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use opctl_envtest::{Config, Envtest};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use support::http::{Http, HttpRequest, HttpResponse};

async fn start(config: Config) -> (Envtest, Client, Http) {
    let env = server::start(config).await;
    let kubeconfig = Kubeconfig::from_yaml(&env.kubeconfig_yaml()).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube-rs config");
    let client = Client::try_from(config).expect("client");
    let http = Http::new(&env.base_url());
    (env, client, http)
}

async fn send(http: &Http, request: HttpRequest) -> (HttpResponse, Value) {
    let response = http
        .send(&request, Duration::from_secs(10))
        .await
        .expect("an answer");
    let body = response.json().unwrap_or(Value::Null);
    (response, body)
}

fn configmap(name: &str, data: Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).expect("configmap")
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_lists_send_the_initial_events_then_a_bookmark() {
    let (_env, client, http) = start(Config::default()).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for name in ["a", "b"] {
        api.create(&PostParams::default(), &configmap(name, json!({"k": name})))
            .await
            .expect("created");
    }
    // Raw: the initial state as ADDED events, then the bookmark that ends it.
    let target = "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true\
                  &resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=5";
    let events = http
        .watch_until(target, Duration::from_secs(10), |events: &[Value]| {
            events.iter().any(|e| e["type"] == "BOOKMARK")
        })
        .await
        .expect("a streaming list");
    let added: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "ADDED")
        .filter_map(|e| e["object"]["metadata"]["name"].as_str())
        // Published in every namespace by the root-CA publisher.
        .filter(|name| *name != "kube-root-ca.crt")
        .collect();
    assert_eq!(added, ["a", "b"]);
    let bookmark = events.last().expect("a bookmark");
    assert_eq!(bookmark["type"], "BOOKMARK");
    assert_eq!(
        bookmark["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );

    // kube-rs's watcher with streaming lists: InitDone after the initial
    // events, then live changes.
    let config = watcher::Config::default().streaming_lists();
    let mut stream = watcher(api.clone(), config).boxed();
    let mut initial = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
            .await
            .expect("watcher answers")
            .expect("no error")
            .expect("stream open");
        match event {
            watcher::Event::InitApply(cm) => initial.push(cm.name_any()),
            watcher::Event::InitDone => break,
            watcher::Event::Init => {}
            other => panic!("unexpected event before InitDone: {other:?}"),
        }
    }
    initial.retain(|name| name != "kube-root-ca.crt");
    initial.sort();
    assert_eq!(initial, ["a", "b"]);
    api.create(&PostParams::default(), &configmap("c", json!({})))
        .await
        .expect("created");
    let next = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
        .await
        .expect("watcher answers")
        .expect("no error")
        .expect("stream open");
    match next {
        watcher::Event::Apply(cm) => assert_eq!(cm.name_any(), "c"),
        other => panic!("expected the new object, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_older_than_the_history_answer_410_gone() {
    let (_env, client, http) = start(Config {
        watch_history: 4,
        read_history: 4,
        ..Config::default()
    })
    .await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for i in 0..3 {
        api.create(
            &PostParams::default(),
            &configmap(&format!("c{i}"), json!({})),
        )
        .await
        .expect("created");
    }
    let (_, first_page) = send(
        &http,
        HttpRequest::new("GET", "/api/v1/namespaces/default/configmaps?limit=1"),
    )
    .await;
    let token = first_page["metadata"]["continue"]
        .as_str()
        .expect("a continue token")
        .to_string();
    let listed_at = first_page["metadata"]["resourceVersion"]
        .as_str()
        .expect("a resourceVersion")
        .to_string();
    for i in 0..10 {
        api.patch(
            "c0",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"n": i.to_string()}})),
        )
        .await
        .expect("patched");
    }
    let (response, status) = send(
        &http,
        HttpRequest::new(
            "GET",
            format!("/api/v1/namespaces/default/configmaps?limit=1&continue={token}"),
        ),
    )
    .await;
    assert_eq!(response.status, 410, "{status}");
    assert_eq!(status["reason"], "Expired");
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("The provided continue parameter is too old")),
        "{status}"
    );
    let (response, status) = send(
        &http,
        HttpRequest::new(
            "GET",
            format!(
                "/api/v1/namespaces/default/configmaps?resourceVersion={listed_at}&resourceVersionMatch=Exact"
            ),
        ),
    )
    .await;
    assert_eq!(response.status, 410, "{status}");
    assert_eq!(
        status["message"],
        "The resourceVersion for the provided list is too old."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_all_is_honoured_by_every_verb() {
    let (_env, client, http) = start(Config::default()).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let dry_post = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let dry_patch = PatchParams::default().dry_run();
    let dry_delete = DeleteParams {
        dry_run: true,
        ..DeleteParams::default()
    };

    let created = api
        .create(&dry_post, &configmap("dry", json!({"a": "1"})))
        .await
        .expect("dry-run create");
    assert!(created.metadata.uid.is_some(), "answered as if created");
    assert!(api.get_opt("dry").await.expect("get").is_none());

    let stored = api
        .create(
            &PostParams::default(),
            &configmap("real", json!({"a": "1"})),
        )
        .await
        .expect("created");
    let rv = stored.resource_version();
    let mut changed = stored.clone();
    changed.data = Some([("a".to_string(), "2".to_string())].into());
    let replaced = api
        .replace("real", &dry_post, &changed)
        .await
        .expect("dry-run PUT");
    assert_eq!(
        replaced
            .data
            .as_ref()
            .and_then(|d| d.get("a"))
            .map(String::as_str),
        Some("2")
    );
    for patch in [
        Patch::Merge(json!({"data": {"a": "3"}})),
        Patch::Strategic(json!({"data": {"a": "3"}})),
        Patch::Json::<Value>(
            serde_json::from_value(json!([{"op": "replace", "path": "/data/a", "value": "3"}]))
                .expect("json patch"),
        ),
    ] {
        let patched = api
            .patch("real", &dry_patch, &patch)
            .await
            .expect("dry-run patch");
        assert_eq!(
            patched
                .data
                .as_ref()
                .and_then(|d| d.get("a"))
                .map(String::as_str),
            Some("3")
        );
    }
    let applied = api
        .patch(
            "real",
            &PatchParams::apply("dry-applier").dry_run(),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"b": "4"}})),
        )
        .await
        .expect("dry-run apply");
    assert_eq!(
        applied
            .data
            .as_ref()
            .and_then(|d| d.get("b"))
            .map(String::as_str),
        Some("4")
    );
    api.delete("real", &dry_delete)
        .await
        .expect("dry-run delete");
    api.delete_collection(&dry_delete, &ListParams::default())
        .await
        .expect("dry-run deletecollection");
    let after = api.get("real").await.expect("still there");
    assert_eq!(after.resource_version(), rv, "nothing was written");
    assert_eq!(
        after
            .data
            .as_ref()
            .and_then(|d| d.get("a"))
            .map(String::as_str),
        Some("1")
    );

    // Subresources too: a dry-run status write of a Pod changes nothing.
    // (A scheduler nobody runs keeps the simulated cluster off the Pod.)
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "nginx"}]},
    }))
    .expect("pod");
    let pod = pods
        .create(&PostParams::default(), &pod)
        .await
        .expect("pod");
    let status = pods
        .patch_status(
            "p",
            &dry_patch,
            &Patch::Merge(json!({"status": {"phase": "Running"}})),
        )
        .await
        .expect("dry-run status patch");
    assert_eq!(
        status.status.and_then(|s| s.phase).as_deref(),
        Some("Running")
    );
    let stored = pods.get("p").await.expect("pod");
    assert_eq!(stored.resource_version(), pod.resource_version());

    // A dry-run NodePort Service shows a port but reserves nothing.
    let (response, shown) = send(
        &http,
        HttpRequest::new("POST", "/api/v1/namespaces/default/services?dryRun=All").json(&json!({
            "metadata": {"name": "np"},
            "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]},
        })),
    )
    .await;
    assert_eq!(response.status, 201, "{shown}");
    assert_eq!(shown["spec"]["ports"][0]["nodePort"], 30080);
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let taken: Service = serde_json::from_value(json!({
        "metadata": {"name": "other"},
        "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]},
    }))
    .expect("service");
    services
        .create(&PostParams::default(), &taken)
        .await
        .expect("the port was not reserved by the dry run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn field_validation_applies_to_builtin_kinds() {
    let (_env, _client, http) = start(Config::default()).await;
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fv", "bogus": 1},
                      "data": {"a": "1"}, "spec": {}});
    let post = |mode: &str| {
        HttpRequest::new(
            "POST",
            format!("/api/v1/namespaces/default/configmaps?fieldValidation={mode}"),
        )
        .json(&body)
    };
    let (response, status) = send(&http, post("Strict")).await;
    assert_eq!(response.status, 400, "{status}");
    assert_eq!(
        status["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"metadata.bogus\", unknown field \"spec\""
    );
    let (response, created) = send(&http, post("Warn")).await;
    assert_eq!(response.status, 201);
    assert_eq!(
        response.warnings,
        [
            "299 - \"unknown field \\\"metadata.bogus\\\"\"",
            "299 - \"unknown field \\\"spec\\\"\""
        ]
    );
    assert!(created.get("spec").is_none(), "pruned: {created}");

    // Duplicate fields are refused under Strict as well, on patches too.
    let (response, status) = send(
        &http,
        HttpRequest::new(
            "PATCH",
            "/api/v1/namespaces/default/configmaps/fv?fieldValidation=Strict",
        )
        .header("Content-Type", "application/merge-patch+json")
        .with_body(r#"{"data": {"b": "1"}, "data": {"c": "2"}, "unknown": 1}"#),
    )
    .await;
    assert_eq!(response.status, 400, "{status}");
    assert!(
        status["message"].as_str().is_some_and(
            |m| m.contains("strict decoding error") && m.contains("unknown field \"unknown\"")
        ),
        "{status}"
    );
}

/// The ServiceAccount admission plugin: a Pod naming an account that does
/// not exist is forbidden (named by its generateName when it has no name);
/// once the account exists the Pod is admitted with the account's image
/// pull secrets, and without a token when the account turns automounting off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_need_their_service_account() {
    let (_env, _client, http) = start(Config::default()).await;
    let pods = "/api/v1/namespaces/default/pods";
    let pod = |meta: Value| {
        json!({"metadata": meta, "spec": {"serviceAccountName": "builder",
            "containers": [{"name": "c", "image": "busybox"}]}})
    };
    let (response, answer) = send(
        &http,
        HttpRequest::new("POST", pods).json(&pod(json!({"name": "p"}))),
    )
    .await;
    assert_eq!(response.status, 403, "{answer}");
    assert_eq!(answer["reason"], "Forbidden");
    assert_eq!(
        answer["message"],
        "pods \"p\" is forbidden: error looking up service account default/builder: serviceaccount \"builder\" not found"
    );
    assert_eq!(answer["details"], json!({"name": "p", "kind": "pods"}));
    let (response, answer) = send(
        &http,
        HttpRequest::new("POST", pods).json(&pod(json!({"generateName": "job-"}))),
    )
    .await;
    assert_eq!(response.status, 403, "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("pods \"job-\" is forbidden: error looking up service account"),
        "{answer}"
    );

    let account = json!({"metadata": {"name": "builder"}, "automountServiceAccountToken": false,
        "imagePullSecrets": [{"name": "registry"}]});
    let (response, answer) = send(
        &http,
        HttpRequest::new("POST", "/api/v1/namespaces/default/serviceaccounts").json(&account),
    )
    .await;
    assert_eq!(response.status, 201, "{answer}");
    let (response, answer) = send(
        &http,
        HttpRequest::new("POST", pods).json(&pod(json!({"name": "p"}))),
    )
    .await;
    assert_eq!(response.status, 201, "{answer}");
    assert_eq!(
        answer["spec"]["imagePullSecrets"],
        json!([{"name": "registry"}])
    );
    assert!(
        answer["spec"].get("volumes").is_none(),
        "no token: {answer}"
    );
    assert!(
        answer["spec"]["containers"][0]
            .get("volumeMounts")
            .is_none(),
        "{answer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_are_validated_by_the_rules_of_each_kind() {
    let (_env, _client, http) = start(Config::default()).await;
    let create = |path: &str, body: Value| HttpRequest::new("POST", path.to_string()).json(&body);
    let label_rule = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    let dns1035_rule = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
    let cases = [
        // A Namespace is a DNS label: a subdomain is told about its dots,
        // anything else gets the label rule.
        (
            "/api/v1/namespaces",
            json!({"metadata": {"name": "a.b"}}),
            Some("metadata.name: Invalid value: \"a.b\": must not contain dots".to_string()),
        ),
        (
            "/api/v1/namespaces",
            json!({"metadata": {"name": "A_b"}}),
            Some(format!(
                "metadata.name: Invalid value: \"A_b\": {label_rule}"
            )),
        ),
        // A Service is a DNS-1035 label: starts with a letter.
        (
            "/api/v1/namespaces/default/services",
            json!({"metadata": {"name": "1svc"}, "spec": {"ports": [{"port": 80}]}}),
            Some(format!(
                "metadata.name: Invalid value: \"1svc\": {dns1035_rule}"
            )),
        ),
        // ConfigMaps and Pods are DNS subdomains: dots are fine.
        (
            "/api/v1/namespaces/default/configmaps",
            json!({"metadata": {"name": "a.b"}}),
            None,
        ),
        (
            "/api/v1/namespaces/default/pods",
            json!({"metadata": {"name": "a.b"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
            None,
        ),
        // RBAC names are path segments: colons and capitals are fine, slashes are not.
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            json!({"metadata": {"name": "system:Reader"}, "rules": []}),
            None,
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
            json!({"metadata": {"name": "a/b"}, "rules": []}),
            Some("metadata.name: Invalid value: \"a/b\": may not contain '/'".to_string()),
        ),
    ];
    for (path, body, expected) in cases {
        let (response, answer) = send(&http, create(path, body)).await;
        match expected {
            None => assert_eq!(response.status, 201, "{path}: {answer}"),
            Some(cause) => {
                assert_eq!(response.status, 422, "{path}: {answer}");
                assert_eq!(causes(&answer), [cause], "{path}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_ports_are_allocated_from_the_range_and_freed() {
    let (_env, client, _http) = start(Config::default()).await;
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let service = |name: &str, kind: &str, node_port: Option<i32>| -> Service {
        let mut port = json!({"port": 80, "targetPort": 8080});
        if let Some(n) = node_port {
            port["nodePort"] = json!(n);
        }
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"type": kind, "selector": {"app": name}, "ports": [port]},
        }))
        .expect("service")
    };
    let node_port = |s: &Service| -> i32 {
        s.spec
            .as_ref()
            .and_then(|s| s.ports.as_ref())
            .and_then(|p| p.first())
            .and_then(|p| p.node_port)
            .expect("a node port")
    };
    let mut seen = Vec::new();
    for (name, kind) in [
        ("np1", "NodePort"),
        ("np2", "NodePort"),
        ("lb", "LoadBalancer"),
    ] {
        let created = services
            .create(&PostParams::default(), &service(name, kind, None))
            .await
            .expect("created");
        let port = node_port(&created);
        assert!((30000..=32767).contains(&port), "{name}: {port}");
        assert!(!seen.contains(&port), "{port} handed out twice");
        let ip = created
            .spec
            .as_ref()
            .and_then(|s| s.cluster_ip.clone())
            .expect("clusterIP");
        let octets = ip
            .parse::<std::net::Ipv4Addr>()
            .expect("an IPv4 address")
            .octets();
        assert!(
            octets[0] == 10 && (96..112).contains(&octets[1]),
            "{ip} is outside 10.96.0.0/12"
        );
        seen.push(port);
    }
    // A ClusterIP Service gets no node port.
    let plain = services
        .create(&PostParams::default(), &service("plain", "ClusterIP", None))
        .await
        .expect("created");
    assert!(
        plain
            .spec
            .and_then(|s| s.ports)
            .and_then(|p| p.first().and_then(|p| p.node_port))
            .is_none()
    );

    // A port in use is refused; once its Service is gone it can be had.
    let err = services
        .create(
            &PostParams::default(),
            &service("clash", "NodePort", Some(seen[0])),
        )
        .await
        .expect_err("the port is taken");
    match err {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 422);
            assert!(
                status.message.ends_with(&format!(
                    "spec.ports[0].nodePort: Invalid value: {}: provided port is already allocated",
                    seen[0]
                )),
                "{}",
                status.message
            );
        }
        other => panic!("expected a 422, got {other:?}"),
    }
    services
        .delete("np1", &DeleteParams::default())
        .await
        .expect("deleted");
    let reused = services
        .create(
            &PostParams::default(),
            &service("clash", "NodePort", Some(seen[0])),
        )
        .await
        .expect("the freed port");
    assert_eq!(node_port(&reused), seen[0]);
}

/// Create, get, list and delete one object of a kind through kube-rs.
async fn round_trip<K>(api: Api<K>, object: Value)
where
    K: Resource + Clone + Debug + Serialize + DeserializeOwned,
    K::DynamicType: Default,
{
    let kind = K::kind(&K::DynamicType::default()).to_string();
    let typed: K = serde_json::from_value(object).unwrap_or_else(|e| panic!("{kind}: {e}"));
    let name = typed.name_any();
    let created = api
        .create(&PostParams::default(), &typed)
        .await
        .unwrap_or_else(|e| panic!("creating {kind} {name}: {e}"));
    assert!(created.meta().uid.is_some(), "{kind}");
    api.get(&name)
        .await
        .unwrap_or_else(|e| panic!("getting {kind} {name}: {e}"));
    let listed = api
        .list(&ListParams::default())
        .await
        .unwrap_or_else(|e| panic!("listing {kind}: {e}"));
    assert!(listed.items.iter().any(|o| o.name_any() == name), "{kind}");
    api.delete(&name, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("deleting {kind} {name}: {e}"));
    for _ in 0..100 {
        if api.get_opt(&name).await.expect("get").is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{kind} {name} not deleted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_builtin_kind_of_the_issue_is_served() {
    use k8s_openapi::api::{apps, batch, coordination, core, events, rbac};
    let (_env, client, http) = start(Config::default()).await;
    let ns = |c: &Client| c.clone();
    let containers = json!([{"name": "c", "image": "nginx"}]);
    let template =
        json!({"metadata": {"labels": {"app": "x"}}, "spec": {"containers": containers}});
    let selector = json!({"matchLabels": {"app": "x"}});
    let c = &client;
    round_trip::<core::v1::Pod>(
        Api::namespaced(ns(c), "default"),
        json!({"metadata": {"name": "pod"}, "spec": {"containers": containers}}),
    )
    .await;
    round_trip::<core::v1::Service>(
        Api::namespaced(ns(c), "default"),
        json!({"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}}),
    )
    .await;
    round_trip::<core::v1::Endpoints>(Api::namespaced(ns(c), "default"), json!({"metadata": {"name": "ep"}, "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]})).await;
    round_trip::<core::v1::ConfigMap>(
        Api::namespaced(ns(c), "default"),
        json!({"metadata": {"name": "cm"}, "data": {"a": "b"}}),
    )
    .await;
    round_trip::<core::v1::Secret>(
        Api::namespaced(ns(c), "default"),
        json!({"metadata": {"name": "sec"}, "stringData": {"a": "b"}}),
    )
    .await;
    round_trip::<core::v1::ServiceAccount>(
        Api::namespaced(ns(c), "default"),
        json!({"metadata": {"name": "sa"}}),
    )
    .await;
    round_trip::<core::v1::Event>(Api::namespaced(ns(c), "default"), json!({"metadata": {"name": "ev"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}, "reason": "R", "message": "m", "type": "Normal"})).await;
    round_trip::<events::v1::Event>(Api::namespaced(ns(c), "default"), json!({"metadata": {"name": "ev2"}, "eventTime": "2025-01-01T00:00:00.000000Z", "reportingController": "x.io/c", "reportingInstance": "i", "action": "A", "reason": "R", "type": "Normal", "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}})).await;
    round_trip::<apps::v1::Deployment>(
        Api::namespaced(ns(c), "default"),
        json!({"metadata": {"name": "dep"}, "spec": {"selector": selector, "template": template}}),
    )
    .await;
    round_trip::<apps::v1::StatefulSet>(Api::namespaced(ns(c), "default"), json!({"metadata": {"name": "sts"}, "spec": {"serviceName": "svc", "selector": selector, "template": template}})).await;
    round_trip::<apps::v1::DaemonSet>(
        Api::namespaced(ns(c), "default"),
        json!({"metadata": {"name": "ds"}, "spec": {"selector": selector, "template": template}}),
    )
    .await;
    round_trip::<apps::v1::ReplicaSet>(
        Api::namespaced(ns(c), "default"),
        json!({"metadata": {"name": "rs"}, "spec": {"selector": selector, "template": template}}),
    )
    .await;
    let job_template = json!({"spec": {"restartPolicy": "Never", "containers": containers}});
    round_trip::<batch::v1::Job>(
        Api::namespaced(ns(c), "default"),
        json!({"metadata": {"name": "job"}, "spec": {"template": job_template}}),
    )
    .await;
    round_trip::<batch::v1::CronJob>(Api::namespaced(ns(c), "default"), json!({"metadata": {"name": "cron"}, "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": job_template}}}})).await;
    round_trip::<coordination::v1::Lease>(Api::namespaced(ns(c), "default"), json!({"metadata": {"name": "lease"}, "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}})).await;
    let rules = json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]);
    round_trip::<rbac::v1::Role>(
        Api::namespaced(ns(c), "default"),
        json!({"metadata": {"name": "role"}, "rules": rules}),
    )
    .await;
    round_trip::<rbac::v1::ClusterRole>(
        Api::all(ns(c)),
        json!({"metadata": {"name": "crole"}, "rules": rules}),
    )
    .await;
    let subjects = json!([{"kind": "ServiceAccount", "name": "sa", "namespace": "default"}]);
    round_trip::<rbac::v1::RoleBinding>(Api::namespaced(ns(c), "default"), json!({"metadata": {"name": "rb"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "role"}, "subjects": subjects})).await;
    round_trip::<rbac::v1::ClusterRoleBinding>(Api::all(ns(c)), json!({"metadata": {"name": "crb"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "crole"}, "subjects": subjects})).await;

    // The namespaces a cluster starts with; unscheduled Pods go at once.
    let namespaces: Api<core::v1::Namespace> = Api::all(client.clone());
    for name in ["default", "kube-system", "kube-public"] {
        namespaces
            .get(name)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let pods: Api<core::v1::Pod> = Api::namespaced(client.clone(), "default");
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(
            // An unscheduled Pod (no scheduler runs `nobody`) goes at once.
            json!({"metadata": {"name": "gone"}, "spec": {"schedulerName": "nobody", "containers": containers}}),
        )
        .expect("pod"),
    )
    .await
    .expect("pod");
    let deleted = pods
        .delete("gone", &DeleteParams::default())
        .await
        .expect("deleted");
    assert!(deleted.is_left(), "the deleted Pod is returned");
    assert!(
        pods.get_opt("gone").await.expect("get").is_none(),
        "gone at once"
    );

    for endpoint in ["/healthz", "/livez", "/readyz"] {
        let (response, _) = send(&http, HttpRequest::new("GET", endpoint)).await;
        assert_eq!(
            (response.status, response.text()),
            (200, "ok".to_string()),
            "{endpoint}"
        );
    }
}

/// Lists and watches served as kube-apiserver v1.32's watch cache serves
/// them: a list at resourceVersion "0" ignores its limit (every item, no
/// continue token), a limited list at another resourceVersion with no match
/// is read exactly there (the legacy rule), a plain watch from a future
/// resourceVersion opens at once and shows only what comes after it, and a
/// streaming list from one answers its 504 inside the stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_and_watches_follow_the_watch_cache_rules() {
    let (_env, client, http) = start(Config::default()).await;
    let ns = "default";
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    for name in ["l-a", "l-b", "l-c"] {
        api.create(&PostParams::default(), &configmap(name, json!({})))
            .await
            .expect("created");
    }
    let list = |query: &str| {
        HttpRequest::new(
            "GET",
            format!("/api/v1/namespaces/{ns}/configmaps?labelSelector=&{query}"),
        )
    };
    let names = |body: &Value| -> Vec<String> {
        body["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| i["metadata"]["name"].as_str())
            .filter(|n| n.starts_with("l-"))
            .map(str::to_string)
            .collect()
    };
    let (_, zero) = send(&http, list("resourceVersion=0&limit=1")).await;
    assert_eq!(names(&zero), ["l-a", "l-b", "l-c"]);
    assert_eq!(zero["metadata"].get("continue"), None, "{zero}");
    let (_, latest) = send(&http, list("limit=1")).await;
    assert_eq!(latest["items"].as_array().map(Vec::len), Some(1));
    assert!(latest["metadata"]["continue"].is_string(), "{latest}");
    let at = latest["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion")
        .to_string();
    api.create(&PostParams::default(), &configmap("l-d", json!({})))
        .await
        .expect("created");
    // Exact at the earlier resourceVersion: l-d is not there yet.
    let (_, exact) = send(&http, list(&format!("resourceVersion={at}&limit=10"))).await;
    assert_eq!(names(&exact), ["l-a", "l-b", "l-c"]);
    assert_eq!(exact["metadata"]["resourceVersion"], at.as_str());
    // Without a limit the same resourceVersion means "not older than".
    let (_, newer) = send(&http, list(&format!("resourceVersion={at}"))).await;
    assert_eq!(names(&newer), ["l-a", "l-b", "l-c", "l-d"]);

    // A watch from two changes ahead: open at once, then only what follows.
    let current: u64 = send(&http, list("limit=1")).await.1["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .expect("resourceVersion");
    let ahead = current + 2;
    let watching = {
        let http = http.clone();
        tokio::spawn(async move {
            http.watch_until(
                &format!("/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion={ahead}&timeoutSeconds=10"),
                Duration::from_secs(15),
                |events: &[Value]| !events.is_empty(),
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    for name in ["w-1", "w-2", "w-3"] {
        api.create(&PostParams::default(), &configmap(name, json!({})))
            .await
            .expect("created");
    }
    let events = watching.await.expect("joined").expect("the watch opened");
    assert_eq!(events[0]["type"], "ADDED");
    assert_eq!(events[0]["object"]["metadata"]["name"], "w-3");

    // A streaming list from a resourceVersion the cache does not reach.
    let target = format!(
        "/api/v1/namespaces/{ns}/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=999999999&allowWatchBookmarks=true&timeoutSeconds=10"
    );
    let events = http
        .watch_until(&target, Duration::from_secs(10), |events: &[Value]| {
            !events.is_empty()
        })
        .await
        .expect("the stream opens with 200");
    assert_eq!(events[0]["type"], "ERROR");
    let status = &events[0]["object"];
    assert_eq!(
        (status["code"].as_i64(), status["reason"].as_str()),
        (Some(504), Some("Timeout"))
    );
    assert!(
        status["message"].as_str().is_some_and(
            |m| m.starts_with("Timeout: Too large resource version: 999999999, current: ")
        ),
        "{status}"
    );
}

/// The warnings registry strategies return (`WarningsOnCreate` and
/// `WarningsOnUpdate`) arrive as `Warning` headers: a Pod name that is no
/// DNS label, and the pod spec warnings of Pods and pod templates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strategies_warn_about_names_and_pod_specs() {
    let (_env, _client, http) = start(Config::default()).await;
    let warnings = |response: &HttpResponse| -> Vec<String> {
        response
            .warnings
            .iter()
            .map(|w| {
                w.strip_prefix("299 - \"")
                    .and_then(|w| w.strip_suffix('"'))
                    .unwrap_or(w)
                    .replace("\\\"", "\"")
            })
            .collect()
    };
    let pod = json!({"metadata": {"name": "web.v1"}, "spec": {"containers": [{
        "name": "c", "image": "busybox",
        "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}],
        "ports": [{"containerPort": 80}, {"containerPort": 80}],
        "resources": {"requests": {"memory": "1.5"}}
    }], "nodeSelector": {"beta.kubernetes.io/os": "linux"}}});
    let (response, body) = send(
        &http,
        HttpRequest::new("POST", "/api/v1/namespaces/default/pods").json(&pod),
    )
    .await;
    assert_eq!(response.status, 201, "{body}");
    assert_eq!(
        warnings(&response),
        [
            "metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]",
            "spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use \"kubernetes.io/os\" instead",
            "spec.containers[0].resources.requests[memory]: fractional byte value \"1500m\" is invalid, must be an integer",
            "spec.containers[0].env[1]: hides previous definition of \"A\", which may be dropped when using apply",
            "spec.containers[0].ports[1]: duplicate port definition with spec.containers[0].ports[0]",
        ]
    );
    // A Deployment's template warns under its path, on create and on a
    // change that bumps the generation.
    let deployment = json!({"metadata": {"name": "web"}, "spec": {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
            "containers": [{"name": "c", "image": "busybox"}],
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}]}}}});
    let (response, body) = send(
        &http,
        HttpRequest::new("POST", "/apis/apps/v1/namespaces/default/deployments").json(&deployment),
    )
    .await;
    assert_eq!(response.status, 201, "{body}");
    let expected = [
        "spec.template.spec.topologySpreadConstraints[0].labelSelector: a null labelSelector results in matching no pod",
    ];
    assert_eq!(warnings(&response), expected);
    let (response, _) = send(
        &http,
        HttpRequest::new("PATCH", "/apis/apps/v1/namespaces/default/deployments/web")
            .header("Content-Type", "application/merge-patch+json")
            .json(&json!({"metadata": {"labels": {"x": "y"}}})),
    )
    .await;
    assert!(
        warnings(&response).is_empty(),
        "no new generation, no warnings"
    );
    let (response, _) = send(
        &http,
        HttpRequest::new("PATCH", "/apis/apps/v1/namespaces/default/deployments/web")
            .header("Content-Type", "application/merge-patch+json")
            .json(&json!({"spec": {"replicas": 2}})),
    )
    .await;
    assert_eq!(warnings(&response), expected);
}
