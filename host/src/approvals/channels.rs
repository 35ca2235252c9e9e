//! The channels of one eval: [`ChannelApprover`] offers each approval request, and
//! [`ChannelAsker`] each `hitl_request` question, to the eval's own asker (the MCP client or the
//! terminal) and, when the HTTP approval API is served, to the [`ApprovalBroker`]; the first
//! answer wins and the other channel is withdrawn.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use codemode_policies::{ApprovalAnswer, ApprovalDecision, ApprovalRequest, Approver, Channel};
use codemode_runtime::BoxFuture;
use serde_json::{Value, json};

use super::broker::{ApprovalBroker, ApprovalView, QuestionSpec};
use super::form::ask_for_approval;
use super::open::{Decided, OpenAsk, OpenAsks};
use super::terminal::choices;
use super::{Answer, Asker, NoAsker, Question, QuestionRequest};

/// An eval's [`Approver`]: offers each request to its own channel (the MCP client or the
/// terminal) and, when the HTTP API is served, to the broker; the first answer wins.
///
/// Supported when either can ask; when neither can, the profile's `elicitationFallback` decides.
pub struct ChannelApprover {
    asker: Arc<dyn Asker>,
    broker: Option<Arc<ApprovalBroker>>,
    open_asks: Option<Arc<OpenAsks>>,
}

impl ChannelApprover {
    /// Asks through `asker` and, if given and served, `broker`.
    pub fn new(asker: Arc<dyn Asker>, broker: Option<Arc<ApprovalBroker>>) -> Self {
        ChannelApprover {
            asker,
            broker,
            open_asks: None,
        }
    }

    /// Keeps each request in `asks` while it waits (see [`OpenAsks`]); a request asked again
    /// after a resume takes an answer given meanwhile from there first.
    pub fn with_open_asks(mut self, asks: Option<Arc<OpenAsks>>) -> Self {
        self.open_asks = asks;
        self
    }

    /// Only the broker (no asker of the eval's own).
    pub fn broker_only(broker: Arc<ApprovalBroker>) -> Self {
        Self::new(Arc::new(NoAsker), Some(broker))
    }

    fn broker(&self) -> Option<&Arc<ApprovalBroker>> {
        self.broker.as_ref().filter(|b| b.served())
    }
}

impl Approver for ChannelApprover {
    fn supports(&self) -> bool {
        self.asker.supports() || self.broker().is_some()
    }

    fn decided_while_parked<'a>(
        &'a self,
        req: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Option<ApprovalAnswer>> {
        Box::pin(async move {
            match &self.open_asks {
                Some(asks) if req.resumed => asks.decided(&req.id).await,
                _ => None,
            }
        })
    }

    fn approve(&self, req: ApprovalRequest) -> BoxFuture<'_, ApprovalAnswer> {
        Box::pin(async move {
            let _open = self.open_asks.as_ref().map(|asks| asks.open(&req));
            let mut http = self.broker().map(|b| b.open(&req));
            let has_http = http.is_some();
            let own = async {
                if !self.asker.supports() {
                    return std::future::pending().await;
                }
                match ask_for_approval(self.asker.as_ref(), &req).await {
                    Some(answer) => answer,
                    // This channel cannot answer (failed or timed out): wait for the others,
                    // or for the policy's timeout.
                    None if has_http => std::future::pending().await,
                    None => ApprovalAnswer::new(ApprovalDecision::Decline, self.asker.channel()),
                }
            };
            let Some(pending) = http.as_mut() else {
                return own.await;
            };
            tokio::select! {
                answer = pending.answer() => answer,
                answer = own => {
                    if let Some(pending) = http.take() {
                        pending.answered_elsewhere(&answer);
                    }
                    answer
                }
            }
        })
    }
}

/// An eval's [`Asker`] for `hitl_request` questions: the eval's own asker and, when the HTTP
/// approval API is served, the broker (multiple-choice questions only); the first answer wins.
/// A question step ([`Asker::ask_question`]) is also kept in the eval's [`OpenAsks`] while it
/// waits, so that it is saved with the eval if the eval parks, and a step asked again after a
/// resume takes an answer given meanwhile first.
pub struct ChannelAsker {
    asker: Arc<dyn Asker>,
    broker: Option<Arc<ApprovalBroker>>,
    eval_id: String,
    caller: String,
    open_asks: Option<Arc<OpenAsks>>,
}

impl ChannelAsker {
    /// Asks through `asker` and, if given and served, `broker`, for eval `eval_id` of `caller`.
    pub fn new(
        asker: Arc<dyn Asker>,
        broker: Option<Arc<ApprovalBroker>>,
        eval_id: impl Into<String>,
        caller: impl Into<String>,
    ) -> Self {
        ChannelAsker {
            asker,
            broker,
            eval_id: eval_id.into(),
            caller: caller.into(),
            open_asks: None,
        }
    }

