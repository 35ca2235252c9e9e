//! The limits that share one server fairly between its clients: per-client eval caps
//! (`limits.perClient`), the lifetime of an eval including human time (`limits.maxEvalLifetime`),
//! how many finished results nobody fetched are kept (`limits.unfetchedResults`), and the HTTP
//! listener's session caps, read timeouts and body size (`server.http`).

use std::time::Duration;

use crate::schema::values::{Duration as TypedDuration, Positive};
use crate::schema::{self, sections};

/// `limits.perClient`: what one client may hold at once. A client is the authenticated caller,
/// else the legacy MCP session, else the remote address.
///
/// The defaults keep one client below a quarter of the runtime's default pool of 256 instance
/// slots (32 + 16 < 64), so that other clients' evals still start at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerClientLimits {
    /// `maxConcurrentEvals`: evals of one client running at once (including those waiting on a
    /// human). Default: 32.
    pub max_concurrent_evals: usize,
    /// `maxSuspendedEvals`: evals of one client waiting on a human at once (each holds a pool
    /// slot meanwhile). Default: 16.
    pub max_suspended_evals: usize,
    /// `maxParkedEvals`: evals of one client that this node saved to the durable store and
    /// that are neither resumed nor expired, counted per node. An eval over it stays in memory
    /// instead of being parked, where it counts against `maxSuspendedEvals`. Default: 256.
    pub max_parked_evals: usize,
    /// `maxParkedBytes`: the bytes of the evals of one client that this node saved to the
    /// durable store (the same evals as `maxParkedEvals`). An eval whose save would pass it is
    /// not parked: it goes on in memory. Default: 256 MiB.
    pub max_parked_bytes: u64,
}

impl Default for PerClientLimits {
    fn default() -> Self {
        PerClientLimits {
            max_concurrent_evals: 32,
            max_suspended_evals: 16,
            max_parked_evals: 256,
            max_parked_bytes: DEFAULT_MAX_PARKED_BYTES_PER_CLIENT,
        }
    }
}

/// The default `limits.perClient.maxParkedBytes`: 256 MiB.
pub const DEFAULT_MAX_PARKED_BYTES_PER_CLIENT: u64 = 256 << 20;

/// The default `limits.maxEvalLifetime`: 15 minutes.
pub const DEFAULT_MAX_EVAL_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// `limits.unfetchedResults`: finished evals whose result no client fetched yet (a 2026-07-28
/// client that went away between input-required rounds). Beyond either bound the oldest is
/// dropped; fetching it later gets an error saying so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionLimits {
    /// `maxCount`: how many results are kept. Default: 64.
    pub max_count: usize,
    /// `maxBytes`: their total size as JSON. Default: 32 MiB.
    pub max_bytes: u64,
}

impl Default for RetentionLimits {
    fn default() -> Self {
        RetentionLimits {
            max_count: 64,
            max_bytes: 32 << 20,
        }
    }
}

/// The listener limits of `server.http` (`codemode serve --http`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenerLimits {
    /// `maxSessions`: live legacy MCP sessions (protocol 2025-11-25 and older) in all. Beyond
    /// it, an `initialize` is refused with HTTP `429`. Default: 1000.
    pub max_sessions: usize,
    /// `maxSessionsPerClient`: live legacy sessions of one client. Default: 64.
    pub max_sessions_per_client: usize,
    /// `headerReadTimeout`: a connection that has not sent a whole request head within this long
    /// is closed. Default: 10 s.
    pub header_read_timeout: Duration,
    /// `bodyReadTimeout`: a request whose body has not fully arrived within this long of its
    /// head gets `408` and its connection is closed. Default: 30 s.
    pub body_read_timeout: Duration,
    /// `maxRequestBody`: the largest request body accepted (`413` beyond). Default: 4 MiB.
    pub max_request_body: u64,
    /// `maxConnections`: open connections of one listener in all; a connection beyond it is
    /// closed as soon as it is accepted, unread. Default (`None`): sized from the process's
    /// descriptor limit when the listener starts (see `codemode_host`'s listener).
    pub max_connections: Option<usize>,
    /// `maxConnectionsPerIp`: open connections of one listener from one IPv4 address or one
    /// IPv6 /64. Default: 64.
    pub max_connections_per_ip: usize,
    /// `maxStreamLifetime`: how long an approval event stream (`GET /approvals/stream`) stays
    /// open; it also ends when the credential that opened it expires. Default: 1 hour.
    pub max_stream_lifetime: Duration,
    /// `maxStreamsPerCaller`: approval event streams one caller holds open at once (`429`
    /// beyond). Default: 16.
    pub max_streams_per_caller: usize,
}

impl Default for ListenerLimits {
    fn default() -> Self {
        ListenerLimits {
            max_sessions: 1000,
            max_sessions_per_client: 64,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            max_request_body: 4 << 20,
            max_connections: None,
            max_connections_per_ip: 64,
            max_stream_lifetime: Duration::from_secs(60 * 60),
            max_streams_per_caller: 16,
        }
    }
}

/// `limits.perClient` as read: each key left out keeps its default.
pub(crate) fn per_client_limits(read: sections::PerClient) -> PerClientLimits {
    let d = PerClientLimits::default();
    PerClientLimits {
        max_concurrent_evals: read
            .max_concurrent_evals
            .map_or(d.max_concurrent_evals, |n| n.0),
        max_suspended_evals: read
            .max_suspended_evals
            .map_or(d.max_suspended_evals, |n| n.0),
        max_parked_evals: read.max_parked_evals.map_or(d.max_parked_evals, |n| n.0),
        max_parked_bytes: read.max_parked_bytes.map_or(d.max_parked_bytes, |n| n.0),
    }
}

