//! codemode's MCP server for one case, in this process: [`Server::serve_io`] on one end of a
//! `tokio::io::duplex` pipe, an rmcp client on the other. In-process rather than a
//! `codemode serve` child: no binary to locate, the runtime (its compiled guest) shared by
//! every case, and the end of a case is an event — the client closes, the server drains its
//! evals, stops the upstreams and flushes the audit log, and its task returns — after which the
//! case's audit records are complete on disk.

use codemode_host::{ServeError, Server};
use codemode_policies::Config;
use codemode_runtime::Runtime;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, Tool};
use rmcp::service::{RoleClient, RunningService};
use serde_json::Value;
use tokio::task::JoinHandle;

use crate::api::ToolSpec;

/// The pipe's buffer: an eval's result (bounded by `limits.maxOutput`) passes through it.
const PIPE_BYTES: usize = 1 << 20;

/// A running server and its client.
pub(crate) struct Session {
    client: RunningService<RoleClient, ()>,
    served: JoinHandle<Result<(), ServeError>>,
}

impl Session {
    /// Starts a server for `config` (its upstreams too) and connects to it.
    pub async fn start(config: Config, runtime: Runtime) -> Result<Session, String> {
        let (server_io, client_io) = tokio::io::duplex(PIPE_BYTES);
        let served = tokio::spawn(Server::builder(config).runtime(runtime).serve_io(server_io));
        match ().serve(client_io).await {
            Ok(client) => Ok(Session { client, served }),
            Err(e) => {
                // The server's own error says more than the client's (a bad upstream, say).
                let why = match served.await {
                    Ok(Err(server)) => server.to_string(),
                    _ => e.to_string(),
                };
                Err(format!("codemode's MCP server did not start: {why}"))
            }
        }
    }

    /// `tools/list`, kept to the eval tool `eval_tool`, `search_tools` and `get_tools`.
    pub async fn tools(&self, eval_tool: &str) -> Result<Vec<ToolSpec>, String> {
        let listed: Vec<Tool> = self
            .client
            .list_all_tools()
            .await
            .map_err(|e| format!("tools/list: {e}"))?;
        let wanted = [eval_tool, "search_tools", "get_tools"];
        let specs: Vec<ToolSpec> = listed
            .iter()
            .filter(|t| wanted.contains(&t.name.as_ref()))
            .map(|t| ToolSpec {
                name: t.name.to_string(),
                description: t.description.as_deref().unwrap_or_default().to_string(),
                input_schema: Value::Object((*t.input_schema).clone()),
            })
            .collect();
        if !specs.iter().any(|t| t.name == eval_tool) {
            let names: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
            return Err(format!(
                "tools/list has no `{eval_tool}` (listed: {})",
                names.join(", ")
            ));
        }
        Ok(specs)
    }

    /// `tools/call`: the result's text (its text blocks joined) and whether it is an error. A
    /// protocol error (an unknown tool, arguments that are not an object) is an error text
    /// too: the model reads it as it would through any MCP client.
    pub async fn call(&self, name: &str, arguments: &Value) -> (String, bool) {
        let Value::Object(arguments) = arguments else {
            return (
                format!("error: the arguments of `{name}` must be a JSON object"),
                true,
            );
        };
        let params = CallToolRequestParams::new(name.to_string()).with_arguments(arguments.clone());
        match self.client.call_tool(params).await {
            Ok(result) => {
                let text: Vec<&str> = result
                    .content
                    .iter()
                    .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
                    .collect();
                (text.join("\n"), result.is_error == Some(true))
            }
            Err(e) => (format!("error: {e}"), true),
        }
    }

    /// Closes the client and waits for the server to finish (its audit log flushed).
    pub async fn finish(self) -> Result<(), String> {
        let _ = self.client.cancel().await;
        match self.served.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("codemode's MCP server: {e}")),
            Err(e) => Err(format!("codemode's MCP server stopped abnormally: {e}")),
        }
    }
}
