//! The asks open in one eval — approval requests and `hitl_request` question steps — kept
//! while they wait: what a parked eval waits on.
//!
//! When an eval parks ([`crate::session::GovernedStep::Parked`]) its calls' futures are
//! dropped, and with them every channel's prompt; the [`OpenAsks`] of the eval still hold each
//! ask that was waiting — its id, what a human is shown, and the question a 2026-07-28
//! client answers — so that the server can save them with the eval and any node can list and
//! decide them. An ask that ends in any other way (answered, timed out, its eval ended)
//! leaves at once.
//!
//! When the eval resumes, each call asks again under the same id ([`super::Ask::resumed`]); an
//! answer given meanwhile is taken from the [`Decisions`] first.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use codemode_policies::{ApprovalAnswer, Channel};
use codemode_runtime::{BoxFuture, CallContext};
use serde_json::Value;

use super::Question;

/// One open ask.
#[derive(Debug, Clone)]
pub struct OpenAsk {
    /// The ask's id ([`super::Ask::id`]).
    pub id: String,
    /// What the approval API shows ([`super::view::ApprovalView`] as JSON).
    pub view: Value,
    /// The form a client is asked to fill in.
    pub question: Question,
}

/// An answer given to an ask while its eval was parked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decided {
    /// An approval request's decision.
    Approval(ApprovalAnswer),
    /// A question step's answer.
    Question {
        /// The option chosen; `None`: declined.
        answer: Option<String>,
        /// Where the answer came from.
        channel: Channel,
        /// Who answered, when the channel knows.
        decided_by: Option<String>,
    },
}

/// Answers given to asks of parked evals, taken when the eval asks again.
pub trait Decisions: Send + Sync {
    /// The answer given to ask `id` while its eval was parked, if any (taken: a second
    /// call gets `None`).
    fn take(&self, id: &str) -> BoxFuture<'_, Option<Decided>>;
}

/// The open requests of one eval. See the module docs.
#[derive(Default)]
pub struct OpenAsks {
    asks: Mutex<BTreeMap<String, OpenAsk>>,
    decisions: Option<Arc<dyn Decisions>>,
}

impl OpenAsks {
    /// Requests asked again after a resume first look for an answer in `decisions`.
    pub fn new(decisions: Option<Arc<dyn Decisions>>) -> Self {
        OpenAsks {
            asks: Mutex::default(),
            decisions,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, OpenAsk>> {
        self.asks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The requests open now, by id.
    pub fn snapshot(&self) -> Vec<OpenAsk> {
        self.lock().values().cloned().collect()
    }

    /// Keeps `ask`, an ask of `call`, open until the returned guard is dropped — unless the
    /// call's eval parked by then.
    pub(super) fn keep<'a>(&'a self, ask: OpenAsk, call: &'a CallContext) -> Open<'a> {
        let id = ask.id.clone();
        self.lock().insert(id.clone(), ask);
        Open {
            asks: self,
            id,
            call,
        }
    }

    /// The answer given to ask `id` while its eval was parked, whatever the ask.
    pub(super) async fn taken(&self, id: &str) -> Option<Decided> {
        match &self.decisions {
            Some(decisions) => decisions.take(id).await,
            None => None,
        }
    }
}

/// See [`OpenAsks::keep`].
pub(super) struct Open<'a> {
    asks: &'a OpenAsks,
    id: String,
    call: &'a CallContext,
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if !self.call.is_parked() {
            self.asks.lock().remove(&self.id);
        }
    }
}
