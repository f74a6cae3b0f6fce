//! Starting the envtest server for a test (included by the test binaries that
//! need a live server, next to `mod support`).

use opctl_envtest::{Config, Envtest};

/// Starts a fresh server with `config`, failing the test with the reason if
/// it cannot start.
pub async fn start(config: Config) -> Envtest {
    match Envtest::start(config).await {
        Ok(server) => server,
        Err(e) => panic!("envtest did not start: {e:#}"),
    }
}

/// A fresh server with default settings.
pub async fn start_default() -> Envtest {
    start(Config::default()).await
}
