//! codemode-host: wiring — the MCP server, upstream MCP clients, elicitation, hot reload, the CLI.

pub mod catalog;
pub mod cli;
pub mod server;
pub mod terminal;
pub mod upstream;
