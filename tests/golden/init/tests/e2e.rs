//! End-to-end tests: they use the cluster the kubeconfig names and start the
//! manager binary as its own process.
//!
//! `make test-e2e` runs them under `opctl envtest run` (no cluster needed);
//! `E2E_USE_EXISTING_CLUSTER=true make test-e2e` runs them against the
//! current kubeconfig (install the CRDs first: `make install`). Plain
//! `cargo test` lists them as ignored.
//!
//! The manager runs as a ServiceAccount granted exactly config/rbac/role.yaml
//! (what `opctl manifests` writes from the `+opctl:rbac` markers), by
//! impersonation: a permission the markers lack fails these tests, under
//! envtest as on a cluster.
//!
//! This file is yours; `opctl create api` adds a test per kind at the
//! `+opctl:scaffold:e2e` marker, `opctl create webhook` one per webhook.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleRef, Subject};
use kube::api::{Api, ObjectMeta, Patch, PatchParams};

// +opctl:scaffold:e2e-modules

/// The ServiceAccount the tests run the manager as, and its namespace.
const OPERATOR_ACCOUNT: &str = "guestbook-e2e";
const OPERATOR_NAMESPACE: &str = "default";

/// Grants [`OPERATOR_ACCOUNT`] the ClusterRole of config/rbac/role.yaml
/// (under a name of its own, so a deployed manager keeps its role) and
/// returns the user name to impersonate.
fn operator_account() -> String {
    let (namespace, name) = (OPERATOR_NAMESPACE, OPERATOR_ACCOUNT);
    let mut role: ClusterRole = serde_saphyr::from_str(include_str!("../config/rbac/role.yaml"))
        .expect("config/rbac/role.yaml is a ClusterRole (run `opctl manifests`)");
    let metadata = ObjectMeta {
        name: Some(name.to_owned()),
        ..ObjectMeta::default()
    };
    role.metadata = metadata.clone();
    let binding = ClusterRoleBinding {
        metadata,
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_owned(),
            kind: "ClusterRole".to_owned(),
            name: name.to_owned(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".to_owned(),
            name: name.to_owned(),
            namespace: Some(namespace.to_owned()),
            ..Subject::default()
        }]),
    };
    // The tests may run inside a tokio runtime: apply from a thread of its own.
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async {
            let client = kube::Client::try_default().await?;
            let apply = PatchParams::apply(name).force();
            Api::<ClusterRole>::all(client.clone())
                .patch(name, &apply, &Patch::Apply(&role))
                .await?;
            Api::<ClusterRoleBinding>::all(client)
                .patch(name, &apply, &Patch::Apply(&binding))
                .await?;
            anyhow::Ok(())
        })
    })
    .join()
    .expect("the RBAC thread")
    .unwrap_or_else(|err| panic!("cannot grant the manager's RBAC: {err:#}"));
    format!("system:serviceaccount:{namespace}:{name}")
}

/// The manager, started from the binary cargo built for this test.
struct Manager {
    process: Child,
    health: SocketAddr,
    metrics: SocketAddr,
}

impl Manager {
    /// Starts the manager with free local ports and waits until /readyz says ok.
    fn start(args: &[&str]) -> Manager {
        let health = free_local_address();
        let metrics = free_local_address();
        let binary = env!("CARGO_BIN_EXE_guestbook");
        let mut command = Command::new(binary);
        command
            // kube-rs sends every request as this user (`Impersonate-User`).
            .env("KUBE_RS_DEBUG_IMPERSONATE_USER", operator_account())
            .env_remove("KUBE_RS_DEBUG_IMPERSONATE_GROUP")
            .arg(format!("--health-probe-bind-address={health}"))
            .arg(format!("--metrics-bind-address={metrics}"));
        // +opctl:scaffold:e2e-manager
        let process = command
            .args(args)
            .spawn()
            .expect("the manager binary starts");
        let mut manager = Manager {
            process,
            health,
            metrics,
        };
        eventually(Duration::from_secs(30), "the manager to be ready", || {
            if let Ok(Some(status)) = manager.process.try_wait() {
                panic!("the manager exited with {status} before it was ready");
            }
            http_get(manager.health, "/readyz").is_some_and(|(status, _)| status == 200)
        });
        manager
    }

    /// Sends SIGTERM and waits for the process to exit.
    fn terminate(mut self, within: Duration) -> ExitStatus {
        let pid = self.process.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(
            sent.is_ok_and(|status| status.success()),
            "kill -TERM {pid}"
        );
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.process.try_wait().expect("the manager's status") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the manager did not stop within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

fn free_local_address() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free local port");
    listener.local_addr().expect("the port's address")
}

/// A minimal HTTP/1.0 GET: the status code and body, or None if the
/// connection fails.
fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())?;
    Some((status, body))
}

/// Polls `check` every 100 ms until it holds, failing after `timeout`.
fn eventually(timeout: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
#[ignore = "needs a cluster: run `make test-e2e`"]
fn the_manager_serves_probes_and_metrics_and_stops_on_sigterm() {
    let manager = Manager::start(&[]);
    let (status, _) = http_get(manager.health, "/healthz").expect("/healthz answers");
    assert_eq!(status, 200);
    let (status, body) = http_get(manager.metrics, "/metrics").expect("/metrics answers");
    assert_eq!(status, 200);
    assert!(body.contains("controller_reconcile"), "{body}");
    let exit = manager.terminate(Duration::from_secs(10));
    assert!(exit.success(), "the manager exited with {exit}");
}

// +opctl:scaffold:e2e
