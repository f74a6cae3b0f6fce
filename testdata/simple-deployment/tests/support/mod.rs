//! What the e2e tests and the benchmark share: the operator binary run as
//! its own process (as a ServiceAccount holding only the roles config/rbac
//! grants, or as the kubeconfig's user), a namespace per test, the
//! Deployments they create, and waiting.

// Each test target uses a part of these helpers.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::future::Future;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Container, Namespace, Pod, PodSpec, PodTemplateSpec, ServiceAccount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::{Client, ResourceExt};

/// How long the cluster may take for what it does itself (garbage
/// collection, graceful deletion); envtest is immediate.
pub const CLUSTER_PACE: Duration = Duration::from_secs(60);

/// The ServiceAccount (namespace, name) the operator runs as in these tests.
const OPERATOR_ACCOUNT: (&str, &str) = ("default", "simple-deployment-e2e");

/// Grants [`OPERATOR_ACCOUNT`] what config/rbac grants the operator's
/// ServiceAccount (the ClusterRole of role.yaml, the leader-election Role,
/// the metrics-auth ClusterRole), under names of their own (so a `make
/// deploy`ed operator keeps its roles), and returns the user name to
/// impersonate.
pub async fn operator_account(client: &Client) -> String {
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
            .unwrap_or_else(|err| panic!("cannot grant the operator's RBAC: {err:#}"));
    }
    let (namespace, name) = OPERATOR_ACCOUNT;
    format!("system:serviceaccount:{namespace}:{name}")
}

/// Applies the Role or ClusterRole in `yaml` as `<account>-<suffix>` and
/// binds it to [`account`].
async fn grant(client: &Client, suffix: &str, yaml: &str) -> anyhow::Result<()> {
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

/// The operator, started from the binary cargo built for this test.
pub struct Operator {
    process: Child,
    pub health: SocketAddr,
    pub metrics: SocketAddr,
}

impl Operator {
    /// Starts the operator watching `namespace` (through `--namespace`).
    pub async fn watching(namespace: &str, args: &[&str]) -> Operator {
        let mut all = vec![format!("--namespace={namespace}")];
        all.extend(args.iter().map(|arg| (*arg).to_owned()));
        Operator::start(&all, &[]).await
    }

    /// Starts the operator as the ServiceAccount of [`operator_account`]
    /// with free local ports and waits until /readyz says ok. Settings come
    /// only from `args` and `env`, never from the environment of the test
    /// run.
    pub async fn start(args: &[String], env: &[(&str, &str)]) -> Operator {
        let account = operator_account(&client().await).await;
        Operator::start_as(Some(&account), args, env).await
    }

    /// [`Operator::start`] as `user`, or as the kubeconfig's user if None.
    pub async fn start_as(user: Option<&str>, args: &[String], env: &[(&str, &str)]) -> Operator {
        let [health, metrics] = free_local_addresses();
        let binary = env!("CARGO_BIN_EXE_simple-deployment");
        let mut command = Command::new(binary);
        for name in [
            "WATCH_NAMESPACE",
            "POD_IMAGE",
            "RESYNC_SECONDS",
            "LEADER_ELECT",
            "METRICS_SECURE",
            "POD_NAME",
            "KUBE_RS_DEBUG_IMPERSONATE_GROUP",
            "KUBE_RS_DEBUG_IMPERSONATE_USER",
        ] {
            command.env_remove(name);
        }
        if let Some(user) = user {
            // kube-rs sends every request as this user (`Impersonate-User`).
            command.env("KUBE_RS_DEBUG_IMPERSONATE_USER", user);
        }
        let mut process = command
            .arg(format!("--health-probe-bind-address={health}"))
            .arg(format!("--metrics-bind-address={metrics}"))
            .arg("--metrics-secure=false")
            .args(args)
            .envs(env.iter().copied())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the operator binary starts");
        echo_log(&mut process);
        let mut operator = Operator {
            process,
            health,
            metrics,
        };
        eventually(Duration::from_secs(30), "the operator to be ready", || {
            if let Ok(Some(status)) = operator.process.try_wait() {
                panic!("the operator exited with {status} before it was ready");
            }
            let ready =
                http_get(operator.health, "/readyz").is_some_and(|(status, _)| status == 200);
            std::future::ready(ready.then_some(()))
        })
        .await;
        operator
    }

    /// The operating system's id of the operator process.
    pub fn pid(&self) -> u32 {
        self.process.id()
    }

    /// Sends SIGTERM and waits for the process to exit.
    pub async fn terminate(mut self, within: Duration) -> ExitStatus {
        let pid = self.process.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(
            sent.is_ok_and(|status| status.success()),
            "kill -TERM {pid}"
        );
        let what = format!("the operator to stop within {within:?} of SIGTERM");
        eventually(within, &what, || {
            std::future::ready(self.process.try_wait().expect("the operator's status"))
        })
        .await
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// A namespace of one test, deleted when the test ends (however it ends).
pub struct TestNamespace {
    pub name: String,
}

impl TestNamespace {
    pub async fn create(client: &Client, purpose: &str) -> TestNamespace {
        let name = unique_name(purpose);
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some(BTreeMap::from([(
                    "e2e.example.com/suite".to_owned(),
                    "simple-deployment".to_owned(),
                )])),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .unwrap_or_else(|err| panic!("cannot create namespace {name}: {err}"));
        // A cluster refuses Pods until the namespace's default ServiceAccount exists.
        let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &name);
        eventually(CLUSTER_PACE, "the default ServiceAccount", || async {
            accounts.get_opt("default").await.ok().flatten()
        })
        .await;
        TestNamespace { name }
    }
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        // Drop cannot await: delete from a thread with a runtime and client of its own.
        let name = self.name.clone();
        let deleted = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async {
                let client = Client::try_default().await?;
                Api::<Namespace>::all(client)
                    .delete(&name, &DeleteParams::default())
                    .await?;
                anyhow::Ok(())
            })
        })
        .join();
        if !matches!(deleted, Ok(Ok(()))) {
            eprintln!("could not delete test namespace {}", self.name);
        }
    }
}

/// `sd-e2e-<purpose>-<suffix>`: unique per run, so runs against a real
/// cluster never meet the leftovers of an earlier one.
pub fn unique_name(purpose: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|since| since.subsec_nanos())
        .unwrap_or_default();
    format!("sd-e2e-{purpose}-{:x}{:x}", std::process::id(), nanos)
}

/// A Deployment of no replicas: the operator's Pod is what the tests look at.
pub fn deployment(name: &str) -> Deployment {
    let labels = BTreeMap::from([("e2e.example.com/deployment".to_owned(), name.to_owned())]);
    Deployment {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(0),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "app".to_owned(),
                        image: Some("registry.k8s.io/pause:3.10".to_owned()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    }
}

pub fn is_controlled_by(pod: &Pod, owner: &Deployment) -> bool {
    pod.owner_references().iter().any(|reference| {
        reference.controller == Some(true) && Some(&reference.uid) == owner.uid().as_ref()
    })
}

/// Passes the operator's log on, line by line, into the test's captured
/// output (as the test's own prints): cargo shows it for a test that fails
/// only, or as it comes with `-- --nocapture`.
fn echo_log(process: &mut Child) {
    let stderr = process.stderr.take().expect("the operator's stderr");
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

/// Polls `check` every 50 ms until it yields a value, failing after `timeout`.
pub async fn eventually<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub async fn client() -> Client {
    Client::try_default()
        .await
        .expect("a Kubernetes client from the kubeconfig (run `make test-e2e`)")
}
