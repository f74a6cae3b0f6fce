//! Accepting connections as kube-apiserver's HTTP server does: HTTP/1.1
//! and HTTP/2 on one port, and a header-read timeout (Go's
//! `ReadHeaderTimeout`, 32 s there) so a client that never finishes its
//! headers cannot hold a connection open.

use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio_rustls::TlsAcceptor;

/// kube-apiserver's `ReadHeaderTimeout` ("just shy of requestTimeoutUpperBound").
pub(crate) const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(32);

/// Serves `router` on `listener` (over TLS when given an acceptor) until
/// `shutdown` fires, then lets the requests in flight finish.
pub(crate) async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    router: Router,
    header_read_timeout: Duration,
    mut shutdown: oneshot::Receiver<()>,
) {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let graceful = GracefulShutdown::new();
    loop {
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                // Out of file descriptors and the like: pause rather than spin.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let _ = tcp.set_nodelay(true);
        let service = TowerToHyperService::new(router.clone());
        let builder = builder.clone();
        let watcher = graceful.watcher();
        let tls = tls.clone();
        tokio::spawn(async move {
            // hyper's timer starts with the request head; a client that
            // sends nothing at all, or never finishes its TLS handshake, is
            // held to the same limit, as Go's is.
            let deadline = tokio::time::Instant::now() + header_read_timeout;
            let mut first = [0u8; 1];
            if tokio::time::timeout_at(deadline, tcp.peek(&mut first))
                .await
                .is_err()
            {
                return;
            }
            match tls {
                None => serve_io(&builder, tcp, service, watcher).await,
                Some(acceptor) => {
                    if let Ok(Ok(stream)) =
                        tokio::time::timeout_at(deadline, acceptor.accept(tcp)).await
                    {
                        serve_io(&builder, stream, service, watcher).await;
                    }
                }
            }
        });
    }
    graceful.shutdown().await;
}

/// One connection, HTTP/1.1 or HTTP/2, until it closes or the server stops.
async fn serve_io<I>(
    builder: &Builder<TokioExecutor>,
    io: I,
    service: TowerToHyperService<Router>,
    watcher: hyper_util::server::graceful::Watcher,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
    // A client going away mid-request is its business, not an error here.
    let _ = watcher.watch(conn.into_owned()).await;
}