/// `limits.unfetchedResults` as read: each key left out keeps its default.
pub(crate) fn retention_limits(read: sections::UnfetchedResults) -> RetentionLimits {
    let d = RetentionLimits::default();
    RetentionLimits {
        max_count: read.max_count.map_or(d.max_count, |n| n.0),
        max_bytes: read.max_bytes.map_or(d.max_bytes, |n| n.0),
    }
}

/// The listener limits `server.http` gives: each key left out keeps its default.
pub(crate) fn listener_limits(read: &schema::server::Http) -> ListenerLimits {
    let d = ListenerLimits::default();
    let count = |n: Option<Positive>, default| n.map_or(default, |n| n.0);
    let time = |t: Option<TypedDuration>, default| t.map_or(default, |t| t.0);
    ListenerLimits {
        max_sessions: count(read.max_sessions, d.max_sessions),
        max_sessions_per_client: count(read.max_sessions_per_client, d.max_sessions_per_client),
        header_read_timeout: time(read.header_read_timeout, d.header_read_timeout),
        body_read_timeout: time(read.body_read_timeout, d.body_read_timeout),
        max_request_body: read.max_request_body.map_or(d.max_request_body, |n| n.0),
        max_connections: read.max_connections.map(|n| n.0).or(d.max_connections),
        max_connections_per_ip: count(read.max_connections_per_ip, d.max_connections_per_ip),
        max_stream_lifetime: time(read.max_stream_lifetime, d.max_stream_lifetime),
        max_streams_per_caller: count(read.max_streams_per_caller, d.max_streams_per_caller),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::{Config, ConfigErrorKind};

    #[test]
    fn defaults_keep_one_client_below_a_quarter_of_the_pool() {
        let c = Config::default();
        let pool = codemode_runtime::RuntimeConfig::default().get_max_concurrent_evals() as usize;
        let p = c.limits.per_client;
        assert_eq!(
            (
                p.max_concurrent_evals,
                p.max_suspended_evals,
                p.max_parked_evals
            ),
            (32, 16, 256)
        );
        assert!(p.max_concurrent_evals + p.max_suspended_evals < pool / 4);
        assert_eq!(c.limits.max_eval_lifetime, Duration::from_secs(900));
        assert_eq!(c.limits.unfetched_results, RetentionLimits::default());
        assert_eq!(c.server.http.limits, ListenerLimits::default());
    }

    #[test]
    fn every_key_is_read() {
        let c = Config::from_json_str(
            r#"{"limits": {"maxEvalLifetime": "2m", "perClient": {"maxConcurrentEvals": 3, "maxSuspendedEvals": 1, "maxParkedEvals": 7, "maxParkedBytes": "1MiB"},
                           "unfetchedResults": {"maxCount": 5, "maxBytes": "1MiB"}},
                "server": {"http": {"maxSessions": 10, "maxSessionsPerClient": 2, "headerReadTimeout": "1s",
                                    "bodyReadTimeout": "2s", "maxRequestBody": "64KiB",
                                    "maxConnections": 100, "maxConnectionsPerIp": 5,
                                    "maxStreamLifetime": "10m", "maxStreamsPerCaller": 3}}}"#,
        )
        .expect("config");
        assert_eq!(c.limits.max_eval_lifetime, Duration::from_secs(120));
        assert_eq!(
            c.limits.per_client,
            PerClientLimits {
                max_concurrent_evals: 3,
                max_suspended_evals: 1,
                max_parked_evals: 7,
                max_parked_bytes: 1 << 20
            }
        );
        assert_eq!(
            c.limits.unfetched_results,
            RetentionLimits {
                max_count: 5,
                max_bytes: 1 << 20
            }
        );
        assert_eq!(
            c.server.http.limits,
            ListenerLimits {
                max_sessions: 10,
                max_sessions_per_client: 2,
                header_read_timeout: Duration::from_secs(1),
                body_read_timeout: Duration::from_secs(2),
                max_request_body: 64 << 10,
                max_connections: Some(100),
                max_connections_per_ip: 5,
                max_stream_lifetime: Duration::from_secs(600),
                max_streams_per_caller: 3,
            }
        );
    }

    #[test]
    fn bad_values_name_their_path() {
        let errs = Config::from_json_str(
            r#"{"limits": {"maxEvalLifetime": "0s", "perClient": {"maxConcurrentEvals": 0, "maxSuspended": 1, "maxParkedEvals": 0},
                           "unfetchedResults": {"maxCount": -1, "maxBytes": 0}},
                "server": {"http": {"maxSessions": "many", "headerReadTimeout": 5}}}"#,
        )
        .unwrap_err();
        let got: Vec<(String, ConfigErrorKind)> = errs
            .iter()
            .map(|e| (e.path().to_string(), e.kind()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "limits.maxEvalLifetime".to_string(),
                    ConfigErrorKind::InvalidValue
                ),
                (
                    "limits.perClient.maxSuspended".to_string(),
                    ConfigErrorKind::UnknownKey
                ),
                (
                    "limits.perClient.maxConcurrentEvals".to_string(),
                    ConfigErrorKind::InvalidValue
                ),
                (
                    "limits.perClient.maxParkedEvals".to_string(),
                    ConfigErrorKind::InvalidValue
                ),
                (
                    "limits.unfetchedResults.maxCount".to_string(),
                    ConfigErrorKind::WrongType
                ),
                (
                    "limits.unfetchedResults.maxBytes".to_string(),
                    ConfigErrorKind::InvalidValue
                ),
                (
                    "server.http.maxSessions".to_string(),
                    ConfigErrorKind::WrongType
                ),
                (
                    "server.http.headerReadTimeout".to_string(),
                    ConfigErrorKind::WrongType
                ),
            ]
        );
    }
}
