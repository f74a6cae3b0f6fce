//! Benchmark: what the SidecarSet controller costs the API server and
//! itself.
//!
//!     opctl envtest run --crds config/crd/bases -- \
//!         cargo test --release --test benchmark -- --ignored --nocapture
//!
//! For each count of `BENCH_PODS` (default `200,1000`) it spreads the Pods
//! over `BENCH_SIDECARSETS` (default 10) SidecarSets, each selecting its
//! share by label, every other Pod of each share Ready, and runs two
//! scenarios, each with Pods in a fresh namespace and the manager binary
//! (optimised with `--release`):
//!
//! - **waiting**: the SidecarSets and Pods exist before the manager
//!   starts; timed from its start until every SidecarSet's status has the
//!   right counts (matched, updated, ready, updated and ready) at its
//!   generation;
//! - **running**: the manager runs (caches filled) when the benchmark
//!   creates the SidecarSets, then the Pods, as fast as the API server takes
//!   them, then sets half the Pods Ready; timed from the first create until
//!   the counts are right.
//!
//! It reports the API requests the manager made per SidecarSet and per
//! Pod, split by verb and resource (from `apiserver_request_total` on
//! envtest's `/metrics`, minus the benchmark's own writes and its watch),
//! the requests of one resync that changes nothing (the manager runs with
//! `--sync-period-seconds=10`; a resync is every SidecarSet counted
//! again), the reconciles, and the manager's peak resident memory
//! (`VmHWM`).
//!
//! The Pods stand in for what the webhook and a kubelet make: each is
//! created with its SidecarSet's container and the
//! `kruise.io/sidecarset-injected` annotation the Pod webhook would have
//! added, and with a scheduling gate so that nothing runs it; the benchmark
//! sets their `Ready` condition through `/status`. The manager runs with
//! `--enable-webhooks=false` and no webhook configuration is installed:
//! the webhooks answer the API server's admission calls rather than
//! reconcile (the Pod webhook costs one LIST of SidecarSets per Pod
//! created, which this benchmark does not count), and with the SidecarSet
//! webhooks installed (`failurePolicy: Fail`) no SidecarSet could be created
//! before the manager starts. The manager watches Pods in every namespace,
//! so run the benchmark on a fresh `opctl envtest` (its gated Pods are
//! never scheduled, so no simulated kubelet writes their status). It fails
//! if a resync that changes nothing makes a request. It is an ignored test
//! so that `cargo test` and CI leave it out.

mod cluster;
mod process;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Container, Namespace, Pod};
use kube::api::{Api, DeleteParams, PostParams, WatchEvent, WatchParams};
use kube::{Client, ResourceExt};

use process::{Manager, http_get};
use sidecarset::api::apps::v1alpha1::{INJECTED_ANNOTATION, SidecarSet};

/// Writes in flight at once (kube-rs opens a connection per request).
const WRITE_CONCURRENCY: usize = 64;
/// How long the request counts must stay still to call the manager idle.
const SETTLED: Duration = Duration::from_secs(2);
/// The name and image of every SidecarSet's one sidecar.
const SIDECAR: &str = "log";
const SIDECAR_IMAGE: &str = "busybox:1.36";

/// One kind of API request as `apiserver_request_total` labels it (verb,
/// resource, subresource), summed over groups, versions, scopes and codes.
type Request = (String, String, String);
/// Requests counted by kind.
type Requests = BTreeMap<Request, u64>;

/// The SidecarSets and Pods of one scenario.
struct Layout {
    /// Pods in a namespace of their own.
    namespace: String,
    /// SidecarSet names.
    sidecar_sets: Vec<String>,
    /// Each Pod's name, SidecarSet (index) and readiness.
    pods: Vec<(String, usize, bool)>,
}

impl Layout {
    fn new(scenario: &str, sidecar_sets: usize, pods: usize) -> Layout {
        let namespace = format!("bench-{}-{scenario}-{pods}", std::process::id());
        let sidecar_sets = (0..sidecar_sets)
            .map(|j| format!("{namespace}-{j:03}"))
            .collect::<Vec<_>>();
        let count = sidecar_sets.len();
        let pods = (0..pods)
            .map(|i| (format!("pod-{i:05}"), i % count, (i / count) % 2 == 0))
            .collect();
        Layout {
            namespace,
            sidecar_sets,
            pods,
        }
    }

    /// What each SidecarSet's status must count: (matched, updated, ready,
    /// updated and ready); every Pod carries its sidecar.
    fn expected(&self) -> BTreeMap<String, (i32, i32, i32, i32)> {
        let mut counts = vec![(0, 0, 0, 0); self.sidecar_sets.len()];
        for (_, set, ready) in &self.pods {
            let ready = i32::from(*ready);
            let c = &mut counts[*set];
            *c = (c.0 + 1, c.1 + 1, c.2 + ready, c.3 + ready);
        }
        self.sidecar_sets.iter().cloned().zip(counts).collect()
    }

