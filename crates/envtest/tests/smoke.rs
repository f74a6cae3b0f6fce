//! Smoke tests: the server starts, kube-rs can create, read, update, list and
//! delete through it, and a watch sees the changes.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use opctl_envtest::{Config, Envtest};

async fn client(env: &Envtest) -> kube::Client {
    let kubeconfig =
        kube::config::Kubeconfig::from_yaml(&env.kubeconfig_yaml()).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("kubeconfig is usable");
    kube::Client::try_from(config).expect("client builds")
}

fn cm(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..ObjectMeta::default()
        },
        data: Some([("k".to_string(), value.to_string())].into()),
        ..ConfigMap::default()
    }
}

#[tokio::test]
async fn crud_through_kube_rs() {
    let env = Envtest::start(Config::default())
        .await
        .expect("server starts");
    let api: Api<ConfigMap> = Api::namespaced(client(&env).await, "default");

    let created = api
        .create(&PostParams::default(), &cm("a", "1"))
        .await
        .expect("create");
    let uid = created.metadata.uid.clone().expect("uid set");
    assert!(created.metadata.resource_version.is_some());
    assert!(created.metadata.creation_timestamp.is_some());

    let err = api
        .create(&PostParams::default(), &cm("a", "1"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 409),
        "{err:?}"
    );

    let mut fetched = api.get("a").await.expect("get");
    assert_eq!(fetched.metadata.uid.as_deref(), Some(uid.as_str()));
    fetched.data = Some([("k".to_string(), "2".to_string())].into());
    let replaced = api
        .replace("a", &PostParams::default(), &fetched)
        .await
        .expect("replace");
    assert_ne!(
        replaced.metadata.resource_version,
        created.metadata.resource_version
    );

    // A stale resourceVersion is refused.
    let stale = api
        .replace("a", &PostParams::default(), &fetched)
        .await
        .unwrap_err();
    assert!(
        matches!(stale, kube::Error::Api(ref s) if s.code == 409),
        "{stale:?}"
    );

    let patch = serde_json::json!({"data": {"k": "3"}});
    let patched = api
        .patch("a", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch");
    assert_eq!(patched.data.unwrap()["k"], "3");

    api.create(&PostParams::default(), &cm("b", "1"))
        .await
        .expect("create b");
    let names: Vec<String> = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        // Every namespace also holds the root-CA publisher's ConfigMap.
        .filter(|name| name != "kube-root-ca.crt")
        .collect();
    assert_eq!(names, vec!["a", "b"]);

    api.delete("a", &DeleteParams::default())
        .await
        .expect("delete");
    let gone = api.get("a").await.unwrap_err();
    assert!(
        matches!(gone, kube::Error::Api(ref s) if s.code == 404),
        "{gone:?}"
    );
    env.shutdown().await;
}

#[tokio::test]
async fn watch_sees_changes_in_order() {
    let env = Envtest::start(Config::default())
        .await
        .expect("server starts");
    let api: Api<ConfigMap> = Api::namespaced(client(&env).await, "default");
    let list = api.list(&ListParams::default()).await.expect("list");
    let rv = list
        .metadata
        .resource_version
        .expect("list resourceVersion");
    let mut stream = api
        .watch(&WatchParams::default().timeout(10), &rv)
        .await
        .expect("watch opens")
        .boxed();
    api.create(&PostParams::default(), &cm("w", "1"))
        .await
        .expect("create");
    let patch = serde_json::json!({"data": {"k": "2"}});
    api.patch("w", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch");
    api.delete("w", &DeleteParams::default())
        .await
        .expect("delete");

    let mut seen = Vec::new();
    while seen.len() < 3 {
        let ev = tokio::time::timeout(Duration::from_secs(5), stream.try_next())
            .await
            .expect("event in time")
            .expect("stream ok")
            .expect("stream open");
        seen.push(match ev {
            WatchEvent::Added(c) => format!("ADDED {}", c.data.unwrap()["k"]),
            WatchEvent::Modified(c) => format!("MODIFIED {}", c.data.unwrap()["k"]),
            WatchEvent::Deleted(c) => format!("DELETED {}", c.data.unwrap()["k"]),
            other => format!("{other:?}"),
        });
    }
    assert_eq!(seen, vec!["ADDED 1", "MODIFIED 2", "DELETED 2"]);
    env.shutdown().await;
}

#[tokio::test]
async fn bad_crd_directory_is_a_clear_error() {
    let missing = std::path::PathBuf::from("/nonexistent/crds");
    let err = Envtest::start(Config {
        crd_paths: vec![missing],
        ..Config::default()
    })
    .await
    .err()
    .expect("start fails");
    assert!(err.to_string().contains("/nonexistent/crds"), "{err}");
}

/// A plain HTTP exchange: (status, content type, body).
async fn raw(
    env: &Envtest,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> (u16, String, String) {
    use http_body_util::{BodyExt, Full};
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Full<bytes::Bytes>>();
    let mut req = hyper::Request::builder()
        .method(method)
        .uri(format!("{}{path}", env.base_url()));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = client
        .request(
            req.body(Full::new(bytes::Bytes::from(body)))
                .expect("request"),
        )
        .await
        .expect("response");
    let status = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (status, ct, String::from_utf8_lossy(&bytes).into_owned())
}

#[tokio::test]
async fn http_surface_answers_like_kube_apiserver() {
    let env = Envtest::start(Config::default())
        .await
        .expect("server starts");
    let aggregated =
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    let (status, ct, body) = raw(&env, "GET", "/apis", &[("Accept", aggregated)], vec![]).await;
    assert_eq!(status, 200);
    assert!(ct.contains("as=APIGroupDiscoveryList"), "{ct}");
    assert!(body.contains("\"apiextensions.k8s.io\""), "{body}");

    let (status, ct, body) = raw(&env, "GET", "/nosuchpath", &[], vec![]).await;
    assert_eq!(
        (status, ct.as_str(), body.as_str()),
        (404, "text/plain; charset=utf-8", "404 page not found\n")
    );
    let (status, ct, body) = raw(
        &env,
        "GET",
        "/api/v1/namespaces/default/nosuchthings",
        &[],
        vec![],
    )
    .await;
    assert_eq!((status, ct.as_str()), (404, "application/json"));
    assert!(
        body.contains("the server could not find the requested resource"),
        "{body}"
    );

    let (status, _, body) = raw(&env, "GET", "/openapi/v3", &[], vec![]).await;
    assert_eq!(status, 200);
    assert!(body.contains("\"api/v1\""), "{body}");

    let huge = vec![b' '; 3 * 1024 * 1024 + 10];
    let (status, _, body) = raw(
        &env,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[("Content-Type", "application/json")],
        huge,
    )
    .await;
    assert_eq!(status, 413, "{body}");
    let (status, _, _) = raw(
        &env,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        &[("Accept", "application/xml")],
        vec![],
    )
    .await;
    assert_eq!(status, 406);
    env.shutdown().await;
}

#[tokio::test]
async fn watching_from_an_expired_version_gets_an_in_stream_410() {
    let env = Envtest::start(Config {
        watch_history: 2,
        ..Config::default()
    })
    .await
    .expect("server starts");
    let api: Api<ConfigMap> = Api::namespaced(client(&env).await, "default");
    for i in 0..5 {
        api.create(&PostParams::default(), &cm(&format!("c{i}"), "v"))
            .await
            .expect("create");
    }
    let (status, _, body) = raw(
        &env,
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=1&timeoutSeconds=1",
        &[],
        vec![],
    )
    .await;
    assert_eq!(status, 200);
    let event: serde_json::Value =
        serde_json::from_str(body.lines().next().expect("one event")).expect("JSON");
    assert_eq!(event["type"], "ERROR");
    assert_eq!(event["object"]["code"], 410);
    assert_eq!(event["object"]["reason"], "Expired");
    env.shutdown().await;
}
