//! The channels of one eval: [`Channels`] offers each ask to the eval's own asker (the MCP
//! client or the terminal) and, when the HTTP approval API is served, to the [`ApprovalBroker`];
//! the first answer wins and the other channel is withdrawn. While an ask waits it is kept in the
//! eval's [`OpenAsks`], so that it is saved with the eval if the eval parks.

use std::sync::Arc;
use std::time::SystemTime;

use codemode_policies::{ApprovalAnswer, ApprovalDecision, Channel};
use codemode_runtime::BoxFuture;
use serde_json::{Value, json};

use super::broker::{ApprovalBroker, ApprovalView, Outcome, QuestionSpec};
use super::open::{Decided, OpenAsk, OpenAsks};
use super::terminal::choices;
use super::{Answer, Ask, AskKind, Asker, Reply};

/// An eval's channels. See the module docs.
///
/// Supported when either the eval's asker or the broker can ask; when neither can, the
/// profile's `elicitationFallback` decides.
pub struct Channels {
    asker: Arc<dyn Asker>,
    broker: Option<Arc<ApprovalBroker>>,
    eval_id: String,
    caller: String,
    open_asks: Option<Arc<OpenAsks>>,
}

impl Channels {
    /// Asks through `asker` and, if given and served, `broker`, for eval `eval_id` of `caller`
    /// (what the broker shows of a question; an approval request names its own).
    pub fn new(
        asker: Arc<dyn Asker>,
        broker: Option<Arc<ApprovalBroker>>,
        eval_id: impl Into<String>,
        caller: impl Into<String>,
    ) -> Self {
        Channels {
            asker,
            broker,
            eval_id: eval_id.into(),
            caller: caller.into(),
            open_asks: None,
        }
    }

    /// Keeps each ask of a script's call in `asks` while it waits (see [`OpenAsks`]); an ask
    /// made again after a resume takes an answer given meanwhile from there first.
    pub(crate) fn with_open_asks(mut self, asks: Option<Arc<OpenAsks>>) -> Self {
        self.open_asks = asks;
        self
    }

    fn broker(&self) -> Option<&Arc<ApprovalBroker>> {
        self.broker.as_ref().filter(|b| b.served())
    }

    /// What the approval API shows of `ask`, and the form field a question's answer fills in:
    /// `None` for a form the API cannot answer (anything but one field of string options).
    fn view(&self, ask: &Ask) -> Option<(ApprovalView, Option<String>)> {
        let now = SystemTime::now();
        if let AskKind::Approval(req) = &ask.kind {
            return Some((ApprovalView::of(req, now), None));
        }
        let (field, options) = choices(&ask.question)?;
        let options = options
            .iter()
            .map(|(v, _)| v.as_str().map(str::to_string))
            .collect::<Option<Vec<String>>>()?;
        let spec = QuestionSpec {
            eval_id: self.eval_id.clone(),
            caller: self.caller.clone(),
            message: ask.question.message.clone(),
            options,
            timeout: ask.timeout,
        };
        Some((ApprovalView::of_question(&spec, &ask.id, now), Some(field)))
    }

    /// The eval's own asker, waiting on the broker instead where it cannot answer (failed or
    /// timed out) while the broker can.
    ///
    /// When the eval's caller lacks the right to decide an approval (its risk level's
    /// `approvers`), its own channel only shows the ask (the form offers only to withdraw it):
    /// a decline withdraws the call, anything else leaves it waiting for an approver here.
    async fn own(&self, ask: Ask, has_broker: bool) -> Reply {
        if !self.asker.supports() && has_broker {
            return std::future::pending().await;
        }
        let only_withdraws = match &ask.kind {
            AskKind::Approval(req) => req
                .risk_policy
                .approver_right(&req.caller, req.risk)
                .is_err(),
            _ => false,
        };
        let reply = self.asker.ask(ask).await;
        let withdrawn = ApprovalAnswer::from_reply(&reply)
            .is_some_and(|a| a.decision == ApprovalDecision::Decline && a.not_offered.is_none());
        match reply.answer {
            Answer::Failed(_) | Answer::Timeout if has_broker => std::future::pending().await,
            _ if only_withdraws && !withdrawn && has_broker => std::future::pending().await,
            _ => reply,
        }
    }
}