    fn ready_pods(&self) -> usize {
        self.pods.iter().filter(|(_, _, ready)| *ready).count()
    }
}

/// What one scenario measured.
struct Report {
    sidecar_sets: usize,
    pods: usize,
    waiting: bool,
    counted_after: Duration,
    /// The manager's requests until every status was right and it idled.
    requests: Requests,
    /// The manager's requests during one resync.
    resync: Requests,
    resync_reconciles: u64,
    reconciles: u64,
    peak_kib: u64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run it as the module documentation says"]
async fn sidecar_sets_count_their_pods_with_few_requests() -> anyhow::Result<()> {
    let counts = std::env::var("BENCH_PODS").unwrap_or_else(|_| "200,1000".to_owned());
    let sidecar_sets = std::env::var("BENCH_SIDECARSETS").unwrap_or_else(|_| "10".to_owned());
    let sidecar_sets: usize = sidecar_sets.trim().parse()?;
    anyhow::ensure!(sidecar_sets > 0, "BENCH_SIDECARSETS must be at least 1");
    let client = Client::try_default().await?;
    for pods in counts.split(',') {
        let pods: usize = pods.trim().parse()?;
        for waiting in [true, false] {
            let scenario = if waiting { "waiting" } else { "running" };
            let layout = Layout::new(scenario, sidecar_sets, pods);
            let report = run(&client, &layout, waiting).await?;
            print(&report);
            let resync: u64 = report.resync.values().sum();
            anyhow::ensure!(
                resync == 0,
                "a resync that changes nothing made {resync} requests: {:?}",
                report.resync
            );
            clean_up(&client, &layout).await?;
        }
    }
    Ok(())
}

/// Runs one scenario.
async fn run(client: &Client, layout: &Layout, waiting: bool) -> anyhow::Result<Report> {
    let pods = cluster::fresh_namespace(client, &layout.namespace).await;
    let sidecar_sets: Api<SidecarSet> = Api::all(client.clone());
    let start = || {
        let mut command = Manager::command();
        command
            .env_remove("KUBE_RS_DEBUG_IMPERSONATE_USER")
            .arg("--enable-webhooks=false")
            .arg("--sync-period-seconds=10");
        Manager::spawn(command)
    };

    let (manager, before, started, own_writes) = if waiting {
        create_all(&sidecar_sets, &pods, layout).await?;
        let before = api_requests(client).await?;
        let started = Instant::now();
        (start(), before, started, Requests::new())
    } else {
        let manager = start();
        let before = api_requests(client).await?;
        let started = Instant::now();
        create_all(&sidecar_sets, &pods, layout).await?;
        let own = [
            (
                request("POST", "sidecarsets", ""),
                layout.sidecar_sets.len(),
            ),
            (request("POST", "pods", ""), layout.pods.len()),
            (request("PATCH", "pods", "status"), layout.ready_pods()),
        ];
        let own = own.into_iter().map(|(kind, n)| (kind, n as u64)).collect();
        (manager, before, started, own)
    };
    wait_for_counts(&sidecar_sets, layout).await?;
    let counted_after = started.elapsed();
    let after = settle(client).await?;
    let mut requests = requests_between(&before, &after);
    for (kind, own) in own_writes {
        if let Some(count) = requests.get_mut(&kind) {
            *count -= own;
        }
    }
    // Watches are counted when they end: the benchmark's own (ended), and
    // none of the manager's (still open).
    requests.retain(|(verb, _, _), count| verb != "WATCH" && *count > 0);
    let reconciled = reconciles(&manager)?;

    // One resync: every SidecarSet counted again, nothing to change.
    let before = api_requests(client).await?;
    let deadline = Instant::now() + Duration::from_secs(60);
    let count = layout.sidecar_sets.len() as u64;
    while reconciles(&manager)? < reconciled + count {
        anyhow::ensure!(Instant::now() < deadline, "no resync within a minute");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let resync_reconciles = reconciles(&manager)? - reconciled;
    let after = settle(client).await?;
    let resync = requests_between(&before, &after);

    let peak_kib = peak_memory_kib(manager.pid())?;
    let exit = manager.terminate(Duration::from_secs(30));
    anyhow::ensure!(exit.success(), "the manager exited with {exit}");
    Ok(Report {
        sidecar_sets: layout.sidecar_sets.len(),
        pods: layout.pods.len(),
        waiting,
        counted_after,
        requests,
        resync,
        resync_reconciles,
        reconciles: reconciled,
        peak_kib,
    })
}

/// Creates the SidecarSets, then the Pods (as the Pod webhook would have
/// injected them), then sets the Ready condition of those meant to be.
async fn create_all(
    sidecar_sets: &Api<SidecarSet>,
    pods: &Api<Pod>,
    layout: &Layout,
) -> anyhow::Result<()> {
    for set in &layout.sidecar_sets {
        let object = cluster::sidecar_set(set, set, &[(SIDECAR, SIDECAR_IMAGE)]);
        sidecar_sets.create(&PostParams::default(), &object).await?;
    }
    futures::stream::iter(&layout.pods)
        .map(|(name, set, _)| async move {
            let set = &layout.sidecar_sets[*set];
            let mut pod = cluster::pod(name, set);
            pod.annotations_mut()
                .insert(INJECTED_ANNOTATION.to_owned(), set.clone());
            let spec = pod.spec.get_or_insert_default();
            spec.containers.push(Container {
                name: SIDECAR.to_owned(),
                image: Some(SIDECAR_IMAGE.to_owned()),
                ..Container::default()
            });
            pods.create(&PostParams::default(), &pod).await
        })
        .buffer_unordered(WRITE_CONCURRENCY)
        .try_collect::<Vec<_>>()
        .await?;
    let ready = layout.pods.iter().filter(|(_, _, ready)| *ready);
    futures::stream::iter(ready)
        .map(|(name, _, _)| cluster::set_ready(pods, name, true))
        .buffer_unordered(WRITE_CONCURRENCY)
        .collect::<Vec<()>>()
        .await;
    Ok(())
}

/// Completes once every SidecarSet of `layout` reports the expected counts
/// at its generation. One watch request from resourceVersion 0 (every
/// SidecarSet, then their changes), so that it adds no LIST to the counts.
async fn wait_for_counts(api: &Api<SidecarSet>, layout: &Layout) -> anyhow::Result<()> {
    let expected = layout.expected();
    let mut right = BTreeSet::new();
    let params = WatchParams::default().timeout(290);
    let mut stream = std::pin::pin!(api.watch(&params, "0").await?);
    while let Some(event) = stream.try_next().await? {
        let object = match event {
            WatchEvent::Added(object) | WatchEvent::Modified(object) => object,
            WatchEvent::Error(status) => anyhow::bail!("the watch failed: {status:?}"),
            WatchEvent::Deleted(_) | WatchEvent::Bookmark(_) => continue,
        };
        let name = object.name_any();
        let Some(want) = expected.get(&name) else {
            continue;
        };
        let status = object.status.unwrap_or_default();
        let counts = (
            status.matched_pods,
            status.updated_pods,
            status.ready_pods,
            status.updated_ready_pods,
        );
        if counts == *want && status.observed_generation == object.metadata.generation {
            right.insert(name);
            if right.len() == expected.len() {
                return Ok(());
            }
        } else {
            right.remove(&name);
        }
    }
    anyhow::bail!(
        "the watch of SidecarSets ended with {} of {} counted right",
        right.len(),
        expected.len()
    )
}

/// Deletes the scenario's SidecarSets and namespace, and waits until the
/// namespace (with its Pods) is gone, so that the next manager does not
/// cache them.
async fn clean_up(client: &Client, layout: &Layout) -> anyhow::Result<()> {
    let sidecar_sets: Api<SidecarSet> = Api::all(client.clone());
    for name in &layout.sidecar_sets {
        sidecar_sets.delete(name, &DeleteParams::default()).await?;
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .delete(&layout.namespace, &DeleteParams::default())
        .await?;
    let deadline = Instant::now() + cluster::PATIENCE;
    while namespaces.get_opt(&layout.namespace).await?.is_some() {
        anyhow::ensure!(
            Instant::now() < deadline,
            "namespace {} is still there",
            layout.namespace
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

fn request(verb: &str, resource: &str, subresource: &str) -> Request {
    (verb.to_owned(), resource.to_owned(), subresource.to_owned())
}

/// `VERB resource[/subresource]`.
fn describe((verb, resource, subresource): &Request) -> String {
    match subresource.as_str() {
        "" => format!("{verb} {resource}"),
        sub => format!("{verb} {resource}/{sub}"),
    }
}

/// What the API server has counted so far: `apiserver_request_total` on its
/// `/metrics` (which `opctl envtest` serves; on a cluster every client's
/// requests count, not only the manager's).
async fn api_requests(client: &Client) -> anyhow::Result<Requests> {
    let get = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(get).await?;
    let mut requests = Requests::new();
    for line in text.lines() {
        let Some((labels, value)) = line
            .strip_prefix("apiserver_request_total{")
            .and_then(|sample| sample.rsplit_once("} "))
        else {
            continue;
        };
        let label = |name: &str| {
            let start = format!("{name}=\"");
            let value = labels.split(',').find_map(|pair| pair.strip_prefix(&start));
            value.unwrap_or_default().trim_end_matches('"')
        };
        let count = value.trim().parse::<f64>().unwrap_or_default() as u64;
        let kind = request(label("verb"), label("resource"), label("subresource"));
        *requests.entry(kind).or_default() += count;
    }
    Ok(requests)
}

/// The requests counted in `after` and not in `before`.
fn requests_between(before: &Requests, after: &Requests) -> Requests {
    let grown = after.iter().map(|(kind, count)| {
        let earlier = before.get(kind).copied().unwrap_or_default();
        (kind.clone(), count.saturating_sub(earlier))
    });
    grown.filter(|(_, count)| *count > 0).collect()
}

/// The request counts once they have stayed still for [`SETTLED`].
async fn settle(client: &Client) -> anyhow::Result<Requests> {
    let mut last = api_requests(client).await?;
    let mut still_since = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = api_requests(client).await?;
        // Only the benchmark's watch may still be ending.
        let moved = requests_between(&last, &now).keys().any(|k| k.0 != "WATCH");
        if moved {
            still_since = Instant::now();
        }
        last = now;
        if still_since.elapsed() >= SETTLED {
            return Ok(last);
        }
    }
}

/// The manager's reconciles so far (`controller_runtime_reconcile_total`
/// summed over results) on its plain-HTTP `/metrics`.
fn reconciles(manager: &Manager) -> anyhow::Result<u64> {
    let (status, body) = http_get(manager.metrics, "/metrics")
        .ok_or_else(|| anyhow::anyhow!("/metrics does not answer"))?;
    anyhow::ensure!(status == 200, "/metrics answered {status}");
    let samples = body
        .lines()
        .filter_map(|line| line.strip_prefix("controller_runtime_reconcile_total{"));
    let counts = samples.map(|rest| rest.rsplit(' ').next().unwrap_or_default().parse::<u64>());
    Ok(counts.sum::<Result<u64, _>>()?)
}

/// The peak resident set size of process `pid`, in KiB.
fn peak_memory_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"));
    let kib = line.and_then(|line| line.split_whitespace().nth(1));
    let kib = kib.ok_or_else(|| anyhow::anyhow!("no VmHWM in /proc/{pid}/status"))?;
    Ok(kib.parse()?)
}

/// Prints one scenario.
fn print(report: &Report) {
    let (sets, pods) = (report.sidecar_sets as f64, report.pods as f64);
    let when = if report.waiting {
        "waiting when the manager starts"
    } else {
        "created while it runs"
    };
    println!(
        "{} SidecarSets over {} Pods (half Ready), {when}",
        report.sidecar_sets, report.pods
    );
    println!(
        "  all counted after:             {:.2} s",
        report.counted_after.as_secs_f64()
    );
    // LISTs fill the caches once, whatever the count.
    let (starts, counting): (Vec<_>, Vec<_>) = report
        .requests
        .iter()
        .partition(|(kind, _)| kind.0 == "LIST");
    let total: u64 = counting.iter().map(|(_, n)| **n).sum();
    println!(
        "  API requests:                  {:.2} per SidecarSet, {:.2} per Pod",
        total as f64 / sets,
        total as f64 / pods
    );
    for (kind, n) in counting {
        println!(
            "    {:<30} {:.2} per SidecarSet, {:.2} per Pod",
            describe(kind),
            *n as f64 / sets,
            *n as f64 / pods
        );
    }
    let starts: Vec<String> = starts
        .iter()
        .map(|(kind, n)| format!("{} {n}", describe(kind)))
        .collect();
    if starts.is_empty() {
        println!("  filling the caches (once):     before the creates, not counted");
    } else {
        println!(
            "  filling the caches (once):     {} (and one WATCH per kind, open)",
            starts.join(", ")
        );
    }
    let resync: u64 = report.resync.values().sum();
    let changed: Vec<String> = report
        .resync
        .iter()
        .map(|(kind, n)| format!("{} {n}", describe(kind)))
        .collect();
    println!(
        "  resync changing nothing:       {:.2} requests per SidecarSet ({} reconciles{})",
        resync as f64 / sets,
        report.resync_reconciles,
        if changed.is_empty() {
            String::new()
        } else {
            format!(": {}", changed.join(", "))
        }
    );
    println!(
        "  reconciles until idle:         {} ({:.1} per SidecarSet)",
        report.reconciles,
        report.reconciles as f64 / sets
    );
    println!(
        "  manager peak memory:           {:.1} MiB (VmHWM)",
        report.peak_kib as f64 / 1024.0
    );
}
