//! Durable suspended evals across a real cluster: three `codemode serve --http` processes (each
//! with its own audit directory) behind HAProxy, sharing one Redis (Debian's `redis-server` and
//! `haproxy`, installed by `tests/support/debian.sh` when missing and started by the test on
//! loopback ports of its own). The upstream is the real `server-filesystem` on a directory the
//! nodes share; the `gate` profile asks a human before `fs__write_file`.
//!
//! Every flow runs the same script, which builds a 10,000-element array, reads a file, writes it
//! back with one more line (the asked call), and reads it again; each asserts that the result
//! equals an uninterrupted run's (one node, answered while the eval is still in memory), that the
//! file got the line once, and that across all nodes' audit directories there is exactly one
//! `eval` record and one `tool_call` record per call.
#![expect(
    clippy::print_stderr,
    reason = "a test prints the output of the nodes it started, for a failure"
)]

mod client;
mod flow;
mod guests;
mod harness;
mod node;

mod container;
mod failures;
mod health;
mod joined;
mod kubernetes;
mod legacy;
mod limits;
mod local_dir;
mod metrics;
mod outages;
mod questions;
mod redteam;
mod remember;
mod restart;
mod scopes;
mod service;
mod stateless;
mod streams;
mod traces;
