//! Serving as kube-apiserver serves: request timeouts (504 for requests
//! that are not long-running, watches untouched, `?timeout=` shortening
//! them), the header-read timeout on connections, HTTPS with a bearer
//! token and 401 without one, ServiceAccount tokens kept in Secrets (filled
//! in by the token controller) as bearer tokens, and requests for hosts
//! other than loopback refused, through kube-rs, kubectl and raw connections.

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
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use opctl_envtest::{Config, Envtest, Serving};
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

/// A kube-rs client of `env` with the kubeconfig's token replaced by
/// `token` (none at all for `None`).
async fn client_with_token(env: &Envtest, token: Option<&str>) -> kube::Client {
    let admin = env.admin_token().expect("an HTTPS server");
    let yaml = env.kubeconfig_yaml();
    let yaml = match token {
        Some(t) => yaml.replace(admin, t),
        None => yaml.replace(&format!("token: {admin}"), "{}"),
    };
    let kubeconfig = Kubeconfig::from_yaml(&yaml).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube-rs accepts the kubeconfig");
    kube::Client::try_from(config).expect("client")
}

/// Runs kubectl (blocking) against a kubeconfig file off the runtime.
async fn kubectl_run(yaml: String, args: Vec<String>) -> support::kubectl::Run {
    tokio::task::spawn_blocking(move || {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("kubeconfig");
        std::fs::write(&path, yaml).expect("kubeconfig written");
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Kubectl::new(&path).run(&args)
    })
    .await
    .expect("kubectl ran")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_serves_the_kubeconfig_token_and_refuses_requests_without_one() {
    let (env, client) = start(Config {
        serving: Serving::Https,
        ..Config::default()
    })
    .await;
    assert!(env.base_url().starts_with("https://127.0.0.1:"));
    let ca = env.ca_pem().expect("a CA").to_string();
    // kube-rs verifies the serving certificate against the kubeconfig's CA.
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .get("default")
        .await
        .expect("the administrator reads");
    // Every namespace publishes the CA as a cluster does (kube-root-ca.crt).
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut published = None;
    for _ in 0..100 {
        published = configmaps
            .get_opt("kube-root-ca.crt")
            .await
            .expect("get")
            .and_then(|cm| cm.data)
            .and_then(|d| d.get("ca.crt").cloned());
        if published.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(published.as_deref(), Some(ca.as_str()));

    for token in [None, Some("not-the-token")] {
        let anonymous: Api<Namespace> = Api::all(client_with_token(&env, token).await);
        let err = api_error(anonymous.get("default").await);
        assert_eq!(
            (err.code, err.reason.as_str(), err.message.as_str()),
            (401, "Unauthorized", "Unauthorized"),
            "{token:?}"
        );
    }

    // Who asks is known before what it asks for is looked at: impersonation
    // headers (here a group without a user, which an authenticated
    // client gets a 500 for) from a client without a token get 401.
    let anonymous = client_with_token(&env, None).await;
    let request = axum::http::Request::get("/api/v1/namespaces")
        .header("Impersonate-Group", "system:masters")
        .body(Vec::new())
        .expect("request");
    let Err(kube::Error::Api(status)) = anonymous.request_text(request).await else {
        panic!("an unauthenticated impersonation is refused");
    };
    assert_eq!(status.code, 401, "{status:?}");

    let yaml = env.kubeconfig_yaml();
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let run = kubectl_run(
        yaml.clone(),
        args(&["get", "namespace", "default", "-o", "name"]),
    )
    .await;
    assert_eq!(run.stdout.trim(), "namespace/default", "{}", run.stderr);
    let admin = env.admin_token().expect("token").to_string();
    // (With no credentials at all kubectl would prompt for a password.)
    let run = kubectl_run(
        yaml.replace(&format!("token: {admin}"), "token: not-the-token"),
        args(&["get", "namespaces"]),
    )
    .await;
    assert!(
        run.stderr
            .contains("error: You must be logged in to the server (the server has asked for the client to provide credentials)"),
        "{}",
        run.stderr
    );
    // ServiceAccount tokens authenticate as before (kubectl sends bearer
    // tokens over TLS only): the account is held to RBAC.
    let run = kubectl_run(yaml.clone(), args(&["create", "token", "default"])).await;
    let token = run.stdout.trim().to_string();
    assert!(!token.is_empty(), "{}", run.stderr);
    let run = kubectl_run(yaml, args(&["get", "pods", "--token", &token])).await;
    assert!(
        run.stderr.contains("Error from server (Forbidden): pods is forbidden: User \"system:serviceaccount:default:default\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""),
        "{}",
        run.stderr
    );
}

/// POSTs a TokenReview of `token` (for `audiences`, none when empty) and
/// answers its status.
async fn review_token(client: &kube::Client, token: &str, audiences: &[&str]) -> serde_json::Value {
    let mut spec = json!({"token": token});
    if !audiences.is_empty() {
        spec["audiences"] = json!(audiences);
    }
    let body =
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec});
    let request = axum::http::Request::post("/apis/authentication.k8s.io/v1/tokenreviews")
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&body).expect("JSON"))
        .expect("request");
    let answer: serde_json::Value = client
        .request(request)
        .await
        .expect("the review is answered");
    answer["status"].clone()
}

