//! The MCP face of codemode: [`CodemodeServer`], an rmcp `ServerHandler`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_policies::{
    AuditRecord, EvalAuditRecord, PolicyToolHost, Profile, SessionApprovals, extract_tool_calls,
};
use codemode_runtime::{CancellationToken, EvalOutcome, ToolHost};
use rmcp::model::*;
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};

use super::ask::{AskApprover, Asker, NoAsker, PeerAsker};
use super::result::{eval_result, outcome_schema};
use super::script_tools::{self, GET_TOOLS, SEARCH_TOOLS, ScriptTools};
use super::state::ServerState;
use super::suspend::{Event, Suspended};

/// Name of the unprofiled eval tool.
pub const EVAL_TOOL: &str = "eval";
/// Prefix of the per-profile eval tools: `codemode_eval_<profile>`.
pub const PROFILE_TOOL_PREFIX: &str = "codemode_eval_";
/// How often a long eval reports progress, when the client asked for it.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// One handler per MCP session (per request for stateless 2026-07-28 HTTP clients): the shared
/// state plus what belongs to the session (its id, its "approved for the session" tools).
#[derive(Clone)]
pub struct CodemodeServer {
    state: Arc<ServerState>,
    session_id: String,
    approvals: SessionApprovals,
}

impl CodemodeServer {
    /// A handler for a new session.
    pub fn new(state: Arc<ServerState>) -> Self {
        let session_id = state.new_session_id();
        CodemodeServer {
            state,
            session_id,
            approvals: SessionApprovals::new(),
        }
    }

    /// The tools this server lists now.
    pub fn tools(&self) -> Vec<Tool> {
        let config = self.state.config();
        let namespaces = self.namespaces();
        let mut tools = Vec::new();
        let default = config.evaluation.default_profile.as_deref();
        tools.push(eval_tool(
            EVAL_TOOL,
            default,
            &namespaces,
            default.is_none(),
        ));
        for name in config.evaluation.profiles.keys() {
            tools.push(eval_tool(
                &format!("{PROFILE_TOOL_PREFIX}{name}"),
                Some(name),
                &namespaces,
                false,
            ));
        }
        tools.push(
            Tool::new(
                SEARCH_TOOLS,
                "Search the tools that eval scripts can call (upstream MCP tools as codemode.<server>__<tool>, and built-ins), \
                 by keywords. Returns names, one-line descriptions and how to call each from a script.",
                schema_object(script_tools::search_schema()),
            )
            .with_annotations(ToolAnnotations::new().read_only(true)),
        );
        tools.push(
            Tool::new(
                GET_TOOLS,
                "TypeScript declarations of the named script tools (arguments and results, with doc comments), to write correct eval code.",
                schema_object(script_tools::get_schema()),
            )
            .with_annotations(ToolAnnotations::new().read_only(true)),
        );
        tools
    }

    /// `server (N tools)` for each upstream server, for the eval tools' descriptions.
    fn namespaces(&self) -> Vec<String> {
        let mut counts: std::collections::BTreeMap<String, usize> = self
            .state
            .config()
            .servers
            .keys()
            .map(|k| (k.clone(), 0))
            .collect();
        for (name, _) in self.state.upstreams.tools() {
            if let Some((server, _)) = name.split_once("__") {
                *counts.entry(server.to_string()).or_default() += 1;
            }
        }
        counts
            .into_iter()
            .map(|(s, n)| format!("{s} ({n} tools)"))
            .collect()
    }

    fn profile_for(&self, tool: &str) -> Result<Option<Arc<Profile>>, String> {
        let config = self.state.config();
        if tool == EVAL_TOOL {
            return Ok(match &config.evaluation.default_profile {
                Some(name) => config.profile(name).cloned(),
                None => None,
            });
        }
        let name = &tool[PROFILE_TOOL_PREFIX.len()..];
        config
            .profile(name)
            .cloned()
            .map(Some)
            .ok_or_else(|| format!("no profile named `{name}` (the config changed?)"))
    }

