//! The MCP face of codemode: [`CodemodeServer`], an rmcp `ServerHandler` routing each request —
//! `tools/list` to [`listing`](super::listing), the eval tools to [`eval`](super::eval), the
//! catalog tools to [`crate::tools`].

use std::sync::Arc;

use codemode_policies::{Caller, Config, SessionApprovals, neutralize};
use rmcp::model::*;
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};

use super::eval_tools::{EVAL_TOOL, PROFILE_TOOL_PREFIX};
use super::relay::SessionLogLevel;
use super::state::ServerState;
use crate::boxed;
use crate::tools::{self, GET_TOOLS, SEARCH_TOOLS};

/// One handler per MCP session (per request for stateless 2026-07-28 HTTP clients): the shared
/// state plus what belongs to the session (its id, its "approved for the session" tools).
#[derive(Clone)]
pub struct CodemodeServer {
    pub(super) state: Arc<ServerState>,
    pub(super) session_id: String,
    pub(super) approvals: SessionApprovals,
    /// The level of upstream log messages the session's client wants (`logging/setLevel`).
    pub(super) log_level: SessionLogLevel,
    /// Ends the session's resource watches when the last clone of this handler goes.
    _end: Arc<super::watchers::SessionEnd>,
}

impl CodemodeServer {
    /// A handler for a new session.
    pub fn new(state: Arc<ServerState>) -> Self {
        let session_id = state.new_session_id();
        let end = super::watchers::SessionEnd {
            watchers: state.resource_watchers.clone(),
            upstreams: Arc::new(state.upstreams.clone()),
            session_id: session_id.clone(),
        };
        CodemodeServer {
            state,
            session_id,
            approvals: SessionApprovals::new(),
            log_level: SessionLogLevel::default(),
            _end: Arc::new(end),
        }
    }
}

impl CodemodeServer {
    /// The profile `search_tools` / `get_tools` answer for as MCP tools: the one named by the
    /// `profile` argument (the caller must have its permissions), else the base `eval`'s.
    fn discovery_profile(
        &self,
        args: &Value,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<Option<Arc<codemode_policies::Profile>>, McpError> {
        let config = self.state.config();
        let caller = crate::auth::caller_of(&ctx.extensions);
        let (tool, name) = match args.get("profile") {
            None | Some(Value::Null) => (
                EVAL_TOOL.to_string(),
                config.evaluation.default_profile.clone(),
            ),
            Some(Value::String(name)) => {
                // A profile the caller may not use is as unknown as one that does not exist.
                let tool = format!("{PROFILE_TOOL_PREFIX}{name}");
                if config.profile(name).is_none()
                    || !super::eval_tools::missing_permissions(&config, &tool, &caller).is_empty()
                {
                    return Err(McpError::invalid_params(
                        unknown_profile(name, &config, &caller),
                        None,
                    ));
                }
                (tool, Some(name.clone()))
            }
            Some(_) => {
                return Err(McpError::invalid_params("`profile` must be a string", None));
            }
        };
        // Without `profile`: the base `eval`'s view, refused as `eval` itself is to a caller
        // who may not use it (without naming what it requires).
        if !super::eval_tools::missing_permissions(&config, &tool, &caller).is_empty() {
            return Err(super::eval_tools::unknown_tool(&tool));
        }
        Ok(name.and_then(|n| config.profile(&n).cloned()))
    }
}

impl ServerHandler for CodemodeServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(capabilities())
            .with_server_info(Implementation::new("codemode", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "codemode runs JavaScript that calls tools. Use `eval` (or codemode_eval_<profile>) with code that \
                 calls `codemode.<server>__<tool>(args)`; discover tools with search_tools and get_tools.",
            )
    }

