//! Leader election on a coordination.k8s.io Lease (kube-lease-manager): with
//! several replicas only the holder reconciles (every replica keeps its
//! caches, serves and is ready); losing the lease stops the manager so that
//! Kubernetes restarts it as a follower.
//!
//! kube-lease-manager's follower sleeps until the Lease it last saw runs
//! out, so a Lease released by a leader that stopped would wait that long.
//! A follower here also reads the Lease every [`RETRY_PERIOD`] (client-go's
//! retry period) and, when it finds it released, starts over at once: a
//! rolling update's new replica takes over within about two seconds.

use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::coordination::v1::Lease as LeaseObject;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder, LeaseManagerError};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::Shutdown;

/// Where the lease lives.
#[derive(Clone, Debug)]
pub(crate) struct Lease {
    /// The Lease's name.
    pub(crate) name: String,
    /// The Lease's namespace.
    pub(crate) namespace: String,
    /// Seconds the Lease stays valid without renewal; the holder renews it
    /// a third of that before it runs out.
    pub(crate) duration_seconds: u64,
}

/// How often a follower reads the Lease to see whether it was released.
const RETRY_PERIOD: Duration = Duration::from_secs(2);

/// A held lease: renewed in the background until released.
pub(crate) struct Leadership {
    state: watch::Receiver<bool>,
    task: JoinHandle<Result<bool, kube::Error>>,
}

/// Waits until this process holds `lease`; `None` if shutdown came first.
pub(crate) async fn acquire(
    client: Client,
    lease: Lease,
    shutdown: &Shutdown,
) -> anyhow::Result<Option<Leadership>> {
    let identity = identity();
    let Some(manager) = lease_manager(client.clone(), &lease, &identity, shutdown).await? else {
        return Ok(None);
    };
    let (sender, mut state) = watch::channel(false);
    let holder = Holder {
        client,
        lease: lease.clone(),
        identity,
    };
    let task = tokio::spawn(holder.hold(manager, sender));
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

/// This replica's name in the Lease: its Pod name when set (POD_NAME), or
/// the host name with a random suffix, so that two processes on one host
/// never take each other for the holder.
fn identity() -> String {
    if let Ok(pod) = std::env::var("POD_NAME") {
        return pod;
    }
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "manager".to_owned());
    format!("{host}-{:08x}", hasher.finish() as u32)
}

/// Who takes and renews one Lease.
struct Holder {
    client: Client,
    lease: Lease,
    identity: String,
}

impl Holder {
    /// Takes and renews the lease, sending each change of leadership, until
    /// every receiver of `state` is gone; then gives the lease up. The
    /// release is this module's own: kube-lease-manager's panics when its
    /// write meets a conflict (a 409).
    async fn hold(
        self,
        mut manager: LeaseManager,
        state: watch::Sender<bool>,
    ) -> Result<bool, kube::Error> {
        let api: Api<LeaseObject> = Api::namespaced(self.client.clone(), &self.lease.namespace);
        let name = self.lease.name.clone();
        let mut delay = Duration::from_millis(100);
        let mut leading = false;
        let mut look = tokio::time::interval(RETRY_PERIOD);
        look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                () = state.closed() => break,
                changed = manager.changed() => match changed {
                    Ok(leader) => {
                        delay = Duration::from_millis(100);
                        leading = leader;
                        if state.send(leader).is_err() {
                            break;
                        }
                    }
                    Err(err) => {
                        tracing::warn!(lease = %name, error = %err, retry_in = ?delay, "cannot renew the leader-election Lease");
                        tokio::time::sleep(delay).await;
                        delay = (delay * 2).min(Duration::from_secs(5));
                    }
                },
                _ = look.tick(), if !leading => {
                    if released(&api, &name).await {
                        // A new manager reads the Lease afresh and takes it.
                        // (Bounded: the loop must keep seeing `state` close.)
                        let shutdown = Shutdown::default();
                        let fresh = lease_manager(self.client.clone(), &self.lease, &self.identity, &shutdown);
                        if let Ok(Ok(Some(fresh))) = tokio::time::timeout(RETRY_PERIOD, fresh).await {
                            tracing::debug!(lease = %name, "the Lease was released; taking it");
                            manager = fresh;
                        }
                    }
                }
            }
        }
        release(&api, &name, &self.identity).await
    }
}

/// Whether Lease `name` exists with no holder (its holder released it).
async fn released(api: &Api<LeaseObject>, name: &str) -> bool {
    match api.get_opt(name).await {
        Ok(Some(lease)) => lease
            .spec
            .and_then(|spec| spec.holder_identity)
            .is_none_or(|holder| holder.is_empty()),
        _ => false,
    }
}

/// Clears the holder of Lease `name` if it is `identity`, so that another
/// replica can take over at once; whether it did. The write is conditional
/// on the Lease's resourceVersion, and tried again after a conflict or a
/// server error.
async fn release(api: &Api<LeaseObject>, name: &str, identity: &str) -> Result<bool, kube::Error> {
    let mut delay = Duration::from_millis(50);
    let mut attempt = 1;
    loop {
        match release_once(api, name, identity).await {
            Err(kube::Error::Api(status)) if attempt < 5 && passes(status.code) => {}
            done => return done,
        }
        tokio::time::sleep(delay).await;
        delay *= 2;
        attempt += 1;
    }
}

async fn release_once(
    api: &Api<LeaseObject>,
    name: &str,
    identity: &str,
) -> Result<bool, kube::Error> {
    let Some(lease) = api.get_opt(name).await? else {
        return Ok(false);
    };
    let holder = lease
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.as_deref());
    if holder != Some(identity) {
        return Ok(false);
    }
    let patch = serde_json::json!({
        "metadata": {"resourceVersion": lease.metadata.resource_version},
        "spec": {
            "holderIdentity": null,
            "acquireTime": null,
            "renewTime": null,
            "leaseDurationSeconds": null,
        },
    });
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await?;
    Ok(true)
}

/// Whether an answer with this code may change if the request is made again.
fn passes(code: u16) -> bool {
    code >= 500 || code == 429 || code == 409
}

/// The manager of `lease`, which reads (and, the first time, creates) the
/// Lease. A failure that may pass (a 5xx, 429 or 409 answer, a lost
/// connection, another replica creating the Lease first) is retried with
/// backoff until shutdown; any other (a missing permission, a missing
/// namespace) is returned at once. `None` if shutdown came first.
async fn lease_manager(
    client: Client,
    lease: &Lease,
    identity: &str,
    shutdown: &Shutdown,
) -> anyhow::Result<Option<LeaseManager>> {
    let mut delay = Duration::from_millis(100);
    loop {
        let builder = LeaseManagerBuilder::new(client.clone(), &lease.name)
            .with_namespace(&lease.namespace)
            .with_identity(identity)
            .with_duration(lease.duration_seconds)
            .with_grace((lease.duration_seconds / 3).max(1));
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
        LeaseManagerError::KubeError(kube::Error::Api(status)) => passes(status.code),
        LeaseManagerError::KubeError(_) | LeaseManagerError::LeaseAlreadyExists(_) => true,
        _ => false,
    }
}

/// Completes when the lease held in `leadership` is lost; never when there is none.
pub(crate) async fn lost(leadership: &mut Option<Leadership>) {
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
    pub(crate) async fn release(self) {
        drop(self.state);
        match self.task.await {
            Ok(Ok(true)) => tracing::info!("released the leader-election lease"),
            Ok(Ok(false)) => tracing::info!("the leader-election lease was no longer held"),
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
