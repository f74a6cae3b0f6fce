//! Robustness: arbitrary requests never break the server, and many concurrent
//! writers and watchers finish without deadlock, every watcher seeing every
//! event in order.

#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;
#[allow(dead_code)]
mod support;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::OnceLock;
use std::time::Duration;

use opctl_envtest::Config;
use proptest::prelude::*;
use serde_json::{Value, json};
use support::http::{Http, HttpRequest};

/// A server for the fuzz properties, with objects to patch.
fn fuzz_server() -> &'static server::Background {
    static SERVER: OnceLock<server::Background> = OnceLock::new();
    SERVER.get_or_init(|| {
        let background = server::background(Config::default());
        let runtime = runtime();
        let http = Http::new(&background.base_url);
        runtime.block_on(async {
            for (target, body) in [
                ("/api/v1/namespaces", json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fuzz"}})),
                ("/api/v1/namespaces/fuzz/configmaps", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "target"}, "data": {"a": "1"}})),
                ("/apis/apps/v1/namespaces/fuzz/deployments", json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "target"},
                    "spec": {"selector": {"matchLabels": {"app": "t"}}, "template": {"metadata": {"labels": {"app": "t"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})),
            ] {
                let response = http
                    .send(&HttpRequest::new("POST", target).json(&body), Duration::from_secs(10))
                    .await
                    .unwrap_or_else(|e| panic!("fuzz set-up {target}: {e}"));
                assert_eq!(response.status, 201, "fuzz set-up {target}: {}", response.text());
            }
        });
        background
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// What came back on the wire.
#[derive(Debug)]
struct Raw {
    status: u16,
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
}

/// Sends raw bytes as one HTTP/1.1 request on a fresh connection and reads
/// the whole answer (the request asks the server to close).
fn exchange(base_url: &str, request: &[u8]) -> Result<Raw, String> {
    let addr = base_url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(15)))
        .map_err(|e| e.to_string())?;
    stream
        .write_all(request)
        .map_err(|e| format!("write: {e}"))?;
    let mut answer = Vec::new();
    if let Err(e) = stream.read_to_end(&mut answer)
        && answer.is_empty()
    {
        return Err(format!("no answer (connection dropped or timed out): {e}"));
    }
    parse_raw(&answer)
}

fn parse_raw(answer: &[u8]) -> Result<Raw, String> {
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| {
            format!(
                "no complete header block in {:?}",
                String::from_utf8_lossy(answer)
            )
        })?;
    let head = String::from_utf8_lossy(&answer[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad status line {status_line:?}"))?;
    let headers: BTreeMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = answer[split + 4..].to_vec();
    if headers
        .get("transfer-encoding")
        .is_some_and(|t| t.eq_ignore_ascii_case("chunked"))
    {
        body = dechunk(&body)?;
    }
    Ok(Raw {
        status,
        headers,
        body,
    })
}

fn dechunk(mut data: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let line_end = data
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("truncated chunked body")?;
        let size_text = String::from_utf8_lossy(&data[..line_end]).into_owned();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| format!("bad chunk size {size_text:?}"))?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        let chunk = data.get(..size).ok_or("truncated chunk")?;
        out.extend_from_slice(chunk);
        data = data.get(size + 2..).ok_or("truncated chunk end")?;
    }
}

/// The documented 5xx answers of kube-apiserver (03 and 07 transcripts), and
/// the reason-less 500 it answers for strategic merge patches its patch
/// library rejects with a generic error (`unknown patch type`, a list where a
/// map belongs, ...), which `interpretStrategicMergePatchError` passes through.
fn documented_server_error(raw: &Raw, message: &str, smp: bool) -> bool {
    (raw.status == 500
        && (message == "resourceVersion should not be set on objects to be created"
            || message.contains("strconv.ParseUint")
            || (smp && !String::from_utf8_lossy(&raw.body).contains("\"reason\""))))
        || (raw.status == 504 && message.contains("Too large resource version"))
}

