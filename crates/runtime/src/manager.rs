//! The manager: runs the registered controllers and webhooks with health
//! and metrics endpoints, leader election and graceful shutdown.

use std::future::Future;
use std::sync::Arc;

use anyhow::Context as _;
use kube::runtime::controller::Action;
use tokio::sync::oneshot;
use tokio::task::JoinSet;

use crate::cache::{ApiScope, Cacheable, Scope};
use crate::controller::{self, Controller};
use crate::webhook::{AdmissionRequest, AdmissionResponse, Webhooks};
use crate::{Context, Options, Project, Shutdown, WatchScope, http, leader, telemetry, webhook};

/// Runs registered controllers and admission webhooks until SIGTERM or
/// SIGINT (or [`Shutdown::trigger`] on its context's shutdown).
///
/// ```no_run
/// use clap::Parser;
/// use opctl_runtime::{Manager, Options, Project, WatchScope};
///
/// const PROJECT: Project = Project::new("guestbook", "example.com", env!("CARGO_PKG_VERSION"));
///
/// #[derive(Parser)]
/// struct Cli {
///     #[command(flatten)]
///     manager: Options,
/// }
///
/// #[tokio::main]
/// async fn main() -> anyhow::Result<()> {
///     let cli = Cli::parse();
///     let manager = Manager::new(PROJECT, cli.manager, WatchScope::AllNamespaces).await?;
///     // let manager = controller::guestbook::register(manager);
///     manager.run().await
/// }
/// ```
pub struct Manager {
    options: Options,
    context: Context,
    controllers: Vec<(&'static str, controller::Task)>,
    webhooks: Webhooks,
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let controllers: Vec<&str> = self.controllers.iter().map(|(name, _)| *name).collect();
        f.debug_struct("Manager")
            .field("context", &self.context)
            .field("controllers", &controllers)
            .finish_non_exhaustive()
    }
}

impl Manager {
    /// Sets up logging and a Kubernetes client (from the kubeconfig, or the
    /// in-cluster configuration when running in a Pod) for `project`.
    pub async fn new(
        project: Project,
        options: Options,
        scope: WatchScope,
    ) -> anyhow::Result<Self> {
        // Logging first: inferring the configuration logs (an impersonated
        // user, say), and its errors should be seen in the chosen format.
        telemetry::init(options.log_format);
        let config = kube::Config::infer()
            .await
            .context("cannot create a Kubernetes client: set KUBECONFIG or run inside a cluster")?;
        Self::with_config(project, options, scope, config)
    }

    /// [`Manager::new`] with the client configuration `config` (a kubeconfig
    /// of a test server, say) instead of the inferred one.
    pub fn with_config(
        project: Project,
        options: Options,
        scope: WatchScope,
        config: kube::Config,
    ) -> anyhow::Result<Self> {
        project.check()?;
        telemetry::init(options.log_format);
        let client = project
            .client(config)
            .context("cannot create a Kubernetes client")?;
        let mut context = Context::new(project, client, scope);
        context.settings = crate::context::Settings {
            max_concurrent_reconciles: options.max_concurrent_reconciles,
            sync_period: options.sync_period(),
            batch_writes: options.batch_writes,
        };
        Ok(Self {
            options,
            context,
            controllers: Vec::new(),
            webhooks: Webhooks::default(),
        })
    }

    /// The context handed to every controller and webhook.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// Registers the controller `name` of kind `K`. When the manager starts,
    /// `setup` is called once per watched namespace (once for all, or for a
    /// cluster-scoped kind): it sets up the caches the reconciles read and
    /// returns the [`Controller`] they trigger, with the context `reconcile`
    /// gets. `reconcile` brings one object in line; an error is retried with
    /// backoff. Reconciling waits for leadership under `--leader-elect`.
    pub fn with_controller<K, C, S, R, Fut, E>(
        mut self,
        name: &'static str,
        setup: S,
        reconcile: R,
    ) -> Self
    where
        K: Cacheable,
        K::Scope: ApiScope,
        S: Fn(&Scope) -> (Controller<K>, C) + Send + 'static,
        C: Send + Sync + 'static,
        R: Fn(Arc<K>, Arc<C>) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
    {
        self.controllers
            .push((name, controller::task(name, setup, reconcile)));
        self
    }

