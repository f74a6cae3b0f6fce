//! The workload simulation's figures, measured on an `opctl envtest start
//! --simulate all` process of its own (so its CPU time and peak memory are
//! the server's, not the benchmark client's):
//!
//! - `rollout`: a 100-replica Deployment rolled out, then rolled to a new
//!   image (2 Nodes: 110 Pods fit on one, the rollout surges to 125);
//! - `pods`: 1,000 Pods created by 8 concurrent clients onto 10 Nodes,
//!   until all are Running and Ready.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, ResourceExt};
use serde_json::json;

/// The server under measurement: an `opctl envtest start` child process.
struct Server {
    child: Child,
    dir: PathBuf,
    client: Client,
    ticks_per_second: f64,
}

/// What the process has used so far.
#[derive(Debug, Clone, Copy)]
struct Usage {
    cpu: Duration,
    rss: u64,
    peak_rss: u64,
}

impl Server {
    async fn start(opctl: &Path, nodes: usize) -> Server {
        let dir = std::env::temp_dir().join(format!(
            "opctl-bench-workloads-{}-{nodes}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let kubeconfig = dir.join("kubeconfig");
        let mut child = Command::new(opctl)
            .args(["envtest", "start", "--simulate", "all", "--nodes"])
            .arg(nodes.to_string())
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn opctl envtest start");
        let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        loop {
            line.clear();
            let read = reader.read_line(&mut line).expect("read the ready line");
            assert!(read > 0, "`opctl envtest start` ended before it was ready");
            if line.contains("kubeconfig") {
                break;
            }
        }
        // Keep draining its output so it never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = String::new();
            while reader.read_line(&mut sink).is_ok_and(|n| n > 0) {
                sink.clear();
            }
        });
        let yaml = std::fs::read_to_string(&kubeconfig).expect("kubeconfig");
        let kubeconfig = Kubeconfig::from_yaml(&yaml).expect("kubeconfig parses");
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .expect("kube config");
        let client = Client::try_from(config).expect("client");
        let ticks_per_second = Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .unwrap_or(100.0);
        Server {
            child,
            dir,
            client,
            ticks_per_second,
        }
    }

    /// CPU time (user + system) and memory of the server process, from /proc.
    fn usage(&self) -> Usage {
        let pid = self.child.id();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Fields after the command name: state is the first, utime the 12th, stime the 13th.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map_or("", |(_, rest)| rest)
            .split_whitespace()
            .collect();
        let ticks = |i: usize| {
            fields
                .get(i)
                .and_then(|f| f.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        let cpu = Duration::from_secs_f64((ticks(11) + ticks(12)) / self.ticks_per_second);
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let kib = |key: &str| {
            status
                .lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
                .map_or(0, |v| v * 1024)
        };
        Usage {
            cpu,
            rss: kib("VmRSS:"),
            peak_rss: kib("VmHWM:"),
        }
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

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn report(what: &str, elapsed: Duration, before: Usage, after: Usage) {
    println!(
        "{what}: {:.2} s; server CPU {:.2} s (user + system); server RSS {:.1} MiB after (peak so far {:.1} MiB)",
        elapsed.as_secs_f64(),
        (after.cpu.saturating_sub(before.cpu)).as_secs_f64(),
        mib(after.rss),
        mib(after.peak_rss),
    );
}

async fn create_namespace(client: &Client, name: &str) {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": name}})).expect("namespace");
    api.create(&PostParams::default(), &ns)
        .await
        .expect("create namespace");
}

/// Polls the Deployment until its current generation is fully rolled out:
/// every replica updated and available, no old one left.
async fn rolled_out(api: &Api<Deployment>, name: &str, replicas: i32) {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let d = api.get(name).await.expect("get deployment");
        let generation = d.metadata.generation.unwrap_or(0);
        let done = d.status.as_ref().is_some_and(|s| {
            s.observed_generation.unwrap_or(0) >= generation
                && s.replicas == Some(replicas)
                && s.updated_replicas == Some(replicas)
                && s.available_replicas == Some(replicas)
                && s.unavailable_replicas.unwrap_or(0) == 0
        });
        if done {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the Deployment did not roll out: {:?}",
            d.status
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A 100-replica Deployment rolled out, then rolled to a new image.
pub async fn rollout(opctl: &Path) {
    const REPLICAS: i32 = 100;
    let server = Server::start(opctl, 2).await;
    let client = server.client.clone();
    create_namespace(&client, "bench-rollout").await;
    let api: Api<Deployment> = Api::namespaced(client, "bench-rollout");
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {
            "replicas": REPLICAS,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]},
            },
        },
    }))
    .expect("deployment");
    let idle = server.usage();
    println!(
        "rollout: server idle with 2 Nodes: RSS {:.1} MiB, CPU {:.2} s since start",
        mib(idle.rss),
        idle.cpu.as_secs_f64()
    );
    let begin = Instant::now();
    api.create(&PostParams::default(), &deployment)
        .await
        .expect("create deployment");
    rolled_out(&api, "web", REPLICAS).await;
    let first = server.usage();
    report(
        "rollout: 100-replica Deployment created -> 100 available",
        begin.elapsed(),
        idle,
        first,
    );
    let begin = Instant::now();
    let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.28"}]}}}});
    api.patch("web", &PatchParams::default(), &Patch::Strategic(&image))
        .await
        .expect("set image");
    rolled_out(&api, "web", REPLICAS).await;
    let second = server.usage();
    report(
        "rollout: new image -> 100 updated and available, old ReplicaSet at 0",
        begin.elapsed(),
        first,
        second,
    );
    server.stop();
}

