//! What the e2e tests (and the benchmark) share: the manager binary run as
//! its own process (in the e2e tests as a ServiceAccount holding only the
//! generated RBAC), a namespace per test, kubectl, and waiting.
//!
//! Everything goes through the cluster the kubeconfig names, so the same
//! code runs under `opctl envtest run` and against a real cluster.

#![allow(dead_code)] // each test target uses a different part

// The conversion webhook's set-up (scaffolded by opctl): every manager the
// tests start serves it, since the API server calls it to read or write a
// Database in v2.
#[path = "../webhooks/mod.rs"]
pub mod webhooks;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ObjectMeta, Patch, PatchParams, PostParams,
};
use rand::distr::{Alphanumeric, SampleString};

/// How long the tests wait for the operator (and a real cluster's garbage
/// collector and kubelet: a Pod takes up to its 30 s grace period to go).
pub const PATIENCE: Duration = Duration::from_secs(120);

/// The ServiceAccount (namespace, name) the e2e tests run the manager as.
const OPERATOR_ACCOUNT: (&str, &str) = ("default", "database-e2e");

/// Grants [`OPERATOR_ACCOUNT`] what config/rbac grants the manager's
/// ServiceAccount: the ClusterRole of role.yaml (what `opctl manifests`
/// writes from the `+opctl:rbac` markers), the leader-election Role and the
/// metrics-auth ClusterRole, under names of their own, and returns the user
/// name to impersonate: a permission the markers lack fails the tests,
/// under envtest as on a cluster.
pub async fn operator_account(client: &kube::Client) -> String {
    let roles = [
        ("manager", include_str!("../../config/rbac/role.yaml")),
        (
            "leader-election",
            include_str!("../../config/rbac/leader_election_role.yaml"),
        ),
        (
            "metrics-auth",
            include_str!("../../config/rbac/metrics_auth_role.yaml"),
        ),
    ];
    for (suffix, yaml) in roles {
        grant(client, suffix, yaml)
            .await
            .unwrap_or_else(|err| panic!("cannot grant the manager's RBAC: {err:#}"));
    }
    let (namespace, name) = OPERATOR_ACCOUNT;
    format!("system:serviceaccount:{namespace}:{name}")
}

/// Applies the Role or ClusterRole in `yaml` as `<account>-<suffix>` and
/// binds it to [`account`].
async fn grant(client: &kube::Client, suffix: &str, yaml: &str) -> anyhow::Result<()> {
    let (namespace, account) = OPERATOR_ACCOUNT;
    let mut role: DynamicObject = serde_saphyr::from_str(yaml)?;
    let cluster = role.types.as_ref().is_some_and(|t| t.kind == "ClusterRole");
    let (role_kind, binding_kind) = if cluster {
        ("ClusterRole", "ClusterRoleBinding")
    } else {
        ("Role", "RoleBinding")
    };
    let name = format!("{account}-{suffix}");
    let role_namespace = (!cluster).then(|| namespace.to_owned());
    role.metadata = ObjectMeta {
        name: Some(name.clone()),
        namespace: role_namespace.clone(),
        ..ObjectMeta::default()
    };
    let binding: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": binding_kind,
        "metadata": {"name": name, "namespace": role_namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }))?;
    for object in [role, binding] {
        let types = object.types.clone().unwrap_or_default();
        let gvk = GroupVersionKind::try_from(&types)?;
        let resource = ApiResource::from_gvk(&gvk);
        let api: Api<DynamicObject> = match &role_namespace {
            Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        let apply = PatchParams::apply(account).force();
        api.patch(&name, &apply, &Patch::Apply(&object)).await?;
    }
    Ok(())
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
        Manager::start_replica("e2e", user, args)
    }

    /// [`Manager::start_as`] as the replica `name` (its POD_NAME: its
    /// identity in leader election and as the reporter of events).
    pub fn start_replica(name: &str, user: Option<&str>, args: &[&str]) -> Manager {
        Manager::launch(name, user, args, &[])
    }

    /// [`Manager::start`] with these environment variables added.
    pub fn start_with_env(args: &[&str], env: &[(&str, String)]) -> Manager {
        Manager::launch("e2e", None, args, env)
    }

    fn launch(name: &str, user: Option<&str>, args: &[&str], env: &[(&str, String)]) -> Manager {
        let [health, metrics] = free_local_addresses();
        let binary = env!("CARGO_BIN_EXE_database");
        let mut command = Command::new(binary);
        command
            .env_remove("KUBE_RS_DEBUG_IMPERSONATE_GROUP")
            .env("POD_NAME", name)
            .envs(env.iter().map(|(name, value)| (name, value)));
        match user {
            Some(user) => command.env("KUBE_RS_DEBUG_IMPERSONATE_USER", user),
            None => command.env_remove("KUBE_RS_DEBUG_IMPERSONATE_USER"),
        };
        command
            .arg(format!("--health-probe-bind-address={health}"))
            .arg(format!("--metrics-bind-address={metrics}"))
            .arg("--metrics-secure=false");
        // Installs the conversion webhook's Service and CRD patch, pointed
        // at this manager (on a port its command line does not name yet),
        // unless the caller runs it without webhooks.
        if !args.contains(&"--enable-webhooks=false") {
            webhooks::serve_locally(&mut command);
        }
        let mut process = command
            .args(args)
            .stderr(Stdio::piped())
            .spawn()
            .expect("the manager binary starts");
        echo_log(&mut process);
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

/// Passes the manager's log on, line by line, into the test's captured
/// output (as the test's own prints): cargo shows it for a test that fails
/// only, or as it comes with `-- --nocapture`.
fn echo_log(process: &mut Child) {
    let stderr = process.stderr.take().expect("the manager's stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("{line}");
        }
    });
}