    /// Registers an admission webhook served at `path`: `handle` answers
    /// each request of the API server (see [`webhook`]).
    pub fn with_webhook<K, F, Fut>(mut self, path: &'static str, handle: F) -> Self
    where
        K: kube::Resource + serde::de::DeserializeOwned + Send + 'static,
        F: Fn(Context, AdmissionRequest<K>) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = AdmissionResponse> + Send + 'static,
    {
        self.webhooks.add(path, handle);
        self
    }

    /// Registers the conversion of spoke version `S` of a kind to and from
    /// its hub version `H`, served at [`webhook::CONVERSION_PATH`]. The
    /// converted object keeps the original's metadata but for the labels
    /// and annotations the conversion sets.
    pub fn with_conversion<S, H>(
        mut self,
        to_hub: fn(S) -> Result<H, String>,
        from_hub: fn(H) -> Result<S, String>,
    ) -> Self
    where
        S: kube::Resource<DynamicType = ()>
            + serde::Serialize
            + serde::de::DeserializeOwned
            + 'static,
        H: kube::Resource<DynamicType = ()>
            + serde::Serialize
            + serde::de::DeserializeOwned
            + 'static,
    {
        self.webhooks.add_conversion(to_hub, from_hub);
        self
    }

    /// Serves the probes, the metrics and the webhooks, fills the caches,
    /// reconciles (once it leads, under `--leader-elect`) and returns once
    /// the controllers have stopped after a signal; an error when the
    /// Lease is lost or a controller fails.
    pub async fn run(self) -> anyhow::Result<()> {
        let Self {
            options,
            context,
            controllers,
            webhooks,
        } = self;
        let shutdown = context.shutdown.clone();
        shutdown.trigger_on_signals()?;

        // Every replica serves, leader or not.
        let mut servers = JoinSet::new();
        servers.spawn(
            http::serve_probes(
                options.health_probe_bind_address,
                context.readiness.clone(),
                shutdown.clone(),
            )
            .await?,
        );
        servers.spawn(http::serve_metrics(&options, context.clone()).await?);
        // The webhook server is listening (and, with --webhook-self-signed,
        // its CA injected) before the manager reports ready. It stops after
        // the controllers, whose last writes may still need it.
        let webhooks_stop = Shutdown::default();
        if !webhooks.is_empty() && options.webhook.enable_webhooks {
            servers.spawn(
                webhook::serve(
                    &options.webhook,
                    webhooks,
                    context.clone(),
                    webhooks_stop.clone(),
                )
                .await?,
            );
        }

        // Every replica fills its caches: the controllers set them up now,
        // all of them before readiness is judged, and reconcile once
        // leading.
        let mut running = JoinSet::new();
        for (name, start) in controllers {
            tracing::info!(controller = name, "starting controller");
            running.spawn(start(&context));
        }
        context.readiness.controllers_set_up();
        let mut elected = elect(&options, &context);
        tracing::info!(
            controllers = running.len(),
            scope = %context.scope,
            user_agent = %context.project.user_agent(),
            "manager started"
        );

        let mut leadership = None;
        let mut electing = true;
        let failure = loop {
            tokio::select! {
                biased;
                () = shutdown.wait() => {
                    tracing::info!("shutting down");
                    break None;
                }
                result = &mut elected, if electing => {
                    electing = false;
                    match result {
                        Ok(Ok(Some(held))) => {
                            leadership = Some(held);
                            context.readiness.lead();
                        }
                        Ok(Ok(None)) => {}
                        Ok(Err(err)) => break Some(err),
                        Err(_) => break Some(anyhow::anyhow!("leader election stopped")),
                    }
                }
                () = leader::lost(&mut leadership) => {
                    break Some(anyhow::anyhow!("lost the leader-election lease"));
                }
                Some(result) = running.join_next() => {
                    // A controller only returns on shutdown; anything else is fatal.
                    break match result {
                        Ok(()) => Some(anyhow::anyhow!("a controller stopped on its own")),
                        Err(err) => Some(anyhow::anyhow!("a controller failed: {err}")),
                    };
                }
            }
        };
        shutdown.trigger();

        // In-flight reconciles finish; a controller still waiting for its
        // first list (of a kind the API server does not serve, say) cannot
        // see the shutdown and is left behind after the grace period.
        let grace = options.shutdown_timeout();
        let stopped = tokio::time::timeout(grace, running.join_all()).await;
        if stopped.is_err() {
            tracing::warn!(
                ?grace,
                "some controllers did not stop in time; exiting anyway"
            );
        }
        if let Some(leadership) = leadership {
            leadership.release().await;
        } else if electing {
            // Gives up waiting for the Lease (it sees the shutdown); one
            // taken just before the shutdown was seen is given up too, or
            // the next replica would wait for it to run out.
            if let Ok(Ok(Some(held))) = elected.await {
                held.release().await;
            }
        }
        webhooks_stop.trigger();
        stop_servers(servers).await?;
        match failure {
            Some(err) => Err(err),
            None => {
                tracing::info!("manager stopped");
                Ok(())
            }
        }
    }
}

/// The outcome of leader election: the held Lease, `None` after shutdown
/// came first.
type Election = oneshot::Receiver<anyhow::Result<Option<leader::Leadership>>>;

/// Waits for the Lease in the background under `--leader-elect`; without
/// it this replica leads at once.
fn elect(options: &Options, context: &Context) -> Election {
    let (sender, receiver) = oneshot::channel();
    if !options.leader_elect {
        context.readiness.lead();
        let _ = sender.send(Ok(None));
        return receiver;
    }
    let lease = leader::Lease {
        name: options
            .leader_election_id
            .clone()
            .unwrap_or_else(|| context.project.leader_election_id()),
        namespace: options.leader_election_namespace.clone(),
        duration_seconds: options.leader_election_lease_duration_seconds,
    };
    let client = context.client.clone();
    let shutdown = context.shutdown.clone();
    tokio::spawn(async move {
        let _ = sender.send(leader::acquire(client, lease, &shutdown).await);
    });
    receiver
}

async fn stop_servers(servers: JoinSet<anyhow::Result<()>>) -> anyhow::Result<()> {
    for result in servers.join_all().await {
        result?;
    }
    Ok(())
}
