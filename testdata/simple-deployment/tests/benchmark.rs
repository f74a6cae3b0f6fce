//! Benchmark: what the operator costs the API server and itself.
//!
//!     opctl envtest run --simulate none -- \
//!         cargo test --release --test benchmark -- --ignored --nocapture
//!
//! For each count of `BENCH_DEPLOYMENTS` (default `200,1000`) it runs two
//! scenarios, each in a fresh namespace with the operator binary (optimised
//! with `--release`) watching only it:
//!
//! - **waiting**: the Deployments exist before the operator starts; timed
//!   from its start until every Deployment has its Pod;
//! - **running**: the operator runs (caches filled) when the Deployments
//!   are created, as fast as the API server takes them; timed from the
//!   first create until every Deployment has its Pod.
//!
//! It reports the API requests the operator made per Deployment, split by
//! verb and resource (from `apiserver_request_total` on envtest's
//! `/metrics`, minus the benchmark's own creates and its watch), the
//! requests per Deployment of one resync that changes nothing (every
//! Deployment checked again: the operator's `--resync-seconds`, 10 s,
//! requeues each one; the manager's `--sync-period-seconds` stays at its
//! 10 h), the reconciles, and the operator's peak resident memory
//! (`VmHWM`). The operator runs as the kubeconfig's user, with its default
//! flags otherwise. The Deployments have no replicas, and `opctl envtest`
//! runs no workload controllers unless `--simulate` asks, so the
//! operator's Pods are the only Pods. It fails if a resync that changes
//! nothing makes a request. It is an ignored test so that `cargo test` and
//! CI leave it out.

mod support;

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use kube::{Client, ResourceExt};

use support::{Operator, TestNamespace, deployment, http_get};

/// Creates in flight at once (kube-rs opens a connection per request).
const CREATE_CONCURRENCY: usize = 64;
/// How long the request counts must stay still to call the operator idle.
const SETTLED: Duration = Duration::from_secs(2);
/// The operator's `--resync-seconds` (its default).
const RESYNC_SECONDS: u64 = 10;

/// One kind of API request as `apiserver_request_total` labels it (verb,
/// resource, subresource), summed over groups, versions, scopes and codes.
type Request = (String, String, String);
/// Requests counted by kind.
type Requests = BTreeMap<Request, u64>;

/// What one scenario measured.
struct Report {
    count: usize,
    waiting: bool,
    all_pods_after: Duration,
    /// The operator's requests until every Deployment had its Pod and it idled.
    requests: Requests,
    /// The operator's requests during one resync.
    resync: Requests,
    resync_reconciles: u64,
    reconciles: u64,
    peak_kib: u64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run it as the module documentation says"]
async fn every_deployment_gets_its_pod_with_few_requests() -> anyhow::Result<()> {
    let counts = std::env::var("BENCH_DEPLOYMENTS").unwrap_or_else(|_| "200,1000".to_owned());
    let client = Client::try_default().await?;
    for count in counts.split(',') {
        let count: usize = count.trim().parse()?;
        for waiting in [true, false] {
            let report = scenario(&client, count, waiting).await?;
            print(&report);
            let resync: u64 = report.resync.values().sum();
            anyhow::ensure!(
                resync == 0,
                "a resync that changes nothing made {resync} requests: {:?}",
                report.resync
            );
        }
    }
    Ok(())
}

/// Runs one scenario in a namespace of its own (deleted when it ends).
async fn scenario(client: &Client, count: usize, waiting: bool) -> anyhow::Result<Report> {
    let namespace = TestNamespace::create(client, "bench").await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &namespace.name);
    let args = [
        format!("--namespace={}", namespace.name),
        format!("--resync-seconds={RESYNC_SECONDS}"),
    ];
    let start = || Operator::start_as(None, &args, &[]);

    let (operator, before, started, own_creates) = if waiting {
        create_all(&deployments, count).await?;
        let before = api_requests(client).await?;
        let started = Instant::now();
        (start().await, before, started, 0)
    } else {
        let operator = start().await;
        let before = api_requests(client).await?;
        let started = Instant::now();
        create_all(&deployments, count).await?;
        (operator, before, started, count as u64)
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace.name);
    wait_for_pods(&pods, count).await?;
    let all_pods_after = started.elapsed();
    let after = settle(client).await?;
    let mut requests = requests_between(&before, &after);
    let own = request("POST", "deployments", "");
    if let Some(creates) = requests.get_mut(&own) {
        *creates -= own_creates;
    }
    // Watches are counted when they end: the benchmark's own (ended), and
    // none of the operator's (still open).
    requests.retain(|(verb, _, _), count| verb != "WATCH" && *count > 0);
    let reconciled = reconciles(&operator)?;

