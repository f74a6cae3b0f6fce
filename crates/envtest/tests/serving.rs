//! Serving as kube-apiserver serves: request timeouts (504 for requests
//! that are not long-running, watches untouched, `?timeout=` shortening
//! them) and the header-read timeout on connections, through kube-rs,
//! kubectl and raw connections.

#[allow(dead_code)]
mod admission_support;
#[allow(dead_code)]
mod support;
#[allow(dead_code)]
mod webhook_env;

use std::time::Duration;

use admission_support::fixtures::{hook, url_client, validating, with};
use admission_support::{Pki, Reply, WebhookServer};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use opctl_envtest::{Config, Envtest};
use serde_json::json;
use support::http::{Http, HttpRequest};
use support::kubectl::Kubectl;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use webhook_env::{add_validating, api_error, pod, start};

const TIMEOUT_MESSAGE: &str = "Timeout: request did not complete within the allotted timeout";

/// A validating webhook on Pod creates that answers (allowed) after `delay`,
/// with a webhook timeout longer than that.
async fn slow_webhook(client: &kube::Client, pki: &Pki, delay: Duration) -> WebhookServer {
    let webhook = WebhookServer::start(pki, move |review| Reply::allow(review).after(delay)).await;
    add_validating(
        client,
        validating(
            "slow",
            vec![with(
                hook("slow.example.com", url_client(&webhook, pki, "/v")),
                "timeoutSeconds",
                json!(30),
            )],
        ),
    )
    .await;
    webhook
}

/// A kube-rs client of `env` that reports the first answer.
async fn without_retries(env: &Envtest) -> kube::Client {
    let kubeconfig = Kubeconfig::from_yaml(&env.kubeconfig_yaml()).expect("kubeconfig parses");
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .expect("kube-rs accepts the kubeconfig");
    config.default_retry = false;
    kube::Client::try_from(config).expect("client")
}

/// Runs kubectl (a blocking process) against `env` off the runtime.
async fn kubectl_fails(env: &Envtest, args: &'static [&'static str]) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("kubeconfig");
    env.write_kubeconfig(&path).expect("kubeconfig written");
    tokio::task::spawn_blocking(move || {
        let out = Kubectl::new(&path).fails(args);
        drop(dir);
        out
    })
    .await
    .expect("kubectl ran")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_held_past_the_request_timeout_gets_504_and_changes_nothing() {
    let pki = Pki::new();
    let (env, client) = start(Config {
        request_timeout: Duration::from_secs(1),
        ..Config::default()
    })
    .await;
    let _webhook = slow_webhook(&client, &pki, Duration::from_secs(5)).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");

    // kube-rs retries a 504 up to 15 times with growing delays; one answer is enough here.
    let once: Api<Pod> = Api::namespaced(without_retries(&env).await, "default");
    let err = api_error(once.create(&PostParams::default(), &pod("held")).await);
    assert_eq!(
        (err.code, err.reason.as_str(), err.message.as_str()),
        (504, "Timeout", TIMEOUT_MESSAGE)
    );
    // The body is kube-apiserver's timeout filter's: a Status without kind,
    // sent as text/plain, so kubectl reports a generic server timeout.
    let http = Http::new(&env.base_url());
    let resp = http
        .send(
            &HttpRequest::new("POST", "/api/v1/namespaces/default/pods")
                .json(&serde_json::to_value(pod("held-raw")).expect("pod JSON")),
            Duration::from_secs(30),
        )
        .await
        .expect("answered");
    assert_eq!(resp.status, 504);
    assert_eq!(
        resp.text(),
        format!(
            "{{\"metadata\":{{}},\"status\":\"Failure\",\"message\":\"{TIMEOUT_MESSAGE}\",\"reason\":\"Timeout\",\"details\":{{}},\"code\":504}}\n"
        )
    );
    let stderr = kubectl_fails(&env, &["run", "held-kubectl", "--image=nginx"]).await;
    assert!(
        stderr.contains("Error from server (Timeout): the server was unable to return a response in the time allotted, but may still be processing the request"),
        "{stderr}"
    );
    // Requests the webhook does not hold are served as before, and the
    // abandoned creates stored nothing.
    for name in ["held", "held-raw", "held-kubectl"] {
        assert!(pods.get_opt(name).await.expect("get").is_none(), "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeout_parameter_shortens_the_deadline_and_a_bad_one_is_refused() {
    let pki = Pki::new();
    let (env, client) = start(Config::default()).await;
    let _webhook = slow_webhook(&client, &pki, Duration::from_secs(5)).await;
    let http = Http::new(&env.base_url());
    let body = serde_json::to_value(pod("short")).expect("pod JSON");
    let resp = http
        .send(
            &HttpRequest::new("POST", "/api/v1/namespaces/default/pods?timeout=500ms").json(&body),
            Duration::from_secs(30),
        )
        .await
        .expect("answered");
    assert_eq!(resp.status, 504, "{}", resp.text());

    let resp = http
        .send(
            &HttpRequest::new("GET", "/api/v1/namespaces?timeout=5"),
            Duration::from_secs(30),
        )
        .await
        .expect("answered");
    assert_eq!(resp.status, 400);
    let status = resp.json().expect("a Status");
    assert_eq!(
        status["message"],
        "invalid timeout specified in the request URL - time: missing unit in duration \"5\""
    );
    assert_eq!(status["reason"], "BadRequest");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_outlive_the_request_timeout() {
    let (_env, client) = start(Config {
        request_timeout: Duration::from_millis(300),
        ..Config::default()
    })
    .await;
    let configmaps: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut events = configmaps
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch opened")
        .boxed();
    // Well past the request timeout, the watch still delivers.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "late"}})).expect("configmap");
    configmaps
        .create(&PostParams::default(), &cm)
        .await
        .expect("created");
    loop {
        match events.try_next().await.expect("watch event") {
            Some(WatchEvent::Added(cm)) if cm.metadata.name.as_deref() == Some("late") => break,
            Some(_) => {}
            None => panic!("the watch ended at the request timeout"),
        }
    }
}

/// Reads until the server closes the connection (bounded, so a server that
/// never closes fails the test instead of hanging it).
async fn read_until_closed(stream: &mut tokio::net::TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut out))
        .await
        .expect("the server closed the connection")
        .ok();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_do_not_finish_their_headers_are_closed() {
    let (env, _client) = start(Config {
        header_read_timeout: Duration::from_millis(500),
        ..Config::default()
    })
    .await;
    let addr = env.base_url().trim_start_matches("http://").to_string();
    // Half a request head, then nothing.
    let mut slow = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    slow.write_all(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n")
        .await
        .expect("write");
    let answer = read_until_closed(&mut slow).await;
    assert!(
        !String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"),
        "served an unfinished request"
    );
    // Nothing at all.
    let mut silent = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    assert!(read_until_closed(&mut silent).await.is_empty());
    // A complete request on a fresh connection is served.
    let mut prompt = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    prompt
        .write_all(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await
        .expect("write");
    let answer = read_until_closed(&mut prompt).await;
    assert!(
        String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
}
