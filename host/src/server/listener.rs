//! The HTTP listeners of `serve --http` and `--approvals-http`: each accepts connections and
//! serves them with hyper's HTTP/1 (keep-alive; no upgrades, MCP has none) under the listener
//! limits of `server.http`.
//!
//! `axum::serve` gives hyper no timer, so a connection that never finishes its request head was
//! held until the client went away (2,000 such connections sat for 40–100 s). Here every
//! connection has a header read timeout and a bounded head buffer ([`MAX_HEAD_BUFFER`]);
//! request bodies are bounded by [`super::body`]. The number of open connections is capped per
//! listener and per client address ([`Connections`]): without a cap, a client that sends nothing
//! and reconnects every `headerReadTimeout` held every descriptor of the process (the durable
//! store could no longer open files, and legitimate approvers waited). A connection over a cap is
//! closed as soon as it is accepted, before a byte of it is read.
//! Each request carries its peer address (`ConnectInfo<SocketAddr>`), which is who a client is
//! when nothing better says so.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;
use codemode_config::ListenerLimits;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// Connections the kernel completes before the accept loop takes them. Rust's default (128)
/// overflowed when 200 clients connected at once: the kernel dropped their handshakes' last
/// ACK (`ListenOverflows` in `nstat`) and those clients waited on retransmissions.
const LISTEN_BACKLOG: u32 = 1024;

/// The most a connection buffers of a request head: a longer head gets `431`. hyper's default
/// (~400 KiB) let every connection hold that much before it was authenticated (1,000
/// connections: +400 MB); 64 KiB holds any real head, a large JWT included.
pub(crate) const MAX_HEAD_BUFFER: usize = 64 << 10;

/// The most connections a listener holds by default, whatever the descriptor limit: beyond
/// this, memory (up to [`MAX_HEAD_BUFFER`] each before authentication) is the bound.
const MAX_DEFAULT_CONNECTIONS: usize = 8192;

/// How often a repeated listener warning (accept errors, refused connections) is logged: once
/// per interval, with the number of occurrences.
const WARN_INTERVAL: Duration = Duration::from_secs(10);

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

/// `server.http.maxConnections` when the config leaves it out, for a process allowed
/// `descriptors` open files: a quarter of them (at least 64) is left to the durable store, the
/// upstream servers and the rest, and half of what remains goes to each of the (at most two)
/// listeners; at least 16, at most [`MAX_DEFAULT_CONNECTIONS`].
pub(crate) fn default_max_connections(descriptors: u64) -> usize {
    let reserved = (descriptors / 4).max(64);
    let each = descriptors.saturating_sub(reserved) / 2;
    usize::try_from(each)
        .unwrap_or(usize::MAX)
        .clamp(16, MAX_DEFAULT_CONNECTIONS)
}

/// Raises the soft limit on open files to the hard limit, as far as the system allows, and
/// returns the soft limit in force afterwards (`None` where it cannot be read). A server is
/// started with the soft limit (systemd's default is 1,024) and may use up to the hard one.
pub fn raise_descriptor_limit() -> Option<u64> {
    super::descriptors::raise_soft_limit()
}

/// Who a client is for the per-address cap: an IPv4 address, or an IPv6 /64 (one host
/// commonly holds a whole /64); an IPv4-mapped IPv6 address is its IPv4 address.
fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let bits = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(bits.into())
            }
        },
    }
}

/// Which cap refused a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// `maxConnections`.
    Total(usize),
    /// `maxConnectionsPerIp`.
    PerIp(usize),
}

/// The connections a listener holds open: in all, and by client address.
#[derive(Debug)]
pub(crate) struct Connections {
    max_total: usize,
    max_per_ip: usize,
    open: Mutex<(usize, HashMap<IpAddr, usize>)>,
}

/// One open connection's place under the caps, given back when dropped.
#[derive(Debug)]
pub(crate) struct Slot {
    connections: Arc<Connections>,
    key: IpAddr,
}

impl Connections {
    /// Caps of `max_total` connections in all and `max_per_ip` per client address.
    pub(crate) fn new(max_total: usize, max_per_ip: usize) -> Arc<Self> {
        Arc::new(Connections {
            max_total,
            max_per_ip,
            open: Mutex::new((0, HashMap::new())),
        })
    }

    /// The caps of `limits`; `maxConnections` by default from the descriptor limit now.
    fn from_limits(limits: &ListenerLimits) -> Arc<Self> {
        let total = limits.max_connections.unwrap_or_else(|| {
            default_max_connections(super::descriptors::soft_limit().unwrap_or(1024))
        });
        Connections::new(total, limits.max_connections_per_ip)
    }