    async fn call_eval(
        &self,
        req: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let tool = req.name.to_string();
        if let Some(token) = req.request_state.as_deref() {
            // A 2026-07-28 client answering an input-required result.
            let Some(suspended) = self.state.suspensions.get(token) else {
                return Ok(CallToolResult::error(vec![ContentBlock::text(
                    "this eval is no longer waiting for input (it finished, timed out, or the server restarted); run it again",
                )])
                .into());
            };
            if suspended.tool() != tool {
                return Err(McpError::invalid_params(
                    "requestState belongs to another tool",
                    None,
                ));
            }
            if let Some(responses) = &req.input_responses {
                suspended.answer(responses);
            }
            return self.await_suspended(suspended, &ctx).await;
        }

        let code = match req.arguments.as_ref().and_then(|a| a.get("code")) {
            Some(Value::String(code)) => code.clone(),
            _ => {
                return Err(McpError::invalid_params(
                    "`code` (a string of JavaScript) is required",
                    None,
                ));
            }
        };
        let profile = match self.profile_for(&tool) {
            Ok(p) => p,
            Err(message) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into());
            }
        };
        let modern = ctx
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let can_elicit = ctx
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some());

        let suspended = modern.then(|| self.state.suspensions.register(&tool));
        let asker: Arc<dyn Asker> = match (&suspended, can_elicit) {
            (_, false) => Arc::new(NoAsker),
            (Some(s), true) => Arc::new(s.asker()),
            (None, true) => Arc::new(PeerAsker::new(ctx.peer.clone())),
        };
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        // Cancels the sandbox even while guest code runs (see `Runtime::eval_cancellable`).
        let cancel = CancellationToken::new();
        let eval = self.clone().run_eval(
            code,
            profile,
            asker,
            suspended.clone(),
            cancel.clone(),
            done_tx,
        );
        let task = tokio::spawn(eval);
        match suspended {
            Some(s) => {
                s.set_task(task, cancel);
                self.await_suspended(s, &ctx).await
            }
            None => self.await_legacy(task, cancel, done_rx, &ctx).await,
        }
    }

    /// Runs one eval to its end (in its own task, so a 2026-07-28 client can come back for it).
    async fn run_eval(
        self,
        code: String,
        profile: Option<Arc<Profile>>,
        asker: Arc<dyn Asker>,
        suspended: Option<Arc<Suspended>>,
        cancel: CancellationToken,
        done: tokio::sync::oneshot::Sender<EvalOutcome>,
    ) {
        let state = &self.state;
        let eval_id = state.runtime.allocate_eval_id();
        let preview = Arc::new(extract_tool_calls(&code));
        let inner: Arc<dyn ToolHost> =
            Arc::new(ScriptTools::new(state.upstreams.clone(), asker.clone()));
        let mut builder = PolicyToolHost::builder(inner)
            .profile(profile.clone())
            .approver(Arc::new(AskApprover::new(asker.clone())))
            .session_approvals(self.approvals.clone())
            .preview(preview)
            .session_id(Some(self.session_id.clone()));
        let audit = state.audit();
        if let Some(sink) = &audit {
            builder = builder.audit(sink.clone(), state.config().audit.include_args);
        }
        let tools = builder.build();
        state.push_asker(eval_id.0, &asker);
        let mut outcome = state
            .runtime
            .eval_cancellable(eval_id, &code, &state.eval_options(), &tools, &cancel)
            .await;
        if let Some(error) = outcome.error.as_mut() {
            codemode_policies::locate_syntax_error(&code, error);
        }
        state.pop_asker(eval_id.0);
        if let Some(sink) = &audit {
            let record = EvalAuditRecord::from_outcome(
                &outcome,
                eval_id,
                &code,
                Some(&self.session_id),
                profile.as_ref().map(|p| p.name()),
            );
            sink.record(AuditRecord::Eval(record));
        }
        match suspended {
            Some(s) => s.complete(outcome),
            None => {
                let _ = done.send(outcome);
            }
        }
    }

    async fn await_legacy(
        &self,
        task: tokio::task::JoinHandle<()>,
        cancel: CancellationToken,
        done: tokio::sync::oneshot::Receiver<EvalOutcome>,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let abort = task.abort_handle();
        let progress = Progress::new(ctx);
        tokio::pin!(done);
        loop {
            tokio::select! {
                outcome = &mut done => {
                    return match outcome {
                        Ok(outcome) => Ok(eval_result(&outcome).into()),
                        Err(_) => Err(McpError::internal_error("the eval task ended without an outcome", None)),
                    };
                }
                _ = ctx.ct.cancelled() => {
                    // MCP cancellation: stop the sandbox now.
                    cancel.cancel();
                    abort.abort();
                    return Err(McpError::internal_error("cancelled", None));
                }
                _ = progress.tick() => progress.send(ctx).await,
            }
        }
    }

    async fn await_suspended(
        &self,
        suspended: Arc<Suspended>,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let progress = Progress::new(ctx);
        let next = suspended.next_event();
        tokio::pin!(next);
        loop {
            tokio::select! {
                event = &mut next => {
                    return Ok(match event {
                        Event::Complete(outcome) => {
                            self.state.suspensions.remove(suspended.token());
                            eval_result(&outcome).into()
                        }
                        Event::Input(requests) => {
                            InputRequiredResult::new(Some(requests), Some(suspended.token().to_string())).into()
                        }
                    });
                }
                _ = ctx.ct.cancelled() => {
                    suspended.abort();
                    self.state.suspensions.remove(suspended.token());
                    return Err(McpError::internal_error("cancelled", None));
                }
                _ = progress.tick() => progress.send(ctx).await,
            }
        }
    }
}

