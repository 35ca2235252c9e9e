//! An eval requested over MCP: which profile the called tool stands for, which channel can ask
//! the client's human, and how the request waits — on the eval itself (protocol 2025-11-25 and
//! older: questions go out as `elicitation/create` while the request is open), or on its
//! [`Suspended`] entry (2026-07-28: questions come back as input-required results, and the
//! client's retry with `requestState` resumes the wait).

use std::sync::Arc;

use codemode_policies::Profile;
use codemode_runtime::{CancellationToken, EvalOutcome};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, InputRequiredResult,
    ProtocolVersion,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::Value;

use super::fair::{EvalSlot, client_key};
use super::handler::CodemodeServer;
use super::listing::missing_permissions;
use super::listing::{EVAL_TOOL, PROFILE_TOOL_PREFIX};
use super::progress::Progress;
use super::result::eval_result;
use super::suspend::{Event, Suspended};
use crate::approvals::{Asker, NoAsker, PeerAsker};
use crate::session::{AuditTarget, Caller, GovernedEval};

impl CodemodeServer {
    /// The bytes the result may take in an eval's text block: `limits.maxResultText` of the
    /// config in force when the eval ends (a reload applies to the next result).
    fn text_budget(&self) -> usize {
        usize::try_from(self.state.config().limits.max_result_text).unwrap_or(usize::MAX)
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

    pub(super) async fn call_eval(
        &self,
        req: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let tool = req.name.to_string();
        // A shutdown waits for this request to answer (the eval's task counts apart: a
        // 2026-07-28 eval outlives its request while it waits for input).
        let _request = self.state.drain.enter();
        if let Some(token) = req.request_state.as_deref() {
            // A 2026-07-28 client answering an input-required result.
            let Some(suspended) = self.state.suspensions.get(token) else {
                let message = if self.state.suspensions.was_dropped(token) {
                    let kept = self.state.config().limits.unfetched_results;
                    format!(
                        "this eval's result was dropped before it was fetched: the server keeps at most {} unfetched results and {} bytes of them (limits.unfetchedResults), the oldest dropped first; run it again",
                        kept.max_count, kept.max_bytes
                    )
                } else {
                    "this eval is no longer waiting for input (it finished, timed out, or the server restarted); run it again".to_string()
                };
                return Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into());
            };
            if suspended.tool() != tool {
                return Err(McpError::invalid_params(
                    "requestState belongs to another tool",
                    None,
                ));
            }
            if let Some(responses) = &req.input_responses {
                let refused = suspended.answer(responses);
                if !refused.is_empty() {
                    tracing::warn!(
                        "refused answers to questions this eval has not asked (or no longer asks): {}",
                        refused.join(", ")
                    );
                }
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
        let caller = crate::auth::caller_of(&ctx.extensions);
        let missing = missing_permissions(&self.state.config(), &tool, &caller);
        if !missing.is_empty() {
            return Err(McpError::invalid_params(
                format!(
                    "`{tool}` requires the permission{} {} (caller `{}` lacks {})",
                    if missing.len() == 1 { "" } else { "s" },
                    missing
                        .iter()
                        .map(|p| format!("`{p}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    caller.name,
                    if missing.len() == 1 { "it" } else { "them" },
                ),
                None,
            ));
        }
        let modern = ctx
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        // Refused at once, before a pool slot is taken, when the client is over a cap.
        let client = client_key(&ctx, &caller, modern, &self.session_id);
        let slot = match self
            .state
            .clients
            .try_start(client, self.state.config().limits.per_client)
        {
            Ok(slot) => slot,
            Err(message) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into());
            }
        };
        let can_elicit = ctx
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some());

        let (suspended, _claim) = match modern {
            true => {
                let (entry, claim) = self.state.suspensions.register(&tool);
                (Some(entry), Some(claim))
            }
            false => (None, None),
        };
        let asker: Arc<dyn Asker> = match (&suspended, can_elicit) {
            (_, false) => Arc::new(NoAsker),
            (Some(s), true) => Arc::new(s.asker()),
            (None, true) => Arc::new(PeerAsker::new(ctx.peer.clone())),
        };
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        // Cancels the sandbox even while guest code runs (see `Runtime::eval_cancellable`), on
        // MCP cancellation or when a shutdown gives up waiting.
        let cancel = self.state.drain.eval_token();
        let running = self.state.drain.enter();
        let eval = self.clone().run_eval(
            code,
            (caller, profile, slot),
            asker,
            suspended.clone(),
            cancel.clone(),
            done_tx,
        );
        // On a thread of its own (the blocking pool), not on the async workers: guest code runs
        // without yielding until it waits on a tool, so busy scripts on every worker would stall
        // every other session, the approval API and new connections. The OS shares the cores
        // between eval threads instead. A blocking task cannot be aborted: it stops through
        // `cancel`, which every path that aborts it cancels first.
        let handle = tokio::runtime::Handle::current();
        let task = tokio::task::spawn_blocking(move || {
            handle.block_on(async move {
                eval.await;
                drop(running);
            })
        });
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
        (caller, profile, slot): (Caller, Option<Arc<Profile>>, Arc<EvalSlot>),
        asker: Arc<dyn Asker>,
        suspended: Option<Arc<Suspended>>,
        cancel: CancellationToken,
        done: tokio::sync::oneshot::Sender<EvalOutcome>,
    ) {
        let state = &self.state;
        let config = state.config();
        let audit = state.audit().map(|sink| AuditTarget {
            sink,
            include_args: config.audit.include_args,
        });
        let eval = GovernedEval::builder(state.runtime.clone())
            .tools(state.upstreams.clone())
            .caller(caller)
            .session(self.session_id.clone(), self.approvals.clone())
            .profile(profile)
            .asker(asker)
            .broker(Some(state.approvals.clone()))
            .audit(audit)
            .outputs(config.outputs.clone())
            .options(config.limits.eval_options())
            .lifetime(Some(config.limits.max_eval_lifetime))
            .waits(Some(slot.clone()))
            .build();
        let outcome = eval.run(&code, &cancel).await;
        drop(slot);
        match suspended {
            Some(s) => state
                .suspensions
                .complete(&s, outcome, config.limits.unfetched_results),
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
                        Ok(outcome) => Ok(eval_result(&outcome, self.text_budget()).into()),
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
                            eval_result(&outcome, self.text_budget()).into()
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
