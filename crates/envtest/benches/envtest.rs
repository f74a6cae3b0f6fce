//! The figures the README quotes for `opctl envtest` (docs/envtest-benchmarks.md):
//!
//! - start-to-ready of `Envtest::start` (target <= 50 ms) and of the
//!   `opctl envtest start` process until its ready line;
//! - writes per second through kube-rs with 16 concurrent clients
//!   (target >= 5,000/s on 2 cores);
//! - watch-event latency p50/p99 (write sent -> event received);
//! - resident memory per 10,000 stored ConfigMaps;
//! - the workload simulation (`rollout`, `pods`, see `envtest/workloads.rs`);
//! - the server's memory around LISTs of 20,000 ConfigMaps (`lists`, see
//!   `envtest/lists.rs`).
//!
//! Run: `cargo bench -p opctl-envtest --bench envtest` (builds `opctl`
//! in release mode first if target/release/opctl is missing). Set
//! `ENVTEST_BENCH=start,writes,latency,memory,cli,rollout,pods,lists` to run some only;
//! `ENVTEST_BENCH_OPCTL=PATH` measures another `opctl` binary in the
//! figures that start one.

#[path = "envtest/lists.rs"]
mod lists;
#[path = "envtest/workloads.rs"]
mod workloads;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, ResourceExt};
use opctl_envtest::{Config, Envtest};
use serde_json::json;

const START_TARGET_MS: f64 = 50.0;
const WRITES_TARGET_PER_S: f64 = 5000.0;

fn selected(name: &str) -> bool {
    std::env::var("ENVTEST_BENCH").map_or(true, |list| list.split(',').any(|n| n.trim() == name))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn client(server: &Envtest) -> Client {
    let kubeconfig = Kubeconfig::from_yaml(&server.kubeconfig_yaml()).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube config");
    Client::try_from(config).expect("client")
}

async fn namespace(client: &Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).expect("ns");
    api.create(&PostParams::default(), &ns)
        .await
        .expect("create namespace");
}

fn configmap(name: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "bench"}},
        "data": {"a": "alpha", "b": "bravo", "c": "charlie"},
    }))
    .expect("configmap")
}

/// `Envtest::start` until `/readyz` answers ok, fresh server each time.
async fn start_to_ready() {
    const RUNS: usize = 30;
    let http = text_getter();
    let mut times = Vec::new();
    for _ in 0..RUNS {
        let begin = Instant::now();
        let server = Envtest::start(Config::default()).await.expect("start");
        let ready = http(&format!("{}/readyz", server.base_url())).await;
        let elapsed = begin.elapsed();
        assert_eq!(ready.as_deref(), Some("ok"), "/readyz after start");
        times.push(ms(elapsed));
        server.shutdown().await;
    }
    times.sort_by(f64::total_cmp);
    let p50 = percentile(&times, 50.0);
    println!(
        "start-to-ready (Envtest::start + /readyz, {RUNS} runs): p50 {p50:.2} ms, p90 {:.2} ms, max {:.2} ms; target <= {START_TARGET_MS} ms: {:.2}x the target ({})",
        percentile(&times, 90.0),
        times.last().copied().unwrap_or(f64::NAN),
        p50 / START_TARGET_MS,
        if p50 <= START_TARGET_MS {
            "met"
        } else {
            "missed"
        }
    );
}

/// A tiny GET helper on hyper (no extra HTTP client crate).
fn text_getter()
-> impl Fn(&str) -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<String>> + Send>> {
    use http_body_util::{BodyExt, Empty};
    use hyper_util::client::legacy::Client as HyperClient;
    use hyper_util::rt::TokioExecutor;
    let client: HyperClient<_, Empty<bytes::Bytes>> =
        HyperClient::builder(TokioExecutor::new()).build_http();
    move |url: &str| {
        let client = client.clone();
        let url = url.to_string();
        Box::pin(async move {
            let uri: hyper::Uri = url.parse().ok()?;
            let response = client.get(uri).await.ok()?;
            let body = response.into_body().collect().await.ok()?.to_bytes();
            Some(String::from_utf8_lossy(&body).into_owned())
        })
    }
}

