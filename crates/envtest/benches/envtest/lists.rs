//! `lists`: what one LIST of 20,000 ConfigMaps (about 27 MiB of JSON) and
//! three such LISTs at once cost the server in resident memory, and what
//! it gives back afterwards. Measured on an `opctl envtest start
//! --simulate none` process of its own, so the figures are the server's:
//! its RSS just before, its peak while answering (VmHWM, reset through
//! /proc/PID/clear_refs before each step), and its RSS 2 s after.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::json;

const OBJECTS: usize = 20_000;
/// About 1,400 bytes of JSON per ConfigMap as listed, as in the report
/// that asked for this figure (27 MiB for 20,000).
const VALUE_BYTES: usize = 1_000;
const WRITERS: usize = 8;

type Http = Client<HttpConnector, Full<Bytes>>;

/// The server under measurement, on plain HTTP.
struct Server {
    child: Child,
    dir: PathBuf,
    base_url: String,
}

impl Server {
    fn start(opctl: &Path) -> Server {
        let dir = std::env::temp_dir().join(format!("opctl-bench-lists-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let mut child = Command::new(opctl)
            .args(["envtest", "start", "--simulate", "none", "--insecure-http"])
            .arg("--kubeconfig")
            .arg(dir.join("kubeconfig"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn opctl envtest start");
        let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        reader.read_line(&mut line).expect("the ready line");
        let base_url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .map(|w| w.trim_end_matches(';').to_string())
            .unwrap_or_else(|| panic!("no URL in {line:?}"));
        std::thread::spawn(move || {
            let mut sink = String::new();
            while reader.read_line(&mut sink).is_ok_and(|n| n > 0) {
                sink.clear();
            }
        });
        Server {
            child,
            dir,
            base_url,
        }
    }

    fn status_kib(&self, key: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    fn rss_mib(&self) -> f64 {
        self.status_kib("VmRSS:") as f64 / 1024.0
    }

    fn peak_mib(&self) -> f64 {
        self.status_kib("VmHWM:") as f64 / 1024.0
    }

    /// Starts a new peak from the current RSS (writing 5 to clear_refs).
    fn reset_peak(&self) {
        let _ = std::fs::write(format!("/proc/{}/clear_refs", self.child.id()), "5");
    }

    fn stop(mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn send(http: &Http, method: &str, url: &str, body: Option<String>) -> (u16, Bytes) {
    let request = hyper::Request::builder()
        .method(method)
        .uri(url)
        .header("Accept", "application/json")
        .header("Content-Type", "application/json")
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .expect("request");
    let response = http.request(request).await.expect("an answer");
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("the body")
        .to_bytes();
    (status, body)
}

/// One LIST of every ConfigMap in the namespace: bytes received.
async fn list(http: &Http, base_url: &str) -> usize {
    let (status, body) = send(
        http,
        "GET",
        &format!("{base_url}/api/v1/namespaces/lists/configmaps"),
        None,
    )
    .await;
    assert_eq!(
        status,
        200,
        "{}",
        String::from_utf8_lossy(&body[..200.min(body.len())])
    );
    body.len()
}

async fn fill(http: &Http, base_url: &str) {
    let (status, _) = send(
        http,
        "POST",
        &format!("{base_url}/api/v1/namespaces"),
        Some(
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lists"}})
                .to_string(),
        ),
    )
    .await;
    assert_eq!(status, 201);
    let value = "x".repeat(VALUE_BYTES);
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let http = http.clone();
        let url = format!("{base_url}/api/v1/namespaces/lists/configmaps");
        let value = value.clone();
        writers.push(tokio::spawn(async move {
            for i in (w..OBJECTS).step_by(WRITERS) {
                let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("cm-{i:05}"), "labels": {"bench": "lists"}},
                    "data": {"value": value}});
                let (status, _) = send(&http, "POST", &url, Some(body.to_string())).await;
                assert_eq!(status, 201);
            }
        }));
    }
    for writer in writers {
        writer.await.expect("writer");
    }
}

/// Runs `concurrent` LISTs at once and prints the server's memory around them.
async fn measure(server: &Server, http: &Http, concurrent: usize) {
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = server.rss_mib();
    server.reset_peak();
    let started = Instant::now();
    let mut lists = Vec::new();
    for _ in 0..concurrent {
        let http = http.clone();
        let base_url = server.base_url.clone();
        lists.push(tokio::spawn(async move { list(&http, &base_url).await }));
    }
    let mut bytes = 0;
    for l in lists {
        bytes = l.await.expect("list");
    }
    let elapsed = started.elapsed();
    let peak = server.peak_mib();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = server.rss_mib();
    let response = bytes as f64 / (1024.0 * 1024.0);
    println!(
        "{concurrent} LIST(s) of {OBJECTS} ConfigMaps ({response:.1} MiB of JSON each) in {:.2} s: \
         server RSS {before:.1} MiB before, peak {peak:.1} MiB (+{:.1} MiB, {:.1}x one response), \
         {after:.1} MiB 2 s after (+{:.1} MiB kept)",
        elapsed.as_secs_f64(),
        peak - before,
        (peak - before) / response,
        after - before,
    );
}

pub async fn lists(opctl: &Path) {
    let server = Server::start(opctl);
    let http: Http = Client::builder(TokioExecutor::new()).build_http();
    let started = Instant::now();
    fill(&http, &server.base_url).await;
    println!(
        "lists: {OBJECTS} ConfigMaps stored in {:.1} s; server RSS {:.1} MiB",
        started.elapsed().as_secs_f64(),
        server.rss_mib()
    );
    // The first LIST is measured cold: what it keeps shows.
    measure(&server, &http, 1).await;
    measure(&server, &http, 3).await;
    measure(&server, &http, 1).await;
    server.stop();
}