/// Checks the answer is well-formed: a JSON `Status` for every error, no
/// undocumented 5xx.
fn check_answer(method: &str, raw: &Raw, smp: bool) -> Result<(), String> {
    let text = String::from_utf8_lossy(&raw.body).into_owned();
    if raw.status >= 500 && method == "HEAD" {
        return Err(format!("server error {} for HEAD", raw.status));
    }
    // HEAD answers carry no body to check.
    if raw.status < 400 || method == "HEAD" {
        return Ok(());
    }
    if raw.status == 404 && text == "404 page not found\n" {
        return Ok(()); // kube-apiserver's plain-text 404 for paths outside the API
    }
    let content_type = raw
        .headers
        .get("content-type")
        .map(String::as_str)
        .unwrap_or_default();
    // Errors come in the format the Accept header asks for (JSON or YAML).
    let status: Value = match content_type {
        "application/json" => serde_json::from_slice(&raw.body)
            .map_err(|e| format!("error {} without a JSON Status ({e}): {text:?}", raw.status))?,
        "application/yaml" => serde_saphyr::from_str(&text)
            .map_err(|e| format!("error {} without a YAML Status ({e}): {text:?}", raw.status))?,
        other => return Err(format!("error {} Status sent as {other:?}", raw.status)),
    };
    let message = status["message"].as_str().unwrap_or_default();
    // The fuzz requests name 127.0.0.1: refused for their Host, they would
    // never reach what they are meant to exercise.
    if message.contains("is not a loopback address") {
        return Err(format!("refused for its Host: {message}"));
    }
    if status["kind"] != "Status" || status["apiVersion"] != "v1" || status["status"] != "Failure" {
        return Err(format!(
            "error {} body is not a Failure Status: {status}",
            raw.status
        ));
    }
    if status["code"].as_u64() != Some(u64::from(raw.status)) {
        return Err(format!(
            "Status code {} differs from HTTP {}",
            status["code"], raw.status
        ));
    }
    if raw.status >= 500 && !documented_server_error(raw, message, smp) {
        return Err(format!("server error {}: {status}", raw.status));
    }
    Ok(())
}

fn healthy(base_url: &str) -> Result<(), String> {
    let raw = exchange(
        base_url,
        b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )?;
    if raw.status != 200 || raw.body != b"ok" {
        return Err(format!(
            "/readyz answered {} {:?}",
            raw.status,
            String::from_utf8_lossy(&raw.body)
        ));
    }
    let raw = exchange(
        base_url,
        b"GET /api/v1/namespaces/fuzz/configmaps/target HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\nConnection: close\r\n\r\n",
    )?;
    if raw.status != 200 {
        return Err(format!(
            "a valid GET answered {}: {}",
            raw.status,
            String::from_utf8_lossy(&raw.body)
        ));
    }
    Ok(())
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "api", "apis", "v1", "namespaces", "fuzz", "default", "configmaps", "target", "pods",
            "secrets", "services", "apps", "deployments", "status", "scale", "events",
            "apiextensions.k8s.io", "customresourcedefinitions", "example.com", "leases",
            "coordination.k8s.io", "version", "openapi", "v2", "v3", "healthz", "readyz", "..", "",
        ])
        .prop_map(str::to_string),
        1 => "[a-zA-Z0-9._~-]{0,12}",
        1 => prop::collection::vec(any::<u8>(), 0..6)
            .prop_map(|bytes| bytes.iter().map(|b| format!("%{b:02X}")).collect()),
    ]
}

