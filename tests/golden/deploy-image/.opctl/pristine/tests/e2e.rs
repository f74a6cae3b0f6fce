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

// +opctl:scaffold:e2e-modules

/// The ServiceAccount the tests run the manager as, and its namespace.
const OPERATOR_ACCOUNT: &str = "memcached-operator-e2e";
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
        let binary = env!("CARGO_BIN_EXE_memcached-operator");
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
async fn a_memcached_runs_its_deployment_and_follows_its_size() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};

    use memcached_operator::api::cache::v1alpha1::Memcached;
    use memcached_operator::api::cache::v1alpha1::MemcachedSpec;

    let client = kube::Client::try_default()
        .await
        .expect("a cluster from the kubeconfig");
    let manager = Manager::start(&[]);
    let api: Api<Memcached> = Api::namespaced(client.clone(), "default");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    // The image the manager runs: its MEMCACHED_IMAGE (inherited from this
    // test's environment), else the one scaffolded.
    let image = std::env::var("MEMCACHED_IMAGE")
        .ok()
        .filter(|image| !image.trim().is_empty())
        .unwrap_or_else(|| "memcached:1.6".to_owned());

    // The CRD refuses a size out of bounds.
    let name = "e2e-memcached";
    let spec = |size| MemcachedSpec {
        size,
        ..MemcachedSpec::default()
    };
    let too_big = Memcached::new(name, spec(6));
    let refused = api.create(&PostParams::default(), &too_big).await;
    assert!(
        matches!(&refused, Err(kube::Error::Api(status)) if status.code == 422),
        "size 6 is refused: {refused:?}"
    );

    let object = Memcached::new(name, spec(1));
    let before = api_requests(&client).await;
    let created = api
        .create(&PostParams::default(), &object)
        .await
        .expect("create the object");

    // The controller creates the Deployment, owned by the object.
    let deadline = Instant::now() + Duration::from_secs(30);
    let deployment = loop {
        let found = deployments.get_opt(name).await;
        if let Some(deployment) = found.expect("read the Deployment") {
            break deployment;
        }
        assert!(Instant::now() < deadline, "no Deployment {name}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let owners = deployment.metadata.owner_references.clone();
    let owners = owners.unwrap_or_default();
    let uid = created.metadata.uid.clone().unwrap_or_default();
    let controlled = |owner: &OwnerReference| owner.uid == uid && owner.controller == Some(true);
    assert!(owners.iter().any(controlled), "not owned: {owners:?}");
    let spec = deployment.spec.clone().expect("a Deployment spec");
    assert_eq!(spec.replicas, Some(1));
    let pod = spec.template.spec.expect("a Pod spec");
    let pod_security = pod.security_context.expect("a Pod security context");
    assert_eq!(pod_security.run_as_non_root, Some(true));
    let seccomp = pod_security.seccomp_profile.map(|profile| profile.type_);
    assert_eq!(seccomp.as_deref(), Some("RuntimeDefault"));
    let container = &pod.containers[0];
    assert_eq!(container.image.as_deref(), Some(image.as_str()));
    let command = container.command.clone().unwrap_or_default();
    assert_eq!(command, ["memcached", "-m=64", "-o", "modern", "-v"]);
    let ports = container.ports.clone().unwrap_or_default();
    let ports: Vec<i32> = ports.iter().map(|port| port.container_port).collect();
    assert_eq!(ports, [11211]);
    let security = container.security_context.clone();
    let security = security.expect("a security context");
    assert_eq!(security.run_as_non_root, Some(true));
    assert_eq!(security.run_as_user, Some(1001));
    assert_eq!(security.allow_privilege_escalation, Some(false));
    let dropped = security.capabilities.and_then(|c| c.drop);
    assert_eq!(dropped, Some(vec!["ALL".to_owned()]));

    // The cluster rolls it out (under opctl envtest, its simulated
    // Deployment controller, scheduler and kubelets) and the object reports
    // it Available at its generation.
    let available = |current: &Memcached| {
        let status = current.status.clone().unwrap_or_default();
        let available = status
            .conditions
            .iter()
            .any(|c| c.type_ == "Available" && c.status == "True");
        available && status.observed_generation == current.metadata.generation
    };
    let rolled_out = |deployment: &Deployment, size: i32| {
        let status = deployment.status.clone().unwrap_or_default();
        status.available_replicas == Some(size) && status.updated_replicas == Some(size)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let current = api.get(name).await.expect("read the object");
        let deployment = deployments.get(name).await.expect("read the Deployment");
        if available(&current) && rolled_out(&deployment, 1) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not Available: {:?}",
            current.status
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // A new size reaches the Deployment, and the object is Available again
    // once every replica is.
    let resize = serde_json::json!({"spec": {"size": 3}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&resize))
        .await
        .expect("change the size");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let current = api.get(name).await.expect("read the object");
        let deployment = deployments.get(name).await.expect("read the Deployment");
        let replicas = deployment.spec.as_ref().and_then(|spec| spec.replicas);
        if replicas == Some(3) && available(&current) && rolled_out(&deployment, 3) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not resized: {replicas:?}, {:?}",
            current.status
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // The Deployment was written twice (created, then resized), however
    // often its rollout brought a reconcile: a Deployment as its cached
    // metadata shows it is not written again.
    let after = api_requests(&client).await;
    let spent = requests_between(&before.requests, &after.requests);
    let applied = spent
        .get(&request("APPLY", "deployments", ""))
        .copied()
        .unwrap_or_default();
    if after.faults == before.faults {
        assert_eq!(applied, 2, "the Deployment's writes: {spent:?}");
    } else {
        // Under injected faults (`make test-e2e-faults`) failed requests are retried.
        assert!(applied >= 2, "the Deployment's writes: {spent:?}");
    }

    // No finalizer: the object goes at once, and the garbage collector
    // deletes its Deployment.
    api.delete(name, &DeleteParams::default())
        .await
        .expect("delete the object");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = deployments.get_opt(name).await;
        if found.expect("read the Deployment").is_none() {
            break;
        }
        assert!(Instant::now() < deadline, "the Deployment was not deleted");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let exit = manager.terminate(Duration::from_secs(10));
    assert!(exit.success(), "the manager exited with {exit}");
}
// +opctl:scaffold:e2e
