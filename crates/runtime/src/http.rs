//! The HTTP endpoints: /healthz and /readyz on the probe address, /metrics
//! on the metrics address (HTTPS with authentication and authorization by
//! default, see `metrics_auth`). Every replica serves them; they
//! stop with the manager.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::future::BoxFuture;

use crate::metrics_auth::{Authorizer, Decision, METRICS_PATH};
use crate::readiness::Readiness;
use crate::{Context, Options, Shutdown, tls};

/// A bound server, ready to be spawned.
pub(crate) type Server = BoxFuture<'static, anyhow::Result<()>>;

/// Binds the probe endpoints: /healthz answers while the process runs,
/// /readyz once every cache is filled (leader or not).
pub(crate) async fn serve_probes(
    addr: SocketAddr,
    readiness: Readiness,
    shutdown: Shutdown,
) -> anyhow::Result<Server> {
    let router = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(readiness);
    let listener = bind("health probe", addr).await?;
    Ok(Box::pin(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(shutdown.wait_owned())
            .await
            .context("the health probe endpoint failed")
    }))
}

/// The state of the metrics endpoint.
#[derive(Clone)]
struct Metrics {
    context: Context,
    /// None when serving plain HTTP to anyone.
    authorizer: Option<Arc<Authorizer>>,
}

/// Binds the Prometheus endpoint as the options say.
pub(crate) async fn serve_metrics(options: &Options, context: Context) -> anyhow::Result<Server> {
    let addr = options.metrics_bind_address;
    let shutdown = context.shutdown.clone();
    let project = context.project;
    let authorizer = options
        .metrics_secure
        .then(|| Arc::new(Authorizer::new(context.client.clone())));
    let router = Router::new()
        .route(METRICS_PATH, get(metrics_text))
        .with_state(Metrics {
            context,
            authorizer,
        });
    if !options.metrics_secure {
        let listener = bind("metrics", addr).await?;
        return Ok(Box::pin(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(shutdown.wait_owned())
                .await
                .context("the metrics endpoint failed")
        }));
    }
    let certificates = match &options.metrics_cert_dir {
        Some(dir) => tls::Certificates::load(
            "metrics",
            dir.join("tls.crt"),
            dir.join("tls.key"),
            "put tls.crt and tls.key into --metrics-cert-dir, or leave the flag out for a self-signed certificate",
        )?,
        None => {
            let name = project.name();
            tls::Certificates::self_signed(name, &[name.to_owned()])?
        }
    };
    let listener = tls::Listener::bind("metrics", addr, certificates.clone()).await?;
    tokio::spawn(certificates.reload_on_change(shutdown.clone()));
    tracing::info!(%addr, "serving metrics endpoint (HTTPS, authenticated)");
    Ok(Box::pin(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(shutdown.wait_owned())
            .await
            .context("the metrics endpoint failed")
    }))
}

/// Listens on `addr` for plain HTTP.
async fn bind(what: &str, addr: SocketAddr) -> anyhow::Result<tokio::net::TcpListener> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen for the {what} endpoint on {addr}"))?;
    tracing::info!(%addr, "serving {what} endpoint");
    Ok(listener)
}

async fn readyz(State(readiness): State<Readiness>) -> impl IntoResponse {
    if readiness.is_ready() {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "caches are filling")
    }
}

async fn metrics_text(State(state): State<Metrics>, headers: HeaderMap) -> Response {
    if let Some(authorizer) = &state.authorizer {
        let authorization = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok());
        match authorizer.decide(authorization).await {
            Ok(Decision::Allowed) => {}
            Ok(Decision::Unauthenticated) => {
                return text(StatusCode::UNAUTHORIZED, "Unauthorized".to_owned());
            }
            Ok(Decision::Forbidden(user)) => {
                let message = format!("Forbidden: user {user:?} may not get {METRICS_PATH}");
                return text(StatusCode::FORBIDDEN, message);
            }
            Err(err) => {
                tracing::warn!(error = %err, "cannot review a metrics request");
                let message = format!("cannot review the request: {err}");
                return text(StatusCode::INTERNAL_SERVER_ERROR, message);
            }
        }
    }
    match state.context.metrics.encode() {
        Ok(body) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            body,
        )
            .into_response(),
        Err(_) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "cannot encode metrics".to_owned(),
        ),
    }
}

fn text(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}