fn query() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec![
        "labelSelector",
        "fieldSelector",
        "limit",
        "continue",
        "fieldManager",
        "force",
        "dryRun",
        "fieldValidation",
        "propagationPolicy",
        "gracePeriodSeconds",
        "resourceVersionMatch",
        "includeObject",
        "pretty",
        "orphanDependents",
        "x",
    ]);
    let value = prop_oneof![
        "[ -~]{0,16}".prop_map(|s| support::http::encode_component(&s)),
        prop::collection::vec(any::<u8>(), 0..8).prop_map(|bytes| bytes
            .iter()
            .map(|b| format!("%{b:02X}"))
            .collect::<String>()),
        prop::sample::select(vec![
            "All",
            "Strict",
            "Orphan",
            "true",
            "-1",
            "99999999999999999999",
            "app in (a",
            "!!"
        ])
        .prop_map(support::http::encode_component),
    ];
    // resourceVersion only with values that answer at once (a future one waits 3 s).
    let rv = prop::sample::select(vec!["", "0", "1", "abc"])
        .prop_map(|v| format!("resourceVersion={v}"));
    prop_oneof![
        4 => prop::collection::vec((key, value), 0..4).prop_map(|pairs| {
            pairs.into_iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&")
        }),
        1 => rv,
    ]
}

/// JSON-ish bodies: valid, truncated, deeply nested, huge numbers, bad UTF-8.
fn body() -> impl Strategy<Value = Vec<u8>> {
    let leaf = prop_oneof![
        Just("null".to_string()),
        Just("true".to_string()),
        Just("1e400".to_string()),
        Just("-0".to_string()),
        Just("123456789012345678901234567890".to_string()),
        Just("1.5".to_string()),
        "[ -~]{0,12}".prop_map(|s| serde_json::to_string(&s).unwrap_or_default()),
        Just("\"\\ud800\"".to_string()),
    ];
    let json = leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec(
                (
                    prop::sample::select(vec![
                        "apiVersion",
                        "kind",
                        "metadata",
                        "name",
                        "namespace",
                        "spec",
                        "data",
                        "labels",
                        "finalizers",
                        "ownerReferences",
                        "status",
                        "op",
                        "path",
                        "value",
                        "$patch",
                        "containers",
                        "resourceVersion",
                        "x"
                    ]),
                    inner
                ),
                0..5
            )
            .prop_map(|v| format!(
                "{{{}}}",
                v.iter()
                    .map(|(k, v)| format!("\"{k}\":{v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            )),
        ]
    });
    let configmap = prop::collection::btree_map("[a-z]{1,4}", "[ -~]{0,8}", 0..4).prop_map(|data| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fz"}, "data": data}).to_string()
    });
    prop_oneof![
        3 => json.prop_map(String::into_bytes),
        2 => configmap.prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<u8>(), 0..64),
        1 => (1usize..20_000).prop_map(|depth| format!("{}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes()),
        1 => (1usize..20_000).prop_map(|depth| "{\"a\":".repeat(depth).into_bytes()),
        1 => Just(Vec::new()),
    ]
}

fn content_type() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(vec![
            "application/json", "application/yaml", "application/merge-patch+json",
            "application/json-patch+json", "application/strategic-merge-patch+json",
            "application/apply-patch+yaml", "text/plain", "application/vnd.kubernetes.protobuf",
            "application/json; charset=utf-8", "",
        ])
        .prop_map(str::to_string),
        1 => "[ -~]{0,20}",
    ]
}

fn accept() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "application/json",
        "*/*",
        "application/json;as=Table;v=v1;g=meta.k8s.io",
        "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
        "application/xml",
        "application/yaml",
        "application/vnd.kubernetes.protobuf",
        "",
    ])
    .prop_map(str::to_string)
}

