//! Fault injection seen by kube-rs: each fault arrives as a real server's
//! failure would, is counted and never changes what is stored, and kube-rs's
//! watcher recovers from cut watches and from 410 Gone.

use std::collections::BTreeSet;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use opctl_envtest::{Config, Envtest, FaultSpec};
use serde_json::json;

use super::{client_of, create_namespace, sample, scrape, server};

async fn start_with_faults(spec: &str) -> Envtest {
    let faults: FaultSpec = spec.parse().expect("the spec parses");
    server::start(Config {
        faults,
        ..Config::default()
    })
    .await
}

fn configmap(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}}))
        .expect("configmap")
}

fn api_error<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> kube::core::Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn fault_series(kind: &str, verb: &str, resource: &str) -> String {
    format!(
        "opctl_envtest_injected_faults_total{{kind=\"{kind}\",resource=\"{resource}\",verb=\"{verb}\"}}"
    )
}

/// One request sent as is (kube-rs retries 429 and 504 answers by itself,
/// which would hide what the server answered): status, headers and body.
async fn raw(
    env: &Envtest,
    method: &str,
    path: &str,
    body: Option<serde_json::Value>,
) -> (u16, hyper::HeaderMap, String) {
    use http_body_util::{BodyExt, Full};
    let http = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Full<bytes::Bytes>>();
    let bytes = body.map(|b| b.to_string()).unwrap_or_default();
    let request = hyper::Request::builder()
        .method(method)
        .uri(format!("{}{path}", env.base_url()))
        .header("Content-Type", "application/json")
        .body(Full::new(bytes::Bytes::from(bytes)))
        .expect("request");
    let response = http.request(request).await.expect("answered");
    let (parts, body) = response.into_parts();
    let body = body.collect().await.expect("body").to_bytes();
    (
        parts.status.as_u16(),
        parts.headers,
        String::from_utf8_lossy(&body).into_owned(),
    )
}

/// A create answered 429 carries `Retry-After` (as API Priority and
/// Fairness sends it), is counted with its code, and creates nothing; a
/// client that retries (kube-rs does) gets through.
#[tokio::test]
async fn a_throttled_write_gets_429_with_retry_after_and_is_not_applied() {
    let env = start_with_faults("create@configmaps:429=100%").await;
    let client = client_of(&env).await;
    let path = "/api/v1/namespaces/default/configmaps";
    let cm = serde_json::to_value(configmap("c")).expect("json");
    let (code, headers, body) = raw(&env, "POST", path, Some(cm)).await;
    assert_eq!(code, 429);
    assert_eq!(headers["retry-after"], "1");
    assert_eq!(headers["content-type"], "text/plain; charset=utf-8");
    assert_eq!(body, "Too many requests, please try again later.\n");

    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    assert_eq!(
        api_error(api.get("c").await).code,
        404,
        "nothing was created"
    );
    let samples = scrape(&client).await;
    assert_eq!(samples.get(&fault_series("429", "create", "configmaps")), 1);
    assert_eq!(
        samples.get("apiserver_request_total{code=\"429\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"configmaps\",scope=\"resource\",subresource=\"\",verb=\"POST\",version=\"v1\"}"),
        1
    );
}

/// kube-rs retries a throttled write after `Retry-After` and succeeds.
#[tokio::test]
async fn kube_rs_retries_a_throttled_write() {
    let env = start_with_faults("create@configmaps:429=50%,seed=3").await;
    let client = client_of(&env).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for i in 0..4 {
        api.create(&PostParams::default(), &configmap(&format!("c{i}")))
            .await
            .expect("created after retries");
    }
    let throttled = sample(&client, &fault_series("429", "create", "configmaps")).await;
    assert!(throttled >= 1, "seed 3 throttles some of the creates");
}

/// 500 and 409 arrive as kube-apiserver's Status answers, 504 as its
/// timeout filter's, and the faulted writes leave the object as it was.
#[tokio::test]
async fn internal_errors_conflicts_and_timeouts_change_nothing() {
    let env = start_with_faults(
        "patch@configmaps:500=100%,update@configmaps:409=100%,delete@configmaps:504=100%",
    )
    .await;
    let client = client_of(&env).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let created = api
        .create(&PostParams::default(), &configmap("c"))
        .await
        .expect("creates are not faulted");

    let status = api_error(
        api.patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "patched"}})),
        )
        .await,
    );
    assert_eq!(status.code, 500);
    assert_eq!(status.reason, "InternalError");
    assert_eq!(
        status.message,
        "Internal error occurred: fault injected by opctl envtest (rule patch@configmaps:500=100%)"
    );

    let mut changed = created.clone();
    changed.data = Some([("k".to_string(), "replaced".to_string())].into());
    let status = api_error(api.replace("c", &PostParams::default(), &changed).await);
    assert_eq!(status.code, 409);
    assert_eq!(status.reason, "Conflict");
    assert_eq!(
        status.message,
        "Operation cannot be fulfilled on configmaps \"c\": the object has been modified; please apply your changes to the latest version and try again"
    );

    let (code, headers, body) = raw(
        &env,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/c",
        None,
    )
    .await;
    assert_eq!(code, 504);
    assert_eq!(headers["content-type"], "text/plain; charset=utf-8");
    assert_eq!(
        body,
        "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"Timeout: request did not complete within the allotted timeout\",\"reason\":\"Timeout\",\"details\":{},\"code\":504}\n"
    );

    let stored = api.get("c").await.expect("still there");
    assert_eq!(
        stored.metadata.resource_version,
        created.metadata.resource_version
    );
    assert_eq!(stored.data, created.data);
    let samples = scrape(&client).await;
    for (kind, verb) in [("500", "patch"), ("409", "update"), ("504", "delete")] {
        assert_eq!(
            samples.get(&fault_series(kind, verb, "configmaps")),
            1,
            "{kind}"
        );
    }
}