impl Asker for Channels {
    fn supports(&self) -> bool {
        self.asker.supports() || self.broker().is_some()
    }

    fn channel(&self) -> Channel {
        self.asker.channel()
    }

    fn approvers_elsewhere(&self) -> bool {
        self.broker().is_some() || self.asker.approvers_elsewhere()
    }

    fn ask(&self, ask: Ask) -> BoxFuture<'_, Reply> {
        Box::pin(async move {
            let view = self.view(&ask);
            let call = ask.call.clone();
            let _open = match (&self.open_asks, &view, &call) {
                (Some(asks), Some((view, _)), Some(call)) if !matches!(ask.kind, AskKind::Form) => {
                    Some(asks.keep(
                        OpenAsk {
                            id: ask.id.clone(),
                            view: serde_json::to_value(view).unwrap_or_default(),
                            question: ask.question.clone(),
                        },
                        call,
                    ))
                }
                _ => None,
            };
            let (Some(broker), Some((view, field))) = (self.broker(), view) else {
                return self.own(ask, false).await;
            };
            let mut pending = broker.open(&ask, view, field.clone());
            let timeout = ask.timeout;
            let kind = ask.kind.clone();
            let reply = tokio::select! {
                reply = pending.answer() => return reply,
                reply = self.own(ask, true) => reply,
                () = tokio::time::sleep(timeout) => {
                    return Reply::new(Answer::Timeout, self.asker.channel());
                }
            };
            // The broker is the one judge of which answer came first.
            match pending
                .answered_elsewhere(&outcome(&kind, field.as_deref(), &reply))
                .await
            {
                Some(broker_won) => broker_won,
                None => reply,
            }
        })
    }

    fn taken_while_parked<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, Option<Reply>> {
        Box::pin(async move {
            let asks = self.open_asks.as_ref().filter(|_| ask.resumed)?;
            match (asks.taken(&ask.id).await?, &ask.kind) {
                (Decided::Approval(answer), AskKind::Approval(_)) => Some(answer.to_reply()),
                (
                    Decided::Question {
                        answer,
                        channel,
                        decided_by,
                    },
                    AskKind::Choice,
                ) => {
                    let (field, _) = choices(&ask.question)?;
                    let answer = match answer {
                        Some(option) => Answer::Accept(json!({ field: option })),
                        None => Answer::Decline,
                    };
                    Some(Reply {
                        answer,
                        channel,
                        decided_by,
                        decided_with: None,
                    })
                }
                _ => None,
            }
        })
    }
}

/// How an ask of `kind` ended with `reply` on another channel than the broker, as the broker
/// records it: an approval as the policy layer will take it (an answer its risk policy refuses
/// counts as a decline), a question as the option chosen in form `field`.
fn outcome(kind: &AskKind, field: Option<&str>, reply: &Reply) -> Outcome {
    if let AskKind::Approval(req) = kind {
        let mut answer = ApprovalAnswer::from_reply(reply)
            .unwrap_or_else(|| ApprovalAnswer::new(ApprovalDecision::Decline, reply.channel));
        if req
            .risk_policy
            .check(answer.decision, answer.reason.as_deref())
            .is_err()
        {
            answer.decision = ApprovalDecision::Decline;
        }
        // Answered on the eval's own channel: by its caller, with the caller's right.
        answer.decided_with = req
            .risk_policy
            .approver_right(&req.caller, req.risk)
            .ok()
            .flatten();
        return Outcome::of_approval(&answer);
    }
    let chosen = match (&reply.answer, field) {
        (Answer::Accept(content), Some(field)) => content
            .get(field)
            .and_then(Value::as_str)
            .map(str::to_string),
        _ => None,
    };
    Outcome {
        decision: if chosen.is_some() {
            "answer"
        } else {
            "decline"
        },
        decided_by: reply.decided_by.clone(),
        reason: None,
        answer: chosen,
        channel: reply.channel,
        decided_with: None,
    }
}
