//! The MCP maintainers' conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! tests/support/setup.sh with the Node 24 it needs) run against codemode, both ways: every
//! server scenario against `codemode serve --http` ([`server`]), and every client scenario but
//! the `auth/*` ones with codemode as the client ([`client`]). Each check must be SUCCESS, or
//! have the status `expected-failures.txt` gives it with a reason ([`checks`]); a failure names
//! the checks and their messages.

mod checks;
mod client;
mod server;
mod suite;
