//! An upstream server's `sampling/createMessage` — a request that the client's model write a
//! message — goes to the [`CallSampler`] of the eval whose call it came during, and to no other.
//!
//! It is routed as an elicitation is ([`crate::server_requests`]): by the HTTP stream it came
//! on, or over stdio only while every call in flight on the connection belongs to one eval;
//! otherwise, or when that eval has no sampler, it is refused with an error saying why and a
//! warning in codemode's own log — never shown to someone else's client. The pool declares the `sampling` capability only
//! when its owner says it can route it ([`crate::UpstreamPool::declare_sampling`]).

#![expect(
    deprecated,
    reason = "SEP-2577 deprecates sampling from protocol 2026-07-28 on, but servers of 2025-11-25 and older ask for it, and a proxy forwards what they ask"
)]

use codemode_runtime::BoxFuture;
use rmcp::ErrorData as McpError;
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult};

use crate::server_requests::Unrouted;

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

/// The error an upstream gets for a sampling request no eval can be found for.
pub(crate) fn unattributed(server: &str, why: Unrouted) -> McpError {
    tracing::warn!("refused a sampling request from upstream `{server}`: {why}");
    McpError::invalid_request(
        format!(
            "codemode refused this sampling request: it could not tie it to one script's call on `{server}` whose client can sample: {why}"
        ),
        None,
    )
}
