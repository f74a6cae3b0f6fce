//! Benchmark: the operator reconciling many Databases created at once.
//!
//!     opctl envtest run --crds config/crd/bases -- \
//!         cargo test --release --test benchmark -- --ignored --nocapture
//!
//! Starts the manager binary (optimised with `--release`) watching a fresh
//! namespace, creates `BENCH_DATABASES` Databases (default 1,000; half mongo,
//! half mysql) as fast as the API server takes them, and waits until every
//! one reports Ready at its generation. Prints the total time, reconciles per
//! second (from the manager's own /metrics), the manager's peak resident
//! memory (VmHWM in /proc) and CPU time, then deletes them all (timing how
//! long until their children are gone too) and stops the manager. It is an
//! ignored test so that `cargo test` and CI leave it out (and the image
//! build, which copies only src/, needs no bench target).

mod support;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret, Service};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};

use database::api::zalando::v1::{Database, DatabasePhase, DatabaseSpec, DatabaseType};
use support::{Manager, create_namespace, http_get};

/// Creates in flight at once (kube-rs opens a connection per request).
const CREATE_CONCURRENCY: usize = 64;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run it as the module documentation says"]
async fn many_databases_created_at_once_become_ready() -> anyhow::Result<()> {
    let count: usize = match std::env::var("BENCH_DATABASES") {
        Ok(text) => text.parse()?,
        Err(_) => 1_000,
    };
    let client = Client::try_default().await?;
    let namespace = create_namespace(&client, "bench").await;
    let manager = Manager::start(&[&format!("--namespace={namespace}")]);
    let api: Api<Database> = Api::namespaced(client.clone(), &namespace);
    let baseline = reconciles(&manager)?;

    // Watch before creating, so that no Ready status is missed.
    let all_ready = tokio::spawn(wait_until_ready(api.clone(), count));
    let started = Instant::now();
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
    let created = started.elapsed();
    all_ready.await??;
    let total = started.elapsed();
    let reconciled = reconciles(&manager)? - baseline;
    let memory = peak_memory_kib(manager.pid())?;
    let cpu = cpu_seconds(manager.pid())?;

    println!("databases created at once:  {count} (half mongo, half mysql)");
    println!("all created after:          {:.2} s", created.as_secs_f64());
    println!("all Ready after:            {:.2} s", total.as_secs_f64());
    println!(
        "reconciles:                 {reconciled} ({:.1} per Database)",
        reconciled as f64 / count as f64
    );
    println!(
        "reconciles per second:      {:.0}",
        reconciled as f64 / total.as_secs_f64()
    );
    println!(
        "Databases Ready per second: {:.0}",
        count as f64 / total.as_secs_f64()
    );
    println!(
        "operator peak memory:       {:.1} MiB (VmHWM)",
        memory as f64 / 1024.0
    );
    println!("operator CPU time:          {cpu:.2} s (user + system, all threads)");

    // Deleting them all: the operator's finalizer, then garbage collection.
    let deleting = Instant::now();
    api.delete_collection(&DeleteParams::default(), &ListParams::default())
        .await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let services: Api<Service> = Api::namespaced(client.clone(), &namespace);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    let everything = ListParams::default();
    loop {
        let left = api.list_metadata(&everything).await?.items.len()
            + pods.list_metadata(&everything).await?.items.len()
            + services.list_metadata(&everything).await?.items.len()
            + secrets.list_metadata(&everything).await?.items.len();
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!(
        "all deleted, with their children, after: {:.2} s",
        deleting.elapsed().as_secs_f64()
    );
    // Stopped first: reconciles still queued for the deleted Databases would
    // otherwise try to record events in a terminating namespace.
    let exit = manager.terminate(Duration::from_secs(30));
    anyhow::ensure!(exit.success(), "the manager exited with {exit}");
    Api::<Namespace>::all(client)
        .delete(&namespace, &DeleteParams::default())
        .await?;
    Ok(())
}

/// Completes once `count` Databases report Ready at their generation.
async fn wait_until_ready(api: Api<Database>, count: usize) -> anyhow::Result<()> {
    let mut ready = HashSet::new();
    let stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .applied_objects();
    let mut stream = std::pin::pin!(stream);
    while let Some(database) = stream.try_next().await? {
        let status = database.status.as_ref();
        let is_ready = status.is_some_and(|s| {
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
    anyhow::bail!("the watch of Databases ended with {} Ready", ready.len())
}

/// Reconciles the manager has counted (successes and errors).
fn reconciles(manager: &Manager) -> anyhow::Result<u64> {
    let (status, body) = http_get(manager.metrics, "/metrics")
        .ok_or_else(|| anyhow::anyhow!("/metrics does not answer"))?;
    anyhow::ensure!(status == 200, "/metrics answered {status}");
    let mut total = 0;
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("controller_reconcile_total{") {
            let value = rest.rsplit(' ').next().unwrap_or_default();
            total += value.parse::<u64>()?;
        }
    }
    Ok(total)
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

/// CPU time (user + system) process `pid` has used so far, in seconds.
fn cpu_seconds(pid: u32) -> anyhow::Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name (which may hold spaces): the state is
    // the 1st of them, utime and stime the 12th and 13th.
    let after_name = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .unwrap_or_default();
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |index: usize| -> anyhow::Result<f64> {
        let field = fields
            .get(index)
            .ok_or_else(|| anyhow::anyhow!("short /proc/{pid}/stat"))?;
        Ok(field.parse::<f64>()?)
    };
    Ok((ticks(11)? + ticks(12)?) / clock_ticks_per_second())
}

/// The kernel's clock ticks per second (`getconf CLK_TCK`; 100 on Linux).
fn clock_ticks_per_second() -> f64 {
    let output = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output();
    let text = output.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    text.ok().and_then(|t| t.parse().ok()).unwrap_or(100.0)
}
