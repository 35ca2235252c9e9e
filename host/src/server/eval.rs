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

mod resume;
mod stored;
#[cfg(test)]
mod tests;

use super::durable::{AnswerRefused, Durable, ParkGate};
use super::fair::{EvalSlot, client_key};
use super::handler::CodemodeServer;
use super::legacy::{LegacyAsker, LegacyEvalToken};
use super::listing::missing_permissions;
use super::listing::{EVAL_TOOL, PROFILE_TOOL_PREFIX};
use super::progress::Progress;
use super::result::eval_result;
use super::suspend::{Event, Suspended};
use crate::approvals::{Asker, NoAsker, OpenAsks, PeerAsker};
use crate::session::{AuditTarget, Caller, GovernedEval, GovernedStep};
pub(super) use resume::resume_from_store;
use resume::{Waiter, park_or_resume};
use stored::{
    ABANDONED, RESULT_PATIENCE_STEPS, STORE_PATIENCE_STEP, STORE_PATIENCE_STEPS, Stored,
    UNREACHABLE, wait_for_stored,
};

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
        // Who calls, and whether they may use this eval tool: checked before anything else,
        // retries included (a requestState is no credential).
        let caller = crate::auth::caller_of(&ctx.extensions);
        self.check_permissions(&tool, &caller)?;
        if let Some(token) = req.request_state.as_deref() {
            return self.retry(token, (&tool, &caller), &req, &ctx).await;
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
        let wait = self.wait_for(&ctx, (&tool, &caller.name), modern);
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        // Cancels the sandbox even while guest code runs (see `Runtime::eval_cancellable`), on
        // MCP cancellation or when a shutdown gives up waiting.
        let cancel = self.state.drain.eval_token();
        let running = self.state.drain.enter();
        let eval = self.clone().run_eval(
            code,
            (caller, profile, slot),
            wait.asker.clone(),
            wait.waiter.clone(),
            cancel.clone(),
            done_tx,
        );
        // On a thread of its own (`ServerState::eval_threads`), not on the async workers: guest
        // code runs without yielding until it waits on a tool, so busy scripts on every worker
        // would stall every other session, the approval API and new connections. The OS shares
        // the cores between eval threads instead. A running eval stops through `cancel`.
        let handle = tokio::runtime::Handle::current();
        let started = self.state.eval_threads.spawn(move || {
            handle.block_on(async move {
                eval.await;
                drop(running);
            })
        });
        if let Err(e) = started {
            if let Some(s) = &wait.suspended {
                self.state.suspensions.remove(s.token());
            }
            return Err(McpError::internal_error(
                format!("cannot start a thread for the eval: {e}"),
                None,
            ));
        }
        match wait.suspended.clone() {
            Some(s) => {
                s.set_cancel(cancel);
                self.await_suspended(s, &ctx, &[]).await.response()
            }
            None => {
                self.await_legacy((cancel, wait.legacy.clone()), &tool, done_rx, &ctx)
                    .await
            }
        }
    }

    /// Refuses a caller that lacks a permission the eval tool `tool` requires.
    fn check_permissions(&self, tool: &str, caller: &Caller) -> Result<(), McpError> {
        let missing = missing_permissions(&self.state.config(), tool, caller);
        if missing.is_empty() {
            return Ok(());
        }
        Err(McpError::invalid_params(
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
        ))
    }

    /// A 2026-07-28 client's retry with `requestState` `token`, answering an input-required
    /// result: to the eval in memory, else (unknown here, or parked, maybe as this retry's
    /// answers came) through the store, else an error result saying why nothing waits.
    async fn retry(
        &self,
        token: &str,
        (tool, caller): (&str, &Caller),
        req: &CallToolRequestParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let local = self.state.suspensions.get(token);
        if let Some(suspended) = local.clone().filter(|s| !s.is_parked())
            && let Some(response) = self
                .retry_in_memory(suspended, (tool, &caller.name), req, ctx)
                .await
        {
            return response;
        }
        if let Some(durable) = self.state.durable()
            && super::suspend::is_token(token)
        {
            if let Some(parked) = &local
                && parked.owner().admits(tool, &caller.name).is_ok()
            {
                // The in-memory copy never runs again. (Only its owner's retry removes it:
                // another caller's is refused by the store path.)
                self.state.suspensions.remove_entry(parked);
            }
            if let Some(response) = self
                .retry_from_store(durable, (token, &caller.name), tool, req, ctx)
                .await
            {
                return response;
            }
        }
        let message = if self.state.suspensions.was_dropped(token) {
            let kept = self.state.config().limits.unfetched_results;
            format!(
                "this eval's result was dropped before it was fetched: the server keeps at most {} unfetched results and {} bytes of them (limits.unfetchedResults), the oldest dropped first; run it again",
                kept.max_count, kept.max_bytes
            )
        } else {
            "this eval is no longer waiting for input (it finished, timed out, or the server restarted); run it again".to_string()
        };
        Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into())
    }

    /// How a new eval's request waits and who its questions go to, by protocol generation:
    /// 2026-07-28 evals are registered for input-required results; older ones park through a
    /// [`LegacyAsker`] when the server has a store; else the client is asked while the request
    /// is open (or nobody, when it cannot elicit).
    fn wait_for(
        &self,
        ctx: &RequestContext<RoleServer>,
        (tool, caller): (&str, &str),
        modern: bool,
    ) -> EvalWait {
        let can_elicit = ctx
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some());
        if modern {
            let (entry, claim) = self.state.suspensions.register(tool, caller);
            let asker: Arc<dyn Asker> = match can_elicit {
                true => Arc::new(entry.asker()),
                false => Arc::new(NoAsker),
            };
            return EvalWait {
                waiter: Waiter::Modern(entry.clone()),
                asker,
                suspended: Some(entry),
                legacy: None,
                _claim: Some(claim),
                _waits: None,
            };
        }
        let Some(durable) = self.state.durable() else {
            let asker: Arc<dyn Asker> = match can_elicit {
                true => Arc::new(PeerAsker::new(ctx.peer.clone())),
                false => Arc::new(NoAsker),
            };
            return EvalWait {
                waiter: Waiter::Memory,
                asker,
                suspended: None,
                legacy: None,
                _claim: None,
                _waits: None,
            };
        };
        // A legacy eval parks too when the server has a store: under the token the failover
        // layer wrote in the request's in-flight record, else a new one.
        let token = ctx
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<LegacyEvalToken>())
            .map(|t| t.0.clone())
            .unwrap_or_else(super::suspend::random_token);
        let peer = can_elicit.then(|| PeerAsker::new(ctx.peer.clone()));
        let legacy = LegacyAsker::new(peer, token, durable.clone());
        EvalWait {
            waiter: Waiter::Legacy(legacy.clone(), tool.to_string()),
            asker: legacy.clone(),
            suspended: None,
            // While this request is open, an eval resumed here asks its client.
            _waits: Some(durable.legacy_waits(legacy.clone())),
            legacy: Some(legacy),
            _claim: None,
        }
    }

    /// Runs one eval to its end (in its own task, so a 2026-07-28 client can come back for it).
    async fn run_eval(
        self,
        code: String,
        (caller, profile, slot): (Caller, Option<Arc<Profile>>, Arc<EvalSlot>),
        asker: Arc<dyn Asker>,
        waiter: Waiter,
        cancel: CancellationToken,
        done: tokio::sync::oneshot::Sender<LegacyEnd>,
    ) {
        let state = &self.state;
        let config = state.config();
        let audit = state.audit().map(|sink| AuditTarget {
            sink,
            include_args: config.audit.include_args,
        });
        // An eval can leave memory while it waits for a human: a 2026-07-28 client comes back
        // with `requestState`, to this node or any other sharing the store; a legacy request
        // waits here for the result, wherever the eval resumes.
        let token = waiter.token().map(str::to_string);
        let durable = state.durable().filter(|_| token.is_some()).cloned();
        let open_asks = durable.as_ref().map(|d| {
            Arc::new(OpenAsks::new(Some(
                d.clone() as Arc<dyn crate::approvals::Decisions>
            )))
        });
        let park = durable.as_ref().map(|d| d.park_request());
        let eval = GovernedEval::builder(state.runtime.clone())
            .tools(state.upstreams.clone())
            .caller(caller.clone())
            .session(self.session_id.clone(), self.approvals.clone())
            .profile(profile.clone())
            .asker(asker)
            .broker(Some(state.approvals.clone()))
            .audit(audit)
            .outputs(config.outputs.clone())
            .options(config.limits.eval_options())
            .lifetime(Some(config.limits.max_eval_lifetime))
            .waits(Some(slot.clone()))
            .park(park.clone())
            .open_asks(open_asks.clone())
            .build();
        let watcher = match (&durable, &open_asks, &park, &token) {
            (Some(d), Some(asks), Some(park), Some(token)) => Some(d.watch(
                asks.clone(),
                park.clone(),
                ParkGate {
                    client: slot.client().to_string(),
                    token: token.clone(),
                    cap: config.limits.per_client.max_parked_evals,
                },
            )),
            _ => None,
        };
        let step = eval.run_step(&code, &cancel).await;
        if let Some(watcher) = watcher {
            watcher.abort();
        }
        let client = slot.client().to_string();
        drop(slot);
        let outcome = match step {
            GovernedStep::Finished(outcome) => {
                // The eval holds its client's count (`waits`): it ends before the outcome is
                // delivered, so a client at its cap may send its next eval as soon as it has
                // this one's result. (A parked eval keeps it while it is saved or, when that
                // fails, resumed in memory.)
                drop(eval);
                if let (Some(d), Some(token)) = (&durable, &token) {
                    d.not_parked(token);
                }
                outcome
            }
            GovernedStep::Parked(parked) => {
                let (Some(durable), Some(token), Some(asks)) = (durable, &token, open_asks) else {
                    return;
                };
                let meta = Durable::meta(
                    (token, &client),
                    waiter.tool(),
                    &code,
                    &eval,
                    &asks.snapshot(),
                );
                match park_or_resume(state, &durable, &waiter, meta, parked, &cancel).await {
                    Some(outcome) => outcome,
                    None => {
                        // Saved: the in-memory copy never runs again. A legacy request waits
                        // for the result in the store.
                        let _ = done.send(LegacyEnd::Parked);
                        return;
                    }
                }
            }
        };
        match waiter {
            Waiter::Modern(s) => {
                state
                    .suspensions
                    .complete(&s, outcome, config.limits.unfetched_results)
            }
            Waiter::Legacy(..) | Waiter::Memory => {
                let _ = done.send(LegacyEnd::Finished(Box::new(outcome)));
            }
        }
    }

    /// A retry of an eval this node holds in memory: its answers are delivered, and it waits
    /// for the eval's next event. `None` when the eval was saved to the store meanwhile with a
    /// question this retry answered still open: the eval left memory as the answers came (a
    /// park drops its calls, and their questions, before the save and before its entry says
    /// so), so they go to the store.
    async fn retry_in_memory(
        &self,
        suspended: Arc<Suspended>,
        (tool, caller): (&str, &str),
        req: &CallToolRequestParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Option<Result<CallToolResponse, McpError>> {
        if let Err(e) = suspended.owner().admits(tool, caller) {
            return Some(Err(McpError::invalid_params(e.to_string(), None)));
        }
        let (mut answered, mut refused) = (Vec::new(), Vec::new());
        if let Some(responses) = &req.input_responses {
            // An answer that does not fit its question is the client's mistake: it is told,
            // and the question stays open for a retry with a valid answer.
            if let Err(why) = suspended.check(responses) {
                return Some(Err(McpError::invalid_params(why, None)));
            }
            refused = suspended.answer(responses);
            answered = responses.keys().cloned().collect();
        }
        match self.await_suspended(suspended, ctx, &answered).await {
            Waited::Response(response) => {
                if !refused.is_empty() {
                    tracing::warn!(
                        "refused answers to questions this eval has not asked (or no longer asks): {}",
                        refused.join(", ")
                    );
                }
                Some(response)
            }
            Waited::Saved(_) => None,
        }
    }

    /// A retry naming an eval this node does not hold: its answers are recorded in the store,
    /// then its result is fetched, or the eval is taken from the store and resumed here.
    /// `None` when the store does not know the token either.
    async fn retry_from_store(
        &self,
        durable: &Arc<Durable>,
        (token, caller): (&str, &str),
        tool: &str,
        req: &CallToolRequestParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Option<Result<CallToolResponse, McpError>> {
        let owner = match saved_owner(durable, token).await {
            Ok(Some(owner)) => owner,
            Ok(None) => return None,
            Err(response) => return Some(Ok(response)),
        };
        // The owner first: a retry through another tool, or by another caller, must not answer
        // the eval, take it from its owner or get its result.
        if let Err(e) = owner.admits(tool, caller) {
            return Some(Err(McpError::invalid_params(e.to_string(), None)));
        }
        if let Some(responses) = &req.input_responses
            && let Err(refused) = record_answers(durable, token, responses).await
        {
            return Some(refused);
        }
        if let Ok(Some(outcome)) = durable.result(token, (tool, caller)).await {
            return Some(Ok(eval_result(&outcome, self.text_budget()).into()));
        }
        match resume_from_store(&self.state, token).await {
            Ok(Some((entry, _claim))) => {
                return Some(self.await_suspended(entry, ctx, &[]).await.response());
            }
            Ok(None) => {}
            Err(message) => {
                return Some(Ok(
                    CallToolResult::error(vec![ContentBlock::text(message)]).into()
                ));
            }
        }
        // Resumed on another node (an answer reached it first): wait for its result there.
        let message = match wait_for_stored(
            durable,
            token,
            (tool, caller),
            Some(RESULT_PATIENCE_STEPS),
        )
        .await
        {
            Stored::Result(outcome) => {
                return Some(Ok(eval_result(&outcome, self.text_budget()).into()));
            }
            Stored::Gone => return None,
            Stored::Running => {
                "this eval is running on another node, which was given its answer; retry with the same requestState to get its result"
            }
            Stored::Abandoned => ABANDONED,
            Stored::Unreachable => UNREACHABLE,
        };
        Some(Ok(
            CallToolResult::error(vec![ContentBlock::text(message)]).into()
        ))
    }

    /// A legacy request whose eval was saved to the store: waits for its result, whichever
    /// node resumes it (an answer from this request's client, the approval API of any node, or
    /// the sweep at the approval deadline).
    async fn await_parked_legacy(
        &self,
        (legacy, tool): (&LegacyAsker, &str),
        cancel: &CancellationToken,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(durable) = self.state.durable().cloned() else {
            return Err(McpError::internal_error(
                "a legacy eval parked without a store",
                None,
            ));
        };
        let token = legacy.token();
        let progress = Progress::new(ctx);
        let caller = crate::auth::caller_of(&ctx.extensions);
        let stored = wait_for_stored(&durable, token, (tool, &caller.name), None);
        tokio::pin!(stored);
        let message = loop {
            tokio::select! {
                stored = &mut stored => {
                    break match stored {
                        Stored::Result(outcome) => {
                            // A resume here keeps a copy for a 2026-07-28 retry nobody makes,
                            // and so does the store.
                            self.state.suspensions.remove(token);
                            durable.forget_result(token).await;
                            return Ok(eval_result(&outcome, self.text_budget()).into());
                        }
                        Stored::Abandoned => ABANDONED,
                        Stored::Unreachable => UNREACHABLE,
                        Stored::Running | Stored::Gone => {
                            "this eval was saved to the durable store, and its records are gone without a result (they expired, or the store lost them): the tool calls it made until it was saved were made once (its audit log has them); starting the script over would repeat those calls"
                        }
                    };
                }
                _ = ctx.ct.cancelled() => {
                    // The client gave the call up (a cancellation, or its session closed): the
                    // eval is taken from the store and resumed here only to be cancelled, so
                    // that it ends audited as cancelled and no human is left to approve the rest
                    // of a script nobody waits for (nor does it hold the client's parked cap).
                    legacy.close();
                    if let Ok(Some((entry, _claim))) = resume_from_store(&self.state, token).await {
                        entry.abort();
                        self.state.suspensions.remove(token);
                    }
                    return Err(McpError::internal_error("cancelled", None));
                }
                _ = cancel.cancelled() => {
                    break "this codemode node is stopping: the eval waits for a human in the durable store, where the approval API of any node (`GET /approvals`) can still decide it, and it then completes on that node; its result does not come back to this request, so check what it did before running the script again";
                }
                _ = progress.tick() => progress.send(ctx).await,
            }
        };
        Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into())
    }

    async fn await_legacy(
        &self,
        (cancel, legacy): (CancellationToken, Option<Arc<LegacyAsker>>),
        tool: &str,
        done: tokio::sync::oneshot::Receiver<LegacyEnd>,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let progress = Progress::new(ctx);
        tokio::pin!(done);
        loop {
            tokio::select! {
                outcome = &mut done => {
                    return match (outcome, &legacy) {
                        (Ok(LegacyEnd::Finished(outcome)), _) => Ok(eval_result(&outcome, self.text_budget()).into()),
                        (Ok(LegacyEnd::Parked), Some(legacy)) => self.await_parked_legacy((legacy, tool), &cancel, ctx).await,
                        (Ok(LegacyEnd::Parked), None) | (Err(_), _) => Err(McpError::internal_error("the eval task ended without an outcome", None)),
                    };
                }
                _ = ctx.ct.cancelled() => {
                    // MCP cancellation: stop the sandbox now.
                    cancel.cancel();
                    return Err(McpError::internal_error("cancelled", None));
                }
                _ = progress.tick() => progress.send(ctx).await,
            }
        }
    }

    /// Waits for `suspended`'s next event, for a request that answered the questions
    /// `answered` (see [`Waited::Saved`]).
    async fn await_suspended(
        &self,
        suspended: Arc<Suspended>,
        ctx: &RequestContext<RoleServer>,
        answered: &[String],
    ) -> Waited {
        let progress = Progress::new(ctx);
        let next = suspended.next_event();
        tokio::pin!(next);
        let input = |requests| {
            InputRequiredResult::new(Some(requests), Some(suspended.token().to_string()))
        };
        loop {
            tokio::select! {
                event = &mut next => {
                    return match event {
                        Event::Complete(outcome) => {
                            self.state.suspensions.remove(suspended.token());
                            Waited::Response(Ok(eval_result(&outcome, self.text_budget()).into()))
                        }
                        Event::Parked(requests)
                            if answered.iter().any(|key| requests.contains_key(key)) =>
                        {
                            Waited::Saved(input(requests))
                        }
                        Event::Input(requests) | Event::Parked(requests) => {
                            Waited::Response(Ok(input(requests).into()))
                        }
                    };
                }
                _ = ctx.ct.cancelled() => {
                    suspended.abort();
                    self.state.suspensions.remove(suspended.token());
                    return Waited::Response(Err(McpError::internal_error("cancelled", None)));
                }
                _ = progress.tick() => progress.send(ctx).await,
            }
        }
    }
}

