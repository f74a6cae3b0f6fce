//! Leader election on a coordination.k8s.io Lease (kube-lease-manager): with
//! several replicas only the holder reconciles (every replica keeps its
//! caches, serves and is ready); losing the lease stops the manager so that
//! Kubernetes restarts it as a follower.

use std::time::Duration;

use anyhow::Context as _;
use kube::Client;
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder, LeaseManagerError};
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
    let Some(manager) = lease_manager(client, &lease, shutdown).await? else {
        return Ok(None);
    };
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

/// The manager of `lease`, which reads (and, the first time, creates) the
/// Lease. A failure that may pass (a 5xx, 429 or 409 answer, a lost
/// connection, another replica creating the Lease first) is retried with
/// backoff until shutdown; any other (a missing permission, a missing
/// namespace) is returned at once. `None` if shutdown came first.
async fn lease_manager(
    client: Client,
    lease: &Lease,
    shutdown: &Shutdown,
) -> anyhow::Result<Option<LeaseManager>> {
    let mut delay = Duration::from_millis(100);
    loop {
        let mut builder = LeaseManagerBuilder::new(client.clone(), &lease.name)
            .with_namespace(&lease.namespace)
            .with_duration(lease.duration_seconds)
            .with_grace((lease.duration_seconds / 3).max(1));
        if let Ok(pod) = std::env::var("POD_NAME") {
            builder = builder.with_identity(pod);
        }
        let err = match builder.build().await {
            Ok(manager) => return Ok(Some(manager)),
            Err(err) if may_pass(&err) => err,
            Err(err) => {
                return Err(err).with_context(|| {
                    format!(
                        "cannot use the leader-election Lease {}/{}",
                        lease.namespace, lease.name
                    )
                });
            }
        };
        tracing::warn!(lease = %lease.name, error = %err, retry_in = ?delay, "cannot read the leader-election Lease yet");
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = shutdown.wait() => return Ok(None),
        }
        delay = (delay * 2).min(Duration::from_secs(5));
    }
}

/// Whether a failure to set up the Lease may pass if tried again.
fn may_pass(err: &LeaseManagerError) -> bool {
    match err {
        LeaseManagerError::KubeError(kube::Error::Api(status)) => {
            status.code >= 500 || status.code == 429 || status.code == 409
        }
        LeaseManagerError::KubeError(_) | LeaseManagerError::LeaseAlreadyExists(_) => true,
        _ => false,
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

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn answered(code: u16) -> LeaseManagerError {
        let status = Status::failure("answered", "Test").with_code(code);
        LeaseManagerError::KubeError(kube::Error::Api(status.boxed()))
    }

    #[test]
    fn server_trouble_and_races_pass_and_refusals_do_not() {
        for code in [500, 503, 429, 409] {
            assert!(may_pass(&answered(code)), "{code}");
        }
        for code in [401, 403, 404, 422] {
            assert!(!may_pass(&answered(code)), "{code}");
        }
        let raced = LeaseManagerError::LeaseAlreadyExists("lease".to_owned());
        assert!(may_pass(&raced));
        let bug = LeaseManagerError::InconsistentState("state".to_owned());
        assert!(!may_pass(&bug));
    }
}
