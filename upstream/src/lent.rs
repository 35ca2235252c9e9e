//! What an eval lends the upstream calls it makes, in its [`CallScope`](crate::CallScope): its
//! relay (where a server's progress and log messages about the calls go), its model (who
//! answers the server's `sampling/createMessage`) and its human (who answers its
//! `elicitation/create`). Each reaches the eval whose call it came during, and no other
//! ([`crate::relay`], [`crate::server_requests`]).

use std::sync::Arc;

use tokio::sync::watch;

use rmcp::model::{ElicitRequestParams, ElicitResult, ProgressNotificationParam};

use codemode_runtime::BoxFuture;

/// The parameters of MCP's `notifications/message`.
#[expect(
    deprecated,
    reason = "SEP-2577 deprecates MCP logging from protocol 2026-07-28 on, but servers and clients of 2025-11-25 and older use it, and a proxy forwards what they say"
)]
pub type LogMessage = rmcp::model::LoggingMessageNotificationParam;

/// Receives an upstream's notifications about the calls of one eval (see the module docs).
///
/// Implementations forward them to the eval's client; time spent here delays the upstream
/// connection's other messages, so send and return.
pub trait CallRelay: Send + Sync {
    /// Upstream `server` reported progress on one of this eval's calls: `update` as the server
    /// sent it.
    fn progress<'a>(
        &'a self,
        server: &'a str,
        update: ProgressNotificationParam,
    ) -> BoxFuture<'a, ()>;

    /// Upstream `server` sent a log message while only this eval had calls in flight on it.
    fn log<'a>(&'a self, server: &'a str, message: LogMessage) -> BoxFuture<'a, ()>;

    /// Whether anything sent here can still reach someone.
    fn is_open(&self) -> bool;

    /// Who hears this relay: calls of relays with one audience may share a log message (they
    /// are one client's), calls of different audiences make it ambiguous.
    fn audience(&self) -> &str;
}

#[expect(
    deprecated,
    reason = "SEP-2577 deprecates sampling from protocol 2026-07-28 on, but servers of 2025-11-25 and older ask for it, and a proxy forwards what they ask"
)]
mod sampling {
    use codemode_runtime::BoxFuture;
    use rmcp::ErrorData as McpError;
    use rmcp::model::{CreateMessageRequestParams, CreateMessageResult};

    /// Decides and answers the sampling requests upstream servers make during one eval's calls:
    /// the eval's profile, its human, its client's model.
    pub trait CallSampler: Send + Sync {
        /// Upstream `server` asks for a message. `Err` reaches the server as the JSON-RPC error
        /// given; its message should say why in words a person reading the server's log acts on.
        fn create_message<'a>(
            &'a self,
            server: &'a str,
            params: CreateMessageRequestParams,
        ) -> BoxFuture<'a, Result<CreateMessageResult, McpError>>;
    }
}
pub use sampling::CallSampler;

/// Answers the `elicitation/create` requests upstream servers send during one eval's calls
/// (form mode: "please confirm", "which account?"): the eval's human. An eval lends it to its
/// calls in its [`CallScope`](crate::CallScope); a request is put to the eval whose call it
/// came during, and to no other (by the HTTP stream it came on, or, over stdio, only while one
/// eval alone has calls on the connection: see `isolate_sessions` of [`UpstreamSpec`](crate::UpstreamSpec)).
///
/// The pool declares form elicitation to every upstream, so servers that offer tools only to
/// clients able to ask a human (e.g. server-everything's `trigger-elicitation-request`) show
/// them. Time the handler takes does not count against the call's timeout.
pub trait UpstreamElicitation: Send + Sync {
    /// Asks the human on behalf of upstream `server`. `Err` reaches the server as a JSON-RPC
    /// internal error carrying its message; prefer `Ok` with
    /// [`ElicitationAction::Decline`](rmcp::model::ElicitationAction::Decline) or [`ElicitationAction::Cancel`](rmcp::model::ElicitationAction::Cancel) for "no answer".
    fn elicit<'a>(
        &'a self,
        server: &'a str,
        params: ElicitRequestParams,
    ) -> BoxFuture<'a, Result<ElicitResult, ElicitationFailed>>;
}

/// Why an [`UpstreamElicitation`] could not put an upstream's question to the human (not "no
/// answer", which is an `Ok` decline or cancel): the message the upstream gets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ElicitationFailed {
    /// What failed, in words the upstream may read (no secrets).
    pub message: String,
}

impl ElicitationFailed {
    /// Failed for `message`.
    pub fn new(message: impl Into<String>) -> Self {
        ElicitationFailed {
            message: message.into(),
        }
    }
}

/// What one call borrows of its eval's [`CallScope`](crate::CallScope) while it runs.
#[derive(Clone, Default)]
pub(crate) struct Answerers {
    pub(crate) relay: Option<Arc<dyn CallRelay>>,
    pub(crate) sampler: Option<Arc<dyn CallSampler>>,
    pub(crate) elicitor: Option<Arc<dyn UpstreamElicitation>>,
    pub(crate) answering: Answering,
}

/// How many of the upstream servers' requests (elicitations, sampling) one eval's human or
/// model is answering now: that time does not count against the timeouts of the eval's calls,
/// nor the eval's own. One per eval — the clones of its [`CallScope`](crate::CallScope) share
/// it — so that another eval's question never stops the clock of this eval's calls.
#[derive(Clone)]
pub(crate) struct Answering(Arc<watch::Sender<usize>>);

impl Default for Answering {
    fn default() -> Self {
        Answering(Arc::new(watch::Sender::new(0)))
    }
}

impl std::fmt::Debug for Answering {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Answering({})", *self.0.borrow())
    }
}

impl Answering {
    /// Counts one request being answered until the guard drops.
    pub(crate) fn start(&self) -> AnsweringOne<'_> {
        self.0.send_modify(|n| *n += 1);
        AnsweringOne(self)
    }

    /// Watches the count (a call's deadline pauses while it is above zero).
    pub(crate) fn subscribe(&self) -> watch::Receiver<usize> {
        self.0.subscribe()
    }
}

/// One request being answered (see [`Answering::start`]).
pub(crate) struct AnsweringOne<'a>(&'a Answering);

impl Drop for AnsweringOne<'_> {
    fn drop(&mut self) {
        self.0.0.send_modify(|n| *n -= 1);
    }
}