    /// A place for a connection from `ip`, or the cap it would pass.
    pub(crate) fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Slot, Refused> {
        let key = client_key(ip);
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.0 >= self.max_total {
            return Err(Refused::Total(self.max_total));
        }
        let mine = open.1.entry(key).or_insert(0);
        if *mine >= self.max_per_ip {
            return Err(Refused::PerIp(self.max_per_ip));
        }
        *mine += 1;
        open.0 += 1;
        Ok(Slot {
            connections: self.clone(),
            key,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self
            .connections
            .open
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        open.0 = open.0.saturating_sub(1);
        if let Some(mine) = open.1.get_mut(&self.key) {
            *mine -= 1;
            if *mine == 0 {
                open.1.remove(&self.key);
            }
        }
    }
}

/// A connection holding its [`Slot`]: the place is given back when the server shuts the
/// connection down (before the client sees it closed) or drops it.
struct Counted {
    io: TcpStream,
    slot: Option<Slot>,
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.slot = None;
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

/// A warning repeated at a high rate (an accept loop out of descriptors failed ~40 times a
/// second and logged each): logged at most once per interval, with how often it happened.
#[derive(Debug)]
pub(crate) struct Throttle {
    interval: Duration,
    next: Option<Instant>,
    count: u64,
}

impl Throttle {
    pub(crate) fn new(interval: Duration) -> Self {
        Throttle {
            interval,
            next: None,
            count: 0,
        }
    }

    /// Counts one occurrence at `now`; `Some(n)`: log it now, as `n` occurrences since the
    /// last line (this one included).
    pub(crate) fn note(&mut self, now: Instant) -> Option<u64> {
        self.count += 1;
        if self.next.is_some_and(|next| now < next) {
            return None;
        }
        self.next = Some(now + self.interval);
        Some(std::mem::take(&mut self.count))
    }
}

/// Serves `router` on `listener` until `shutdown`, under `limits` (those in force when this is
/// called: `headerReadTimeout` and the connection caps), then waits for the open connections to
/// finish their requests.
pub(crate) async fn serve(
    listener: TcpListener,
    router: axum::Router,
    limits: ListenerLimits,
    shutdown: CancellationToken,
) {
    let graceful = GracefulShutdown::new();
    let connections = Connections::from_limits(&limits);
    let local = listener
        .local_addr()
        .map_or_else(|_| "?".to_string(), |a| a.to_string());
    let mut accept_errors = Throttle::new(WARN_INTERVAL);
    let mut refusals = Throttle::new(WARN_INTERVAL);
    loop {
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    if let Some(n) = accept_errors.note(Instant::now()) {
                        let every = WARN_INTERVAL.as_secs();
                        tracing::warn!(
                            "{local}: accepting a connection failed ({n} times in {every} s): {e}"
                        );
                    }
                    // Out of file descriptors and the like: wait a little instead of spinning.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = shutdown.cancelled() => break,
        };
        let slot = match connections.admit(remote.ip()) {
            Ok(slot) => slot,
            Err(refused) => {
                // Closed unread: a refused client costs one accept.
                drop(stream);
                if let Some(n) = refusals.note(Instant::now()) {
                    let cap = match refused {
                        Refused::Total(max) => format!("server.http.maxConnections = {max}"),
                        Refused::PerIp(max) => format!(
                            "server.http.maxConnectionsPerIp = {max}, last from {}",
                            remote.ip()
                        ),
                    };
                    let every = WARN_INTERVAL.as_secs();
                    tracing::warn!(
                        "{local}: refused {n} connection(s) in {every} s over a cap ({cap})"
                    );
                }
                continue;
            }
        };
        // TCP_NODELAY: a response goes out as several small writes; without it, Nagle's
        // algorithm meets the client's delayed ACK and every keep-alive request waits 40 ms.
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(
            router
                .clone()
                .layer(axum::Extension(ConnectInfo::<SocketAddr>(remote))),
        );
        let io = Counted {
            io: stream,
            slot: Some(slot),
        };
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout)
            .max_buf_size(MAX_HEAD_BUFFER)
            .keep_alive(true)
            .serve_connection(TokioIo::new(io), service);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_capped_in_all_and_per_address() {
        let caps = Connections::new(3, 2);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let c: IpAddr = "10.0.0.3".parse().unwrap();
        let a1 = caps.admit(a).unwrap();
        let _a2 = caps.admit(a).unwrap();
        assert_eq!(caps.admit(a).unwrap_err(), Refused::PerIp(2));
        // The same address written as IPv4-mapped IPv6 is the same client.
        assert_eq!(
            caps.admit("::ffff:10.0.0.1".parse().unwrap()).unwrap_err(),
            Refused::PerIp(2)
        );
        let _b1 = caps.admit(b).unwrap();
        assert_eq!(caps.admit(c).unwrap_err(), Refused::Total(3));
        drop(a1);
        let _c1 = caps.admit(c).unwrap();
        assert_eq!(caps.admit(a).unwrap_err(), Refused::Total(3));
    }

    #[test]
    fn an_ipv6_client_is_its_slash_64() {
        let caps = Connections::new(100, 1);
        let _one = caps.admit("2001:db8:1:2::1".parse().unwrap()).unwrap();
        assert_eq!(
            caps.admit("2001:db8:1:2:ffff::9".parse().unwrap())
                .unwrap_err(),
            Refused::PerIp(1)
        );
        let _other = caps.admit("2001:db8:1:3::1".parse().unwrap()).unwrap();
    }

    #[test]
    fn the_default_connection_cap_leaves_descriptors_to_the_rest() {
        for (descriptors, want) in [
            (64, 16),
            (256, 96),
            (1024, 384),
            (20_000, 7_500),
            (1 << 20, MAX_DEFAULT_CONNECTIONS),
        ] {
            assert_eq!(default_max_connections(descriptors), want, "{descriptors}");
        }
    }

    #[test]
    fn accept_errors_are_logged_once_per_interval_with_their_count() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut throttle = Throttle::new(Duration::from_secs(10));
        // 40 failures a second for a minute: one line per 10 s, each with its count.
        let lines: Vec<u64> = (0..2400u64)
            .filter_map(|i| throttle.note(at(i * 25)))
            .collect();
        assert_eq!(lines, [1, 400, 400, 400, 400, 400]);
    }
}
