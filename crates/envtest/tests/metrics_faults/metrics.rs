//! `apiserver_request_total` through kube-rs and kubectl.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchParams};
use opctl_envtest::Config;
use serde_json::json;

use super::support::kubectl::Kubectl;
use super::{Samples, client_of, scrape, server};

/// The series of one request to a resource, as kube-apiserver labels it.
fn series(verb: &str, resource: &str, sub: &str, scope: &str, dry_run: &str, code: u16) -> String {
    format!(
        "apiserver_request_total{{code=\"{code}\",component=\"apiserver\",dry_run=\"{dry_run}\",group=\"\",resource=\"{resource}\",scope=\"{scope}\",subresource=\"{sub}\",verb=\"{verb}\",version=\"v1\"}}"
    )
}

fn configmap(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}}))
        .expect("configmap")
}

/// Every kind of request an operator makes moves exactly its own series by
/// one, errors included, and nothing else moves (reading `/metrics` is not
/// counted, nor is a request to a path nothing serves).
#[tokio::test]
async fn each_request_moves_exactly_its_series() {
    let env = server::start_default().await;
    let client = client_of(&env).await;
    let ns = "metrics";
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": ns}})).expect("namespace"),
        )
        .await
        .expect("namespace created");
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);

    let before = scrape(&client).await;
    assert_eq!(
        scrape(&client).await,
        before,
        "reading /metrics moves no counter"
    );

    api.create(&PostParams::default(), &configmap("a"))
        .await
        .expect("create");
    let err = api.create(&PostParams::default(), &configmap("a")).await;
    assert!(matches!(err, Err(kube::Error::Api(s)) if s.code == 409));
    api.get("a").await.expect("get");
    assert!(api.get("missing").await.is_err());
    api.list(&ListParams::default()).await.expect("list");
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "2"}})),
    )
    .await
    .expect("merge patch");
    api.patch(
        "a",
        &PatchParams::apply("metrics-test").force(),
        &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a"}, "data": {"k": "3"}})),
    )
    .await
    .expect("apply");
    let mut current = api.get("a").await.expect("get again");
    current.data = Some([("k".to_string(), "4".to_string())].into());
    api.replace("a", &PostParams::default(), &current)
        .await
        .expect("replace");
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    api.create(&dry, &configmap("b"))
        .await
        .expect("dry-run create");
    api.delete("a", &DeleteParams::default())
        .await
        .expect("delete");
    api.delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .expect("delete collection");
    // A watch is counted when it ends, here after one second.
    let stream = api
        .watch(&WatchParams::default().timeout(1), "0")
        .await
        .expect("watch");
    let _: Vec<_> = stream.try_collect().await.expect("watch ran");
    // Not routed on kube-apiserver either: not counted.
    let unknown = axum::http::Request::get(format!("/api/v1/namespaces/{ns}/nosuchthings"))
        .body(Vec::new())
        .expect("request");
    assert!(client.request_text(unknown).await.is_err());

    let after = wait_for(&client, |s| {
        s.get(&series("WATCH", "configmaps", "", "namespace", "", 200)) > 0
    })
    .await;
    let expected: std::collections::BTreeMap<String, i64> = [
        series("POST", "configmaps", "", "resource", "", 201),
        series("POST", "configmaps", "", "resource", "", 409),
        series("GET", "configmaps", "", "resource", "", 404),
        series("LIST", "configmaps", "", "namespace", "", 200),
        series("PATCH", "configmaps", "", "resource", "", 200),
        series("APPLY", "configmaps", "", "resource", "", 200),
        series("PUT", "configmaps", "", "resource", "", 200),
        series("POST", "configmaps", "", "resource", "All", 201),
        series("DELETE", "configmaps", "", "resource", "", 200),
        series("DELETE", "configmaps", "", "namespace", "", 200),
        series("WATCH", "configmaps", "", "namespace", "", 200),
    ]
    .into_iter()
    .map(|s| (s, 1))
    .chain([(series("GET", "configmaps", "", "resource", "", 200), 2)])
    .collect();
    // Two GETs of "a" answered 200; everything else once.
    assert_eq!(after.since(&before), expected);
}

