//! Starting the envtest server for a test (included by the test binaries that
//! need a live server, next to `mod support`).

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// A server running on its own runtime thread until the test binary exits,
/// so plain `#[test]`s and `#[tokio::test]`s can all use it (a server started
/// inside one `#[tokio::test]` dies with that test's runtime).
pub struct Background {
    pub base_url: String,
    pub kubeconfig: PathBuf,
}

/// Starts a server in the background and waits until it is ready.
pub fn background(config: Config) -> Background {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build();
        let runtime = match runtime {
            Ok(r) => r,
            Err(e) => {
                let _ = tx.send(Err(format!("cannot build a runtime: {e}")));
                return;
            }
        };
        runtime.block_on(async move {
            let server = match Envtest::start(config).await {
                Ok(s) => s,
                Err(e) => {
                    let _ = tx.send(Err(format!("envtest did not start: {e:#}")));
                    return;
                }
            };
            let dir = std::env::temp_dir().join(format!(
                "opctl-envtest-tests-{}-{}",
                std::process::id(),
                server.base_url().rsplit(':').next().unwrap_or("0")
            ));
            let kubeconfig = dir.join("kubeconfig");
            let written = std::fs::create_dir_all(&dir)
                .map_err(anyhow::Error::from)
                .and_then(|()| server.write_kubeconfig(&kubeconfig));
            if let Err(e) = written {
                let _ = tx.send(Err(format!("cannot write the kubeconfig: {e:#}")));
                return;
            }
            let _ = tx.send(Ok(Background {
                base_url: server.base_url(),
                kubeconfig,
            }));
            // Serve until the test binary exits.
            std::future::pending::<()>().await;
        });
    });
    match rx.recv() {
        Ok(Ok(background)) => background,
        Ok(Err(e)) => panic!("{e}"),
        Err(_) => panic!("the envtest server thread died before it was ready"),
    }
}

/// One server shared by all tests of a test binary: the API server and
/// its controllers without the workload simulation (no scheduler or kubelet
/// moves the Pods these tests write by hand; `tests/workloads` tests that).
pub fn shared() -> &'static Background {
    static SHARED: OnceLock<Background> = OnceLock::new();
    SHARED.get_or_init(|| {
        background(Config {
            simulation: opctl_envtest::Simulation::off(),
            ..Config::default()
        })
    })
}

/// A namespace name no other test of this binary uses.
pub fn unique_name(prefix: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("{prefix}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}