    /// Keeps each question step in `asks` while it waits (see [`OpenAsks`]).
    pub fn with_open_asks(mut self, asks: Option<Arc<OpenAsks>>) -> Self {
        self.open_asks = asks;
        self
    }

    fn broker(&self) -> Option<&Arc<ApprovalBroker>> {
        self.broker.as_ref().filter(|b| b.served())
    }

    /// The question as the broker offers it, and the form's field: string choices only.
    fn spec(&self, question: &Question, timeout: Duration) -> Option<(String, QuestionSpec)> {
        let (field, options) = choices(question)?;
        let options = options
            .iter()
            .map(|(v, _)| v.as_str().map(str::to_string))
            .collect::<Option<Vec<String>>>()?;
        Some((
            field,
            QuestionSpec {
                eval_id: self.eval_id.clone(),
                caller: self.caller.clone(),
                message: question.message.clone(),
                options,
                timeout,
            },
        ))
    }

    /// Offers `question` to the broker and to the eval's own asker — as the question step `step`
    /// (its id on the broker, its key and options for the asker), when given; the first answer
    /// wins.
    async fn offer(
        &self,
        step: Option<&QuestionRequest>,
        question: Question,
        timeout: Duration,
    ) -> Answer {
        let own_ask = |question: Question| match step {
            Some(step) => self.asker.ask_question(QuestionRequest {
                question,
                ..step.clone()
            }),
            None => self.asker.ask(question, timeout),
        };
        let (Some(broker), Some((field, spec))) = (self.broker(), self.spec(&question, timeout))
        else {
            return own_ask(question).await;
        };
        let mut pending = match step {
            Some(step) => broker.open_question_as(&step.id, &spec, Some(step.call.clone())),
            None => broker.open_question(&spec),
        };
        let own = async {
            if !self.asker.supports() {
                return std::future::pending().await;
            }
            match own_ask(question).await {
                // This channel cannot answer: wait for the broker.
                Answer::Failed(_) | Answer::Timeout => std::future::pending().await,
                answer => answer,
            }
        };
        let answer = tokio::select! {
            a = pending.answer() => return match a.answer {
                Some(option) => Answer::Accept(json!({ field: option })),
                None => Answer::Decline,
            },
            a = own => a,
            () = tokio::time::sleep(timeout) => return Answer::Timeout,
        };
        let chosen = match &answer {
            Answer::Accept(content) => content
                .get(&field)
                .and_then(Value::as_str)
                .map(str::to_string),
            _ => None,
        };
        pending.answered_elsewhere(&super::broker::Outcome {
            decision: if chosen.is_some() {
                "answer"
            } else {
                "decline"
            },
            decided_by: None,
            reason: None,
            answer: chosen,
            channel: self.asker.channel(),
        });
        answer
    }
}

impl Asker for ChannelAsker {
    fn supports(&self) -> bool {
        self.asker.supports() || self.broker().is_some()
    }

    fn channel(&self) -> Channel {
        self.asker.channel()
    }

    fn ask(&self, question: Question, timeout: Duration) -> BoxFuture<'_, Answer> {
        Box::pin(self.offer(None, question, timeout))
    }

    fn answered_while_parked<'a>(
        &'a self,
        req: &'a QuestionRequest,
    ) -> BoxFuture<'a, Option<Answer>> {
        Box::pin(async move {
            let (Some(asks), Some((field, _))) = (&self.open_asks, choices(&req.question)) else {
                return None;
            };
            if !req.resumed {
                return None;
            }
            match asks.taken(&req.id).await? {
                Decided::Question { answer, .. } => Some(match answer {
                    Some(option) => Answer::Accept(json!({ field: option })),
                    None => Answer::Decline,
                }),
                Decided::Approval(_) => None,
            }
        })
    }

    fn ask_question(&self, req: QuestionRequest) -> BoxFuture<'_, Answer> {
        Box::pin(async move {
            let spec = self.spec(&req.question, req.timeout);
            let _open = match (&self.open_asks, &spec) {
                (Some(asks), Some((_, spec))) => {
                    let view = ApprovalView::of_question(spec, &req.id, SystemTime::now());
                    Some(asks.keep(
                        OpenAsk {
                            id: req.id.clone(),
                            view: serde_json::to_value(view).unwrap_or_default(),
                            question: req.question.clone(),
                        },
                        &req.call,
                    ))
                }
                _ => None,
            };
            let question = req.question.clone();
            self.offer(Some(&req), question, req.timeout).await
        })
    }
}