/// How a request's wait on an eval in memory ended.
/// Who owns the parked eval `token`, once the store knows it: the node holding the eval may be
/// saving it right now (its client was answered as the question was asked), so the store gets
/// a moment to know the token. Its small `owner:` record says whether the store knows it, and
/// whose it is. `Err`: the result that tells the client why the store cannot say.
async fn saved_owner(
    durable: &Arc<Durable>,
    token: &str,
) -> Result<Option<super::owner::Owner>, CallToolResponse> {
    let mut owner = durable.owner(token).await;
    for _ in 0..STORE_PATIENCE_STEPS {
        if !matches!(owner, Ok(None)) {
            break;
        }
        tokio::time::sleep(STORE_PATIENCE_STEP).await;
        owner = durable.owner(token).await;
    }
    match owner {
        Ok(owner) => Ok(owner),
        Err(e) if e.kind() == codemode_store::StoreErrorKind::Unreadable => {
            Err(CallToolResult::error(vec![ContentBlock::text(format!(
                "this eval is saved, but this node cannot open it with its sealing key ({e}); the eval stays in the store for a node that can: retry with the same requestState (starting the script over would repeat its calls)"
            ))])
            .into())
        }
        Err(e) => {
            tracing::warn!("a retry could not look its eval up in the durable store: {e}");
            Err(CallToolResult::error(vec![ContentBlock::text(format!(
                "the durable store cannot be reached ({e}), so this node cannot tell whether this eval is saved there: retry with the same requestState once the store is back (starting the script over could repeat its calls)"
            ))])
            .into())
        }
    }
}

