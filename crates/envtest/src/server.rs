//! Starting and stopping the server: bind a loopback port, create the
//! namespaces a cluster starts with, run the controllers, install CRDs from
//! files and wait until they are Established.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::admission::WebhookRoute;
use crate::api::WriteCtx;
use crate::api::create::{Input, create};
use crate::app::App;
use crate::controller_selection::Controllers;
use crate::controllers;
use crate::faults::{FaultSpec, Faults};

/// How the server starts.
#[derive(Debug, Clone)]
pub struct Config {
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// CRD YAML files, or directories of them, installed before `start` returns.
    pub crd_paths: Vec<PathBuf>,
    /// Changes a watch can resume through (kube-apiserver's watch cache); a
    /// watch from an older resourceVersion gets 410 Gone.
    pub watch_history: usize,
    /// Changes kept for lists at an older resourceVersion
    /// (`resourceVersionMatch=Exact`, continue tokens), as etcd keeps
    /// revisions until it compacts them; never less than `watch_history`.
    pub read_history: usize,
    /// Where webhook Service references lead (`--webhook-route
    /// NS/NAME:PORT=HOST:PORT`); see `docs/envtest-webhooks.md`.
    pub webhook_routes: Vec<WebhookRoute>,
    /// Faults to inject (`--faults`); see `docs/envtest.md`. Parse one with
    /// `"default,seed=42".parse::<FaultSpec>()`.
    pub faults: FaultSpec,
    /// Which of kube-controller-manager's controllers run (its
    /// `--controllers`; all by default, [`Controllers::none`] for none);
    /// see `docs/envtest.md`, "kube-controller-manager's controllers".
    pub controllers: Controllers,
    /// How long a deleted namespace stays Terminating with its content
    /// before the namespace controller empties it (kube-controller-manager
    /// waits 5 s; a short wait lets clients see the Terminating namespace
    /// without slowing tests).
    pub namespace_deletion_grace: Duration,
    /// Simulated Nodes, scheduler, kubelets and volume provisioner (on by
    /// default; [`crate::workloads::Simulation::off`] for none: with
    /// [`Controllers::none`] too, a bare API server).
    pub simulation: crate::workloads::Simulation,
    /// How long a request that is not long-running (a watch, a log or exec
    /// stream) may take before it gets kube-apiserver's 504 Timeout Status
    /// (60 s, kube-apiserver's `--request-timeout`); a client's
    /// `?timeout=` can only shorten it.
    pub request_timeout: Duration,
    /// How long a connection may take to send a request's headers before
    /// it is closed (kube-apiserver's 32 s).
    pub header_read_timeout: Duration,
    /// Plain HTTP (the default here, for tests in process) or HTTPS with
    /// a CA made at start and a bearer token (`opctl envtest`'s default).
    pub serving: Serving,
}

/// How the server serves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Serving {
    /// Plain HTTP on loopback; every request acts as the administrator
    /// (ServiceAccount tokens and impersonation aside).
    #[default]
    Http,
    /// HTTPS with a CA and serving certificate (127.0.0.1, ::1, localhost)
    /// made at start, and a random bearer token for the administrator,
    /// both in the kubeconfig; a request without a valid token gets 401.
    Https,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            port: 0,
            crd_paths: Vec::new(),
            watch_history: 10_000,
            read_history: 100_000,
            webhook_routes: Vec::new(),
            faults: FaultSpec::default(),
            controllers: Controllers::default(),
            namespace_deletion_grace: DEFAULT_NAMESPACE_DELETION_GRACE,
            simulation: crate::workloads::Simulation::default(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            header_read_timeout: crate::serving::DEFAULT_HEADER_READ_TIMEOUT,
            serving: Serving::default(),
        }
    }
}

/// A running server.
pub struct Envtest {
    app: Arc<App>,
    port: u16,
    shutdown: Option<oneshot::Sender<()>>,
    server: JoinHandle<()>,
    identity: Option<Arc<crate::pki::Identity>>,
    /// The controllers, and the task dropping the watch history when faults ask for it.
    controllers: Vec<JoinHandle<()>>,
    workloads: Option<JoinHandle<()>>,
}

