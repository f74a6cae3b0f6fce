//! End-to-end tests: they use the cluster the kubeconfig names and start the
//! manager binary as its own process.
//!
//! `make test-e2e` runs them under `opctl envtest run` (no cluster needed);
//! `E2E_USE_EXISTING_CLUSTER=true make test-e2e` runs them against the
//! current kubeconfig (install the CRDs first: `make install`; once the
//! project has webhooks, deploy the operator instead, with cert-manager in
//! the cluster: its manager serves them, see tests/webhooks/mod.rs). Plain
//! `cargo test` lists them as ignored.
//!
//! The manager's log goes into each test's captured output, as the test's
//! own prints do: cargo shows it for a test that fails (`-- --nocapture`
//! shows it as it comes).
//!
//! The manager runs as a ServiceAccount granted exactly config/rbac/role.yaml
//! (what `opctl manifests` writes from the `+opctl:rbac` markers), by
//! impersonation: a permission the markers lack fails these tests, under
//! envtest as on a cluster.
//!
//! This file is yours; `opctl create api` adds a test per kind at the
//! `+opctl:scaffold:e2e` marker, `opctl create webhook` one per webhook.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ObjectMeta, Patch, PatchParams,
};

mod webhooks;
// +opctl:scaffold:e2e-modules

/// The ServiceAccount the tests run the manager as, and its namespace.
const OPERATOR_ACCOUNT: &str = "database-e2e";
const OPERATOR_NAMESPACE: &str = "default";

/// Grants [`OPERATOR_ACCOUNT`] what config/rbac grants the manager's
/// ServiceAccount: the ClusterRole of role.yaml, the leader-election Role and the metrics-auth
/// ClusterRole, each under a name of its own (so a deployed manager keeps
/// its roles), and returns the user name to impersonate.
fn operator_account() -> String {
    run(async {
        let client = kube::Client::try_default().await?;
        let roles = [
            ("manager", include_str!("../config/rbac/role.yaml")),
            (
                "leader-election",
                include_str!("../config/rbac/leader_election_role.yaml"),
            ),
            (
                "metrics-auth",
                include_str!("../config/rbac/metrics_auth_role.yaml"),
            ),
        ];
        for (suffix, yaml) in roles {
            grant(&client, suffix, yaml).await?;
        }
        anyhow::Ok(())
    })
    .unwrap_or_else(|err| panic!("cannot grant the manager's RBAC: {err:#}"));
    format!("system:serviceaccount:{OPERATOR_NAMESPACE}:{OPERATOR_ACCOUNT}")
}

/// Applies the Role or ClusterRole in `yaml` as `<account>-<suffix>` and
/// binds it to [`OPERATOR_ACCOUNT`].
async fn grant(client: &kube::Client, suffix: &str, yaml: &str) -> anyhow::Result<()> {
    let mut role: DynamicObject = serde_saphyr::from_str(yaml)?;
    let cluster = role.types.as_ref().is_some_and(|t| t.kind == "ClusterRole");
    let (role_kind, binding_kind) = if cluster {
        ("ClusterRole", "ClusterRoleBinding")
    } else {
        ("Role", "RoleBinding")
    };
    let name = format!("{OPERATOR_ACCOUNT}-{suffix}");
    let namespace = (!cluster).then(|| OPERATOR_NAMESPACE.to_owned());
    role.metadata = ObjectMeta {
        name: Some(name.clone()),
        namespace: namespace.clone(),
        ..ObjectMeta::default()
    };
    let binding: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": binding_kind,
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": OPERATOR_ACCOUNT, "namespace": OPERATOR_NAMESPACE}],
    }))?;
    for object in [role, binding] {
        let types = object.types.clone().unwrap_or_default();
        let gvk = GroupVersionKind::try_from(&types)?;
        let resource = ApiResource::from_gvk(&gvk);
        let api: Api<DynamicObject> = match &namespace {
            Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        let apply = PatchParams::apply(OPERATOR_ACCOUNT).force();
        api.patch(&name, &apply, &Patch::Apply(&object)).await?;
    }
    Ok(())
}

/// Runs `work` to completion on a runtime of its own (the tests may run
/// inside a tokio runtime).
fn run<T: Send + 'static>(
    work: impl Future<Output = anyhow::Result<T>> + Send + 'static,
) -> anyhow::Result<T> {
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(work)
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the thread panicked"))?
}