/// Which creates fail: the same with the same seed, different with another.
async fn failed_creates(spec: &str) -> BTreeSet<String> {
    let env = start_with_faults(spec).await;
    let api: Api<ConfigMap> = Api::namespaced(client_of(&env).await, "default");
    let mut failed = BTreeSet::new();
    for i in 0..40 {
        let name = format!("c{i}");
        match api.create(&PostParams::default(), &configmap(&name)).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 500 => {
                failed.insert(name);
            }
            Err(e) => panic!("unexpected error: {e}"),
        }
    }
    env.shutdown().await;
    failed
}

#[tokio::test]
async fn a_seed_makes_the_faults_repeatable() {
    let first = failed_creates("create:500=50%,seed=42").await;
    assert!(
        (8..=32).contains(&first.len()),
        "about half of 40 creates fail: {first:?}"
    );
    assert_eq!(failed_creates("create:500=50%,seed=42").await, first);
    assert_ne!(failed_creates("create:500=50%,seed=43").await, first);
}

/// The names a watcher's store holds once it has seen `want`, within 20 s.
async fn watch_until_all_seen(
    api: Api<ConfigMap>,
    want: &BTreeSet<String>,
    gone_seen: &mut bool,
) -> BTreeSet<String> {
    let mut stream = watcher(api, watcher::Config::default()).boxed();
    let mut seen = BTreeSet::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !want.is_subset(&seen) {
        let next = tokio::time::timeout_at(deadline, stream.next())
            .await
            .unwrap_or_else(|_| panic!("the watcher saw only {seen:?} of {want:?}"))
            .expect("the watcher never ends");
        match next {
            Ok(watcher::Event::Apply(cm) | watcher::Event::InitApply(cm)) => {
                seen.insert(cm.metadata.name.unwrap_or_default());
            }
            Ok(_) => {}
            Err(watcher::Error::WatchError(status)) if status.code == 410 => *gone_seen = true,
            // A cut watch surfaces as an error; the watcher watches again.
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    seen
}

/// Watches cut every 300 ms: kube-rs's watcher resumes and misses nothing.
#[tokio::test]
async fn the_watcher_recovers_from_cut_watches() {
    let env = start_with_faults("watch@configmaps:cut=300ms").await;
    let client = client_of(&env).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let writer = api.clone();
    let want: BTreeSet<String> = (0..20).map(|i| format!("c{i}")).collect();
    let names = want.clone();
    let writes = tokio::spawn(async move {
        for name in names {
            writer
                .create(&PostParams::default(), &configmap(&name))
                .await
                .expect("create");
            tokio::time::sleep(Duration::from_millis(60)).await;
        }
    });
    let mut gone = false;
    let seen = watch_until_all_seen(api, &want, &mut gone).await;
    writes.await.expect("writer");
    assert!(want.is_subset(&seen));
    let cuts = sample(&client, &fault_series("cut", "watch", "configmaps")).await;
    assert!(cuts >= 2, "the watch was cut {cuts} times");
}

/// The watch history dropped while the watch is cut: the resume gets 410
/// Gone, and the watcher lists again and still sees everything.
#[tokio::test]
async fn the_watcher_relists_after_410_gone() {
    let env = start_with_faults("watch:cut=500ms,watch:compact=200ms").await;
    let client = client_of(&env).await;
    let quiet = "quiet";
    create_namespace(&client, quiet).await;
    let watched: Api<ConfigMap> = Api::namespaced(client.clone(), quiet);
    watched
        .create(&PostParams::default(), &configmap("first"))
        .await
        .expect("create");
    // Writes elsewhere move the resourceVersion past what the watcher saw.
    let elsewhere: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let busy = tokio::spawn(async move {
        for i in 0..30 {
            let _ = elsewhere
                .create(&PostParams::default(), &configmap(&format!("e{i}")))
                .await;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let late = watched.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(1200)).await;
        late.create(&PostParams::default(), &configmap("late"))
            .await
            .expect("create");
    });
    let want: BTreeSet<String> = ["first", "late"].map(String::from).into();
    let mut gone = false;
    watch_until_all_seen(watched, &want, &mut gone).await;
    busy.await.expect("writer");
    assert!(gone, "a resume was answered 410 Gone");
    assert!(sample(&client, &fault_series("compact", "", "")).await >= 1);
}
