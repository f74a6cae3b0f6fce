//! The HTTP endpoints: /healthz and /readyz on the probe address, /metrics on
//! the metrics address. Both stop with the manager.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context as _;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use futures::future::BoxFuture;

use super::{Metrics, Shutdown};

/// A bound server, ready to be spawned.
pub type Server = BoxFuture<'static, anyhow::Result<()>>;

/// Binds the probe endpoints: /healthz answers while the process runs,
/// /readyz once the controllers have started.
pub async fn serve_probes(
    addr: SocketAddr,
    ready: Arc<AtomicBool>,
    shutdown: Shutdown,
) -> anyhow::Result<Server> {
    let router = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(ready);
    serve("health probe", addr, router, shutdown).await
}

/// Binds the Prometheus endpoint.
pub async fn serve_metrics(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    shutdown: Shutdown,
) -> anyhow::Result<Server> {
    let router = Router::new()
        .route("/metrics", get(metrics_text))
        .with_state(metrics);
    serve("metrics", addr, router, shutdown).await
}

async fn serve(
    what: &'static str,
    addr: SocketAddr,
    router: Router,
    shutdown: Shutdown,
) -> anyhow::Result<Server> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen for the {what} endpoint on {addr}"))?;
    tracing::info!(%addr, "serving {what} endpoint");
    Ok(Box::pin(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(shutdown.wait_owned())
            .await
            .with_context(|| format!("the {what} endpoint failed"))
    }))
}

async fn readyz(State(ready): State<Arc<AtomicBool>>) -> impl IntoResponse {
    if ready.load(Ordering::Relaxed) {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "starting")
    }
}

async fn metrics_text(State(metrics): State<Arc<Metrics>>) -> impl IntoResponse {
    match metrics.encode() {
        Ok(text) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        ),
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "cannot encode metrics".to_owned(),
        ),
    }
}
