//! The manager: runs the controllers with health and metrics endpoints, leader
//! election and graceful shutdown.
//!
//! Scaffolded by opctl and regenerated identically: put your changes in
//! src/main.rs and src/controller/ rather than here.

mod backoff;
pub mod conditions;
mod context;
mod http;
mod leader;
mod metrics;
mod options;
mod shutdown;
mod telemetry;
pub mod webhook;

pub use backoff::Backoff;
pub use context::{Context, WatchScope};
pub use metrics::{Metrics, ReconcileTimer};
pub use options::{LogFormat, Options};
pub use shutdown::Shutdown;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context as _;
use futures::future::BoxFuture;
use tokio::task::JoinSet;

/// The name this manager uses as field manager, event reporter and leader-election lease.
pub const NAME: &str = "sidecarset";

type ControllerTask = Box<dyn FnOnce(Context) -> BoxFuture<'static, ()> + Send>;

/// Runs registered controllers and admission webhooks until SIGTERM or SIGINT.
pub struct Manager {
    options: Options,
    context: Context,
    controllers: Vec<(&'static str, ControllerTask)>,
    webhooks: webhook::Webhooks,
}

impl Manager {
    /// Sets up logging and a Kubernetes client (from the kubeconfig, or the
    /// in-cluster configuration when running in a Pod).
    pub async fn new(options: Options, scope: WatchScope) -> anyhow::Result<Self> {
        telemetry::init(options.log_format)?;
        let client = kube::Client::try_default()
            .await
            .context("cannot create a Kubernetes client: set KUBECONFIG or run inside a cluster")?;
        let context = Context::new(client, scope);
        Ok(Self {
            options,
            context,
            controllers: Vec::new(),
            webhooks: webhook::Webhooks::default(),
        })
    }

    /// The context handed to every controller.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// Registers a controller: `run` is called once the manager starts (and,
    /// with `--leader-elect`, once it leads) and must return after shutdown.
    pub fn with_controller<F, Fut>(mut self, name: &'static str, run: F) -> Self
    where
        F: FnOnce(Context) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let task: ControllerTask = Box::new(move |context| Box::pin(run(context)));
        self.controllers.push((name, task));
        self
    }

    /// Registers an admission webhook served at `path`: `handle` answers
    /// each request of the API server (see [`webhook`]).
    pub fn with_webhook<K, F, Fut>(mut self, path: &'static str, handle: F) -> Self
    where
        K: kube::Resource + serde::de::DeserializeOwned + Send + 'static,
        F: Fn(Context, webhook::AdmissionRequest<K>) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = webhook::AdmissionResponse> + Send + 'static,
    {
        self.webhooks.add(path, handle);
        self
    }

    /// Serves the probes and metrics (and the webhooks), waits for leadership if asked to, runs
    /// the controllers and returns once they have stopped after a signal.
    pub async fn run(self) -> anyhow::Result<()> {
        let Self {
            options,
            context,
            controllers,
            webhooks,
        } = self;
        let shutdown = context.shutdown.clone();
        shutdown.trigger_on_signals()?;

        let ready = Arc::new(AtomicBool::new(false));
        let mut servers = JoinSet::new();
        servers.spawn(
            http::serve_probes(
                options.health_probe_bind_address,
                ready.clone(),
                shutdown.clone(),
            )
            .await?,
        );
        servers.spawn(
            http::serve_metrics(
                options.metrics_bind_address,
                context.metrics.clone(),
                shutdown.clone(),
            )
            .await?,
        );
        // Every replica serves the webhooks, leader or not; the server is
        // listening (and, with --webhook-self-signed, its CA injected)
        // before the manager reports ready. It stops after the controllers,
        // whose last writes may still need it.
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

        let mut leadership = None;
        if options.leader_elect {
            let lease = leader::Lease {
                name: options.leader_election_id.clone(),
                namespace: options.leader_election_namespace.clone(),
            };
            match leader::acquire(context.client.clone(), lease, &shutdown).await? {
                Some(acquired) => leadership = Some(acquired),
                None => {
                    webhooks_stop.trigger();
                    return stop_servers(servers).await;
                }
            }
        }

        let mut running = JoinSet::new();
        for (name, run) in controllers {
            tracing::info!(controller = name, "starting controller");
            context.metrics.register_controller(name);
            running.spawn(run(context.clone()));
        }
        ready.store(true, Ordering::Relaxed);
        tracing::info!(controllers = running.len(), scope = %context.scope, "manager started");

        let mut failure = None;
        tokio::select! {
            biased;
            () = shutdown.wait() => tracing::info!("shutting down"),
            () = leader::lost(&mut leadership) => {
                failure = Some(anyhow::anyhow!("lost the leader-election lease"));
                shutdown.trigger();
            }
            Some(result) = running.join_next() => {
                // A controller only returns on shutdown; anything else is fatal.
                if !shutdown.is_triggered() {
                    failure = Some(match result {
                        Ok(()) => anyhow::anyhow!("a controller stopped on its own"),
                        Err(err) => anyhow::anyhow!("a controller failed: {err}"),
                    });
                }
                shutdown.trigger();
            }
        }

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

async fn stop_servers(servers: JoinSet<anyhow::Result<()>>) -> anyhow::Result<()> {
    for result in servers.join_all().await {
        result?;
    }
    Ok(())
}
