//! Upstream MCP servers, fronted by codemode: each upstream tool `t` of server `s` appears to
//! scripts as `codemode.s__t(args)`.
//!
//! # Connecting
//! * [`UpstreamSpec`] says how to reach one server (a stdio child or a streamable-HTTP URL,
//!   [`UpstreamTransport`]) and how long to wait for it; [`UpstreamSpec::of_config`] reads the
//!   config's `mcpServers`.
//! * [`UpstreamPool`] keeps the connections (legacy `initialize` lifecycle, elicitation
//!   declared), the live tool list (following `notifications/tools/list_changed`), restarts
//!   dead servers ([`UpstreamStatus`] says how each is), and is the
//!   [`ToolHost`](codemode_runtime::ToolHost) scripts call. Beside the servers' tools it serves
//!   the config's local [`CommandTools`].
//! * [`oauth::Logins`] holds the OAuth logins of the HTTP servers that want one; [`crypto`]
//!   installs the one TLS provider before any HTTP client is built.
//!
//! # One eval's calls
//! An eval calls [`UpstreamPool::call_in`] with a [`CallScope`]: what it lends the calls.
//! [`CallRelay`] receives a server's progress and log messages about them;
//! [`UpstreamElicitation`] answers its `elicitation/create` requests during them,
//! [`CallSampler`] its `sampling/createMessage` requests (declared only by a pool told it can
//! route them).
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
//! values are added under its `_media` member ([`codemode_policies::MEDIA_KEY`]). The eval
//! attaches the blocks its result refers to ([`Media::referenced`]) to its MCP result; see
//! [`media`].
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
//!
//! # What scripts and clients see
//! [`catalog::ToolInfo`] is one tool as scripts see it: ranked by [`catalog::ToolInfo::search`]
//! (`search_tools`) and declared in TypeScript by [`catalog::ToolInfo::declarations`]
//! (`get_tools`). The servers' resources are shown to codemode's own clients under mapped URIs
//! ([`resources::MappedUri`]), and a profile's `resources` globs match their policy names.
//!
//! ```
//! use codemode_upstream::catalog::ToolInfo;
//! use codemode_upstream::resources::MappedUri;
//! use serde_json::json;
//!
//! let tools = [ToolInfo {
//!     name: "fs__read_file".into(),
//!     description: "Read a file. Returns its text.".into(),
//!     input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}},
//!                          "required": ["path"]}),
//!     output_schema: None,
//! }];
//! let hits = ToolInfo::search(&tools, "read a file", 5);
//! assert_eq!(hits[0].call, "await codemode.fs__read_file({ path })");
//! assert!(ToolInfo::declarations(&tools).contains("fs__read_file(args: "));
//!
//! let uri = MappedUri::parse("codemode://fs/file:///tmp/secre%74").unwrap();
//! assert_eq!((uri.server, uri.original), ("fs", "file:///tmp/secre%74"));
//! assert_eq!(uri.policy_name(), "fs__file:///tmp/secret");
//! assert_eq!(uri.to_string(), "codemode://fs/file:///tmp/secre%74");
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

pub use client::ResourceUpdate;
pub use commands::CommandTools;
pub use connection::UpstreamStatus;
pub use lent::{CallRelay, CallSampler, ElicitationFailed, LogMessage, UpstreamElicitation};
pub use media::{Attachment, KeptMedia, Media};
pub use pool::UpstreamPool;
pub use scope::CallScope;
pub use spec::{UpstreamError, UpstreamSpec, UpstreamTransport};