/// 16 kube-rs clients creating ConfigMaps as fast as they can.
async fn writes_per_second() {
    const CLIENTS: usize = 16;
    const PER_CLIENT: usize = 1000;
    let server = Envtest::start(Config::default()).await.expect("start");
    let base = client(&server).await;
    namespace(&base, "bench-writes").await;
    // Warm-up: connections and code paths.
    let api: Api<ConfigMap> = Api::namespaced(base.clone(), "bench-writes");
    for i in 0..200 {
        api.create(&PostParams::default(), &configmap(&format!("warm-{i}")))
            .await
            .expect("warm-up write");
    }
    let begin = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let client = self::client(&server).await;
        tasks.push(tokio::spawn(async move {
            let api: Api<ConfigMap> = Api::namespaced(client, "bench-writes");
            for i in 0..PER_CLIENT {
                api.create(&PostParams::default(), &configmap(&format!("c{c}-{i}")))
                    .await
                    .expect("write");
            }
        }));
    }
    for t in tasks {
        t.await.expect("writer");
    }
    let elapsed = begin.elapsed().as_secs_f64();
    let rate = (CLIENTS * PER_CLIENT) as f64 / elapsed;
    println!(
        "writes through kube-rs ({CLIENTS} concurrent clients, {} creates): {rate:.0} writes/s in {elapsed:.2} s; target >= {WRITES_TARGET_PER_S}/s: {:.2}x the target ({})",
        CLIENTS * PER_CLIENT,
        rate / WRITES_TARGET_PER_S,
        if rate >= WRITES_TARGET_PER_S {
            "met"
        } else {
            "missed"
        }
    );
    server.shutdown().await;
}

/// Time from sending a create to receiving its ADDED event on a watch.
async fn watch_latency() {
    const EVENTS: usize = 2000;
    let server = Envtest::start(Config::default()).await.expect("start");
    let client = client(&server).await;
    namespace(&client, "bench-watch").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "bench-watch");
    let list = api.list(&Default::default()).await.expect("list");
    let rv = list.metadata.resource_version.unwrap_or_default();
    let sent: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let mut stream = api
        .watch(&WatchParams::default().timeout(290), &rv)
        .await
        .expect("watch")
        .boxed();
    let watcher_sent = sent.clone();
    let watcher = tokio::spawn(async move {
        let mut latencies = Vec::new();
        while latencies.len() < EVENTS {
            match stream.next().await {
                Some(Ok(WatchEvent::Added(cm))) => {
                    let at = Instant::now();
                    let started = watcher_sent
                        .lock()
                        .ok()
                        .and_then(|m| m.get(&cm.name_any()).copied());
                    if let Some(started) = started {
                        latencies.push(ms(at - started));
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => panic!("watch failed: {e}"),
                None => panic!("watch ended early"),
            }
        }
        latencies
    });
    for i in 0..EVENTS {
        let name = format!("lat-{i}");
        if let Ok(mut m) = sent.lock() {
            m.insert(name.clone(), Instant::now());
        }
        api.create(&PostParams::default(), &configmap(&name))
            .await
            .expect("write");
    }
    let mut latencies = tokio::time::timeout(Duration::from_secs(60), watcher)
        .await
        .expect("all events within 60 s")
        .expect("watcher");
    latencies.sort_by(f64::total_cmp);
    println!(
        "watch-event latency ({EVENTS} creates, write sent -> ADDED received): p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        percentile(&latencies, 50.0),
        percentile(&latencies, 99.0),
        latencies.last().copied().unwrap_or(f64::NAN)
    );
    server.shutdown().await;
}

fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Resident memory added by storing 10,000 ConfigMaps (3 small keys each).
async fn memory_per_10k() {
    const OBJECTS: usize = 10_000;
    let server = Envtest::start(Config::default()).await.expect("start");
    let client = client(&server).await;
    namespace(&client, "bench-mem").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "bench-mem");
    for i in 0..100 {
        api.create(&PostParams::default(), &configmap(&format!("warm-{i}")))
            .await
            .expect("warm-up");
    }
    let before = rss_bytes();
    let mut tasks = Vec::new();
    for c in 0..8 {
        let api = api.clone();
        tasks.push(tokio::spawn(async move {
            for i in (c..OBJECTS).step_by(8) {
                api.create(&PostParams::default(), &configmap(&format!("m-{i}")))
                    .await
                    .expect("write");
            }
        }));
    }
    for t in tasks {
        t.await.expect("writer");
    }
    let after = rss_bytes();
    let delta = after.saturating_sub(before) as f64;
    let sample = serde_json::to_vec(&api.get("m-0").await.expect("get"))
        .map(|v| v.len())
        .unwrap_or(0);
    println!(
        "memory for {OBJECTS} stored ConfigMaps: +{:.1} MiB RSS ({:.0} bytes per object; one object is {sample} bytes of JSON as served)",
        delta / (1024.0 * 1024.0),
        delta / OBJECTS as f64
    );
    server.shutdown().await;
}

