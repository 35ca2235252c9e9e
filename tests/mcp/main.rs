//! End-to-end tests of `codemode serve` driven by real MCP clients.
//!
//! Each test writes a config into its own scratch directory (`target/tmp/mcp/<test>-<pid>`), and runs
//! a client script from `tests/mcp/clients/`: the Python SDK (`mcp` 2.3.0) in `auto` mode
//! (protocol 2026-07-28, where elicitation is an input-required result the client answers by
//! retrying the call) or `legacy` mode (2025-11-25, `elicitation/create`), over stdio (the client
//! starts `codemode serve`) or streamable HTTP (the test starts `codemode serve --http`); or the
//! TypeScript SDK 1.32.2. The client prints one JSON object of observations; the test asserts on
//! it and on the audit log. Upstream servers are the pinned real peers of `tests/support`.
//!
//! Client stderr (with codemode's own log over stdio) is printed, and shown when a test fails;
//! a failed test keeps its scratch directory.
#![expect(
    clippy::print_stderr,
    reason = "a test prints the output of the servers and clients it started, for a failure"
)]

use codemode_test_support::peers;

mod harness;

mod approvals;
mod audit;
mod auth;
mod browser;
mod cancel;
mod classes;
mod codeforms;
mod commands;
mod conformance;
mod core;
mod discovery;
mod fair;
mod fallback;
mod hitl_gateway;
mod joined;
mod media;
mod notifications;
mod oauth;
mod oauth_challenges;
mod oauth_resource;
mod observed;
mod prompt;
mod reload;
mod remember;
mod resources;
mod results;
mod rights;
mod sampling;
mod schemas;
mod sessions;
mod startup;
mod subscriptions;
mod surface;
mod traces;
mod typescript;
mod upstream;
mod upstream_elicitation;