/// Progress notifications for clients that sent a progress token.
struct Progress {
    token: Option<ProgressToken>,
    started: Instant,
}

impl Progress {
    fn new(ctx: &RequestContext<RoleServer>) -> Self {
        Progress {
            token: ctx.meta.get_progress_token(),
            started: Instant::now(),
        }
    }

    async fn tick(&self) {
        if self.token.is_some() {
            tokio::time::sleep(PROGRESS_EVERY).await;
        } else {
            std::future::pending::<()>().await;
        }
    }

    async fn send(&self, ctx: &RequestContext<RoleServer>) {
        if let Some(token) = &self.token {
            let seconds = self.started.elapsed().as_secs_f64().floor();
            let mut param = ProgressNotificationParam::new(token.clone(), seconds);
            param.message = Some(format!("script running for {seconds:.0} s"));
            let _ = ctx.peer.notify_progress(param).await;
        }
    }
}

fn schema_object(value: Value) -> Arc<JsonObject> {
    Arc::new(value.as_object().cloned().unwrap_or_default())
}

/// An eval tool: its description teaches the code form and lists the server namespaces
/// (not every tool), so the listed surface stays small however many tools there are.
fn eval_tool(name: &str, profile: Option<&str>, namespaces: &[String], unrestricted: bool) -> Tool {
    let scope = match (profile, unrestricted) {
        (_, true) => "Runs unrestricted (no profile).".to_string(),
        (Some(p), _) => format!(
            "Runs under the `{p}` profile: some calls may be denied or need a human's approval."
        ),
        (None, _) => String::new(),
    };
    let servers = if namespaces.is_empty() {
        "No upstream servers are configured.".to_string()
    } else {
        format!("Servers: {}.", namespaces.join(", "))
    };
    let description = format!(
        "Run JavaScript in a fresh WebAssembly sandbox and return its JSON result. Write either \
         `async () => {{ ... }}` or a script body using top-level `await` and `return` (without `return`, the \
         last expression is the result). Call tools with `await codemode.<server>__<tool>({{...}})`; calls you \
         do not await run in parallel (`await Promise.all([...])`). Find tools with \
         `await codemode.search_tools({{query: \"...\"}})` and get their TypeScript signatures with \
         `await codemode.get_tools({{names: [...]}})`; ask the user with `await codemode.hitl_request({{question, options}})`. \
         Failed calls throw (ToolError, UnknownToolError, ToolCallDeniedError). console.log output is returned. \
         {servers} {scope}"
    );
    let input = json!({"type": "object", "properties": {"code": {"type": "string", "description": "The JavaScript to run"}},
        "required": ["code"]});
    Tool::new(
        name.to_string(),
        description.trim_end().to_string(),
        schema_object(input),
    )
    .with_raw_output_schema(schema_object(outcome_schema()))
}

impl ServerHandler for CodemodeServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
            .with_server_info(Implementation::new("codemode", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "codemode runs JavaScript that calls tools. Use `eval` (or codemode_eval_<profile>) with code that \
                 calls `codemode.<server>__<tool>(args)`; discover tools with search_tools and get_tools.",
            )
    }

    async fn on_initialized(&self, ctx: NotificationContext<RoleServer>) {
        self.state.add_legacy_peer(ctx.peer.clone());
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(&self, ctx: SubscriptionContext) -> Result<(), McpError> {
        self.state.add_subscriber(ctx.sink().clone());
        ctx.cancelled().await;
        Ok(())
    }

    async fn list_tools(
        &self,
        _req: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        req: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = req.name.as_ref();
        let args = req
            .arguments
            .clone()
            .map(Value::Object)
            .unwrap_or_else(|| json!({}));
        match name {
            SEARCH_TOOLS | GET_TOOLS => {
                let catalog = script_tools::catalog(&self.state.upstreams);
                let result = if name == SEARCH_TOOLS {
                    script_tools::search_tools(&catalog, &args)
                } else {
                    script_tools::get_tools(&catalog, &args)
                };
                Ok(match result {
                    Ok(value) => {
                        let text = if name == GET_TOOLS {
                            value["declarations"]
                                .as_str()
                                .unwrap_or_default()
                                .to_string()
                        } else {
                            serde_json::to_string_pretty(&value).unwrap_or_default()
                        };
                        let mut r = CallToolResult::structured(value);
                        r.content = vec![ContentBlock::text(text)];
                        r
                    }
                    Err(e) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
                }
                .into())
            }
            EVAL_TOOL => self.call_eval(req, ctx).await,
            _ if name.starts_with(PROFILE_TOOL_PREFIX) => self.call_eval(req, ctx).await,
            _ => Err(McpError::invalid_params(
                format!("unknown tool `{name}`"),
                None,
            )),
        }
    }
}