/// The same cases on every run (CI must not flake on a newly drawn input);
/// `PROPTEST_RNG_SEED=<n>` explores other ones.
fn reproducible(cases: u32) -> ProptestConfig {
    let config = ProptestConfig::with_cases(cases);
    match config.rng_seed {
        proptest::test_runner::RngSeed::Random => ProptestConfig {
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x0c71_0e57),
            ..config
        },
        _ => config,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..reproducible(400) })]

    /// Any request gets a well-formed answer and leaves the server healthy.
    #[test]
    fn arbitrary_requests_get_well_formed_answers(
        method in prop_oneof![
            6 => prop::sample::select(vec!["GET", "POST", "PUT", "PATCH", "DELETE"]).prop_map(str::to_string),
            1 => prop::sample::select(vec!["HEAD", "OPTIONS", "TRACE", "FOO"]).prop_map(str::to_string),
        ],
        segments in prop::collection::vec(segment(), 0..7),
        query in query(),
        content_type in content_type(),
        accept in accept(),
        body in body(),
    ) {
        let server = fuzz_server();
        let mut target = format!("/{}", segments.join("/"));
        if !query.is_empty() {
            target.push('?');
            target.push_str(&query);
        }
        let mut request = format!("{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len()).into_bytes();
        if !content_type.is_empty() {
            request.extend_from_slice(format!("Content-Type: {content_type}\r\n").as_bytes());
        }
        if !accept.is_empty() {
            request.extend_from_slice(format!("Accept: {accept}\r\n").as_bytes());
        }
        request.extend_from_slice(b"\r\n");
        request.extend_from_slice(&body);
        let shown = String::from_utf8_lossy(&request[..request.len().min(300)]).into_owned();
        let raw = exchange(&server.base_url, &request).map_err(|e| TestCaseError::fail(format!("{e}\nrequest: {shown}")))?;
        check_answer(&method, &raw, content_type.contains("strategic-merge-patch")).map_err(|e| TestCaseError::fail(format!("{e}\nrequest: {shown}")))?;
        healthy(&server.base_url).map_err(|e| TestCaseError::fail(format!("after {shown}: {e}")))?;
    }

    /// Patches of every type with arbitrary bodies, against built-in objects.
    #[test]
    fn arbitrary_patches_never_break_objects(
        kind in prop::sample::select(vec!["/api/v1/namespaces/fuzz/configmaps/target", "/apis/apps/v1/namespaces/fuzz/deployments/target"]),
        patch_type in prop::sample::select(vec!["application/merge-patch+json", "application/json-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"]),
        body in body(),
    ) {
        let server = fuzz_server();
        let query = if patch_type.contains("apply") { "?fieldManager=fuzz&force=true" } else { "" };
        let mut request = format!(
            "PATCH {kind}{query} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAccept: application/json\r\nContent-Type: {patch_type}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        ).into_bytes();
        request.extend_from_slice(&body);
        let shown = String::from_utf8_lossy(&request[..request.len().min(300)]).into_owned();
        let raw = exchange(&server.base_url, &request).map_err(|e| TestCaseError::fail(format!("{e}\nrequest: {shown}")))?;
        check_answer("PATCH", &raw, patch_type.contains("strategic")).map_err(|e| TestCaseError::fail(format!("{e}\nrequest: {shown}")))?;
        if raw.status == 200 {
            // A successful patch leaves a valid object of the same kind and name.
            let object: Value = serde_json::from_slice(&raw.body).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(object["metadata"]["name"].as_str(), Some("target"), "{}", object);
        }
        let get = format!("GET {kind} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\nConnection: close\r\n\r\n");
        let after = exchange(&server.base_url, get.as_bytes()).map_err(TestCaseError::fail)?;
        prop_assert_eq!(after.status, 200, "the object must survive: {}", String::from_utf8_lossy(&after.body));
    }
}

/// Query parameters of writes, valid and not: numbers Go's parser refuses
/// or reads, truthy and false flags, unknown values.
fn write_query() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec![
        "gracePeriodSeconds",
        "timeoutSeconds",
        "limit",
        "resourceVersion",
        "dryRun",
        "fieldManager",
        "fieldValidation",
        "propagationPolicy",
        "orphanDependents",
        "force",
        "continue",
        "watch",
        "labelSelector",
    ]);
    let value = prop::sample::select(vec![
        "abc",
        "-1",
        "0",
        "1",
        "",
        "+5",
        "1.5",
        "99999999999999999999",
        "true",
        "maybe",
        "All",
        "Strict",
        "Orphan",
        "Bogus",
        "a b",
    ]);
    prop::collection::vec((key, value), 0..4).prop_map(|pairs| {
        pairs
            .into_iter()
            .map(|(k, v)| format!("{k}={}", support::http::encode_component(v)))
            .collect::<Vec<_>>()
            .join("&")
    })
}

