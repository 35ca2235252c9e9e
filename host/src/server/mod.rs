//! `codemode serve`: codemode as an MCP server over stdio or streamable HTTP.
//!
//! Tools: `eval` (unrestricted unless `evaluation.defaultProfile` is set), `codemode_eval_<profile>`
//! per profile, `search_tools`, `get_tools`. Scripts reach upstream MCP tools as
//! `codemode.<server>__<tool>` and the built-ins `search_tools`, `get_tools` and
//! `hitl_request`. Human approval goes to the session's own client: `elicitation/create` on
//! protocol 2025-11-25 and older, input-required results on 2026-07-28 (see [`suspend`]).
//!
//! Each eval request becomes a [`crate::session::GovernedEval`]; this module adds only what is
//! MCP's: the tool listing (`listing`), the request's wait and suspension (`eval`, [`suspend`]),
//! progress notifications (`progress`), results ([`result`]), hot reload ([`reload`]), graceful
//! shutdown ([`drain`]), and the `ServerHandler` routing ([`CodemodeServer`]).

pub(crate) mod body;
mod builder;
mod delivery;
mod descriptors;
pub mod drain;
pub mod durable;
mod elide;
mod error;
mod eval;
mod eval_tools;
pub mod failover;
pub mod fair;
pub mod finished;
mod guard;
mod handler;
#[cfg(test)]
mod in_process_tests;
mod legacy;
pub(crate) mod listener;
mod listing;
pub mod ops;
pub mod owner;
mod progress;
#[cfg(test)]
mod redis_tests;
mod relay;
pub mod reload;
mod resources;
pub mod result;
mod serve;
pub mod sessions;
mod state;
mod subscriptions;
pub mod suspend;
mod watchers;

pub use builder::{DEFAULT_CONFIG, Reloader, Server, ServerBuilder};
pub use error::ServeError;
pub use eval::enable_durable;
pub use handler::CodemodeServer;
pub use listener::raise_descriptor_limit;
pub use serve::{HttpOptions, serve_http};
pub(crate) use serve::{live_limits, serve_io};
pub use state::ServerState;
