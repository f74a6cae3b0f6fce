//! Benchmark: what the operator costs the API server and itself.
//!
//!     export CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C target-feature=+crt-static"
//!     opctl envtest run --nodes 10 --crds config/crd/bases -- \
//!         cargo test --release --target x86_64-unknown-linux-gnu --test benchmark -- \
//!         --ignored --nocapture
//!
//! The manager is built as the Dockerfile builds the image's: optimised
//! (`--release`) and linked statically (the flag and `--target`, so that
//! build scripts and proc macros stay dynamic). Without them it is linked
//! against the shared C library, which costs about 0.8 MiB more at the peak;
//! the report says which it measured.
//!
//! A Database is Ready when its Pod is: envtest's simulated scheduler and
//! kubelets run the Pods, and a Node takes 110 Pods (a kubelet's default
//! `maxPods`), hence ten Nodes for 1,000 Databases.
//!
//! For each count of `BENCH_DATABASES` (default `200,1000`; half mongo,
//! half mysql) it runs three scenarios, each in a fresh namespace with the
//! manager binary (optimised with `--release`) watching only it:
//!
//! - **waiting**: the Databases exist before the manager starts (a
//!   backlog); timed from the manager's start until every Database is
//!   Ready at its generation;
//! - **waiting, one write after another**: the same backlog with
//!   `--batch-writes=false`, the Pod and Service of a reconcile written one
//!   after the other as before opctl-runtime's `Batch`: the two figures
//!   side by side, on the same server, in the same run;
//! - **running**: the manager runs (caches filled) when the Databases are
//!   created, as fast as the API server takes them; timed from the first
//!   create until every Database is Ready.
//!
//! The manager gets the tokio worker threads its Deployment's CPU limit
//! gives it in a cluster (config/manager's 500m: one), not one per core of
//! the machine running the benchmark.
//!
//! `BENCH_MANAGER_ARGS` adds flags to every manager it starts (to compare
//! settings: `--max-concurrent-reconciles=4`, say).
//!
//! It reports the API requests the manager made per Database, split by
//! verb and resource (from `apiserver_request_total` on envtest's
//! `/metrics`, minus the benchmark's own creates and its watch), the
//! requests per Database of one resync that changes nothing (the manager
//! runs with `--sync-period-seconds=10`; a resync is every Database
//! reconciled again), the reconciles, and the manager's peak resident
//! memory (`VmHWM`). It is an ignored test so that `cargo test` and CI
//! leave it out. It fails if a resync that changes nothing costs a request,
//! or a Database more than [`REQUEST_CEILING`] requests (4 to 5 are
//! measured; 12 before the controllers read from caches).

mod support;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, PostParams, WatchEvent, WatchParams};
use kube::{Client, ResourceExt};

use database::api::zalando::v1::{Database, DatabasePhase, DatabaseSpec, DatabaseType};
use support::{
    Manager, Request, Requests, api_requests, create_namespace, reconciles, requests_between,
};

/// Creates in flight at once (kube-rs opens a connection per request).
const CREATE_CONCURRENCY: usize = 64;
/// How long the request counts must stay still to call the manager idle.
const SETTLED: Duration = Duration::from_secs(2);
/// How long every Database may take to be Ready.
const READY_WITHIN: Duration = Duration::from_secs(900);
/// The most API requests one new Database may cost (see the module doc).
const REQUEST_CEILING: f64 = 6.0;