/// One request with a body, on a fresh connection.
fn send(
    base_url: &str,
    method: &str,
    target: &str,
    content_type: &str,
    body: &[u8],
) -> Result<Raw, String> {
    let mut request = format!(
        "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAccept: application/json\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    exchange(base_url, &request)
}

/// The stored resourceVersion of a fuzz ConfigMap, creating it when absent
/// (or going: a DELETE with `propagationPolicy=Orphan` leaves it with a
/// finalizer until the garbage collector removes it).
fn victim(base_url: &str, name: &str, data: &Value) -> Result<String, TestCaseError> {
    let path = format!("/api/v1/namespaces/fuzz/configmaps/{name}");
    for _ in 0..100 {
        let going = stored(base_url, &path)?
            .is_some_and(|o| o["metadata"]["deletionTimestamp"].is_string());
        if !going {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let body =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data});
    let mut raw = send(
        base_url,
        "PUT",
        &path,
        "application/json",
        body.to_string().as_bytes(),
    )
    .map_err(TestCaseError::fail)?;
    if raw.status == 404 {
        raw = send(
            base_url,
            "POST",
            "/api/v1/namespaces/fuzz/configmaps",
            "application/json",
            body.to_string().as_bytes(),
        )
        .map_err(TestCaseError::fail)?;
    }
    prop_assert!(
        matches!(raw.status, 200 | 201),
        "set-up PUT {path}: {}",
        String::from_utf8_lossy(&raw.body)
    );
    let stored: Value =
        serde_json::from_slice(&raw.body).map_err(|e| TestCaseError::fail(e.to_string()))?;
    Ok(stored["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string())
}

/// The object stored at `path`, `None` when there is none.
fn stored(base_url: &str, path: &str) -> Result<Option<Value>, TestCaseError> {
    let raw = send(base_url, "GET", path, "application/json", b"").map_err(TestCaseError::fail)?;
    if raw.status == 404 {
        return Ok(None);
    }
    let stored: Value =
        serde_json::from_slice(&raw.body).map_err(|e| TestCaseError::fail(e.to_string()))?;
    Ok(Some(stored))
}

fn stored_version(base_url: &str, name: &str) -> Result<Option<String>, TestCaseError> {
    let path = format!("/api/v1/namespaces/fuzz/configmaps/{name}");
    Ok(stored(base_url, &path)?.and_then(|o| {
        o["metadata"]["resourceVersion"]
            .as_str()
            .map(str::to_string)
    }))
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..reproducible(200) })]

    /// A write refused for its query parameters (or anything else) leaves
    /// the object as it was: a DELETE with `gracePeriodSeconds=abc` deletes
    /// nothing.
    #[test]
    fn refused_writes_change_nothing(
        method in prop::sample::select(vec!["DELETE", "PATCH", "PUT"]),
        query in write_query(),
    ) {
        let server = fuzz_server();
        let before = victim(&server.base_url, "victim", &json!({"a": "1"}))?;
        let target = format!("/api/v1/namespaces/fuzz/configmaps/victim?{query}");
        let body = match method {
            "PATCH" => json!({"data": {"b": "2"}}),
            "PUT" => json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "victim"}, "data": {"c": "3"}}),
            _ => Value::Null,
        };
        let (content_type, bytes) = match method {
            "PATCH" => ("application/merge-patch+json", body.to_string().into_bytes()),
            "PUT" => ("application/json", body.to_string().into_bytes()),
            _ => ("application/json", Vec::new()),
        };
        let raw = send(&server.base_url, method, &target, content_type, &bytes).map_err(TestCaseError::fail)?;
        let shown = format!("{method} {target}");
        check_answer(method, &raw, false).map_err(|e| TestCaseError::fail(format!("{e}\nrequest: {shown}")))?;
        if raw.status >= 400 {
            let after = stored_version(&server.base_url, "victim")?;
            prop_assert_eq!(after.as_deref(), Some(before.as_str()), "{} answered {} yet changed the object", shown, raw.status);
        }
    }

    /// JSON patches that grow an object by copying its values: refused
    /// whole (422 by the copy limit or ConfigMap validation) or applied
    /// within the limits, never half-applied.
    #[test]
    fn growing_patches_apply_whole_or_not_at_all(
        size in prop::sample::select(vec![1024usize, 16 * 1024, 64 * 1024]),
        count in 1usize..260,
    ) {
        let server = fuzz_server();
        let before = victim(&server.base_url, "grown", &json!({"a": "x".repeat(size)}))?;
        let ops: Vec<Value> = (0..count)
            .map(|i| json!({"op": "copy", "from": "/data/a", "path": format!("/data/c{i}")}))
            .collect();
        let raw = send(&server.base_url, "PATCH", "/api/v1/namespaces/fuzz/configmaps/grown", "application/json-patch+json", Value::Array(ops).to_string().as_bytes()).map_err(TestCaseError::fail)?;
        check_answer("PATCH", &raw, false).map_err(TestCaseError::fail)?;
        let added = (size + 2) * count;
        if raw.status == 200 {
            prop_assert!(size * (count + 1) <= 1024 * 1024, "{count} copies of {size} bytes were stored");
        } else {
            prop_assert_eq!(raw.status, 422);
            let message = serde_json::from_slice::<Value>(&raw.body).map_err(|e| TestCaseError::fail(e.to_string()))?["message"].as_str().unwrap_or_default().to_string();
            if added > 3 * 1024 * 1024 {
                prop_assert_eq!(message, "the server rejected our request due to an error in our request");
            }
            let after = stored_version(&server.base_url, "grown")?;
            prop_assert_eq!(after.as_deref(), Some(before.as_str()));
        }
    }
}

