//! Leader election on a coordination.k8s.io Lease (kube-lease-manager): with
//! several replicas only the holder reconciles (every replica keeps its
//! caches, serves and is ready); losing the lease stops the manager so that
//! Kubernetes restarts it as a follower.

use anyhow::Context as _;
use kube::Client;
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::Shutdown;

/// Where the lease lives.
#[derive(Clone, Debug)]
pub struct Lease {
    /// The Lease's name.
    pub name: String,
    /// The Lease's namespace.
    pub namespace: String,
    /// Seconds the Lease stays valid without renewal; the holder renews it
    /// a third of that before it runs out.
    pub duration_seconds: u64,
}

/// A held lease: renewed in the background until released.
pub struct Leadership {
    state: watch::Receiver<bool>,
    task: JoinHandle<kube_lease_manager::Result<LeaseManager>>,
}

/// Waits until this process holds `lease`; `None` if shutdown came first.
pub async fn acquire(
    client: Client,
    lease: Lease,
    shutdown: &Shutdown,
) -> anyhow::Result<Option<Leadership>> {
    let mut builder = LeaseManagerBuilder::new(client, &lease.name)
        .with_namespace(&lease.namespace)
        .with_duration(lease.duration_seconds)
        .with_grace((lease.duration_seconds / 3).max(1));
    if let Ok(pod) = std::env::var("POD_NAME") {
        builder = builder.with_identity(pod);
    }
    let manager = builder.build().await.with_context(|| {
        format!(
            "cannot use the leader-election Lease {}/{}",
            lease.namespace, lease.name
        )
    })?;
    let (mut state, task) = manager.watch().await;
    tracing::info!(lease = %lease.name, namespace = %lease.namespace, "waiting for leadership");
    loop {
        if *state.borrow_and_update() {
            tracing::info!(lease = %lease.name, "became the leader");
            return Ok(Some(Leadership { state, task }));
        }
        tokio::select! {
            changed = state.changed() => changed.context("leader election stopped")?,
            () = shutdown.wait() => {
                drop(state);
                let _ = task.await;
                return Ok(None);
            }
        }
    }
}

/// Completes when the lease held in `leadership` is lost; never when there is none.
pub async fn lost(leadership: &mut Option<Leadership>) {
    let Some(leadership) = leadership else {
        return std::future::pending().await;
    };
    loop {
        if leadership.state.changed().await.is_err() || !*leadership.state.borrow_and_update() {
            return;
        }
    }
}

impl Leadership {
    /// Gives the lease up so that another replica can take over at once.
    pub async fn release(self) {
        drop(self.state);
        match self.task.await {
            Ok(Ok(_)) => tracing::info!("released the leader-election lease"),
            Ok(Err(err)) => {
                tracing::warn!(error = %err, "cannot release the leader-election lease")
            }
            Err(err) => tracing::warn!(error = %err, "the leader-election task failed"),
        }
    }
}