/// The manager, started from the binary cargo built for this test.
struct Manager {
    process: Child,
    health: SocketAddr,
    metrics: SocketAddr,
    /// What it has logged so far (JSON lines on its stderr, also written to
    /// the test's captured output).
    log: Arc<Mutex<Vec<serde_json::Value>>>,
}

impl Manager {
    /// Starts the manager with free local ports and waits until /readyz says ok.
    fn start(args: &[&str]) -> Manager {
        Manager::start_named("e2e", args)
    }

    /// [`Manager::start`] as the replica `name` (its POD_NAME: its identity
    /// in leader election and as the reporter of events).
    fn start_named(name: &str, args: &[&str]) -> Manager {
        let [health, metrics] = free_local_addresses();
        let binary = env!("CARGO_BIN_EXE_database");
        let mut command = Command::new(binary);
        command
            // kube-rs sends every request as this user (`Impersonate-User`).
            .env("KUBE_RS_DEBUG_IMPERSONATE_USER", operator_account())
            .env_remove("KUBE_RS_DEBUG_IMPERSONATE_GROUP")
            .env("POD_NAME", name)
            .env("LOG_FORMAT", "json")
            .stderr(Stdio::piped())
            .arg(format!("--health-probe-bind-address={health}"))
            .arg(format!("--metrics-bind-address={metrics}"))
            .arg("--metrics-secure=false");
        webhooks::serve_locally(&mut command);
        // +opctl:scaffold:e2e-manager
        let mut process = command
            .args(args)
            .spawn()
            .expect("the manager binary starts");
        let log = Arc::new(Mutex::new(Vec::new()));
        let stderr = process.stderr.take().expect("the manager's stderr");
        let shared = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                // Into the test's captured output, as a test's own prints
                // go: shown only if the test fails (or with --nocapture).
                eprintln!("{line}");
                if let Ok(entry) = serde_json::from_str(&line) {
                    let mut log = shared.lock().unwrap_or_else(PoisonError::into_inner);
                    log.push(entry);
                }
            }
        });
        let mut manager = Manager {
            process,
            health,
            metrics,
            log,
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

impl Manager {
    /// Whether a reconcile of `controller` has logged `message` with the
    /// field `name` (the scaffolded reconciles log the object's name).
    // Called by the tests of controllers for built-in kinds only.
    #[allow(dead_code)]
    fn logged(&self, controller: &str, message: &str, name: &str) -> bool {
        let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        log.iter().any(|entry| {
            let fields = &entry["fields"];
            entry["span"]["controller"] == controller
                && fields["message"] == message
                && fields["name"] == name
        })
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// `N` free local addresses, distinct from each other: every port is held
/// until all are picked (a port released at once can be picked again).
fn free_local_addresses<const N: usize>() -> [SocketAddr; N] {
    let listeners: [TcpListener; N] =
        std::array::from_fn(|_| TcpListener::bind("127.0.0.1:0").expect("a free local port"));
    listeners.map(|listener| listener.local_addr().expect("the port's address"))
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

/// One kind of API request as kube-apiserver's `apiserver_request_total`
/// labels it: verb (`GET`, `POST`, `PATCH`, `APPLY`, ...), resource,
/// subresource.
type Request = (String, String, String);

/// API requests counted, by kind of request.
type Requests = BTreeMap<Request, u64>;

/// The request `verb resource[/subresource]`.
fn request(verb: &str, resource: &str, subresource: &str) -> Request {
    (verb.to_owned(), resource.to_owned(), subresource.to_owned())
}

/// What the API server has counted so far.
struct ApiCounts {
    /// Its `apiserver_request_total` (served on `/metrics` by `opctl
    /// envtest` as by kube-apiserver), summed over groups, versions, scopes
    /// and codes. Lists and watches are left out: they fill the caches, not
    /// one reconcile.
    requests: Requests,
    /// The faults `opctl envtest --faults` injected
    /// (`opctl_envtest_injected_faults_total`; none on a real cluster).
    faults: u64,
}

async fn api_requests(client: &kube::Client) -> ApiCounts {
    let metrics = http::Request::get("/metrics").body(Vec::new());
    let metrics = metrics.expect("a GET of /metrics");
    let text = client.request_text(metrics).await;
    let text = text.expect("the API server's /metrics");
    let mut counts = ApiCounts {
        requests: Requests::new(),
        faults: 0,
    };
    for line in text.lines() {
        let count = |sample: &str| sample.trim().parse::<f64>().unwrap_or_default() as u64;
        if let Some(sample) = line.strip_prefix("opctl_envtest_injected_faults_total{") {
            counts.faults += sample
                .rsplit_once("} ")
                .map_or(0, |(_, value)| count(value));
            continue;
        }
        let Some((labels, value)) = line
            .strip_prefix("apiserver_request_total{")
            .and_then(|sample| sample.rsplit_once("} "))
        else {
            continue;
        };
        let label = |name: &str| {
            let start = format!("{name}=\"");
            let value = labels.split(',').find_map(|pair| pair.strip_prefix(&start));
            value.unwrap_or_default().trim_end_matches('"').to_owned()
        };
        let verb = label("verb");
        let resource = label("resource");
        if resource.is_empty() || verb == "LIST" || verb == "WATCH" {
            continue;
        }
        *counts
            .requests
            .entry((verb, resource, label("subresource")))
            .or_default() += count(value);
    }
    counts
}

/// The requests counted in `after` and not in `before`.
fn requests_between(before: &Requests, after: &Requests) -> Requests {
    let grown = after.iter().map(|(request, count)| {
        let earlier = before.get(request).copied().unwrap_or_default();
        (request.clone(), count.saturating_sub(earlier))
    });
    grown.filter(|(_, count)| *count > 0).collect()
}

impl Manager {
    /// The reconciles of `controller` counted so far (every result) on the
    /// manager's `/metrics`.
    // Called by the tests of custom kinds only.
    #[allow(dead_code)]
    fn reconciles(&self, controller: &str) -> u64 {
        let (status, body) = http_get(self.metrics, "/metrics").expect("/metrics answers");
        assert_eq!(status, 200, "{body}");
        let metric = "controller_runtime_reconcile_total{controller=\"";
        let prefix = [metric, controller, "\","].concat();
        let counts = body.lines().filter_map(|line| line.strip_prefix(&prefix));
        let counts = counts.filter_map(|rest| rest.rsplit(' ').next()?.parse::<u64>().ok());
        counts.sum()
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
    assert!(body.contains("controller_runtime_reconcile"), "{body}");
    let exit = manager.terminate(Duration::from_secs(10));
    assert!(exit.success(), "the manager exited with {exit}");
}

/// The holder of the Lease `name` in [`OPERATOR_NAMESPACE`], if any.
fn lease_holder(name: &str) -> Option<String> {
    use k8s_openapi::api::coordination::v1::Lease;
    let name = name.to_owned();
    let lease = run(async move {
        let client = kube::Client::try_default().await?;
        let leases: Api<Lease> = Api::namespaced(client, OPERATOR_NAMESPACE);
        Ok(leases.get_opt(&name).await?)
    });
    let lease = lease.unwrap_or_else(|err| panic!("cannot read the Lease: {err:#}"));
    lease.and_then(|lease| lease.spec?.holder_identity)
}

#[test]
#[ignore = "needs a cluster: run `make test-e2e`"]
fn a_second_replica_is_ready_at_once_and_takes_over_when_the_first_stops() {
    // A Lease of this test's own, short so that the takeover is quick, and
    // long enough that a renewal refused by an injected fault (under `make
    // test-e2e-faults`) is tried again before the Lease runs out.
    let lease = format!("{}-rollout", OPERATOR_ACCOUNT);
    let flags = [
        "--leader-elect".to_owned(),
        format!("--leader-election-id={lease}"),
        format!("--leader-election-namespace={OPERATOR_NAMESPACE}"),
        "--leader-election-lease-duration-seconds=6".to_owned(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let first = Manager::start_named("e2e-first", &flags);
    eventually(Duration::from_secs(30), "the first replica to lead", || {
        lease_holder(&lease).as_deref() == Some("e2e-first")
    });
    // Ready while the first one leads: a rolling update can go on.
    let second = Manager::start_named("e2e-second", &flags);
    assert_eq!(lease_holder(&lease).as_deref(), Some("e2e-first"));
    let exit = first.terminate(Duration::from_secs(10));
    assert!(exit.success(), "the first replica exited with {exit}");
    eventually(
        Duration::from_secs(30),
        "the second replica to lead",
        || lease_holder(&lease).as_deref() == Some("e2e-second"),
    );
    let (status, _) = http_get(second.health, "/readyz").expect("/readyz answers");
    assert_eq!(status, 200);
    let exit = second.terminate(Duration::from_secs(10));
    assert!(exit.success(), "the second replica exited with {exit}");
    // Given up on the way out, so that a next replica need not wait it out.
    assert_eq!(lease_holder(&lease), None);
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn a_database_becomes_ready_and_goes_away_on_delete() {
    use kube::api::{Api, DeleteParams, PostParams};

    use database::api::zalando::v1::Database;

    let client = kube::Client::try_default()
        .await
        .expect("a cluster from the kubeconfig");
    let manager = Manager::start(&[]);
    let api: Api<Database> = Api::namespaced(client.clone(), "default");
    let name = "e2e-database";
    let object = Database::new(name, Default::default());
    let before = api_requests(&client).await;
    api.create(&PostParams::default(), &object)
        .await
        .expect("create the object");

    // The controller reports Ready.
    let mut polls = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        polls += 1;
        let current = api.get(name).await.expect("read the object");
        let status = current.status.unwrap_or_default();
        let ready = status
            .conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        if ready && status.observed_generation == current.metadata.generation {
            break;
        }
        assert!(Instant::now() < deadline, "the object did not become Ready");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // What reconciling it cost the API server: its reads come from the
    // caches, and the reconcile that its own status write triggers finds it up
    // to date and writes nothing. Grow this budget with what your
    // reconcile must write.
    let reconciles = 2;
    let reconciled = || manager.reconciles("database") >= reconciles;
    eventually(Duration::from_secs(30), "more reconciles", reconciled);
    let after = api_requests(&client).await;
    let spent = requests_between(&before.requests, &after.requests);
    let plural = "databases";
    let expected = Requests::from([
        // This test's create and reads.
        (request("POST", plural, ""), 1),
        (request("GET", plural, ""), polls),
        // The status and the Ready event.
        (request("APPLY", plural, "status"), 1),
        (request("POST", "events", ""), 1),
    ]);
    if after.faults == before.faults {
        assert_eq!(spent, expected, "the API requests of one reconcile");
    } else {
        // Under injected faults (`make test-e2e-faults`) failed requests are
        // retried: every budgeted request still happened.
        for (request, count) in &expected {
            let made = spent.get(request).copied().unwrap_or_default();
            assert!(
                made >= *count,
                "{request:?}: {made} of {count} under faults"
            );
        }
    }

    // No finalizer: the object goes at once.
    api.delete(name, &DeleteParams::default())
        .await
        .expect("delete the object");
    let deadline = Instant::now() + Duration::from_secs(30);
    while api.get_opt(name).await.expect("read the object").is_some() {
        assert!(Instant::now() < deadline, "the object was not deleted");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let exit = manager.terminate(Duration::from_secs(10));
    assert!(exit.success(), "the manager exited with {exit}");
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn the_defaulting_webhook_of_database_v1_is_called() {
    use kube::api::{Api, PostParams};

    use database::api::zalando::v1::Database;

    let client = kube::Client::try_default()
        .await
        .expect("a cluster from the kubeconfig");
    let manager = Manager::start(&[]);
    let api: Api<Database> = Api::namespaced(client, "default");
    let name = "e2e-defaulted-database";
    let object = Database::new(name, Default::default());
    let created = api
        .create(&PostParams::default(), &object)
        .await
        .expect("create the object");
    assert_eq!(
        created.spec.foo.as_deref(),
        Some("default"),
        "the defaulting webhook fills in spec.foo"
    );
    webhooks::delete_and_wait(&api, name).await;
    let exit = manager.terminate(Duration::from_secs(10));
    assert!(exit.success(), "the manager exited with {exit}");
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn the_validating_webhook_of_database_v1_is_called() {
    use kube::api::{Api, PostParams};

    use database::api::zalando::v1::Database;

    let client = kube::Client::try_default()
        .await
        .expect("a cluster from the kubeconfig");
    let manager = Manager::start(&[]);
    let api: Api<Database> = Api::namespaced(client, "default");
    let name = "e2e-validated-database";
    let mut invalid = Database::new(name, Default::default());
    invalid.spec.foo = Some(String::new());
    let mut valid = invalid.clone();
    valid.spec.foo = Some("valid".to_owned());
    let expected = "spec.foo must not be empty".to_owned();
    let err = api
        .create(&PostParams::default(), &invalid)
        .await
        .expect_err("the validating webhook refuses the object");
    let (code, message) = webhooks::api_error(err);
    assert_eq!(code, 403, "{message}");
    assert!(
        message.contains(&format!("denied the request: {expected}")),
        "{message}"
    );
    api.create(&PostParams::default(), &valid)
        .await
        .expect("the validating webhook allows a valid object");
    webhooks::delete_and_wait(&api, name).await;
    let exit = manager.terminate(Duration::from_secs(10));
    assert!(exit.success(), "the manager exited with {exit}");
}

// +opctl:scaffold:e2e
