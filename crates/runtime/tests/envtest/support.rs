//! What the tests share: an envtest server in process, managers of a test
//! project against it, free ports, a byte-counting proxy, the API server's
//! request counts and a custom kind with a status.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use clap::Parser;
use kube::CustomResource;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use opctl_envtest::{Config, Envtest};
use opctl_runtime::{Options, Project};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The project every test's manager belongs to.
pub const PROJECT: Project = Project::new("runtime-test", "example.com", "1.2.3");

/// A custom kind with a status: what a scaffolded kind looks like.
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[kube(
    group = "test.example.com",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus"
)]
pub struct WidgetSpec {
    /// What the children say.
    pub size: i32,
}

/// What the controller reports.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    pub observed_generation: Option<i64>,
    #[serde(default)]
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
}

/// An envtest server with the Widget CRD installed, without the workload
/// simulation (no test here runs Pods).
pub async fn start() -> Envtest {
    let config = Config {
        simulation: opctl_envtest::Simulation::off(),
        ..Config::default()
    };
    let env = Envtest::start(config).await.expect("envtest starts");
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(admin(&env).await);
    use kube::CustomResourceExt;
    crds.create(&PostParams::default(), &Widget::crd())
        .await
        .expect("the Widget CRD is created");
    eventually(
        Duration::from_secs(10),
        "the Widget CRD to be served",
        || async {
            let widgets: Api<Widget> = Api::namespaced(admin(&env).await, "default");
            widgets.list(&Default::default()).await.is_ok()
        },
    )
    .await;
    env
}

/// The client configuration of `env`'s kubeconfig.
pub async fn config_of(env: &Envtest) -> kube::Config {
    let kubeconfig = Kubeconfig::from_yaml(&env.kubeconfig_yaml()).expect("a kubeconfig");
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("a usable kubeconfig")
}

/// A client of `env` as its administrator (not the manager).
pub async fn admin(env: &Envtest) -> kube::Client {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    kube::Client::try_from(config_of(env).await).expect("a client")
}

/// A free port on the loopback interface that no other call in this test
/// process has returned: the port is released at once, so two calls (for
/// one manager's endpoints, or for tests running side by side) could
/// otherwise be given the same one.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<std::collections::BTreeSet<u16>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    loop {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        let port = listener.local_addr().expect("an address").port();
        let mut given = GIVEN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if given.insert(port) {
            return port;
        }
    }
}

/// Manager options from command-line arguments, with free ports for the
/// probes, the metrics (plain HTTP unless the arguments say otherwise) and
/// the webhooks.
pub fn options(args: &[&str]) -> Options {
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        options: Options,
    }
    let probes = format!("--health-probe-bind-address=127.0.0.1:{}", free_port());
    let metrics = format!("--metrics-bind-address=127.0.0.1:{}", free_port());
    let webhooks = format!("--webhook-bind-address=127.0.0.1:{}", free_port());
    let mut argv = vec![
        "manager",
        "--metrics-secure=false",
        &probes,
        &metrics,
        &webhooks,
    ];
    argv.extend_from_slice(args);
    Cli::try_parse_from(argv).expect("options parse").options
}

/// Waits until `check` holds, polling; panics after `within`.
pub async fn eventually<F, Fut>(within: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if check().await {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "waited {within:?} for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A plain HTTP GET of `path` on `addr`: the status and the body.
pub async fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(addr).await.ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.ok()?;
    parse_response(&answer)
}

/// The status and body of an HTTP/1.1 response (chunked or not).
pub fn parse_response(answer: &[u8]) -> Option<(u16, String)> {
    let text = String::from_utf8_lossy(answer);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        unchunk(body)
    } else {
        body.to_owned()
    };
    Some((status, body))
}

fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

