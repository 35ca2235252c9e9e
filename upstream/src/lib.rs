//! Upstream MCP servers, fronted by codemode: each upstream tool `t` of server `s` appears to
//! scripts as `codemode.s__t(args)`.
//!
//! * [`UpstreamSpec`] says how to reach one server (a stdio child or a streamable-HTTP URL) and
//!   how long to wait for it.
//! * [`UpstreamPool`] keeps the connections (legacy `initialize` lifecycle, elicitation
//!   declared), the live tool list (following `notifications/tools/list_changed`), restarts
//!   dead servers, and is the [`ToolHost`](codemode_runtime::ToolHost) scripts call.
//! * [`CallRelay`] receives a server's progress and log messages about the calls of one eval
//!   ([`UpstreamPool::call_in`]); [`UpstreamElicitation`] answers its `elicitation/create`
//!   requests during them, [`CallSampler`] its `sampling/createMessage` requests (declared only
//!   by a pool told it can route them).
//!
//! Tool results become JS values: `structuredContent` when present; else one content block's
//! value, or an array of them for several (a text block is its text parsed as JSON when it is
//! JSON, else the text). `isError` results reject with the upstream's text as the message.
//!
//! Non-text blocks (image, audio, embedded resource, resource link) are *media*: the script
//! gets a small value with the block's type, metadata, size and an unguessable `id`
//! (`{type: "image", mimeType, size, id}`), never the bytes, which stay host-side in the
//! eval's [`Media`] store within its budget (`limits.maxMediaBytes`); a block past it is
//! dropped and its value says so (`omitted`). Beside `structuredContent` (an object), their
//! values are added under its `_media` member ([`codemode_policies::MEDIA_KEY`]). A governed
//! eval calls [`UpstreamPool::call_in`] with its store (in a [`CallScope`]) and attaches the blocks its result
//! refers to ([`Media::referenced`]) to its MCP result; see [`media`].
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

mod bounded;
mod bounded_http;
pub mod catalog;
mod child;
mod client;
mod commands;
mod connection;
mod convert;
pub mod crypto;
mod isolated;
mod lent;
pub mod media;
pub mod oauth;
mod pool;
mod relay;
pub mod resources;
mod schemas;
mod scope;
mod sequence;
mod server_requests;
mod spec;
mod subscribed;
mod subscriptions;
mod transport;
mod url_secrets;

pub use commands::CommandTools;
pub use schemas::SchemaCache;

pub use client::ResourceUpdate;
pub use connection::UpstreamStatus;
pub use isolated::EvalSessions;
pub use lent::{
    Answering, CallRelay, CallSampler, ElicitationFailed, LogMessage, UpstreamElicitation,
};
pub use media::{Attachment, DEFAULT_MAX_MEDIA_BYTES, KeptMedia, Media};
pub use pool::UpstreamPool;
pub use scope::CallScope;
pub use spec::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT, UpstreamError, UpstreamSpec, UpstreamTransport,
    upstream_specs, validate_server_name,
};
