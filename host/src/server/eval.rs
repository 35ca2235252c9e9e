//! An eval requested over MCP: which profile the called tool stands for, which channel can ask
//! the client's human, and how the request waits — on the eval itself (protocol 2025-11-25 and
//! older: questions go out as `elicitation/create` while the request is open), or on its
//! [`Suspended`] entry (2026-07-28: questions come back as input-required results, and the
//! client's retry with `requestState` resumes the wait).

use std::sync::Arc;

use codemode_policies::Profile;
use codemode_runtime::CancellationToken;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, InputRequiredResult,
    ProtocolVersion,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::Value;

mod answers;
mod resume;
mod retry;
mod stored;
mod task;
#[cfg(test)]
mod tests;

use super::eval_tools::usable_profile;
use super::fair::{EvalSlot, client_key};
use super::handler::CodemodeServer;
use super::legacy::{LegacyAsker, LegacyEvalToken};
use super::progress::Progress;
use super::relay::{EvalRelay, RelayOpen};
use super::result::eval_result;
use super::suspend::{Event, Suspended};
use crate::approvals::{Asker, NoAsker, PeerAsker};
use crate::session::Caller;
use crate::tools::SamplingRoute;
use crate::traces::{EvalTrace, SpanContext};
use answers::RetryAnswers;
pub use resume::enable_durable;
pub(super) use resume::resume_from_store;
use stored::{ABANDONED, Stored, UNREACHABLE, wait_for_stored};
use task::{Delivery, EvalTask, LegacyEnd, Parking, Start, Waiter, governed};

impl CodemodeServer {
    /// The bytes the result may take in an eval's text block: `limits.maxResultText` of the
    /// config in force when the eval ends (a reload applies to the next result).
    fn text_budget(&self) -> usize {
        usize::try_from(self.state.config().limits.max_result_text).unwrap_or(usize::MAX)
    }

