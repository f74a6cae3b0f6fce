//! Figures of the runtime against the embedded API server, printed (no
//! assertion: they are measurements, recorded in docs/controllers.md):
//!
//! 1. **Backlog**: the time a manager takes to bring 200 Widgets that exist
//!    before it starts to Ready (three child writes, a status and an event
//!    each), for `--max-concurrent-reconciles` 1, 4, 8 and 16, with the
//!    child writes of a reconcile issued together (`Context::batch`) and
//!    one after another; once with the server in process answering at
//!    once, and once through a proxy that holds each answer back 5 ms, as
//!    a cluster's API server across a network answers.
//! 2. **First list of a trimmed cache**: the manager's peak heap while a
//!    trimmed cache of 1,000 Pods (500 of them waiting, with the statuses
//!    envtest's workload simulation gives them) fills, by page size, and
//!    while a projection of the same fields (`Projected<Pod, PodView>`,
//!    `Scope::cache_projected`) fills in its pages of 50. The API server runs in a child process
//!    (this program again), so that only the manager's allocations are
//!    counted.
//! 3. **Events**: the heap kube's `events::Recorder` keeps after one event
//!    about each of 1,000 objects, against `Context::publish`.
//!
//! `cargo bench -p opctl-runtime --bench runtime` (all three), or name the
//! parts: `cargo bench -p opctl-runtime --bench runtime -- first-list`
//! (`backlog`, `first-list`, `events`).

#[path = "../tests/envtest/support.rs"]
#[allow(dead_code)]
mod support;
#[path = "../tests/envtest/widgets.rs"]
#[allow(dead_code)]
mod widgets;

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Container, Pod, PodCondition, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::watcher;
use opctl_runtime::{Cached, Context, Manager, Projection, Scope, WatchScope};
use serde::Deserialize;

use support::{PROJECT, Widget, admin, config_of, eventually, http_get, options, start};
use widgets::Writes;

/// Counts the bytes allocated now and at most since the last reset.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        pointer
    }
    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        unsafe { System.dealloc(pointer, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

const BACKLOG: usize = 200;
const PODS: usize = 1_000;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    if let Ok(path) = std::env::var("OPCTL_RUNTIME_BENCH_SERVE") {
        runtime.block_on(serve(&path));
        return;
    }
    // Only what the figures say (RUST_LOG=info for the managers' logs).
    if std::env::var_os("RUST_LOG").is_none() {
        // SAFETY: set before any thread reads the environment.
        unsafe { std::env::set_var("RUST_LOG", "warn") };
    }
    // Parts named on the command line only (`-- first-list`, say); cargo
    // passes `--bench` itself.
    let named: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with("--"))
        .collect();
    let wanted = |part: &str| named.is_empty() || named.iter().any(|name| name == part);
    runtime.block_on(async {
        if wanted("backlog") {
            backlog().await;
        }
        if wanted("first-list") {
            trimmed_first_list().await;
        }
        if wanted("events") {
            events().await;
        }
    });
}

/// 1. The backlog, by concurrency and by how child writes are issued.
async fn backlog() {
    for delay in [Duration::ZERO, Duration::from_millis(5)] {
        println!(
            "backlog of {BACKLOG} Widgets (3 child writes, 1 status, 1 event each), answers held back {delay:?}:"
        );
        backlog_with(delay).await;
    }
}

async fn backlog_with(delay: Duration) {
    for concurrency in [1u16, 4, 8, 16] {
        for writes in [Writes::InTurn, Writes::Together] {
            let env = start().await;
            let api: Api<Widget> = Api::namespaced(admin(&env).await, "default");
            for n in 0..BACKLOG {
                api.create(
                    &PostParams::default(),
                    &widgets::widget(&format!("w-{n}"), "default"),
                )
                .await
                .expect("created");
            }
            let limit = format!("--max-concurrent-reconciles={concurrency}");
            let proxy = support::Proxy::delaying(support::address_of(&env), delay).await;
            let manager = Manager::with_config(
                PROJECT,
                options(&[&limit]),
                WatchScope::AllNamespaces,
                proxy.config(&env).await,
            )
            .expect("a manager");
            let shutdown = manager.context().shutdown.clone();
            let started = Instant::now();
            let running = tokio::spawn(widgets::register(manager, writes).run());
            eventually(
                Duration::from_secs(300),
                "the backlog to converge",
                || async {
                    let list = api.list(&ListParams::default()).await.expect("a list");
                    list.items.iter().filter(|w| widgets::is_ready(w)).count() == BACKLOG
                },
            )
            .await;
            let took = started.elapsed();
            shutdown.trigger();
            running.await.expect("joined").expect("stopped");
            let requests = (BACKLOG * 5) as f64 / took.as_secs_f64();
            println!(
                "  concurrency {concurrency:>2}, writes {:<8}: {:>6.2} s ({requests:>5.0} writes/s)",
                format!("{writes:?}"),
                took.as_secs_f64()
            );
            env.shutdown().await;
        }
    }
}

