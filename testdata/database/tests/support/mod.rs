//! What the e2e tests (and the benchmark) share: the manager binary run as
//! its own process (in the e2e tests as a ServiceAccount holding only the
//! generated RBAC), a namespace per test, kubectl, and waiting.
//!
//! Everything goes through the cluster the kubeconfig names, so the same
//! code runs under `opctl envtest run` and against a real cluster.

#![allow(dead_code)] // each test target uses a different part

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, ExitStatus, Output};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleRef, Subject};
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use rand::distr::{Alphanumeric, SampleString};

/// How long the tests wait for the operator (and a real cluster's garbage
/// collector and kubelet: a Pod takes up to its 30 s grace period to go).
pub const PATIENCE: Duration = Duration::from_secs(120);

/// The ServiceAccount (namespace, name) the e2e tests run the manager as.
const OPERATOR_ACCOUNT: (&str, &str) = ("default", "database-e2e");

/// Grants [`OPERATOR_ACCOUNT`] the ClusterRole of config/rbac/role.yaml
/// (what `opctl manifests` writes from the `+opctl:rbac` markers), under a
/// name of its own, and returns the user name to impersonate: a permission
/// the markers lack fails the tests, under envtest as on a cluster.
pub async fn operator_account(client: &kube::Client) -> String {
    let (namespace, name) = OPERATOR_ACCOUNT;
    let mut role: ClusterRole = serde_saphyr::from_str(include_str!("../../config/rbac/role.yaml"))
        .expect("config/rbac/role.yaml is a ClusterRole (run `opctl manifests`)");
    role.metadata = ObjectMeta {
        name: Some(name.to_owned()),
        ..ObjectMeta::default()
    };
    let binding = ClusterRoleBinding {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
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
    let apply = PatchParams::apply("database-e2e").force();
    Api::<ClusterRole>::all(client.clone())
        .patch(name, &apply, &Patch::Apply(&role))
        .await
        .expect("the manager's ClusterRole applies");
    Api::<ClusterRoleBinding>::all(client.clone())
        .patch(name, &apply, &Patch::Apply(&binding))
        .await
        .expect("the manager's ClusterRoleBinding applies");
    format!("system:serviceaccount:{namespace}:{name}")
}

/// The manager, started from the binary cargo built for this test.
pub struct Manager {
    process: Child,
    pub health: SocketAddr,
    pub metrics: SocketAddr,
}

impl Manager {
    /// Starts the manager with free local ports and waits until /readyz says ok.
    pub fn start(args: &[&str]) -> Manager {
        Manager::start_as(None, args)
    }

    /// [`Manager::start`], sending every request as `user` (kube-rs's
    /// `Impersonate-User`; see [`operator_account`]).
    pub fn start_as(user: Option<&str>, args: &[&str]) -> Manager {
        let health = free_local_address();
        let metrics = free_local_address();
        let binary = env!("CARGO_BIN_EXE_database");
        let mut command = Command::new(binary);
        command.env_remove("KUBE_RS_DEBUG_IMPERSONATE_GROUP");
        match user {
            Some(user) => command.env("KUBE_RS_DEBUG_IMPERSONATE_USER", user),
            None => command.env_remove("KUBE_RS_DEBUG_IMPERSONATE_USER"),
        };
        let process = command
            .arg(format!("--health-probe-bind-address={health}"))
            .arg(format!("--metrics-bind-address={metrics}"))
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

    /// The operating system's id of the manager process.
    pub fn pid(&self) -> u32 {
        self.process.id()
    }

    /// Sends SIGTERM and waits for the process to exit.
    pub fn terminate(mut self, within: Duration) -> ExitStatus {
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

pub fn free_local_address() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free local port");
    listener.local_addr().expect("the port's address")
}

/// A minimal HTTP/1.0 GET: the status code and body, or None if the
/// connection fails.
pub fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
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
pub fn eventually(timeout: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Polls `probe` every 100 ms until it gives a value, failing after
/// [`PATIENCE`] with the last thing it saw.
pub async fn wait_for<T>(what: &str, mut probe: impl AsyncFnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + PATIENCE;
    loop {
        match probe().await {
            Ok(value) => return value,
            Err(seen) => assert!(
                Instant::now() < deadline,
                "timed out after {PATIENCE:?} waiting for {what}; last seen: {seen}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Runs kubectl (`KUBECTL`, default `kubectl`) with the test's kubeconfig.
pub fn kubectl(args: &[&str]) -> Output {
    let program = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".to_owned());
    Command::new(&program)
        .args(args)
        .output()
        .unwrap_or_else(|err| panic!("{program} runs: {err}"))
}

/// Creates a namespace named `prefix-<random>` and returns its name.
pub async fn create_namespace(client: &kube::Client, prefix: &str) -> String {
    let suffix = Alphanumeric
        .sample_string(&mut rand::rng(), 6)
        .to_lowercase();
    let namespace = format!("{prefix}-{suffix}");
    let object = Namespace {
        metadata: ObjectMeta {
            name: Some(namespace.clone()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &object)
        .await
        .expect("create the namespace");
    namespace
}

/// A test's own namespace with the manager watching only it. Dropping it
/// deletes the namespace's Databases while the manager still runs (their
/// finalizer needs it), then the namespace, then stops the manager.
pub struct Fixture {
    pub client: kube::Client,
    pub namespace: String,
    manager: Option<Manager>,
}

impl Fixture {
    /// Creates `e2e-<test>-<random>` and starts the manager for it.
    pub async fn start(test: &str) -> Fixture {
        let client = kube::Client::try_default()
            .await
            .expect("a cluster from the kubeconfig");
        let namespace = create_namespace(&client, &format!("e2e-{test}")).await;
        let account = operator_account(&client).await;
        let manager = Manager::start_as(Some(&account), &[&format!("--namespace={namespace}")]);
        Fixture {
            client,
            namespace,
            manager: Some(manager),
        }
    }

    /// An `Api` for `K` in the test namespace.
    pub fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// Cleans up, then stops the manager with SIGTERM and returns how it exited.
    pub fn terminate(mut self) -> ExitStatus {
        self.clean_up();
        let manager = self.manager.take().expect("the manager runs");
        manager.terminate(Duration::from_secs(10))
    }

    fn clean_up(&self) {
        let namespace = self.namespace.as_str();
        let timeout = format!("--timeout={}s", PATIENCE.as_secs());
        let steps: [&[&str]; 2] = [
            &[
                "delete",
                "databases",
                "--all",
                "-n",
                namespace,
                "--wait",
                &timeout,
            ],
            &[
                "delete",
                "namespace",
                namespace,
                "--wait=false",
                "--ignore-not-found",
            ],
        ];
        for args in steps {
            let output = kubectl(args);
            if !output.status.success() {
                eprintln!(
                    "cleanup: kubectl {} failed: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&output.stderr)
                );
            }
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if self.manager.is_some() {
            self.clean_up();
        }
    }
}
