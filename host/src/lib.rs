//! codemode-host: the wiring of codemode — the governed eval ([`session`]) that every entry
//! point runs, the CLI ([`cli`]), the MCP server ([`server`]), upstream MCP clients
//! ([`upstream`]), the script's tools ([`tools`], [`catalog`]), the channels that ask a
//! human ([`approvals`]) and the durable, sealed records that let a waiting eval outlive its
//! process ([`store`]); the process's one TLS and one JWT crypto provider ([`crypto`]).

pub mod approvals;
pub mod auth;
pub mod catalog;
pub mod cli;
pub mod crypto;
pub mod server;
pub mod session;
pub mod store;
pub mod tools;
pub mod upstream;
