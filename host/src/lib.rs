//! codemode-host: the wiring of codemode — the governed eval ([`session`]) that every entry
//! point runs, the MCP server ([`server`], started with [`server::Server::builder`]), the
//! script's tools ([`tools`]: the built-ins, and the upstream ones of [`codemode_upstream`]),
//! the channels that ask a human ([`approvals`]) and how a waiting eval outlives its process in
//! the durable records of [`codemode_store`] ([`server::durable`]).
//!
//! The server in a process of your own, over stdio, with the embedded default config (what
//! `codemode serve` does without flags):
//!
//! ```no_run
//! use codemode_host::server::{DEFAULT_CONFIG, Server};
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

pub mod approvals;
pub mod auth;
pub mod server;
pub mod session;
pub mod tools;