/// What one scenario measured.
struct Report {
    count: usize,
    waiting: bool,
    /// Whether the writes of a reconcile went out together (`Batch`).
    batch: bool,
    ready_after: Duration,
    /// The manager's requests until every Database was Ready and it idled.
    requests: Requests,
    /// The manager's requests during one resync.
    resync: Requests,
    resync_reconciles: u64,
    reconciles: u64,
    peak_kib: u64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run it as the module documentation says"]
async fn databases_become_ready_with_few_requests() -> anyhow::Result<()> {
    let counts = std::env::var("BENCH_DATABASES").unwrap_or_else(|_| "200,1000".to_owned());
    let client = Client::try_default().await?;
    let (cpu_limit, threads) = deployed_worker_threads()?;
    println!(
        "the manager runs {threads} tokio worker thread(s), as under its Deployment's CPU limit \
         ({cpu_limit})\n"
    );
    let env = [("TOKIO_WORKER_THREADS", threads.to_string())];
    let binary = env!("CARGO_BIN_EXE_database");
    println!(
        "the manager binary is linked {}\n",
        if has_interpreter(binary)? {
            "dynamically (the image's is static: see the module documentation)"
        } else {
            "statically, as the image's"
        }
    );
    for count in counts.split(',') {
        let count: usize = count.trim().parse()?;
        let mut backlog = Vec::new();
        for (waiting, batch) in [(true, true), (true, false), (false, true)] {
            let report = scenario(&client, &env, count, waiting, batch).await?;
            print(&report);
            check(&report)?;
            if waiting {
                backlog.push(report.ready_after);
            }
        }
        let (together, one_by_one) = (backlog[0], backlog[1]);
        println!(
            "backlog of {count}: {:.2} s with the writes together, {:.2} s one after another \
             (ratio {:.2})\n",
            together.as_secs_f64(),
            one_by_one.as_secs_f64(),
            together.as_secs_f64() / one_by_one.as_secs_f64()
        );
    }
    Ok(())
}

/// The CPU limit of config/manager's Deployment and the worker threads
/// tokio starts under it: as many as the CPUs the process may use, which in
/// a container is its CPU quota rounded down (at least one), not the
/// machine's cores. The benchmark gives the manager as many, so that its
/// memory is the deployed manager's.
fn deployed_worker_threads() -> anyhow::Result<(String, usize)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/config/manager/manager.yaml");
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_str_multiple(&std::fs::read_to_string(path)?)?;
    let limit = docs
        .iter()
        .find(|doc| doc["kind"] == "Deployment")
        .and_then(|deployment| {
            deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"]
                .as_str()
        })
        .ok_or_else(|| anyhow::anyhow!("{path}: the Deployment has no CPU limit"))?;
    let millicpus: u64 = match limit.strip_suffix('m') {
        Some(millis) => millis.parse()?,
        None => limit.parse::<u64>()? * 1000,
    };
    Ok((limit.to_owned(), (millicpus / 1000).max(1) as usize))
}

/// Whether the ELF file at `path` names a program interpreter (the dynamic
/// loader) in its program headers: a dynamically linked binary.
fn has_interpreter(path: &str) -> anyhow::Result<bool> {
    const PT_INTERP: u32 = 3;
    let elf = std::fs::read(path)?;
    anyhow::ensure!(
        elf.starts_with(b"\x7fELF\x02"),
        "{path}: not a 64-bit ELF file"
    );
    let u16_at = |at: usize| u16::from_le_bytes([elf[at], elf[at + 1]]) as usize;
    let program_headers = u64::from_le_bytes(elf[0x20..0x28].try_into()?) as usize;
    let (entry_size, entries) = (u16_at(0x36), u16_at(0x38));
    Ok((0..entries).any(|i| {
        let at = program_headers + i * entry_size;
        elf[at..at + 4] == PT_INTERP.to_le_bytes()
    }))
}

/// Fails the benchmark on a resync that writes or a request budget blown.
fn check(report: &Report) -> anyhow::Result<()> {
    let resync: u64 = report.resync.values().sum();
    anyhow::ensure!(
        resync == 0,
        "a resync that changes nothing made {resync} requests: {:?}",
        report.resync
    );
    let per_database = requests_per_database(report);
    anyhow::ensure!(
        per_database <= REQUEST_CEILING,
        "{per_database:.2} API requests per Database (ceiling {REQUEST_CEILING})"
    );
    Ok(())
}

/// The manager's requests per Database, without the lists that fill its
/// caches once.
fn requests_per_database(report: &Report) -> f64 {
    let per_database: u64 = report
        .requests
        .iter()
        .filter(|(request, _)| request.verb != "LIST")
        .map(|(_, n)| n)
        .sum();
    per_database as f64 / report.count as f64
}