/// The server of figure 2, in a child process: envtest with its workload
/// simulation (one Node) and PODS Pods, its kubeconfig written to `path`;
/// runs until its standard input closes.
async fn serve(path: &str) {
    let env = opctl_envtest::Envtest::start(opctl_envtest::Config::default())
        .await
        .expect("envtest starts");
    let pods: Api<Pod> = Api::namespaced(admin(&env).await, "default");
    for n in 0..PODS {
        let mut pod = Pod::default();
        pod.metadata.name = Some(format!("pod-{n}"));
        pod.metadata.labels = Some([("app".to_owned(), "bench".to_owned())].into());
        pod.spec = Some(PodSpec {
            containers: vec![Container {
                name: "main".to_owned(),
                image: Some("registry.example/app:1".to_owned()),
                ..Container::default()
            }],
            ..PodSpec::default()
        });
        pods.create(&PostParams::default(), &pod)
            .await
            .expect("a Pod");
    }
    // Let the simulation give them their statuses.
    tokio::time::sleep(Duration::from_secs(3)).await;
    env.write_kubeconfig(std::path::Path::new(path))
        .expect("kubeconfig written");
    println!("ready");
    std::io::stdout().flush().expect("flushed");
    let _ = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    })
    .await;
}

/// What a SidecarSet-like controller keeps of a Pod.
fn trim(pod: &mut Pod) {
    let containers = pod.spec.as_ref().map(|spec| {
        spec.containers
            .iter()
            .map(|c| Container {
                name: c.name.clone(),
                image: c.image.clone(),
                ..Container::default()
            })
            .collect()
    });
    pod.spec = containers.map(|containers| PodSpec {
        containers,
        ..PodSpec::default()
    });
    pod.status = pod.status.take().map(|status| PodStatus {
        phase: status.phase,
        conditions: status.conditions.map(|conditions| {
            conditions
                .into_iter()
                .filter(|c| c.type_ == "Ready")
                .map(|c| PodCondition {
                    type_: c.type_,
                    status: c.status,
                    ..PodCondition::default()
                })
                .collect()
        }),
        ..PodStatus::default()
    });
}

// The views' fields are held, not read: the cache's cost is what is measured.

/// The same fields of a Pod as [`trim`] keeps, as a projection.
#[derive(Clone, Debug, Deserialize)]
#[allow(dead_code)]
struct PodView {
    metadata: ObjectMeta,
    #[serde(default)]
    spec: Option<SpecView>,
    #[serde(default)]
    status: Option<StatusView>,
}

#[derive(Clone, Debug, Deserialize)]
#[allow(dead_code)]
struct SpecView {
    #[serde(default)]
    containers: Vec<ContainerView>,
}

#[derive(Clone, Debug, Deserialize)]
#[allow(dead_code)]
struct ContainerView {
    name: String,
    #[serde(default)]
    image: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[allow(dead_code)]
struct StatusView {
    #[serde(default)]
    phase: Option<String>,
    #[serde(
        default,
        rename = "conditions",
        deserialize_with = "opctl_runtime::ready_from_conditions"
    )]
    ready: bool,
}

