//! Counting an eval's waits on a human: [`WaitingAsker`] and [`WaitingApprover`] wrap an eval's
//! channels and tell a [`HumanWaits`] when a wait begins and ends, so that a server can cap how
//! many evals of one client sit in the pool waiting for an answer (`limits.perClient`).

use std::sync::Arc;
use std::time::Duration;

use codemode_policies::{ApprovalAnswer, ApprovalDecision, ApprovalRequest, Approver, Channel};
use codemode_runtime::BoxFuture;

use super::{Answer, Asker, Question, QuestionRequest};

/// Told when one eval starts and stops waiting on a human. Waits of one eval may overlap.
pub trait HumanWaits: Send + Sync {
    /// A wait is about to begin. `Err(message)`: it may not (a cap is reached): the question is
    /// not asked, and `message` says why.
    fn begin(&self) -> Result<(), String>;
    /// A wait that [`begin`](Self::begin) allowed has ended (answered, timed out or dropped).
    fn end(&self);
}

/// Ends the wait however the asking future ends.
struct Waiting<'a>(&'a dyn HumanWaits);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// An [`Asker`] whose questions count as waits of `waits`.
pub struct WaitingAsker {
    inner: Arc<dyn Asker>,
    waits: Arc<dyn HumanWaits>,
}

impl WaitingAsker {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Asker>, waits: Arc<dyn HumanWaits>) -> Self {
        WaitingAsker { inner, waits }
    }
}

impl Asker for WaitingAsker {
    fn supports(&self) -> bool {
        self.inner.supports()
    }

    fn channel(&self) -> Channel {
        self.inner.channel()
    }

    fn ask(&self, question: Question, timeout: Duration) -> BoxFuture<'_, Answer> {
        Box::pin(async move {
            if let Err(message) = self.waits.begin() {
                return Answer::Failed(message);
            }
            let _waiting = Waiting(self.waits.as_ref());
            self.inner.ask(question, timeout).await
        })
    }

    fn ask_keyed(&self, key: &str, question: Question, timeout: Duration) -> BoxFuture<'_, Answer> {
        let key = key.to_string();
        Box::pin(async move {
            if let Err(message) = self.waits.begin() {
                return Answer::Failed(message);
            }
            let _waiting = Waiting(self.waits.as_ref());
            self.inner.ask_keyed(&key, question, timeout).await
        })
    }

    fn ask_question(&self, req: QuestionRequest) -> BoxFuture<'_, Answer> {
        Box::pin(async move {
            if let Err(message) = self.waits.begin() {
                return Answer::Failed(message);
            }
            let _waiting = Waiting(self.waits.as_ref());
            self.inner.ask_question(req).await
        })
    }

    // Not a wait: an answer given already.
    fn answered_while_parked<'a>(
        &'a self,
        req: &'a QuestionRequest,
    ) -> BoxFuture<'a, Option<Answer>> {
        self.inner.answered_while_parked(req)
    }
}

/// An [`Approver`] whose requests count as waits of `waits`; a request refused by
/// [`HumanWaits::begin`] is declined with its message as the reason.
pub struct WaitingApprover {
    inner: Arc<dyn Approver>,
    waits: Arc<dyn HumanWaits>,
}

impl WaitingApprover {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Approver>, waits: Arc<dyn HumanWaits>) -> Self {
        WaitingApprover { inner, waits }
    }
}

impl Approver for WaitingApprover {
    fn supports(&self) -> bool {
        self.inner.supports()
    }

    fn approve(&self, req: ApprovalRequest) -> BoxFuture<'_, ApprovalAnswer> {
        Box::pin(async move {
            if let Err(message) = self.waits.begin() {
                return ApprovalAnswer::new(ApprovalDecision::Decline, Channel::Policy)
                    .with_reason(Some(message));
            }
            let _waiting = Waiting(self.waits.as_ref());
            self.inner.approve(req).await
        })
    }

    // Not a wait: an answer given already.
    fn decided_while_parked<'a>(
        &'a self,
        req: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Option<ApprovalAnswer>> {
        self.inner.decided_while_parked(req)
    }
}
