//! Starting the envtest server for a test (included by the test binaries that
//! need a live server, next to `mod support`).

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once, OnceLock, PoisonError};

use tempfile::TempDir;

use opctl_envtest::{Config, Controller, Controllers, Envtest};

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
            let written = private_dir().map_err(anyhow::Error::from).and_then(|dir| {
                let kubeconfig = dir.join("kubeconfig");
                server.write_kubeconfig(&kubeconfig).map(|()| kubeconfig)
            });
            let kubeconfig = match written {
                Ok(kubeconfig) => kubeconfig,
                Err(e) => {
                    let _ = tx.send(Err(format!("cannot write the kubeconfig: {e:#}")));
                    return;
                }
            };
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

/// The directories of the kubeconfigs of servers that serve until the test
/// binary exits; removed then (statics are never dropped).
static DIRS: Mutex<Vec<TempDir>> = Mutex::new(Vec::new());

extern "C" fn remove_dirs() {
    let dirs = std::mem::take(&mut *DIRS.lock().unwrap_or_else(PoisonError::into_inner));
    drop(dirs);
}

/// A fresh directory only its owner can enter (0700), with an unpredictable
/// name (the kubeconfig in it holds the administrator's token), removed when
/// the test binary exits.
fn private_dir() -> std::io::Result<PathBuf> {
    static AT_EXIT: Once = Once::new();
    AT_EXIT.call_once(|| {
        // SAFETY: `remove_dirs` is a plain function that does not unwind.
        let registered = unsafe { libc::atexit(remove_dirs) };
        assert_eq!(registered, 0, "atexit");
    });
    let dir = tempfile::Builder::new()
        .prefix("opctl-envtest-tests-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()?;
    let path = dir.path().to_owned();
    DIRS.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(dir);
    Ok(path)
}

/// kube-controller-manager's controllers that keep a cluster's objects in
/// order without moving workloads: no workload, endpoint, volume-binding or
/// quota controller writes what these tests write by hand (`tests/workloads`
/// and `tests/kcm_objects.rs` test those).
pub fn cluster_controllers() -> Controllers {
    Controllers::only([
        Controller::GarbageCollector,
        Controller::Namespace,
        Controller::ServiceAccount,
        Controller::ServiceAccountToken,
        Controller::RootCaCertificatePublisher,
        Controller::ClusterRoleAggregation,
        Controller::ValidatingAdmissionPolicyStatus,
        Controller::Disruption,
        Controller::PersistentVolumeClaimProtection,
        Controller::PersistentVolumeProtection,
        Controller::NodeLifecycle,
    ])
}

/// One server shared by all tests of a test binary: the API server with
/// [`cluster_controllers`] and no simulation (no scheduler or kubelet
/// moves the Pods these tests write by hand).
pub fn shared() -> &'static Background {
    static SHARED: OnceLock<Background> = OnceLock::new();
    SHARED.get_or_init(|| {
        background(Config {
            simulation: opctl_envtest::Simulation::off(),
            controllers: cluster_controllers(),
            ..Config::default()
        })
    })
}

/// A namespace name no other test of this binary uses.
pub fn unique_name(prefix: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("{prefix}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}