/// Runs one scenario in a namespace of its own.
async fn scenario(
    client: &Client,
    env: &[(&str, String)],
    count: usize,
    waiting: bool,
    batch: bool,
) -> anyhow::Result<Report> {
    let namespace = create_namespace(client, "bench").await;
    let api: Api<Database> = Api::namespaced(client.clone(), &namespace);
    let args = [
        format!("--namespace={namespace}"),
        "--sync-period-seconds=10".to_owned(),
        // Every Database is read and written in v1, the stored version: no
        // conversion, so no webhook server (and no CA injection at start).
        "--enable-webhooks=false".to_owned(),
        format!("--batch-writes={batch}"),
    ];
    // More manager flags to compare settings (`--max-concurrent-reconciles=4`
    // say), from BENCH_MANAGER_ARGS.
    let extra = std::env::var("BENCH_MANAGER_ARGS").unwrap_or_default();
    let args: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .chain(extra.split_whitespace())
        .collect();

    let (manager, before, started, own_creates) = if waiting {
        create_all(&api, count).await?;
        let before = api_requests(client).await?;
        let started = Instant::now();
        (Manager::start_with_env(&args, env), before, started, 0)
    } else {
        let manager = Manager::start_with_env(&args, env);
        let before = api_requests(client).await?;
        let started = Instant::now();
        create_all(&api, count).await?;
        (manager, before, started, count)
    };
    wait_until_ready(&api, count).await?;
    let ready_after = started.elapsed();
    let after = settle(client).await?;
    let mut requests = requests_between(&before, &after);
    let own = Request {
        verb: "POST".to_owned(),
        resource: "databases".to_owned(),
        subresource: String::new(),
    };
    if let Some(creates) = requests.get_mut(&own) {
        *creates -= own_creates as u64;
    }
    // Watches are counted when they end: the benchmark's own (ended), and
    // none of the manager's (still open).
    requests.retain(|request, count| request.verb != "WATCH" && *count > 0);
    let reconciled = reconciles(&manager)?;

    // One resync: every Database reconciled again, nothing to change.
    let resync_from = reconciles(&manager)?;
    let before = api_requests(client).await?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while reconciles(&manager)? < resync_from + count as u64 {
        anyhow::ensure!(Instant::now() < deadline, "no resync within a minute");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let resync_reconciles = reconciles(&manager)? - resync_from;
    let after = settle(client).await?;
    let resync = requests_between(&before, &after);

    let peak_kib = peak_memory_kib(manager.pid())?;
    let exit = manager.terminate(Duration::from_secs(30));
    anyhow::ensure!(exit.success(), "the manager exited with {exit}");
    Api::<Namespace>::all(client.clone())
        .delete(&namespace, &DeleteParams::default())
        .await?;
    Ok(Report {
        count,
        waiting,
        batch,
        ready_after,
        requests,
        resync,
        resync_reconciles,
        reconciles: reconciled,
        peak_kib,
    })
}

/// Creates `count` Databases, half mongo and half mysql.
async fn create_all(api: &Api<Database>, count: usize) -> anyhow::Result<()> {
    futures::stream::iter(0..count)
        .map(|i| {
            let api = api.clone();
            async move {
                let type_ = if i % 2 == 0 {
                    DatabaseType::Mongo
                } else {
                    DatabaseType::Mysql
                };
                let object = Database::new(&format!("db-{i:05}"), DatabaseSpec { type_ });
                api.create(&PostParams::default(), &object).await
            }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(())
}

/// Completes once `count` Databases report Ready at their generation. A
/// watch from resourceVersion 0 (every Database, then their changes), so
/// that it adds no LIST to the counts; when the server ends it (its
/// timeout), another goes on from the last version seen, until
/// [`READY_WITHIN`].
async fn wait_until_ready(api: &Api<Database>, count: usize) -> anyhow::Result<()> {
    let mut ready = HashSet::new();
    let mut version = "0".to_owned();
    let started = Instant::now();
    while started.elapsed() < READY_WITHIN {
        let params = WatchParams::default().timeout(290);
        let mut stream = std::pin::pin!(api.watch(&params, &version).await?);
        while let Some(event) = stream.try_next().await? {
            let database = match event {
                WatchEvent::Added(database) | WatchEvent::Modified(database) => database,
                WatchEvent::Error(status) => anyhow::bail!("the watch failed: {status:?}"),
                WatchEvent::Bookmark(bookmark) => {
                    version = bookmark.metadata.resource_version;
                    continue;
                }
                WatchEvent::Deleted(_) => continue,
            };
            if let Some(seen) = database.resource_version() {
                version = seen;
            }
            let is_ready = database.status.as_ref().is_some_and(|s| {
                s.phase == Some(DatabasePhase::Ready)
                    && s.observed_generation == database.metadata.generation
            });
            if is_ready {
                ready.insert(database.name_any());
                if ready.len() >= count {
                    return Ok(());
                }
            }
        }
    }
    anyhow::bail!(
        "{} of {count} Databases Ready after {READY_WITHIN:?}",
        ready.len()
    )
}

/// The request counts once they have stayed still for [`SETTLED`].
async fn settle(client: &Client) -> anyhow::Result<Requests> {
    let mut last = api_requests(client).await?;
    let mut still_since = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = api_requests(client).await?;
        // Only the benchmark's watch may still be ending.
        let moved = requests_between(&last, &now)
            .keys()
            .any(|request| request.verb != "WATCH");
        if moved {
            still_since = Instant::now();
        }
        last = now;
        if still_since.elapsed() >= SETTLED {
            return Ok(last);
        }
    }
}

/// Prints one scenario.
fn print(report: &Report) {
    let count = report.count as f64;
    let when = match (report.waiting, report.batch) {
        (true, true) => "waiting when the operator starts",
        (true, false) => "waiting when the operator starts, writes one after another",
        (false, _) => "created while it runs",
    };
    println!(
        "{} Databases {when} ({} mongo, {} mysql)",
        report.count,
        report.count.div_ceil(2),
        report.count / 2
    );
    println!(
        "  all Ready after:             {:.2} s",
        report.ready_after.as_secs_f64()
    );
    let per_start = |request: &Request| request.verb == "LIST";
    let per_database: u64 = report
        .requests
        .iter()
        .filter(|(request, _)| !per_start(request))
        .map(|(_, n)| n)
        .sum();
    println!(
        "  API requests per Database:   {:.2}",
        per_database as f64 / count
    );
    for (request, n) in report.requests.iter().filter(|(r, _)| !per_start(r)) {
        println!("    {request:<28} {:.2}", *n as f64 / count);
    }
    let secrets = report
        .requests
        .iter()
        .filter(|(r, _)| r.resource == "secrets" && r.verb != "LIST")
        .map(|(_, n)| *n)
        .sum::<u64>();
    let mysql = (report.count / 2).max(1) as f64;
    let without_secrets = (per_database - secrets) as f64 / count;
    println!(
        "    by type: mongo {:.2}, mysql {:.2} (the Secret: {:.2} per mysql Database)",
        without_secrets,
        without_secrets + secrets as f64 / mysql,
        secrets as f64 / mysql
    );
    let starts: Vec<String> = report
        .requests
        .iter()
        .filter(|(request, _)| per_start(request))
        .map(|(request, n)| format!("{request} {n}"))
        .collect();
    println!(
        "  filling the caches (once):   {} (and one WATCH per kind, open)",
        starts.join(", ")
    );
    let resync: u64 = report.resync.values().sum();
    println!(
        "  resync changing nothing:     {:.2} requests per Database ({} reconciles{})",
        resync as f64 / count,
        report.resync_reconciles,
        if resync == 0 {
            String::new()
        } else {
            format!(": {:?}", report.resync)
        }
    );
    println!(
        "  reconciles until idle:       {} ({:.1} per Database)",
        report.reconciles,
        report.reconciles as f64 / count
    );
    println!(
        "  operator peak memory:        {:.1} MiB (VmHWM)",
        report.peak_kib as f64 / 1024.0
    );
}

/// The peak resident set size of process `pid`, in KiB.
fn peak_memory_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .ok_or_else(|| anyhow::anyhow!("no VmHWM in /proc/{pid}/status"))?;
    let kib = line.split_whitespace().nth(1).unwrap_or_default();
    Ok(kib.parse()?)
}
