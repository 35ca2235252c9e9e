//! Approval channels: the ways codemode can put a question to a human.
//!
//! A question ([`Question`]: a message and a flat JSON Schema form) goes to an [`Asker`]; how it
//! ended comes back as an [`Answer`]. One asker serves one eval, chosen by its entry point:
//! - [`elicitation::PeerAsker`]: the MCP client's own `elicitation/create` (protocol 2025-11-25
//!   and older; 2026-07-28 clients are asked through input-required results, see
//!   [`crate::server::suspend`]);
//! - [`terminal::TerminalAsker`]: the terminal of `codemode run`;
//! - [`NoAsker`]: nobody can be asked (the profile's `elicitationFallback` decides).
//!
//! [`form::AskApprover`] turns the policy layer's approval requests into questions;
//! [`channels::ChannelApprover`] (and [`channels::ChannelAsker`], for `hitl_request`) offers them to the eval's asker and, when the HTTP approval API
//! ([`http`]) is served, to the server-wide [`broker::ApprovalBroker`] — the first answer wins.

pub mod broker;
pub mod channels;
pub mod elicitation;
pub mod form;
pub mod http;
pub mod open;
mod stream;
pub mod terminal;
pub mod view;
pub mod waits;

use std::time::Duration;

use codemode_policies::Channel;
use codemode_runtime::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitationSchema, JsonObject};
use serde_json::Value;

pub use broker::ApprovalBroker;
pub use channels::{ChannelApprover, ChannelAsker};
pub use elicitation::PeerAsker;
pub use form::{AskApprover, approval_question, decision_from};
pub use open::{Decided, Decisions, OpenAsk, OpenAsks};
pub use terminal::TerminalAsker;
pub use waits::{HumanWaits, WaitingApprover, WaitingAsker};

/// A form question: a message and the JSON Schema (flat object of primitives) of the answer.
#[derive(Debug, Clone)]
pub struct Question {
    /// What the human reads.
    pub message: String,
    /// `{"type": "object", "properties": {…}, "required": […]}`.
    pub schema: JsonObject,
}

impl Question {
    /// The MCP form elicitation for this question.
    pub fn to_params(&self) -> Result<ElicitRequestParams, String> {
        let schema =
            ElicitationSchema::from_json_schema(self.schema.clone()).map_err(|e| e.to_string())?;
        Ok(ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: self.message.clone(),
            requested_schema: schema,
        })
    }
}

/// How a question ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The human submitted the form.
    Accept(Value),
    /// The human refused.
    Decline,
    /// The human dismissed the prompt.
    Cancel,
    /// Nobody answered in time.
    Timeout,
    /// Asking failed (the client errored or went away).
    Failed(String),
}

/// Someone who can be asked. Object-safe.
pub trait Asker: Send + Sync {
    /// Whether a human can be asked at all.
    fn supports(&self) -> bool;
    /// Where the answers come from (for the audit log).
    fn channel(&self) -> Channel;
    /// Asks, giving up after `timeout` (a timeout never approves anything).
    fn ask(&self, question: Question, timeout: Duration) -> BoxFuture<'_, Answer>;

    /// [`ask`](Self::ask) under `key`, a name for the question that stays the same when it is
    /// asked again (an approval request's id, after its eval was parked and resumed): a
    /// channel that names its questions to the client uses it. By default the key is ignored.
    fn ask_keyed(&self, key: &str, question: Question, timeout: Duration) -> BoxFuture<'_, Answer> {
        let _ = key;
        self.ask(question, timeout)
    }

    /// Asks one step of a `hitl_request` question ([`QuestionRequest`]). By default:
    /// [`ask_keyed`](Self::ask_keyed) under `codemode-<id>`; a channel that lists questions
    /// elsewhere too (the HTTP approval API) or keeps them across a park overrides it.
    fn ask_question(&self, req: QuestionRequest) -> BoxFuture<'_, Answer> {
        Box::pin(async move { self.ask_keyed(&req.key(), req.question, req.timeout).await })
    }

    /// For a step asked again after a resume ([`QuestionRequest::resumed`]): the answer given
    /// to it while its eval was parked, if any (taken: asked twice, `None`). Called before the
    /// step waits for a human — the eval cannot be parked mid-take, which would use the answer
    /// up without delivering it — and whatever is left of the step's time. By default `None`.
    fn answered_while_parked<'a>(
        &'a self,
        req: &'a QuestionRequest,
    ) -> BoxFuture<'a, Option<Answer>> {
        let _ = req;
        Box::pin(async { None })
    }
}

/// One step of a `hitl_request` question (the choice, or its confirmation), as an eval's
/// channels ask it.
#[derive(Debug, Clone)]
pub struct QuestionRequest {
    /// The step's id: random (128 bits, hex), the same on every channel that shows it and
    /// when the step is asked again after its eval was parked and resumed.
    pub id: String,
    /// The form (one string field whose options are the answers).
    pub question: Question,
    /// How long the human has (what is left of it, for a step asked again after a resume).
    pub timeout: Duration,
    /// The call asking: its eval's runtime context, to tell a parked eval (the step stays open,
    /// to be found again by its id) from one that ended (withdraw it).
    pub call: codemode_runtime::CallContext,
    /// Whether the step was asked before its eval was parked and is asked again now: an answer
    /// given meanwhile is taken first.
    pub resumed: bool,
}

impl QuestionRequest {
    /// The key a 2026-07-28 client answers it under (as an approval's, `codemode-<id>`).
    pub fn key(&self) -> String {
        format!("codemode-{}", self.id)
    }
}

/// The option `answer` chose for a question step whose form field `field` offers `options`
/// (`None`: declined or dismissed).
///
/// # Errors
/// In words, when it names no option or one the step does not offer (the text neutralised), or
/// is not an answer at all (a timeout, a failure).
pub fn chosen_option(
    field: &str,
    options: &[&str],
    answer: &Answer,
) -> Result<Option<String>, String> {
    let listed = || {
        options
            .iter()
            .map(|o| codemode_policies::neutralize(o))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match answer {
        Answer::Decline | Answer::Cancel => Ok(None),
        Answer::Accept(content) => match content.get(field).and_then(Value::as_str) {
            Some(a) if options.contains(&a) => Ok(Some(a.to_string())),
            Some(a) => Err(format!(
                "`{}` is not one of the options ({})",
                codemode_policies::neutralize(a),
                listed()
            )),
            None => Err(format!(
                "the answer names no option (expected `{field}` with one of: {})",
                listed()
            )),
        },
        Answer::Timeout | Answer::Failed(_) => {
            Err("the answer is not an accepted, declined or cancelled elicitation result".into())
        }
    }
}

/// Nobody to ask: clients without elicitation.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoAsker;

impl Asker for NoAsker {
    fn supports(&self) -> bool {
        false
    }
    fn channel(&self) -> Channel {
        Channel::Fallback
    }
    fn ask(&self, _question: Question, _timeout: Duration) -> BoxFuture<'_, Answer> {
        Box::pin(async { Answer::Failed("the client does not support elicitation".into()) })
    }
}

#[cfg(test)]
mod limits_tests;
#[cfg(test)]
mod tests;
