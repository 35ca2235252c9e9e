//! Calls to an upstream server that is still starting wait for it before they are decided.

use codemode_policies::PolicyToolHost;
use codemode_runtime::ToolHost;
use codemode_upstream::UpstreamPool;

/// Holds a call to a tool of an upstream server still in its first connection attempt until
/// that attempt ends (at most the server's `startTimeoutSeconds`), *before* the policy layer
/// decides it: the profile then sees the server's real tool list (a call it asks about is
/// asked, not waved through as an unknown tool).
pub(super) struct StartupGate {
    pub(super) inner: PolicyToolHost,
    pub(super) upstreams: Option<UpstreamPool>,
}

impl ToolHost for StartupGate {
    fn call<'a>(
        &'a self,
        name: &'a str,
        args: serde_json::Value,
        cx: &'a codemode_runtime::CallContext,
    ) -> codemode_runtime::BoxFuture<'a, Result<serde_json::Value, codemode_runtime::ToolError>>
    {
        Box::pin(async move {
            if let (Some(pool), Some((server, _))) = (&self.upstreams, name.split_once("__"))
                && pool.is_starting(server)
            {
                pool.wait_started(server).await;
            }
            self.inner.call(name, args, cx).await
        })
    }

    fn tool_names(&self) -> Vec<String> {
        self.inner.tool_names()
    }
}