fn is_ready(pod: &Pod) -> bool {
    pod.status.as_ref().is_some_and(|s| {
        s.phase.as_deref() == Some("Running")
            && s.conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Ready" && c.status == "True")
    })
}

/// 1,000 Pods onto 10 Nodes until all are Running and Ready
/// (`ENVTEST_BENCH_PODS=N`: N Pods onto N/100 Nodes, to see how it scales).
pub async fn pods(opctl: &Path) {
    let pod_count: usize = std::env::var("ENVTEST_BENCH_PODS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let nodes = pod_count.div_ceil(100);
    const WRITERS: usize = 8;
    let server = Server::start(opctl, nodes).await;
    let client = server.client.clone();
    create_namespace(&client, "bench-pods").await;
    let api: Api<Pod> = Api::namespaced(client, "bench-pods");
    let since = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("a resourceVersion");
    // The watch counts Ready Pods as the server reports them.
    let watcher = {
        let api = api.clone();
        tokio::spawn(async move {
            let mut ready = HashSet::new();
            let params = WatchParams::default().timeout(290);
            let mut since = since;
            while ready.len() < pod_count {
                let mut stream = api.watch(&params, &since).await.expect("watch").boxed();
                while let Some(event) = stream.try_next().await.expect("watch event") {
                    let pod = match event {
                        WatchEvent::Added(p) | WatchEvent::Modified(p) => p,
                        WatchEvent::Bookmark(b) => {
                            since = b.metadata.resource_version;
                            continue;
                        }
                        _ => continue,
                    };
                    since = pod.resource_version().unwrap_or_default();
                    if is_ready(&pod) {
                        ready.insert(pod.name_any());
                        if ready.len() == pod_count {
                            break;
                        }
                    }
                }
            }
            Instant::now()
        })
    };
    let idle = server.usage();
    println!(
        "pods: server idle with {nodes} Nodes: RSS {:.1} MiB, CPU {:.2} s since start",
        mib(idle.rss),
        idle.cpu.as_secs_f64()
    );
    let begin = Instant::now();
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let api = api.clone();
        writers.push(tokio::spawn(async move {
            for i in (w..pod_count).step_by(WRITERS) {
                let pod: Pod = serde_json::from_value(json!({
                    "metadata": {"name": format!("p-{i}"), "labels": {"app": "bench"}},
                    "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
                }))
                .expect("pod");
                api.create(&PostParams::default(), &pod)
                    .await
                    .expect("create pod");
            }
        }));
    }
    for w in writers {
        w.await.expect("writer");
    }
    let created = begin.elapsed();
    let all_ready = watcher.await.expect("watcher");
    let after = server.usage();
    println!(
        "pods: {pod_count} Pods created by {WRITERS} clients in {:.2} s",
        created.as_secs_f64()
    );
    report(
        &format!("pods: {pod_count} Pods on {nodes} Nodes, first create -> all Running and Ready"),
        all_ready - begin,
        idle,
        after,
    );
    let on_nodes: HashSet<String> = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .iter()
        .filter_map(|p| p.spec.as_ref()?.node_name.clone())
        .collect();
    println!("pods: spread over {} Nodes", on_nodes.len());
    server.stop();
}
