//! The HTTP listener of `serve --http`: accepts connections and serves each with hyper's HTTP/1
//! (keep-alive; no upgrades, MCP has none) under the listener limits of `server.http`.
//!
//! `axum::serve` gives hyper no timer, so a connection that never finishes its request head was
//! held until the client went away (2,000 such connections sat for 40–100 s). Here every
//! connection has a header read timeout; request bodies are bounded by [`super::guard`].
//! Each request carries its peer address (`ConnectInfo<SocketAddr>`), which is who a client is
//! when nothing better says so.

use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Connections the kernel completes before the accept loop takes them. Rust's default (128)
/// overflowed when 200 clients connected at once: the kernel dropped their handshakes' last
/// ACK (`ListenOverflows` in `nstat`) and those clients waited on retransmissions.
const LISTEN_BACKLOG: u32 = 1024;

/// A listening socket on `addr` with [`LISTEN_BACKLOG`] (capped by the kernel's `somaxconn`).
pub(crate) fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    // As std's and tokio's `bind` do: a restarted server may reuse a port in TIME-WAIT.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Serves `router` on `listener` until `shutdown`, then waits for the open connections to
/// finish their requests.
pub(crate) async fn serve(
    listener: TcpListener,
    router: axum::Router,
    header_read_timeout: Duration,
    shutdown: CancellationToken,
) {
    let graceful = GracefulShutdown::new();
    loop {
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: wait a little instead of spinning.
                    tracing::warn!("accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = shutdown.cancelled() => break,
        };
        // TCP_NODELAY: a response goes out as several small writes; without it, Nagle's
        // algorithm meets the client's delayed ACK and every keep-alive request waits 40 ms.
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(
            router
                .clone()
                .layer(axum::Extension(ConnectInfo::<SocketAddr>(remote))),
        );
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(header_read_timeout)
            .keep_alive(true)
            .serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!("connection from {remote} ended: {e}");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}
