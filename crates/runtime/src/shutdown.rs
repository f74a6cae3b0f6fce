//! Graceful shutdown: SIGTERM or SIGINT cancels one token that every part of
//! the manager watches.

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// A cloneable handle to the manager's shutdown.
#[derive(Clone, Debug, Default)]
pub struct Shutdown {
    token: CancellationToken,
}

impl Shutdown {
    /// Asks everything to stop.
    pub fn trigger(&self) {
        self.token.cancel();
    }

    /// Whether shutdown has been asked for.
    pub fn is_triggered(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Completes once shutdown has been asked for.
    pub async fn wait(&self) {
        self.token.cancelled().await;
    }

    /// Like [`Shutdown::wait`], but owning its handle: what
    /// `Controller::graceful_shutdown_on` takes.
    pub fn wait_owned(self) -> impl Future<Output = ()> + Send + Sync + 'static {
        self.token.cancelled_owned()
    }

    /// Triggers shutdown on the first SIGTERM or SIGINT.
    pub(crate) fn trigger_on_signals(&self) -> anyhow::Result<()> {
        let mut terminate = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        let token = self.token.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = terminate.recv() => tracing::info!("received SIGTERM"),
                _ = interrupt.recv() => tracing::info!("received SIGINT"),
                () = token.cancelled() => return,
            }
            token.cancel();
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_clone_sees_the_trigger() {
        let shutdown = Shutdown::default();
        let observer = shutdown.clone();
        assert!(!observer.is_triggered());
        shutdown.trigger();
        observer.wait().await;
        observer.clone().wait_owned().await;
        assert!(observer.is_triggered());
    }
}