/// Reads `/metrics` until `ready` holds (a watch is counted as its stream
/// closes, which the client may see first).
async fn wait_for(client: &kube::Client, ready: impl Fn(&Samples) -> bool) -> Samples {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let samples = scrape(client).await;
        if ready(&samples) {
            return samples;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the counters never reached the expected state: {samples:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// An open watch shows in `apiserver_longrunning_requests` and is counted
/// in `apiserver_request_total` once the client goes away.
#[tokio::test]
async fn an_open_watch_is_a_longrunning_request_until_it_ends() {
    let env = server::start_default().await;
    let client = client_of(&env).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let gauge = "apiserver_longrunning_requests{component=\"apiserver\",group=\"\",resource=\"configmaps\",scope=\"namespace\",subresource=\"\",verb=\"WATCH\",version=\"v1\"}";
    let total = series("WATCH", "configmaps", "", "namespace", "", 200);
    let mut stream = api
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch")
        .boxed();
    api.create(&PostParams::default(), &configmap("w"))
        .await
        .expect("create");
    let first = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("an event arrives");
    assert!(matches!(first, Some(Ok(_))), "{first:?}");
    let open = scrape(&client).await;
    assert_eq!(open.get(gauge), 1);
    assert_eq!(open.get(&total), 0, "not counted while it runs");
    drop(stream);
    let closed = wait_for(&client, |s| s.get(&total) == 1).await;
    assert_eq!(closed.get(gauge), 0);
}

/// kubectl reads `/metrics` with `get --raw`; a user without the
/// permission is refused as kube-apiserver refuses them, and may read it
/// once in group `system:monitoring`.
#[tokio::test]
async fn kubectl_reads_metrics_and_rbac_guards_them() {
    let background = server::background(Config::default());
    let k = Kubectl::new(&background.kubeconfig);
    let out = k.run(&["get", "--raw", "/metrics"]);
    assert!(out.success(), "{out:?}");
    assert_eq!(out.stdout, "", "no metric has a sample yet");
    let out = k.run(&["get", "configmaps", "-n", "default"]);
    assert!(out.success(), "{out:?}");
    let out = k.run(&["get", "--raw", "/metrics"]);
    assert!(
        out.stdout
            .contains("# TYPE apiserver_request_total counter\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains(&series("LIST", "configmaps", "", "namespace", "", 200).replace('}', "} 1")),
        "{}",
        out.stdout
    );

    // kubectl's aggregated discovery and the root health check are counted
    // too, as kube-apiserver counts them.
    let samples = Samples::parse(&out.stdout);
    assert!(
        samples.get("apiserver_request_total{code=\"200\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"\",scope=\"\",subresource=\"apis\",verb=\"GET\",version=\"\"}") > 0,
        "{}",
        out.stdout
    );
    let out = k.run(&["get", "--raw", "/healthz"]);
    assert_eq!(out.stdout, "ok");
    let out = k.run(&["get", "--raw", "/metrics"]);
    let healthz = "apiserver_request_total{code=\"200\",component=\"\",dry_run=\"\",group=\"\",resource=\"\",scope=\"\",subresource=\"/healthz\",verb=\"GET\",version=\"\"}";
    assert_eq!(
        Samples::parse(&out.stdout).get(healthz),
        1,
        "{}",
        out.stdout
    );

    let refused = k.run(&["get", "--raw", "/metrics", "--as", "bob"]);
    assert!(!refused.success());
    assert!(
        refused.stderr.contains(
            r#"Error from server (Forbidden): forbidden: User "bob" cannot get path "/metrics""#
        ),
        "{refused:?}"
    );
    let monitoring = k.run(&[
        "get",
        "--raw",
        "/metrics",
        "--as",
        "bob",
        "--as-group",
        "system:monitoring",
    ]);
    assert!(monitoring.success(), "{monitoring:?}");
}