/// The default of [`Config::request_timeout`].
pub const DEFAULT_REQUEST_TIMEOUT: Duration = crate::request::DEFAULT_REQUEST_TIMEOUT;
/// The default of [`Config::namespace_deletion_grace`].
pub const DEFAULT_NAMESPACE_DELETION_GRACE: Duration = Duration::from_millis(100);
const ESTABLISH_TIMEOUT: Duration = Duration::from_secs(10);

impl Envtest {
    /// Starts the server; it serves requests when this returns, with every
    /// CRD from `config.crd_paths` Established.
    pub async fn start(config: Config) -> anyhow::Result<Envtest> {
        let crds = load_crd_documents(&config.crd_paths)?;
        let mut app = App::with_history(config.watch_history, config.read_history);
        app.faults = Faults::new(config.faults.clone(), app.metrics.clone());
        app.controllers = config.controllers.clone();
        app.simulated_scheduler = config.simulation.scheduler;
        app.request_timeout = config.request_timeout;
        let identity = match config.serving {
            Serving::Http => None,
            Serving::Https => Some(Arc::new(crate::pki::Identity::generate()?)),
        };
        let tls = match &identity {
            Some(id) => Some(tokio_rustls::TlsAcceptor::from(id.server_config()?)),
            None => None,
        };
        if let Some(id) = &identity
            && let Ok(mut pem) = app.root_ca.write()
        {
            *pem = id.ca_pem.clone();
        }
        app.identity = identity.clone();
        let app = Arc::new(app);
        app.webhooks
            .set_routes(config.webhook_routes.iter().cloned().collect());
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", config.port))
            .await
            .with_context(|| format!("cannot listen on 127.0.0.1:{}", config.port))?;
        let addr = listener.local_addr()?;
        // The bootstrap admin, edit and view roles come aggregated, as on a
        // cluster that has been up for a moment.
        crate::bootstrap::create_all(&app, addr)?;
        // The controllers start after the bootstrap objects are stored: one
        // that creates what bootstrap also creates would otherwise race it.
        let mut controllers = vec![controllers::spawn(
            app.clone(),
            config.namespace_deletion_grace,
        )];
        if let Some(period) = app.faults.compaction_period() {
            controllers.push(tokio::spawn(compact_every(app.clone(), period)));
        }
        let workloads = crate::workloads::start(app.clone(), config.simulation.clone()).await?;
        if let Ok(mut a) = app.server_address.write() {
            *a = addr.to_string();
        }
        let (tx, rx) = oneshot::channel::<()>();
        let router = crate::http::router(app.clone());
        let server = tokio::spawn(crate::serving::serve(
            listener,
            tls,
            router,
            config.header_read_timeout,
            rx,
        ));
        let env = Envtest {
            app,
            port: addr.port(),
            shutdown: Some(tx),
            server,
            identity,
            controllers,
            workloads,
        };
        env.install_crds(crds).await?;
        Ok(env)
    }

    /// `https://127.0.0.1:PORT`, or `http://` when serving plain HTTP.
    pub fn base_url(&self) -> String {
        let scheme = if self.identity.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// The PEM of the CA that signed the serving certificate (HTTPS only).
    pub fn ca_pem(&self) -> Option<&str> {
        self.identity.as_deref().map(|id| id.ca_pem.as_str())
    }

    /// The administrator's bearer token (HTTPS only).
    pub fn admin_token(&self) -> Option<&str> {
        self.identity.as_deref().map(|id| id.admin_token.as_str())
    }

    /// A kubeconfig naming this server: with HTTPS, its CA and the
    /// administrator's token; with plain HTTP, no credentials.
    pub fn kubeconfig_yaml(&self) -> String {
        use base64::Engine;
        let (ca, user) = match self.identity.as_deref() {
            Some(id) => (
                format!(
                    "\n    certificate-authority-data: {}",
                    base64::engine::general_purpose::STANDARD.encode(&id.ca_pem)
                ),
                format!("\n    token: {}", id.admin_token),
            ),
            None => (String::new(), " {}".to_string()),
        };
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: envtest\n  cluster:\n    server: {}{ca}\ncontexts:\n- name: envtest\n  context:\n    cluster: envtest\n    user: envtest\n    namespace: default\ncurrent-context: envtest\npreferences: {{}}\nusers:\n- name: envtest\n  user:{user}\n",
            self.base_url()
        )
    }

