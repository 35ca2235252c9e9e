//! A 2026-07-28 client's retry with `requestState`: answers delivered to the eval in memory, or
//! recorded in the store for a parked one, which is then resumed here or awaited where it runs.

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};

use super::answers::{RetryAnswers, shown_key};
use super::stored::{
    ABANDONED, RESULT_PATIENCE_STEPS, STORE_PATIENCE_STEP, STORE_PATIENCE_STEPS, Stored,
    UNREACHABLE, wait_for_stored,
};
use super::{Waited, resume_from_store};
use crate::server::durable::{AnswerRefused, Durable};
use crate::server::handler::CodemodeServer;
use crate::server::result::eval_result;
use crate::server::suspend::Suspended;
use crate::session::Caller;

impl CodemodeServer {
    /// A 2026-07-28 client's retry with `requestState` `token`, answering an input-required
    /// result: to the eval in memory, else (unknown here, or parked, maybe as this retry's
    /// answers came) through the store, else an error result saying why nothing waits.
    pub(super) async fn retry(
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
            && crate::server::suspend::is_token(token)
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
        let mut answers = RetryAnswers::none();
        if let Some(responses) = &req.input_responses {
            // An answer that does not fit its question is the client's mistake: it is told,
            // and the question stays open for a retry with a valid answer.
            if let Err(why) = suspended.check(responses) {
                return Some(Err(McpError::invalid_params(why.to_string(), None)));
            }
            let refused = suspended.answer(responses);
            answers = RetryAnswers::new(responses, &refused);
        }
        match self.await_suspended(suspended, ctx, answers).await {
            Waited::Response(response) => Some(response),
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
                return Some(
                    self.await_suspended(entry, ctx, RetryAnswers::none())
                        .await
                        .response(),
                );
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
}

/// Who owns the parked eval `token`, once the store knows it: the node holding the eval may be
/// saving it right now (its client was answered as the question was asked), so the store gets
/// a moment to know the token. Its small `owner:` record says whether the store knows it, and
/// whose it is. `Err`: the result that tells the client why the store cannot say.
async fn saved_owner(
    durable: &Arc<Durable>,
    token: &str,
) -> Result<Option<crate::server::owner::Owner>, CallToolResponse> {
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
        let answer = crate::server::suspend::parse_response(response);
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
                    crate::server::suspend::RefusedAnswer::new(key, why).to_string(),
                    None,
                )));
            }
            Err(refused) => {
                tracing::warn!("refused an answer to `{}`: {refused}", shown_key(key))
            }
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
            Err(refused) => {
                tracing::warn!("refused an answer to `{}`: {refused}", shown_key(key))
            }
        }
    }
    Ok(())
}