/// A TokenReview judges a token with the authenticators that guard requests:
/// the kubeconfig's own token is envtest's administrator (a generated
/// manager's secure /metrics reviews the token its client sends), held to
/// the server's audiences as kube-apiserver holds its static tokens, and a
/// refused token reports the authenticator's error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_review_authenticates_the_kubeconfig_token_as_requests_do() {
    let (env, client) = start(Config {
        serving: Serving::Https,
        ..Config::default()
    })
    .await;
    let admin = env.admin_token().expect("token").to_string();
    assert_eq!(
        review_token(&client, &admin, &[]).await,
        json!({
            "authenticated": true,
            "user": {"username": "system:admin", "groups": ["system:masters", "system:authenticated"]},
            "audiences": ["https://kubernetes.default.svc"]
        })
    );
    assert_eq!(
        review_token(
            &client,
            &admin,
            &["https://kubernetes.default.svc", "other"]
        )
        .await["audiences"],
        json!(["https://kubernetes.default.svc"])
    );
    // An audience-agnostic token reviewed for other audiences only is no
    // token at all.
    assert_eq!(
        review_token(&client, &admin, &["other"]).await,
        json!({"user": {}, "error": "invalid bearer token"})
    );
    assert_eq!(
        review_token(&client, "not-the-token", &[]).await,
        json!({"user": {}, "error": "invalid bearer token"})
    );

    // A ServiceAccount token for another audience names both lists.
    let run = kubectl_run(
        env.kubeconfig_yaml(),
        ["create", "token", "default", "--audience", "vault"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
    )
    .await;
    let token = run.stdout.trim().to_string();
    assert!(!token.is_empty(), "{}", run.stderr);
    assert_eq!(
        review_token(&client, &token, &[]).await,
        json!({"user": {}, "error": "token audiences [\"vault\"] is invalid for the target audiences [\"https://kubernetes.default.svc\"]"})
    );
    assert_eq!(
        review_token(&client, &token, &["vault"]).await["audiences"],
        json!(["vault"])
    );

    // A review needs a token.
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {}});
    let request = axum::http::Request::post("/apis/authentication.k8s.io/v1/tokenreviews")
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&body).expect("JSON"))
        .expect("request");
    let Err(kube::Error::Api(status)) = client.request_text(request).await else {
        panic!("a review without a token is refused");
    };
    assert_eq!(
        (status.code, status.message.as_str()),
        (400, "token is required for TokenReview in authentication")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_naming_a_host_other_than_loopback_are_refused() {
    let (env, _client) = start(Config::default()).await;
    let http = Http::new(&env.base_url());
    let port = env
        .base_url()
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .to_string();
    for host in ["evil.example", "evil.example:80", "127.0.0.2"] {
        let resp = http
            .send(
                &HttpRequest::new("GET", "/api/v1/namespaces").header("Host", host),
                Duration::from_secs(30),
            )
            .await
            .expect("answered");
        assert_eq!(resp.status, 403, "{host}");
        let status = resp.json().expect("a Status");
        assert_eq!(
            status["message"],
            format!(
                "host \"{host}\" is not a loopback address: this envtest server answers requests for 127.0.0.1, [::1] and localhost only"
            )
        );
        assert_eq!(status["reason"], "Forbidden");
    }
    for host in [format!("localhost:{port}"), format!("[::1]:{port}")] {
        let resp = http
            .send(
                &HttpRequest::new("GET", "/version").header("Host", &host),
                Duration::from_secs(30),
            )
            .await
            .expect("answered");
        assert_eq!(resp.status, 200, "{host}");
    }
}

/// Polls (up to a minute) until `done` accepts what `read` returns.
async fn eventually<T: std::fmt::Debug, F: std::future::Future<Output = T>>(
    what: &str,
    read: impl Fn() -> F,
    done: impl Fn(&T) -> bool,
) -> T {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let value = read().await;
        if done(&value) {
            return value;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: never as wanted, last {value:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_account_token_secrets_are_filled_in_and_authenticate_until_their_account_goes() {
    use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
    let (env, client) = start(Config {
        serving: Serving::Https,
        simulation: opctl_envtest::Simulation::off(),
        ..Config::default()
    })
    .await;
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let sa: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "builder"}})).expect("account");
    let sa = accounts
        .create(&PostParams::default(), &sa)
        .await
        .expect("account created");
    let token_secret = |name: &str, account: &str| -> Secret {
        serde_json::from_value(json!({
            "metadata": {"name": name, "annotations": {"kubernetes.io/service-account.name": account}},
            "type": "kubernetes.io/service-account-token",
        }))
        .expect("secret")
    };
    secrets
        .create(
            &PostParams::default(),
            &token_secret("builder-token", "builder"),
        )
        .await
        .expect("secret created");
    let filled = eventually(
        "the token Secret",
        || async { secrets.get("builder-token").await.expect("get") },
        |s| s.data.as_ref().is_some_and(|d| d.contains_key("token")),
    )
    .await;
    let data = filled.data.clone().expect("data");
    let text = |key: &str| String::from_utf8(data[key].0.clone()).expect("UTF-8");
    assert_eq!(text("ca.crt"), env.ca_pem().expect("a CA"));
    assert_eq!(text("namespace"), "default");
    let annotations = filled.metadata.annotations.clone().expect("annotations");
    assert_eq!(
        annotations["kubernetes.io/service-account.uid"],
        sa.metadata.uid.clone().expect("uid")
    );
    let token = text("token");
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");

    // The token authenticates as the account, which RBAC then judges.
    let as_builder: Api<Pod> =
        Api::namespaced(client_with_token(&env, Some(&token)).await, "default");
    let err = api_error(as_builder.list(&Default::default()).await);
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        "pods is forbidden: User \"system:serviceaccount:default:builder\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    let yaml = env.kubeconfig_yaml();
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let run = kubectl_run(
        yaml.clone(),
        args(&[
            "create",
            "rolebinding",
            "builder-view",
            "--clusterrole=view",
            "--serviceaccount=default:builder",
        ]),
    )
    .await;
    assert!(run.success(), "{}", run.stderr);
    let run = kubectl_run(yaml.clone(), args(&["get", "pods", "--token", &token])).await;
    assert!(run.success(), "{}", run.stderr);
    assert_eq!(
        run.stderr.trim(),
        "No resources found in default namespace."
    );
    let review = format!(
        "{{\"apiVersion\": \"authentication.k8s.io/v1\", \"kind\": \"TokenReview\", \"spec\": {{\"token\": \"{token}\"}}}}"
    );
    let reviewed = tokio::task::spawn_blocking({
        let yaml = yaml.clone();
        move || {
            let dir = tempfile::tempdir().expect("temp dir");
            let path = dir.path().join("kubeconfig");
            std::fs::write(&path, yaml).expect("kubeconfig written");
            Kubectl::new(&path).ok_stdin(&["create", "-f", "-", "-o", "json"], &review)
        }
    })
    .await
    .expect("kubectl ran");
    let reviewed: serde_json::Value = serde_json::from_str(&reviewed).expect("JSON");
    assert_eq!(reviewed["status"]["authenticated"], true, "{reviewed}");
    assert_eq!(
        reviewed["status"]["user"]["username"],
        "system:serviceaccount:default:builder"
    );
    assert_eq!(
        reviewed["status"]["audiences"],
        json!(["https://kubernetes.default.svc"])
    );

    // A token Secret for an account that does not exist is deleted.
    secrets
        .create(
            &PostParams::default(),
            &token_secret("nobody-token", "nobody"),
        )
        .await
        .expect("secret created");
    eventually(
        "the Secret of a missing account",
        || async { secrets.get_opt("nobody-token").await.expect("get") },
        Option::is_none,
    )
    .await;

    // The account's deletion takes its token Secrets along, and the token
    // stops authenticating.
    accounts
        .delete("builder", &Default::default())
        .await
        .expect("account deleted");
    eventually(
        "the Secret of a deleted account",
        || async { secrets.get_opt("builder-token").await.expect("get") },
        Option::is_none,
    )
    .await;
    let err = api_error(as_builder.list(&Default::default()).await);
    assert_eq!(
        (err.code, err.reason.as_str(), err.message.as_str()),
        (401, "Unauthorized", "Unauthorized")
    );
}