/// Records a retry's answers to the parked eval `token`'s asks. Every answer is checked before
/// any is recorded: a retry refused for one answer records none, so the client's corrected
/// retry is taken as a whole. `Err`: the response that refuses the retry.
async fn record_answers(
    durable: &Arc<Durable>,
    token: &str,
    responses: &rmcp::model::InputResponses,
) -> Result<(), Result<CallToolResponse, McpError>> {
    let mut checked = Vec::with_capacity(responses.len());
    for (key, response) in responses {
        let Some(id) = key.strip_prefix("codemode-") else {
            continue;
        };
        let answer = super::suspend::parse_response(response);
        match durable
            .prepare(token, id, &answer, codemode_policies::Channel::Elicitation)
            .await
        {
            Ok(prepared) => checked.push((key, prepared)),
            Err(AnswerRefused::Unavailable(why)) => {
                return Err(Ok(
                    CallToolResult::error(vec![ContentBlock::text(why)]).into()
                ));
            }
            // An answer that does not fit its question is the client's mistake: it is told,
            // and the question stays open for a retry with a valid answer.
            Err(AnswerRefused::Invalid(why)) => {
                return Err(Err(McpError::invalid_params(
                    super::suspend::refused_answer(key, &why),
                    None,
                )));
            }
            Err(refused) => tracing::warn!("refused an answer to `{key}`: {refused}"),
        }
    }
    for (key, prepared) in checked {
        match durable.record(prepared).await {
            Ok(()) => {}
            // Told, not taken for "answered already": the retry can record it.
            Err(AnswerRefused::Unavailable(why)) => {
                return Err(Ok(
                    CallToolResult::error(vec![ContentBlock::text(why)]).into()
                ));
            }
            Err(refused) => tracing::warn!("refused an answer to `{key}`: {refused}"),
        }
    }
    Ok(())
}

