//! codemode-host: codemode as an MCP server, and the governed eval every entry point runs.
//!
//! - [`Server`]: the MCP server as a value — [`Server::builder`] takes a config, then
//!   [`ServerBuilder::serve_stdio`], [`ServerBuilder::serve_http`] or
//!   [`ServerBuilder::serve_io`] (any rmcp transport) serve it until shutdown; a
//!   [`Reloader`] hands it a new config.
//! - [`GovernedEval`]: one script run under a profile's policies, asked of a human through an
//!   [`Asker`](codemode_policies::Asker) (for example [`TerminalAsker`]) and audited — what
//!   `codemode run` does; [`result_text`] renders its outcome as the server's text block.
//! - [`catalog`]: the tools a script can call on a pool of upstream servers.
//!
//! Inside (not public): the eval tools and their listing, parking and resuming evals across
//! nodes in the durable store, the approval channels and their HTTP API, authentication.
//!
//! The server in a process of your own, over stdio, with the embedded default config (what
//! `codemode serve` does without flags):
//!
//! ```no_run
//! use codemode_host::{DEFAULT_CONFIG, Server};
//! use codemode_policies::Config;
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let config = Config::from_json_str(DEFAULT_CONFIG)?;
//!     Server::builder(config)
//!         .shutdown_on_signals()
//!         .serve_stdio() // or .serve_http("127.0.0.1:8080".parse()?)
//!         .await?;
//!     Ok(())
//! }
//! ```

mod approvals;
mod auth;
mod server;
mod session;
mod tools;
mod traces;

pub use approvals::TerminalAsker;
pub use approvals::rules::StoredRules;
pub use server::result::render as result_text;
pub use server::{
    DEFAULT_CONFIG, Reloader, ServeError, Server, ServerBuilder, raise_descriptor_limit,
};
pub use session::{AuditTarget, GovernedEval, GovernedEvalBuilder, GovernedStep};
pub use tools::{ForwardElicitation, catalog};

use codemode_runtime::BoxFuture;

/// `future`, boxed so that it is compiled in this crate only (see [`BoxFuture`]): for trait
/// methods whose return type is an `impl Future`, such as the server's MCP handlers, which every
/// transport's service loop polls.
pub(crate) fn boxed<'a, T>(future: impl Future<Output = T> + Send + 'a) -> BoxFuture<'a, T> {
    Box::pin(future)
}
