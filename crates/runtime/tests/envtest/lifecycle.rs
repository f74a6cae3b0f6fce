//! The manager's life: probes, readiness once the caches are filled,
//! controller-runtime's metrics, a clean stop on shutdown, and leader
//! election (every replica ready, one reconciling, the next one taking
//! over at once when the leader stops).

use std::net::SocketAddr;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};
use opctl_runtime::{Manager, Shutdown, WatchScope};
use tokio::task::JoinHandle;

use super::support::{
    PROJECT, Widget, admin, config_of, eventually, http_get, options, sample, start,
};
use super::widgets::{self, Writes};

/// A running manager of the Widget controller.
struct Running {
    probes: SocketAddr,
    metrics: SocketAddr,
    shutdown: Shutdown,
    task: JoinHandle<anyhow::Result<()>>,
}

async fn run(env: &opctl_envtest::Envtest, args: &[&str]) -> Running {
    let options = options(args);
    let (probes, metrics) = (
        options.health_probe_bind_address,
        options.metrics_bind_address,
    );
    let manager = Manager::with_config(
        PROJECT,
        options,
        WatchScope::AllNamespaces,
        config_of(env).await,
    )
    .expect("a manager");
    let shutdown = manager.context().shutdown.clone();
    let task = tokio::spawn(widgets::register(manager, Writes::Together).run());
    eventually(
        Duration::from_secs(20),
        "the manager to be ready",
        || async {
            http_get(probes, "/readyz")
                .await
                .is_some_and(|(status, _)| status == 200)
        },
    )
    .await;
    Running {
        probes,
        metrics,
        shutdown,
        task,
    }
}

impl Running {
    /// Successful reconciles so far.
    async fn reconciled(&self) -> f64 {
        let (status, text) = http_get(self.metrics, "/metrics").await.expect("/metrics");
        assert_eq!(status, 200);
        sample(
            &text,
            r#"controller_runtime_reconcile_total{controller="widget",result="success"}"#,
        )
    }

    async fn stop(self) {
        self.shutdown.trigger();
        let result = tokio::time::timeout(Duration::from_secs(10), self.task)
            .await
            .expect("the manager stops within 10 s")
            .expect("joined");
        result.expect("the manager stops cleanly");
    }
}

async fn create(env: &opctl_envtest::Envtest, name: &str) {
    let api: Api<Widget> = Api::namespaced(admin(env).await, "default");
    api.create(&PostParams::default(), &widgets::widget(name, "default"))
        .await
        .expect("created");
}

#[tokio::test]
async fn the_manager_serves_probes_and_metrics_and_stops_on_shutdown() {
    let env = start().await;
    let manager = run(&env, &[]).await;
    let (status, body) = http_get(manager.probes, "/healthz")
        .await
        .expect("/healthz");
    assert_eq!((status, body.as_str()), (200, "ok"));
    let (status, text) = http_get(manager.metrics, "/metrics")
        .await
        .expect("/metrics");
    assert_eq!(status, 200);
    // Listed from the start, at zero.
    for line in [
        r#"controller_runtime_reconcile_total{controller="widget",result="error"} 0"#,
        r#"controller_runtime_max_concurrent_reconciles{controller="widget"} 8"#,
        r#"controller_runtime_active_workers{controller="widget"} 0"#,
    ] {
        assert!(text.contains(line), "{line}\n{text}");
    }
    create(&env, "counted").await;
    // The reconcile itself, not a moment before it.
    eventually(
        Duration::from_secs(10),
        "a successful reconcile",
        || async { manager.reconciled().await >= 1.0 },
    )
    .await;
    let (probes, metrics) = (manager.probes, manager.metrics);
    manager.stop().await;
    assert!(
        http_get(probes, "/healthz").await.is_none(),
        "probes stopped"
    );
    assert!(
        http_get(metrics, "/metrics").await.is_none(),
        "metrics stopped"
    );
}

#[tokio::test]
async fn a_second_replica_is_ready_at_once_and_takes_over_when_the_first_stops() {
    let env = start().await;
    let elect = [
        "--leader-elect",
        "--leader-election-lease-duration-seconds=15",
        "--leader-election-namespace=default",
    ];
    let first = run(&env, &elect).await;
    let leases: Api<Lease> = Api::namespaced(admin(&env).await, "default");
    eventually(
        Duration::from_secs(10),
        "the first to hold the Lease",
        || async {
            leases
                .get_opt("runtime-test-leader")
                .await
                .ok()
                .flatten()
                .and_then(|lease| lease.spec?.holder_identity)
                .is_some()
        },
    )
    .await;
    let second = run(&env, &elect).await;
    create(&env, "first").await;
    eventually(
        Duration::from_secs(10),
        "the leader to reconcile",
        || async { first.reconciled().await >= 1.0 },
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        second.reconciled().await,
        0.0,
        "a follower does not reconcile"
    );

    // The first releases the Lease as it stops; the second sees it released
    // when it next looks (every 2 s), well before the 15 s Lease it last
    // saw would run out.
    let stopped = tokio::time::Instant::now();
    first.stop().await;
    create(&env, "second").await;
    eventually(
        Duration::from_secs(4),
        "the second to take over",
        || async { second.reconciled().await >= 1.0 },
    )
    .await;
    println!("took over {:?} after the leader stopped", stopped.elapsed());
    second.stop().await;
}
