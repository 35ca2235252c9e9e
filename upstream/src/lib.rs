//! Upstream MCP servers, fronted by codemode: each upstream tool `t` of server `s` appears to
//! scripts as `codemode.s__t(args)`.
//!
//! * [`UpstreamSpec`] says how to reach one server (a stdio child or a streamable-HTTP URL) and
//!   how long to wait for it.
//! * [`UpstreamPool`] keeps the connections (legacy `initialize` lifecycle, elicitation
//!   declared), the live tool list (following `notifications/tools/list_changed`), restarts
//!   dead servers, and is the [`ToolHost`](codemode_runtime::ToolHost) scripts call.
//! * [`UpstreamElicitation`] answers the servers' own `elicitation/create` requests.
//! * [`CallRelay`] receives a server's progress and log messages about the calls of one eval
//!   ([`UpstreamPool::call_relayed`]).
//!
//! Tool results become JS values: `structuredContent` when present; else one content block's
//! value, or an array of them for several (a text block is its text parsed as JSON when it is
//! JSON, else the text; other blocks are their JSON). `isError` results reject with the
//! upstream's text as the message.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::collections::HashMap;
//! use codemode_upstream::{UpstreamPool, UpstreamSpec};
//! use codemode_runtime::{CallContext, EvalId, ToolHost};
//!
//! let mut upstreams = HashMap::new();
//! upstreams.insert("fs".to_string(), UpstreamSpec::stdio("mcp-server-filesystem", ["/tmp"]));
//! let pool = UpstreamPool::connect(upstreams).await?;
//! let cx = CallContext::detached(EvalId(1), 1);
//! let listing = pool.call("fs__list_directory", serde_json::json!({"path": "/tmp"}), &cx).await?;
//! # let _ = listing; Ok(()) }
//! ```

pub mod catalog;
mod client;
mod commands;
mod connection;
mod convert;
pub mod crypto;
mod pool;
mod relay;
pub mod resources;
mod schemas;
mod spec;
mod transport;

pub use commands::CommandTools;
pub use schemas::SchemaCache;

pub use client::{DeclineElicitation, UpstreamElicitation};
pub use connection::UpstreamStatus;
pub use pool::UpstreamPool;
pub use relay::{CallRelay, LogMessage};
pub use spec::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT, UpstreamError, UpstreamSpec, UpstreamTransport,
    upstream_specs, validate_server_name,
};