    // One resync: every Deployment checked again, nothing to change.
    let before = api_requests(client).await?;
    let deadline = Instant::now() + Duration::from_secs(6 * RESYNC_SECONDS);
    while reconciles(&operator)? < reconciled + count as u64 {
        anyhow::ensure!(Instant::now() < deadline, "no resync within a minute");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let resync_reconciles = reconciles(&operator)? - reconciled;
    let after = settle(client).await?;
    let resync = requests_between(&before, &after);

    let peak_kib = peak_memory_kib(operator.pid())?;
    let exit = operator.terminate(Duration::from_secs(30)).await;
    anyhow::ensure!(exit.success(), "the operator exited with {exit}");
    Ok(Report {
        count,
        waiting,
        all_pods_after,
        requests,
        resync,
        resync_reconciles,
        reconciles: reconciled,
        peak_kib,
    })
}

/// Creates `count` Deployments (of no replicas).
async fn create_all(api: &Api<Deployment>, count: usize) -> anyhow::Result<()> {
    futures::stream::iter(0..count)
        .map(|i| {
            let api = api.clone();
            async move {
                let object = deployment(&format!("web-{i:05}"));
                api.create(&PostParams::default(), &object).await
            }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(())
}

/// Completes once `count` Pods controlled by a Deployment of their name
/// exist. One watch request from resourceVersion 0 (every Pod, then their
/// changes), so that it adds no LIST to the counts.
async fn wait_for_pods(api: &Api<Pod>, count: usize) -> anyhow::Result<()> {
    let mut made = HashSet::new();
    let params = WatchParams::default().timeout(290);
    let mut stream = std::pin::pin!(api.watch(&params, "0").await?);
    while let Some(event) = stream.try_next().await? {
        let pod = match event {
            WatchEvent::Added(pod) | WatchEvent::Modified(pod) => pod,
            WatchEvent::Error(status) => anyhow::bail!("the watch failed: {status:?}"),
            WatchEvent::Deleted(_) | WatchEvent::Bookmark(_) => continue,
        };
        let name = pod.name_any();
        let of_its_deployment = pod.owner_references().iter().any(|owner| {
            owner.controller == Some(true) && owner.kind == "Deployment" && owner.name == name
        });
        if of_its_deployment {
            made.insert(name);
            if made.len() >= count {
                return Ok(());
            }
        }
    }
    anyhow::bail!("the watch of Pods ended with {} of {count}", made.len())
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
/// requests count, not only the operator's).
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

/// The operator's reconciles so far (`controller_runtime_reconcile_total`
/// summed over results) on its plain-HTTP `/metrics`.
fn reconciles(operator: &Operator) -> anyhow::Result<u64> {
    let (status, body) = http_get(operator.metrics, "/metrics")
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
    let count = report.count as f64;
    let when = if report.waiting {
        "waiting when the operator starts"
    } else {
        "created while it runs"
    };
    println!("{} Deployments {when}", report.count);
    println!(
        "  all Pods after:                {:.2} s",
        report.all_pods_after.as_secs_f64()
    );
    // LISTs fill the caches once, whatever the count.
    let (starts, per_deployment): (Vec<_>, Vec<_>) = report
        .requests
        .iter()
        .partition(|(kind, _)| kind.0 == "LIST");
    let total: u64 = per_deployment.iter().map(|(_, n)| **n).sum();
    println!(
        "  API requests per Deployment:   {:.2}",
        total as f64 / count
    );
    for (kind, n) in per_deployment {
        println!("    {:<30} {:.2}", describe(kind), *n as f64 / count);
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
        "  resync changing nothing:       {:.2} requests per Deployment ({} reconciles{})",
        resync as f64 / count,
        report.resync_reconciles,
        if changed.is_empty() {
            String::new()
        } else {
            format!(": {}", changed.join(", "))
        }
    );
    println!(
        "  reconciles until idle:         {} ({:.1} per Deployment)",
        report.reconciles,
        report.reconciles as f64 / count
    );
    println!(
        "  operator peak memory:          {:.1} MiB (VmHWM)",
        report.peak_kib as f64 / 1024.0
    );
}