/// The value of the sample `line_prefix` (name and labels) in a Prometheus
/// text, 0 when absent.
pub fn sample(text: &str, line_prefix: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(line_prefix)?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// kube-apiserver's `apiserver_request_total` of `env`, summed per
/// (verb, resource, subresource).
pub async fn request_counts(env: &Envtest) -> BTreeMap<(String, String, String), u64> {
    let url = format!("{}/metrics", env.base_url());
    let addr: SocketAddr = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .and_then(|host| host.parse().ok())
        .expect("envtest serves plain HTTP on an address");
    let (status, text) = http_get(addr, "/metrics").await.expect("/metrics answers");
    assert_eq!(status, 200, "{text}");
    let mut counts = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
    {
        let Some((labels, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let label = |name: &str| {
            let key = format!("{name}=\"");
            labels
                .split_once(&key)
                .and_then(|(_, rest)| rest.split_once('"'))
                .map(|(value, _)| value.to_owned())
                .unwrap_or_default()
        };
        let key = (label("verb"), label("resource"), label("subresource"));
        *counts.entry(key).or_insert(0) += value.parse::<f64>().unwrap_or(0.0) as u64;
    }
    counts
}

/// What happened between two request counts: the differences that are not 0.
pub fn since(
    before: &BTreeMap<(String, String, String), u64>,
    after: &BTreeMap<(String, String, String), u64>,
) -> BTreeMap<String, u64> {
    after
        .iter()
        .filter_map(|(key, count)| {
            let delta = count - before.get(key).copied().unwrap_or(0);
            let (verb, resource, sub) = key;
            let name = if sub.is_empty() {
                format!("{verb} {resource}")
            } else {
                format!("{verb} {resource}/{sub}")
            };
            (delta > 0).then_some((name, delta))
        })
        .collect()
}

/// A TCP proxy to `upstream` that counts the bytes the upstream sends back
/// and keeps what each client sends (its requests); it can hold each
/// answer back for a while, as the network to a cluster's API server does.
pub struct Proxy {
    pub addr: SocketAddr,
    pub received: Arc<AtomicU64>,
    pub requests: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Proxy {
    pub async fn start(upstream: SocketAddr) -> Proxy {
        Proxy::delaying(upstream, Duration::ZERO).await
    }

    /// A proxy that holds every chunk of an answer back for `delay`.
    pub async fn delaying(upstream: SocketAddr, delay: Duration) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let addr = listener.local_addr().expect("an address");
        let received = Arc::new(AtomicU64::new(0));
        let requests = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (counted, kept) = (received.clone(), requests.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (counted, kept) = (counted.clone(), kept.clone());
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let (mut client_read, mut client_write) = client.into_split();
                    let (mut server_read, mut server_write) = server.into_split();
                    let up = async move {
                        let mut buffer = vec![0; 16 * 1024];
                        loop {
                            let n = match client_read.read(&mut buffer).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => n,
                            };
                            let text = String::from_utf8_lossy(&buffer[..n]).into_owned();
                            kept.lock().expect("lock").push(text);
                            if server_write.write_all(&buffer[..n]).await.is_err() {
                                return;
                            }
                        }
                    };
                    let down = async move {
                        let mut buffer = vec![0; 64 * 1024];
                        loop {
                            let n = match server_read.read(&mut buffer).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => n,
                            };
                            counted.fetch_add(n as u64, Ordering::Relaxed);
                            if !delay.is_zero() {
                                tokio::time::sleep(delay).await;
                            }
                            if client_write.write_all(&buffer[..n]).await.is_err() {
                                return;
                            }
                        }
                    };
                    tokio::join!(up, down);
                });
            }
        });
        Proxy {
            addr,
            received,
            requests,
        }
    }

    /// The client configuration of `env` through this proxy.
    pub async fn config(&self, env: &Envtest) -> kube::Config {
        let mut config = config_of(env).await;
        config.cluster_url = format!("http://{}", self.addr).parse().expect("a URL");
        config
    }

    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }
}

/// The address of `env` (plain HTTP).
pub fn address_of(env: &Envtest) -> SocketAddr {
    env.base_url()
        .trim_start_matches("http://")
        .parse()
        .expect("envtest's address")
}