    pub(super) async fn call_eval(
        &self,
        req: CallToolRequestParams,
        mut ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let tool = req.name.to_string();
        // A shutdown waits for this request to answer (the eval's task counts apart: a
        // 2026-07-28 eval outlives its request while it waits for input).
        let _request = self.state.drain.enter();
        // Who calls, and whether they may use this eval tool: checked before anything else,
        // retries included (a requestState is no credential).
        let caller = crate::auth::caller_of(&ctx.extensions);
        let profile = usable_profile(&self.state.config(), &tool, &caller)?;
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
        let modern = ctx
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        // Refused at once, before a pool slot is taken, when the client is over a cap.
        let client = client_key(&ctx, &caller, modern, &self.session_id);
        let audience = log_audience(&client, &caller, modern);
        let slot = match self
            .state
            .clients
            .try_start(client, self.state.config().limits.per_client)
        {
            Ok(slot) => slot,
            Err(super::fair::Refusal(cap, message)) => {
                self.state.metrics.refused(cap);
                return Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into());
            }
        };
        let wait = self.wait_for(&ctx, (&tool, &caller.name), modern);
        // A 2026-07-28 client's model is reached through the eval's input-required results.
        let model = wait
            .suspended
            .clone()
            .map(|s| s as Arc<dyn crate::tools::ClientModel>);
        // One progress for the request: the eval's running time and its upstream calls' own
        // progress share its increasing values.
        let progress = Arc::new(Progress::new(&ctx));
        ctx.extensions.insert(progress.clone());
        let relay = RelayOpen(EvalRelay::new(
            &ctx,
            progress,
            (self.log_level.clone(), modern, audience),
        ));
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        // Cancels the sandbox even while guest code runs (see `Runtime::eval_cancellable`), on
        // MCP cancellation or when a shutdown gives up waiting.
        let cancel = self.state.drain.eval_token();
        let trace = self
            .state
            .traces
            .eval(client_trace(&req, &ctx), profile.as_ref().map(|p| p.name()));
        let task = self.fresh_task(
            code,
            (caller, profile, slot),
            &wait,
            (&cancel, &relay, SamplingRoute::of_request(&ctx, model)),
            (done_tx, trace),
        );
        if let Err(e) = task.spawn(self.state.drain.enter()) {
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
                self.await_suspended(s, &ctx, RetryAnswers::none())
                    .await
                    .response()
            }
            None => {
                self.await_legacy((cancel, wait.legacy.clone()), &tool, done_rx, &ctx)
                    .await
            }
        }
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
            _waits: Some(self.state.legacy.waits(legacy.clone())),
            legacy: Some(legacy),
            _claim: None,
        }
    }

    /// The task of a new eval (its own, so a 2026-07-28 client can come back for it): parked
    /// under its waiter's token when the server has a store.
    fn fresh_task(
        &self,
        code: String,
        (caller, profile, slot): (Caller, Option<Arc<Profile>>, Arc<EvalSlot>),
        wait: &EvalWait,
        (cancel, relay, sampling): (&CancellationToken, &RelayOpen, SamplingRoute),
        (done, trace): (tokio::sync::oneshot::Sender<LegacyEnd>, Option<EvalTrace>),
    ) -> EvalTask {
        let state = &self.state;
        // An eval can leave memory while it waits for a human: a 2026-07-28 client comes back
        // with `requestState`, to this node or any other sharing the store; a legacy request
        // waits here for the result, wherever the eval resumes.
        let parking = match (state.durable(), wait.waiter.token()) {
            (Some(durable), Some(token)) => Some(Parking::new(
                durable.clone(),
                token.to_string(),
                slot.client().to_string(),
            )),
            _ => None,
        };
        let alternatives = super::eval_tools::alternatives(
            &state.config(),
            profile.as_ref().map(|p| p.name()),
            &caller,
        );
        let eval = governed(state, wait.asker.clone(), parking.as_ref())
            .caller(caller)
            .session(self.session_id.clone(), self.approvals.clone())
            .profile(profile)
            .relay(Some(relay.0.clone()))
            .sampling(sampling)
            .alternatives(alternatives)
            .waits(Some(slot.clone()))
            .trace(trace)
            .build();
        EvalTask {
            state: state.clone(),
            code,
            start: Start::Fresh(eval),
            waiter: wait.waiter.clone(),
            parking,
            cancel: cancel.clone(),
            delivery: Delivery::Request(done),
            slot: Some(slot),
        }
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
        let progress = Progress::of(ctx);
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
                _ = progress.tick() => progress.send().await,
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
        let progress = Progress::of(ctx);
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
                _ = progress.tick() => progress.send().await,
            }
        }
    }

    /// Waits for `suspended`'s next event, for a request that answered the questions
    /// `answered` (see [`Waited::Saved`]).
    async fn await_suspended(
        &self,
        suspended: Arc<Suspended>,
        ctx: &RequestContext<RoleServer>,
        mut answers: RetryAnswers,
    ) -> Waited {
        let progress = Progress::of(ctx);
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
                            answers.warn_unclaimed();
                            Waited::Response(Ok(eval_result(&outcome, self.text_budget()).into()))
                        }
                        Event::Parked(requests) if answers.answered_any(&requests) => {
                            Waited::Saved(input(requests))
                        }
                        Event::Input(requests) if answers.unclaimed_any(&requests) => {
                            if let Err(why) = answers.give(&suspended, &requests) {
                                return Waited::Response(Err(McpError::invalid_params(why.to_string(), None)));
                            }
                            next.set(suspended.next_event());
                            continue;
                        }
                        Event::Input(requests) | Event::Parked(requests) => {
                            answers.warn_unclaimed();
                            Waited::Response(Ok(input(requests).into()))
                        }
                    };
                }
                _ = ctx.ct.cancelled() => {
                    suspended.abort();
                    self.state.suspensions.remove(suspended.token());
                    return Waited::Response(Err(McpError::internal_error("cancelled", None)));
                }
                _ = progress.tick() => progress.send().await,
            }
        }
    }
}

/// How one new eval's request waits (see [`CodemodeServer::wait_for`]); the claim and the
/// legacy wait hold for as long as the request is open.
struct EvalWait {
    waiter: Waiter,
    asker: Arc<dyn Asker>,
    suspended: Option<Arc<Suspended>>,
    legacy: Option<Arc<LegacyAsker>>,
    _claim: Option<super::suspend::CreatorClaim>,
    _waits: Option<super::legacy::LegacyWait>,
}

/// How a request's wait on an eval in memory ended.
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

/// The client's trace context: the HTTP request's `traceparent` header, else the MCP request's
/// Who may share an eval's upstream log messages (see `CallRelay::audience`): its client
/// (one caller, or one session); an anonymous 2026-07-28 request, which has no session, is
/// alone.
fn log_audience(client: &str, caller: &Caller, modern: bool) -> String {
    if modern && caller.name == Caller::local().name {
        // Unique in this process is enough: it is compared, never shown nor guessed.
        static REQUESTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = REQUESTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("request:{n}")
    } else {
        client.to_string()
    }
}

/// `_meta.traceparent`; one that does not parse is ignored (the W3C rule).
fn client_trace(
    req: &CallToolRequestParams,
    ctx: &RequestContext<RoleServer>,
) -> Option<SpanContext> {
    let header = ctx
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.headers.get("traceparent"))
        .and_then(|v| v.to_str().ok());
    // rmcp moves a request's `_meta` into the context; `req.meta` in case it stays.
    let meta = ctx
        .meta
        .get_traceparent()
        .or_else(|| req.meta.as_ref().and_then(|m| m.get_traceparent()));
    header.or(meta).and_then(SpanContext::parse)
}
