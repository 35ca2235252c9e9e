//! An approver that holds each ask until the test answers it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::approval_request;
use crate::{ApprovalAnswer, ApprovalDecision, ApprovalRequest, Ask, Asker, Channel, Reply};

/// Holds every ask until the test answers the asks made so far; counts the asks and the
/// prompts withdrawn (their future dropped unanswered).
pub(super) struct GatedApprover {
    pub(super) requests: Mutex<Vec<ApprovalRequest>>,
    decision: Mutex<ApprovalDecision>,
    /// How many of the asks (in order) may have their answer.
    released: watch::Sender<usize>,
    pub(super) withdrawn: AtomicUsize,
}

impl GatedApprover {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(GatedApprover {
            requests: Mutex::new(Vec::new()),
            decision: Mutex::new(ApprovalDecision::Decline),
            released: watch::channel(0).0,
            withdrawn: AtomicUsize::new(0),
        })
    }
    pub(super) fn asked(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
    pub(super) fn request_id(&self, n: usize) -> String {
        self.requests.lock().unwrap()[n].id.clone()
    }
    /// Until `n` asks were made (at most 30 s: a test fails rather than hangs).
    pub(super) async fn until_asked(&self, n: usize) {
        let reached = async {
            while self.asked() < n {
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(30), reached)
            .await
            .unwrap_or_else(|_| panic!("never {n} asks: {}", self.asked()));
    }

    /// Answers `decision` to every ask made so far (later ones wait).
    pub(super) fn answer_asked(&self, decision: ApprovalDecision) {
        *self.decision.lock().unwrap() = decision;
        self.released.send_replace(self.asked());
    }
}

/// Counts a prompt withdrawn when dropped armed.
struct Withdrawal<'a>(&'a AtomicUsize, bool);

impl Drop for Withdrawal<'_> {
    fn drop(&mut self) {
        if self.1 {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Asker for GatedApprover {
    fn supports(&self) -> bool {
        true
    }
    fn channel(&self) -> Channel {
        Channel::Elicitation
    }
    fn ask(&self, ask: Ask) -> codemode_runtime::BoxFuture<'_, Reply> {
        Box::pin(async move {
            let n = {
                let mut requests = self.requests.lock().unwrap();
                requests.push(approval_request(ask));
                requests.len() - 1
            };
            let mut withdrawal = Withdrawal(&self.withdrawn, true);
            let mut released = self.released.subscribe();
            released.wait_for(|r| *r > n).await.unwrap();
            withdrawal.1 = false;
            let decision = *self.decision.lock().unwrap();
            ApprovalAnswer::new(decision, Channel::Elicitation).to_reply()
        })
    }
}