/// 32 writers and 32 watchers: no deadlock, every watcher sees every change
/// exactly once and in resourceVersion order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_and_watchers_see_every_event_in_order() {
    const WRITERS: usize = 32;
    const WATCHERS: usize = 32;
    const OBJECTS_PER_WRITER: usize = 10;
    // create + update + delete per object
    const EVENTS: usize = WRITERS * OBJECTS_PER_WRITER * 3;

    let server = server::start(Config::default()).await;
    let http = Http::new(&server.base_url());
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "conc"}});
    let created = http
        .send(
            &HttpRequest::new("POST", "/api/v1/namespaces").json(&ns),
            Duration::from_secs(10),
        )
        .await
        .expect("namespace");
    assert_eq!(created.status, 201, "{}", created.text());
    let list = http
        .send(
            &HttpRequest::new("GET", "/api/v1/namespaces/conc/configmaps"),
            Duration::from_secs(10),
        )
        .await
        .expect("list");
    let start_rv = list.json().expect("list JSON")["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    let mut watchers = Vec::new();
    for _ in 0..WATCHERS {
        let http = Http::new(&server.base_url());
        // Only the writers' ConfigMaps: the root-CA publisher adds its own.
        let target = format!(
            "/api/v1/namespaces/conc/configmaps?watch=true&resourceVersion={start_rv}&timeoutSeconds=120\
             &fieldSelector=metadata.name!%3Dkube-root-ca.crt"
        );
        watchers.push(tokio::spawn(async move {
            http.watch_until(&target, Duration::from_secs(120), |events| {
                events.len() >= EVENTS
            })
            .await
        }));
    }
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let http = Http::new(&server.base_url());
        writers.push(tokio::spawn(async move {
            let mut rvs = Vec::new();
            for i in 0..OBJECTS_PER_WRITER {
                let name = format!("w{w}-{i}");
                let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": "0"}});
                let steps = [
                    HttpRequest::new("POST", "/api/v1/namespaces/conc/configmaps").json(&body),
                    HttpRequest::new("PATCH", format!("/api/v1/namespaces/conc/configmaps/{name}"))
                        .header("Content-Type", "application/merge-patch+json")
                        .with_body(json!({"data": {"v": "1"}}).to_string()),
                    HttpRequest::new("DELETE", format!("/api/v1/namespaces/conc/configmaps/{name}")),
                ];
                for step in steps {
                    let r = http.send(&step, Duration::from_secs(30)).await?;
                    if r.status >= 300 {
                        return Err(format!("{} {}: {} {}", step.method, step.target, r.status, r.text()));
                    }
                    if step.method != "DELETE" {
                        let rv = r.json()?["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_string();
                        rvs.push(rv);
                    }
                }
            }
            Ok::<_, String>(rvs)
        }));
    }
    let deadline = Duration::from_secs(150);
    let mut written = Vec::new();
    for writer in writers {
        let rvs = tokio::time::timeout(deadline, writer)
            .await
            .expect("writers deadlocked")
            .expect("writer task")
            .expect("writer");
        written.extend(rvs);
    }
    let mut reference: Option<Vec<(String, String, String)>> = None;
    for (i, watcher) in watchers.into_iter().enumerate() {
        let events = tokio::time::timeout(deadline, watcher)
            .await
            .expect("watchers deadlocked")
            .expect("watcher task")
            .unwrap_or_else(|e| panic!("watcher {i}: {e}"));
        let seen: Vec<(String, String, String)> = events
            .iter()
            .take(EVENTS)
            .map(|e| {
                (
                    e["type"].as_str().unwrap_or_default().to_string(),
                    e["object"]["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    e["object"]["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                )
            })
            .collect();
        let rvs: Vec<u64> = seen
            .iter()
            .map(|(_, _, rv)| rv.parse().unwrap_or(0))
            .collect();
        assert!(
            rvs.windows(2).all(|w| w[0] < w[1]),
            "watcher {i}: events not in resourceVersion order"
        );
        for (w, expected) in [
            ("ADDED", WRITERS * OBJECTS_PER_WRITER),
            ("MODIFIED", WRITERS * OBJECTS_PER_WRITER),
            ("DELETED", WRITERS * OBJECTS_PER_WRITER),
        ] {
            let count = seen.iter().filter(|(t, _, _)| t == w).count();
            assert_eq!(count, expected, "watcher {i}: {w} events");
        }
        match &reference {
            None => reference = Some(seen),
            Some(first) => assert_eq!(
                first, &seen,
                "watcher {i} saw another sequence than watcher 0"
            ),
        }
    }
    let mut from_writes: Vec<u64> = written.iter().map(|rv| rv.parse().unwrap_or(0)).collect();
    from_writes.sort_unstable();
    let watched: Vec<u64> = reference
        .unwrap_or_default()
        .iter()
        .filter(|(t, _, _)| t != "DELETED")
        .map(|(_, _, rv)| rv.parse().unwrap_or(0))
        .collect();
    assert_eq!(
        watched, from_writes,
        "the watch must carry exactly the resourceVersions the writes returned"
    );
    let ready = http
        .send(&HttpRequest::new("GET", "/readyz"), Duration::from_secs(5))
        .await
        .expect("readyz");
    assert_eq!((ready.status, ready.text().as_str()), (200, "ok"));
    server.shutdown().await;
}
