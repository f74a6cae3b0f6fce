//! When the manager is ready and when it may reconcile. Ready (`/readyz`)
//! means serving with every cache filled, on every replica; reconciling
//! also needs leadership when `--leader-elect` is on. Readiness is not
//! leadership, so a new replica of a rolling update becomes Ready while the
//! old one still holds the Lease, and takes over with its caches filled.

use std::sync::Arc;

use tokio::sync::watch;

/// Shared by the manager, its caches and its controllers.
#[derive(Clone, Debug)]
pub(crate) struct Readiness {
    /// Caches not filled yet, plus one until every controller is set up
    /// (so that no cache can be missed).
    unfilled: Arc<watch::Sender<usize>>,
    /// Whether this replica may reconcile (holds the Lease, or needs none).
    leading: Arc<watch::Sender<bool>>,
}

impl Default for Readiness {
    fn default() -> Self {
        Self {
            unfilled: Arc::new(watch::Sender::new(1)),
            leading: Arc::new(watch::Sender::new(false)),
        }
    }
}

impl Readiness {
    /// Counts a new cache as not filled until [`Filling::filled`].
    pub(crate) fn track(&self) -> Filling {
        self.unfilled.send_modify(|n| *n += 1);
        Filling {
            unfilled: Some(self.unfilled.clone()),
        }
    }

    /// Every controller has set up its caches.
    pub(crate) fn controllers_set_up(&self) {
        self.unfilled.send_modify(|n| *n = n.saturating_sub(1));
    }

    /// Whether every cache is filled (what /readyz reports).
    pub(crate) fn is_ready(&self) -> bool {
        *self.unfilled.borrow() == 0
    }

    /// This replica may reconcile from now on.
    pub(crate) fn lead(&self) {
        self.leading.send_replace(true);
    }

    /// Completes once the caches are filled and this replica leads.
    pub(crate) async fn may_reconcile(&self) {
        // The senders live as long as `self`: waiting cannot fail.
        let _ = self.unfilled.subscribe().wait_for(|n| *n == 0).await;
        let _ = self.leading.subscribe().wait_for(|leading| *leading).await;
    }
}

/// A cache being filled: counted by [`Readiness`] until its first list is in.
#[derive(Debug)]
pub(crate) struct Filling {
    unfilled: Option<Arc<watch::Sender<usize>>>,
}

impl Filling {
    /// The cache holds its first complete list; later calls change nothing.
    pub(crate) fn filled(&mut self) {
        if let Some(unfilled) = self.unfilled.take() {
            unfilled.send_modify(|n| *n = n.saturating_sub(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn ready_once_set_up_and_every_cache_is_filled() {
        let readiness = Readiness::default();
        let mut first = readiness.track();
        let mut second = readiness.track();
        readiness.controllers_set_up();
        assert!(!readiness.is_ready());
        first.filled();
        first.filled();
        assert!(!readiness.is_ready(), "one cache is still filling");
        second.filled();
        assert!(readiness.is_ready());
    }

    #[tokio::test]
    async fn reconciling_also_waits_for_leadership() {
        let readiness = Readiness::default();
        readiness.controllers_set_up();
        assert!(readiness.is_ready(), "no cache at all");
        let waiting = tokio::time::timeout(Duration::from_millis(50), readiness.may_reconcile());
        assert!(waiting.await.is_err(), "not leading yet");
        readiness.lead();
        readiness.may_reconcile().await;
    }
}