/// `N` free local addresses, distinct from each other: every port is held
/// until all are picked (a port released at once can be picked again).
pub fn free_local_addresses<const N: usize>() -> [SocketAddr; N] {
    let listeners: [TcpListener; N] =
        std::array::from_fn(|_| TcpListener::bind("127.0.0.1:0").expect("a free local port"));
    listeners.map(|listener| listener.local_addr().expect("the port's address"))
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
/// deletes the namespace's Databases, then the namespace, then stops the
/// manager.
pub struct Fixture {
    pub client: kube::Client,
    pub namespace: String,
    manager: Option<Manager>,
    cleaned_up: bool,
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
            cleaned_up: false,
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
        self.stop_manager()
    }

    /// Stops the manager with SIGTERM and returns how it exited; the
    /// namespace stays until the fixture is dropped.
    pub fn stop_manager(&mut self) -> ExitStatus {
        let manager = self.manager.take().expect("the manager runs");
        manager.terminate(Duration::from_secs(10))
    }

    fn clean_up(&mut self) {
        if std::mem::replace(&mut self.cleaned_up, true) {
            return;
        }
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
        self.clean_up();
    }
}

/// One kind of API request, as kube-apiserver's `apiserver_request_total`
/// labels it (summed over groups, versions, scopes and codes).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Request {
    /// `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`, `APPLY`, `DELETE`.
    pub verb: String,
    pub resource: String,
    pub subresource: String,
}

impl std::fmt::Display for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.verb, self.resource)?;
        if !self.subresource.is_empty() {
            write!(f, "/{}", self.subresource)?;
        }
        Ok(())
    }
}

/// Requests counted by kind.
pub type Requests = std::collections::BTreeMap<Request, u64>;

/// What the API server has counted so far: `apiserver_request_total` on its
/// `/metrics` (which `opctl envtest` serves; on a cluster every client's
/// requests count, not only the operator's).
pub async fn api_requests(client: &kube::Client) -> anyhow::Result<Requests> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(request).await?;
    Ok(parse_requests(&text))
}

/// The `apiserver_request_total` samples of a Prometheus text page.
pub fn parse_requests(text: &str) -> Requests {
    let mut requests = Requests::new();
    for line in text.lines() {
        let Some(sample) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((labels, value)) = sample.rsplit_once("} ") else {
            continue;
        };
        let label = |name: &str| -> String {
            let start = format!("{name}=\"");
            labels
                .split(',')
                .find_map(|pair| pair.strip_prefix(&start))
                .map(|value| value.trim_end_matches('"').to_owned())
                .unwrap_or_default()
        };
        let request = Request {
            verb: label("verb"),
            resource: label("resource"),
            subresource: label("subresource"),
        };
        let count = value.trim().parse::<f64>().unwrap_or_default() as u64;
        *requests.entry(request).or_default() += count;
    }
    requests
}

/// The requests counted in `after` and not in `before`.
pub fn requests_between(before: &Requests, after: &Requests) -> Requests {
    after
        .iter()
        .filter_map(|(request, count)| {
            let grown = count.saturating_sub(before.get(request).copied().unwrap_or(0));
            (grown > 0).then(|| (request.clone(), grown))
        })
        .collect()
}

/// The manager's reconciles so far (`controller_runtime_reconcile_total`
/// summed over results) on its plain-HTTP `/metrics`.
pub fn reconciles(manager: &Manager) -> anyhow::Result<u64> {
    let (status, body) = http_get(manager.metrics, "/metrics")
        .ok_or_else(|| anyhow::anyhow!("/metrics does not answer"))?;
    anyhow::ensure!(status == 200, "/metrics answered {status}");
    let mut total = 0;
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("controller_runtime_reconcile_total{") {
            let value = rest.rsplit(' ').next().unwrap_or_default();
            total += value.parse::<u64>()?;
        }
    }
    Ok(total)
}