    /// Writes [`Envtest::kubeconfig_yaml`] to `path`, readable by its owner
    /// only (it may hold the administrator's token).
    pub fn write_kubeconfig(&self, path: &Path) -> anyhow::Result<()> {
        use std::io::Write;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        options
            .open(path)
            .and_then(|mut f| f.write_all(self.kubeconfig_yaml().as_bytes()))
            .with_context(|| format!("cannot write kubeconfig {}", path.display()))
    }

    /// Stops serving: open watches end, controllers stop.
    pub async fn shutdown(mut self) {
        // End open watches, then let in-flight requests finish (briefly).
        self.app.closing.send_replace(true);
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if tokio::time::timeout(Duration::from_secs(2), &mut self.server)
            .await
            .is_err()
        {
            self.server.abort();
        }
        for task in &self.controllers {
            task.abort();
        }
        if let Some(w) = &self.workloads {
            w.abort();
        }
    }

    async fn install_crds(&self, crds: Vec<(String, Value)>) -> anyhow::Result<()> {
        let reg = self.app.registry.load();
        let Some(res) = reg.get("apiextensions.k8s.io", "v1", "customresourcedefinitions") else {
            bail!("this server does not serve apiextensions.k8s.io/v1 CustomResourceDefinitions");
        };
        let ctx = WriteCtx::internal("opctl-envtest");
        let mut names = Vec::new();
        for (origin, crd) in crds {
            let name = crate::meta::name(&crd).to_string();
            create(
                &self.app,
                &res,
                "",
                Input::Body {
                    obj: crd,
                    duplicates: Vec::new(),
                },
                &ctx,
            )
            .await
            .map_err(|e| anyhow::anyhow!("{origin}: CRD {name:?} refused: {}", e.message))?;
            names.push(name);
        }
        let deadline = tokio::time::Instant::now() + ESTABLISH_TIMEOUT;
        loop {
            let reg = self.app.registry.load();
            let pending: Vec<&String> = names
                .iter()
                .filter(|n| !reg.crd(n).is_some_and(|c| c.established))
                .collect();
            if pending.is_empty() {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                bail!("CRDs not Established after {ESTABLISH_TIMEOUT:?}: {pending:?}");
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

/// Drops the watch history every `period` (the `watch:compact` fault).
async fn compact_every(app: Arc<App>, period: Duration) {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    loop {
        tick.tick().await;
        let rv = app.store.compact_watch_history();
        app.faults.compacted(rv);
    }
}

/// Files named by `paths` (directories contribute their `.yaml`, `.yml` and
/// `.json` files, sorted).
fn crd_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p)
            .with_context(|| format!("CRD path {} does not exist", p.display()))?;
        if meta.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| format!("cannot read CRD directory {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| {
                    f.is_file()
                        && f.extension()
                            .and_then(|e| e.to_str())
                            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
                })
                .collect();
            found.sort();
            files.extend(found);
        } else {
            files.push(p.clone());
        }
    }
    Ok(files)
}

/// The CustomResourceDefinition documents in the files (other kinds, e.g. a
/// kustomization.yaml, are skipped), each with where it came from.
pub(crate) fn load_crd_documents(paths: &[PathBuf]) -> anyhow::Result<Vec<(String, Value)>> {
    let mut out = Vec::new();
    for file in crd_files(paths)? {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).map_err(|e| {
            let msg = e.to_string();
            anyhow::anyhow!(
                "{} is not valid YAML: {}",
                file.display(),
                msg.lines()
                    .next()
                    .unwrap_or(&msg)
                    .trim_start_matches("error: ")
            )
        })?;
        for (i, doc) in docs.into_iter().enumerate() {
            let is_crd = doc.get("kind").and_then(Value::as_str)
                == Some("CustomResourceDefinition")
                && doc
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .is_some_and(|a| a.starts_with("apiextensions.k8s.io/"));
            if is_crd {
                out.push((format!("{} (document {})", file.display(), i + 1), doc));
            }
        }
    }
    Ok(out)
}
