//! What an [`Asker`] is asked ([`Ask`], with its form [`Question`]) and answers ([`Reply`]).

use std::time::Duration;

use codemode_runtime::{BoxFuture, CallContext};
use serde_json::Value;

use crate::{ApprovalRequest, Channel, new_request_id};

/// A form question: a message and the JSON Schema (flat object of primitives) of the answer.
#[derive(Debug, Clone)]
pub struct Question {
    /// What the human reads.
    pub message: String,
    /// `{"type": "object", "properties": {…}, "required": […]}`.
    pub schema: serde_json::Map<String, Value>,
}

/// How a form was answered.
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
    /// Asking failed (the client errored or went away, or a cap refused the wait).
    Failed(String),
}

/// One thing put to a human. Every channel shows it under [`id`](Self::id), which stays the same
/// when its eval is parked and resumed.
#[derive(Debug, Clone)]
pub struct Ask {
    /// Random (128 bits, hex).
    pub id: String,
    /// What is asked, beyond the form.
    pub kind: AskKind,
    /// The form every channel puts (the HTTP API shows the approval or the options instead).
    pub question: Question,
    /// How long the human has (what is left of it, for an ask asked again after a resume).
    pub timeout: Duration,
    /// The script's call asking, when one does: an ask whose eval parked stays open (to be
    /// found again by its id), one whose eval ended is withdrawn.
    pub call: Option<CallContext>,
    /// Whether the ask was asked before its eval was parked and is asked again now: an answer
    /// given meanwhile is taken first ([`Asker::taken_while_parked`]).
    pub resumed: bool,
}

/// What an [`Ask`] is about.
#[derive(Debug, Clone)]
pub enum AskKind {
    /// Whether a call may go ahead: the policy layer's request (its form is
    /// [`ApprovalRequest::question`](crate::ApprovalRequest::question)).
    Approval(Box<ApprovalRequest>),
    /// One step of a `hitl_request` question (the choice, or its confirmation).
    Choice,
    /// An upstream server's own request put to the eval's human — its form, or whether its
    /// sampling request may reach the client's model (never kept across a park).
    Form,
}

impl Ask {
    /// A step `question` of a `hitl_request` of call `call`, under `id`.
    pub fn choice(
        id: String,
        question: Question,
        timeout: Duration,
        call: CallContext,
        resumed: bool,
    ) -> Self {
        Ask {
            id,
            kind: AskKind::Choice,
            question,
            timeout,
            call: Some(call),
            resumed,
        }
    }

    /// An upstream server's form `question` (or the question about its sampling request), under
    /// a fresh id.
    pub fn form(question: Question, timeout: Duration) -> Self {
        Ask {
            id: new_request_id(),
            kind: AskKind::Form,
            question,
            timeout,
            call: None,
            resumed: false,
        }
    }

    /// The key a 2026-07-28 client answers it under: `codemode-<id>`.
    pub fn key(&self) -> String {
        format!("codemode-{}", self.id)
    }

    /// Whether its eval parked (the ask stays open, to be found again by its id).
    pub fn is_parked(&self) -> bool {
        self.call.as_ref().is_some_and(CallContext::is_parked)
    }
}

/// How an [`Ask`] ended, and where the answer came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The answer, as the form's (an approval decided through the HTTP API reads as the form
    /// filled in with its decision and reason).
    pub answer: Answer,
    /// The channel that answered ([`Channel::Policy`] for a wait refused by a cap).
    pub channel: Channel,
    /// Who answered, when the channel knows (an API token's name).
    pub decided_by: Option<String>,
    /// The permission of the risk level's `approvers` the decider held, when the channel
    /// checked one (the approval API).
    pub decided_with: Option<String>,
}

impl Reply {
    /// `answer` through `channel`, no decider named.
    pub fn new(answer: Answer, channel: Channel) -> Self {
        Reply {
            answer,
            channel,
            decided_by: None,
            decided_with: None,
        }
    }
}

/// Someone who can be asked: a channel, or a decorator over one. Object-safe.
pub trait Asker: Send + Sync {
    /// Whether a human can be asked at all.
    fn supports(&self) -> bool;
    /// Where the answers come from (for the audit log).
    fn channel(&self) -> Channel;
    /// Asks, giving up after [`Ask::timeout`] (a timeout never approves anything). The future
    /// is dropped, unfinished, when the call stops waiting: a channel withdraws its prompt then,
    /// unless [`Ask::is_parked`].
    fn ask(&self, ask: Ask) -> BoxFuture<'_, Reply>;

    /// Whether someone other than the eval's own caller can answer an approval (the HTTP
    /// approval API, where approvers sign in as themselves): an ask whose risk level names
    /// `approvers` the caller lacks waits there, and is denied at once without it. By default
    /// `false`; decorators pass their inner asker's.
    fn approvers_elsewhere(&self) -> bool {
        false
    }

    /// For an ask made again after a resume ([`Ask::resumed`]): the answer given to it while its
    /// eval was parked, if any (taken: asked twice, `None`). Called before the call waits for a
    /// human — the eval cannot be parked mid-take, which would use the answer up without
    /// delivering it — and not bounded by what is left of the ask's time (the answer was
    /// accepted within it). By default `None`.
    fn taken_while_parked<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, Option<Reply>> {
        let _ = ask;
        Box::pin(async { None })
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
    fn ask(&self, _ask: Ask) -> BoxFuture<'_, Reply> {
        Box::pin(async {
            Reply::new(
                Answer::Failed("the client does not support elicitation".into()),
                Channel::Fallback,
            )
        })
    }
}
