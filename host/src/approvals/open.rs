//! The approval requests open in one eval, kept while they wait: what a parked eval waits on.
//!
//! When an eval parks ([`crate::session::GovernedStep::Parked`]) its calls' futures are
//! dropped, and with them every channel's prompt; the [`OpenAsks`] of the eval still hold each
//! request that was waiting — its id, what a human is shown, and the question a 2026-07-28
//! client answers — so that the server can save them with the eval and any node can list and
//! decide them. A request that ends in any other way (answered, timed out, its eval ended)
//! leaves at once.
//!
//! When the eval resumes, each call asks again under the same id
//! ([`codemode_policies::ApprovalRequest::resumed`]); an answer given meanwhile is taken from
//! the [`Decisions`] first.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use codemode_policies::{ApprovalAnswer, ApprovalRequest};
use codemode_runtime::BoxFuture;
use serde_json::Value;

use super::Question;
use super::form::approval_question;
use super::view::ApprovalView;

/// One open request.
#[derive(Debug, Clone)]
pub struct OpenAsk {
    /// The request's id ([`ApprovalRequest::id`]).
    pub id: String,
    /// What the approval API shows ([`ApprovalView`] as JSON).
    pub view: Value,
    /// The form a client is asked to fill in.
    pub question: Question,
}

/// Answers given to requests of parked evals, taken when the eval asks again.
pub trait Decisions: Send + Sync {
    /// The answer given to request `id` while its eval was parked, if any (taken: a second
    /// call gets `None`).
    fn take(&self, id: &str) -> BoxFuture<'_, Option<ApprovalAnswer>>;
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

    /// Keeps `req` open until the returned guard is dropped — unless its eval parked by then.
    pub(super) fn open<'a>(&'a self, req: &'a ApprovalRequest) -> Open<'a> {
        let view = serde_json::to_value(ApprovalView::of(req, std::time::SystemTime::now()))
            .unwrap_or_default();
        self.lock().insert(
            req.id.clone(),
            OpenAsk {
                id: req.id.clone(),
                view,
                question: approval_question(req),
            },
        );
        Open { asks: self, req }
    }

    /// The answer given to `id` while its eval was parked.
    pub(super) async fn decided(&self, id: &str) -> Option<ApprovalAnswer> {
        match &self.decisions {
            Some(decisions) => decisions.take(id).await,
            None => None,
        }
    }
}

/// See [`OpenAsks::open`].
pub(super) struct Open<'a> {
    asks: &'a OpenAsks,
    req: &'a ApprovalRequest,
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if !self.req.call.is_parked() {
            self.asks.lock().remove(&self.req.id);
        }
    }
}