impl Projection for PodView {
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// The manager heap while the cache `cache` makes fills: its peak and what
/// is left once filled, above the start, and the time to fill.
async fn first_list<K>(
    config: &kube::Config,
    cache: impl Fn(&Scope) -> Cached<K> + Send + 'static,
) -> (usize, usize, Duration)
where
    K: opctl_runtime::Cacheable,
    K::Scope: opctl_runtime::ApiScope,
{
    let options = options(&[]);
    let probes = options.health_probe_bind_address;
    let manager = Manager::with_config(PROJECT, options, WatchScope::AllNamespaces, config.clone())
        .expect("a manager");
    let shutdown = manager.context().shutdown.clone();
    let manager = manager.with_controller(
        "pods",
        move |scope| (cache(scope).controller(), ()),
        |_: Arc<K>, _: Arc<()>| async { Ok::<_, kube::Error>(Action::await_change()) },
    );
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let started = Instant::now();
    let running = tokio::spawn(manager.run());
    eventually(Duration::from_secs(60), "the cache to fill", || async {
        http_get(probes, "/readyz")
            .await
            .is_some_and(|(s, _)| s == 200)
    })
    .await;
    let took = started.elapsed();
    let peak = PEAK.load(Ordering::Relaxed) - base;
    let filled = CURRENT.load(Ordering::Relaxed).saturating_sub(base);
    shutdown.trigger();
    running.await.expect("joined").expect("stopped");
    (peak, filled, took)
}

/// 2. The peak heap of the first list of a trimmed cache, and a projected one.
async fn trimmed_first_list() {
    let kubeconfig =
        std::env::temp_dir().join(format!("runtime-bench-{}.yaml", std::process::id()));
    let mut server = Command::new(std::env::current_exe().expect("this program"))
        .env("OPCTL_RUNTIME_BENCH_SERVE", &kubeconfig)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the server process starts");
    let mut ready = String::new();
    BufReader::new(server.stdout.take().expect("its stdout"))
        .read_line(&mut ready)
        .expect("the server says it is ready");
    assert_eq!(ready.trim(), "ready");
    let yaml = std::fs::read_to_string(&kubeconfig).expect("the kubeconfig");
    let kubeconfig_parsed = kube::config::Kubeconfig::from_yaml(&yaml).expect("a kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig_parsed, &Default::default())
        .await
        .expect("a usable kubeconfig");
    println!(
        "first list of a trimmed cache of {PODS} Pods (manager heap, server in another process):"
    );
    // 499 stands for kube's default of 500 (which the runtime replaces by
    // its own for trimmed caches).
    for page in [499u32, 200, 100, 50, 20] {
        let selected = watcher::Config::default()
            .labels("app=bench")
            .page_size(page);
        let (peak, filled, took) = first_list(&config, move |scope| {
            scope.cache_trimmed::<Pod>(selected.clone(), trim)
        })
        .await;
        println!(
            "  page size {page:>3}: peak {:>5.1} MiB above the start, {:>5.1} MiB once filled, {:>5.2} s",
            mib(peak),
            mib(filled),
            took.as_secs_f64()
        );
    }
    let selected = watcher::Config::default().labels("app=bench");
    let (peak, filled, took) = first_list(&config, move |scope| {
        scope.cache_projected::<Pod, PodView>(selected.clone())
    })
    .await;
    println!(
        "  projection, pages of 50: peak {:>5.1} MiB above the start, {:>5.1} MiB once filled, {:>5.2} s",
        mib(peak),
        mib(filled),
        took.as_secs_f64()
    );
    drop(server.stdin.take());
    let _ = server.wait();
    let _ = std::fs::remove_file(&kubeconfig);
}

/// 3. What kube's Recorder keeps in memory against Context::publish.
async fn events() {
    let env = start().await;
    let client = PROJECT.client(config_of(&env).await).expect("a client");
    let context = Context::new(PROJECT, client.clone(), WatchScope::AllNamespaces);
    let widgets: Api<Widget> = Api::namespaced(admin(&env).await, "default");
    let mut references = Vec::new();
    for n in 0..PODS {
        let created = widgets
            .create(
                &PostParams::default(),
                &widgets::widget(&format!("e-{n}"), "default"),
            )
            .await
            .expect("created");
        references.push(created.object_ref(&()));
    }
    println!("one event about each of {PODS} objects, heap kept afterwards:");
    let base = CURRENT.load(Ordering::Relaxed);
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: PROJECT.name().to_owned(),
            instance: None,
        },
    );
    for reference in &references {
        let event = Event {
            type_: EventType::Normal,
            reason: "Ready".to_owned(),
            note: Some("the children are in place".to_owned()),
            action: "Reconcile".to_owned(),
            secondary: None,
        };
        recorder
            .publish(&event, reference)
            .await
            .expect("published");
    }
    let kept = CURRENT.load(Ordering::Relaxed).saturating_sub(base);
    println!("  kube's Recorder:          {:>6.2} MiB", mib(kept));
    drop(recorder);
    let base = CURRENT.load(Ordering::Relaxed);
    for reference in &references {
        let note = Some("the children are in place".to_owned());
        context
            .publish(reference, EventType::Normal, "Ready", "Reconcile", note)
            .await;
    }
    let kept = CURRENT.load(Ordering::Relaxed).saturating_sub(base);
    println!("  Context::publish:        {:>6.2} MiB", mib(kept));
    env.shutdown().await;
}