    #[expect(
        deprecated,
        reason = "MCP logging, deprecated from 2026-07-28 on, is what clients of 2025-11-25 and older set levels with"
    )]
    fn set_level(
        &self,
        request: SetLevelRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + Send + '_ {
        boxed(async move {
            self.log_level.set(&request.level);
            Ok(())
        })
    }

    fn on_initialized(
        &self,
        ctx: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + Send + '_ {
        boxed(async move {
            self.state.add_legacy_peer(ctx.peer.clone());
        })
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    fn listen(
        &self,
        ctx: SubscriptionContext,
    ) -> impl Future<Output = Result<(), McpError>> + Send + '_ {
        boxed(async move {
            self.state.add_subscriber(ctx.sink().clone());
            let watched = self.watch_stream_resources(&ctx).await;
            ctx.cancelled().await;
            self.unwatch_stream_resources(watched).await;
            Ok(())
        })
    }

    fn subscribe(
        &self,
        req: SubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + Send + '_ {
        boxed(async move { self.resource_subscribe(&req.uri, &ctx).await })
    }

    fn unsubscribe(
        &self,
        req: UnsubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + Send + '_ {
        boxed(async move {
            self.resource_unsubscribe(&req.uri, &ctx).await;
            Ok(())
        })
    }

    fn list_resources(
        &self,
        _req: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListResourcesResult, McpError>> + Send + '_ {
        boxed(async move { Ok(self.resources_list(&ctx).await) })
    }

    fn list_resource_templates(
        &self,
        _req: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListResourceTemplatesResult, McpError>> + Send + '_ {
        boxed(async move { Ok(self.resource_templates_list(&ctx).await) })
    }

    fn read_resource(
        &self,
        req: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ReadResourceResponse, McpError>> + Send + '_ {
        boxed(async move { self.resource_read(&req.uri, &ctx).await.map(Into::into) })
    }

    fn list_prompts(
        &self,
        _req: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListPromptsResult, McpError>> + Send + '_ {
        boxed(async move { Ok(self.prompts_list(&ctx).await) })
    }

    fn get_prompt(
        &self,
        req: GetPromptRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetPromptResponse, McpError>> + Send + '_ {
        boxed(async move { self.prompt_get(req, &ctx).await.map(Into::into) })
    }

    fn complete(
        &self,
        req: CompleteRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CompleteResult, McpError>> + Send + '_ {
        boxed(async move { Ok(self.completion(req, &ctx).await) })
    }

    fn list_tools(
        &self,
        _req: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListToolsResult, McpError>> + Send + '_ {
        boxed(async move {
            let caller = crate::auth::caller_of(&ctx.extensions);
            Ok(ListToolsResult::with_all_items(self.tools(&caller)))
        })
    }

    fn call_tool(
        &self,
        req: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, McpError>> + Send + '_ {
        boxed(async move {
            let name = req.name.as_ref();
            let args = req
                .arguments
                .clone()
                .map(Value::Object)
                .unwrap_or_else(|| json!({}));
            match name {
                SEARCH_TOOLS | GET_TOOLS => {
                    let profile = self.discovery_profile(&args, &ctx)?;
                    if name == GET_TOOLS {
                        tools::wait_for_named_servers(
                            &self.state.upstreams,
                            &args,
                            profile.as_deref(),
                        )
                        .await;
                    }
                    let (catalog, asked) = tools::visible_to(
                        tools::catalog(&self.state.upstreams),
                        profile.as_deref(),
                    );
                    let result = if name == SEARCH_TOOLS {
                        tools::search_tools(&catalog, &args)
                    } else {
                        let observed = tools::ObservedTypes::new(
                            self.state.upstreams.clone(),
                            profile.as_deref(),
                            self.state.config().outputs.clone(),
                        );
                        tools::get_tools(&catalog, &args, &observed)
                    }
                    .map(|v| tools::mark_asked(v, &asked))
                    .map(|v| tools::mark_unavailable(v, &self.state.upstreams, profile.as_deref()));
                    Ok(match result {
                        Ok(value) => {
                            let text = if name == GET_TOOLS {
                                tools::get_tools_text(&value)
                            } else {
                                neutralize(&serde_json::to_string(&value).unwrap_or_default())
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
                _ => Err(super::eval_tools::unknown_tool(name)),
            }
        })
    }
}

/// Tools, and the upstreams' resources, prompts and completions (their lists change), and
/// `logging`: upstream servers' log messages about an eval's calls reach its client.
#[expect(
    deprecated,
    reason = "MCP logging, deprecated from 2026-07-28 on, is what clients of 2025-11-25 and older use"
)]
fn capabilities() -> ServerCapabilities {
    ServerCapabilities::builder()
        .enable_completions()
        .enable_logging()
        .enable_prompts()
        .enable_resources()
        .enable_tools()
        .enable_prompts_list_changed()
        .enable_resources_list_changed()
        .enable_resources_subscribe()
        .enable_tool_list_changed()
        .build()
}

/// `unknown profile `x`; profiles you may use: `a`, `b``: only the profiles whose eval tools
/// the caller may use (the others stay hidden, as in `tools/list`).
fn unknown_profile(name: &str, config: &Config, caller: &Caller) -> String {
    let usable: Vec<String> = super::eval_tools::usable_eval_tools(config, caller)
        .iter()
        .filter_map(|alt| alt.profile.as_ref().map(|p| format!("`{}`", p.name())))
        .collect();
    let name = neutralize(name);
    if usable.is_empty() {
        format!("unknown profile `{name}`; no profile is available to you")
    } else {
        format!(
            "unknown profile `{name}`; profiles you may use: {}",
            usable.join(", ")
        )
    }
}