/// How one new eval's request waits (see [`CodemodeServer::wait_for`]); the claim and the
/// legacy wait hold for as long as the request is open.
struct EvalWait {
    waiter: Waiter,
    asker: Arc<dyn Asker>,
    suspended: Option<Arc<Suspended>>,
    legacy: Option<Arc<LegacyAsker>>,
    _claim: Option<super::suspend::CreatorClaim>,
    _waits: Option<super::durable::LegacyWait>,
}

enum Waited {
    /// The request's answer.
    Response(Result<CallToolResponse, McpError>),
    /// The eval was saved to the durable store waiting on these questions, among them one the
    /// request answered: the answer reached the eval as it was leaving memory, and goes to the
    /// store ([`CodemodeServer::retry_in_memory`]).
    Saved(InputRequiredResult),
}

impl Waited {
    /// The answer of a request that has no answers to give the store: a saved eval's
    /// questions are asked again.
    fn response(self) -> Result<CallToolResponse, McpError> {
        match self {
            Waited::Response(response) => response,
            Waited::Saved(input) => Ok(input.into()),
        }
    }
}

/// How a legacy eval's task ended.
enum LegacyEnd {
    Finished(Box<EvalOutcome>),
    /// Saved to the store: the request waits for its result there.
    Parked,
}
