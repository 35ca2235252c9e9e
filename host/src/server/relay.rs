//! What the upstream servers say about an eval's calls while they run — progress and log
//! messages — reaches the client of the eval's request, and only while that request is open:
//! [`EvalRelay`], the eval's [`CallRelay`].
//!
//! Log messages are filtered by the level the client asked for: on 2025-11-25 and older, the
//! session's `logging/setLevel` (default `info` until it sets one); on 2026-07-28, the request's
//! own `io.modelcontextprotocol/logLevel` (none without it: that protocol sends log messages
//! only to requests that opt in). They name their server as the logger: `everything`, or
//! `everything/<its logger>`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use codemode_policies::neutralize;
use codemode_runtime::BoxFuture;
use codemode_upstream::{CallRelay, LogMessage};
use rmcp::model::ProgressNotificationParam;
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use serde_json::Value;

use super::progress::Progress;

/// MCP's log levels, least severe first (their order is their severity).
const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// The level a session gets until it sets one.
const DEFAULT_LEVEL: u8 = 1;

/// MCP's log level.
#[expect(
    deprecated,
    reason = "SEP-2577 deprecates MCP logging from protocol 2026-07-28 on, but clients of 2025-11-25 and older set levels, and the upstreams' messages are forwarded to them"
)]
pub(super) type LogLevel = rmcp::model::LoggingLevel;

/// A level's severity: its index in [`LEVELS`].
fn severity(level: &LogLevel) -> u8 {
    let name = serde_json::to_value(level).unwrap_or(Value::Null);
    LEVELS
        .iter()
        .position(|l| name.as_str() == Some(l))
        .and_then(|i| u8::try_from(i).ok())
        .unwrap_or(0)
}

/// The least severe level a session's client wants to hear (`logging/setLevel`), shared by
/// the session's handlers.
#[derive(Clone)]
pub(super) struct SessionLogLevel(Arc<AtomicU8>);

impl Default for SessionLogLevel {
    fn default() -> Self {
        SessionLogLevel(Arc::new(AtomicU8::new(DEFAULT_LEVEL)))
    }
}

impl SessionLogLevel {
    pub(super) fn set(&self, level: &LogLevel) {
        self.0.store(severity(level), Ordering::Relaxed);
    }
}

/// The relay of one eval started by an MCP request (see the module docs).
pub(super) struct EvalRelay {
    peer: Peer<RoleServer>,
    progress: Arc<Progress>,
    session_level: SessionLogLevel,
    /// A 2026-07-28 request's own level (`Some(None)`: it did not opt in to log messages).
    request_level: Option<Option<u8>>,
    /// Cleared when the request has its answer: what comes after has nobody to go to.
    open: AtomicBool,
    /// The client (see [`CallRelay::audience`]): its caller when authenticated, else its
    /// session on 2025-11-25 and older; an anonymous 2026-07-28 request is an audience alone.
    audience: String,
}

impl EvalRelay {
    pub(super) fn new(
        ctx: &RequestContext<RoleServer>,
        progress: Arc<Progress>,
        (session_level, modern, audience): (SessionLogLevel, bool, String),
    ) -> Arc<Self> {
        let request_level = ctx.meta.log_level().map(|l| severity(&l));
        Arc::new(EvalRelay {
            peer: ctx.peer.clone(),
            progress,
            session_level,
            request_level: modern.then_some(request_level),
            open: AtomicBool::new(true),
            audience,
        })
    }

    /// Stops relaying: the request has its answer.
    pub(super) fn close(&self) {
        self.open.store(false, Ordering::Relaxed);
    }

    fn wants(&self, level: &LogLevel) -> bool {
        let least = match self.request_level {
            Some(Some(least)) => least,
            Some(None) => return false,
            None => self.session_level.0.load(Ordering::Relaxed),
        };
        severity(level) >= least
    }
}

impl CallRelay for EvalRelay {
    fn progress<'a>(
        &'a self,
        server: &'a str,
        update: ProgressNotificationParam,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if self.is_open() {
                self.progress.forward(server, update).await;
            }
        })
    }

    fn log<'a>(&'a self, server: &'a str, message: LogMessage) -> BoxFuture<'a, ()> {
        Box::pin(self.forward_log(server, message))
    }

    fn is_open(&self) -> bool {
        self.open.load(Ordering::Relaxed)
    }

    fn audience(&self) -> &str {
        &self.audience
    }
}

impl EvalRelay {
    #[expect(
        deprecated,
        reason = "MCP logging, deprecated from 2026-07-28 on, is what the upstream used"
    )]
    async fn forward_log(&self, server: &str, message: LogMessage) {
        if !self.is_open() || !self.wants(&message.level) {
            return;
        }
        let logger = match message.logger.as_deref() {
            Some(logger) => format!("{server}/{}", neutralize(logger)),
            None => server.to_string(),
        };
        let data = neutralized(message.data);
        let mut forwarded = LogMessage::new(message.level, data);
        forwarded.logger = Some(logger);
        // A client that left hears nothing more; its eval ends by its own cancellation.
        let _ = self.peer.notify_logging_message(forwarded).await;
    }
}

/// `value` with every string in it (keys too) neutralised: a client may show any of them.
fn neutralized(value: Value) -> Value {
    match value {
        Value::String(text) => Value::String(neutralize(&text)),
        Value::Array(items) => Value::Array(items.into_iter().map(neutralized).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (neutralize(&k), neutralized(v)))
                .collect(),
        ),
        other => other,
    }
}

/// Closes the relay when the request that opened it has its answer.
pub(super) struct RelayOpen(pub(super) Arc<EvalRelay>);

impl Drop for RelayOpen {
    fn drop(&mut self) {
        self.0.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_data_is_neutralised_at_every_depth() {
        let data = serde_json::json!({"a\u{1b}": ["x\u{202e}", {"b": "\n"}], "n": 1});
        assert_eq!(
            neutralized(data),
            serde_json::json!({"a\\u001b": ["x\\u202e", {"b": "\\n"}], "n": 1})
        );
    }

    #[test]
    fn levels_are_ordered_by_severity() {
        let names: Vec<u8> = LEVELS
            .iter()
            .map(|name| {
                let level: LogLevel =
                    serde_json::from_value(Value::String((*name).into())).expect("an MCP level");
                severity(&level)
            })
            .collect();
        assert_eq!(names, vec![0, 1, 2, 3, 4, 5, 6, 7]);
    }
}