fn opctl_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("ENVTEST_BENCH_OPCTL") {
        return PathBuf::from(path);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let binary = target.join("release/opctl");
    if !binary.exists() {
        println!("building opctl (release) for the CLI start-up figure...");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--release", "--bin", "opctl"])
            .current_dir(&root)
            .status()
            .expect("run cargo build");
        assert!(status.success(), "cargo build --release --bin opctl failed");
    }
    binary
}

/// `opctl envtest start` from exec until it prints its ready line.
fn cli_start_to_ready() {
    const RUNS: usize = 10;
    let binary = opctl_binary();
    // Fresh, private (0700) and removed on drop: the kubeconfigs hold a token.
    let tmp = tempfile::Builder::new()
        .prefix("opctl-bench-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir()
        .expect("temp dir");
    let dir = tmp.path();
    let mut times = Vec::new();
    for run in 0..RUNS {
        let kubeconfig = dir.join(format!("kubeconfig-{run}"));
        let begin = Instant::now();
        let mut child = Command::new(&binary)
            .args(["envtest", "start", "--kubeconfig"])
            .arg(&kubeconfig)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn opctl envtest start");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        let mut reader = BufReader::new(stdout);
        let found = loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => break false,
                Ok(_) if line.contains("kubeconfig") => break true,
                Ok(_) => {}
            }
        };
        let elapsed = begin.elapsed();
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
        let _ = child.wait();
        assert!(
            found,
            "`opctl envtest start` printed no ready line mentioning the kubeconfig"
        );
        times.push(ms(elapsed));
    }
    times.sort_by(f64::total_cmp);
    let p50 = percentile(&times, 50.0);
    println!(
        "start-to-ready of `opctl envtest start` (exec -> ready line, {RUNS} runs): p50 {p50:.1} ms, max {:.1} ms; target <= {START_TARGET_MS} ms: {:.2}x the target ({})",
        times.last().copied().unwrap_or(f64::NAN),
        p50 / START_TARGET_MS,
        if p50 <= START_TARGET_MS {
            "met"
        } else {
            "missed"
        }
    );
}

fn main() {
    // `cargo test --benches` runs this with --bench absent; keep that quick.
    if !std::env::args().any(|a| a == "--bench") {
        println!("envtest benchmarks: run with `cargo bench -p opctl-envtest --bench envtest`");
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "machine: {} cores",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    // First, while the allocator holds no memory freed by other figures
    // (an RSS delta measured later would hide the growth).
    if selected("memory") {
        runtime.block_on(memory_per_10k());
    }
    if selected("start") {
        runtime.block_on(start_to_ready());
    }
    if selected("cli") {
        cli_start_to_ready();
    }
    if selected("writes") {
        runtime.block_on(writes_per_second());
    }
    if selected("latency") {
        runtime.block_on(watch_latency());
    }
    if selected("rollout") {
        runtime.block_on(workloads::rollout(&opctl_binary()));
    }
    if selected("pods") {
        runtime.block_on(workloads::pods(&opctl_binary()));
    }
    if selected("lists") {
        runtime.block_on(lists::lists(&opctl_binary()));
    }
}
