//! `UpstreamPool` against real MCP servers (installed by tests/support/setup.sh, which these
//! tests run themselves): server-everything and server-filesystem (npm), mcp-server-time (PyPI).

use codemode_test_support::peers;

mod calls;
mod elicitation;
mod lifecycle;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use codemode_runtime::{CallContext, EvalId, ToolError};
use codemode_upstream::{UpstreamPool, UpstreamSpec};
use serde_json::Value;

pub(crate) fn stdio((program, args): (PathBuf, Vec<String>)) -> UpstreamSpec {
    UpstreamSpec::stdio(program.display().to_string(), args)
}

pub(crate) fn everything() -> UpstreamSpec {
    peers::ensure_installed();
    stdio(peers::everything_server_cmd())
}

pub(crate) fn cx() -> CallContext {
    CallContext::detached(EvalId(1), 1)
}

pub(crate) async fn pool(specs: Vec<(&str, UpstreamSpec)>) -> UpstreamPool {
    let map: HashMap<String, UpstreamSpec> =
        specs.into_iter().map(|(n, s)| (n.to_string(), s)).collect();
    UpstreamPool::connect(map)
        .await
        .expect("valid upstream config")
}

/// Polls `cond` every 50 ms until it holds, failing after `limit`.
pub(crate) async fn wait_until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) fn failed_message(r: Result<Value, ToolError>) -> String {
    match r {
        Err(ToolError::Failed { message, .. }) => message,
        other => panic!("expected ToolError::Failed, got {other:?}"),
    }
}
