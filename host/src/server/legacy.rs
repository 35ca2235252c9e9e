//! A legacy (2025-11-25) eval parked while its request stays open on its node.
//!
//! Such an eval asks its human through the client's `elicitation/create`, which answers on the
//! session's node only. When the eval parks (saved to the store, its memory freed), the
//! elicitation stays open: [`LegacyAsker`] sends each question from a task of its own, which
//! outlives the eval's call. Its answer then
//! - reaches the eval's call while the eval runs in memory (asked again under the same key
//!   after a resume here, the call finds the question already asked, or already answered);
//! - is recorded in the store as the ask's decision once the eval is saved (the first answer
//!   wins, as with the approval API) and resumes the eval on this node.
//!
//! The request itself waits for the eval's result in the store (see
//! `CodemodeServer::await_parked_legacy`), whichever node resumed it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use codemode_policies::Channel;
use codemode_runtime::BoxFuture;
use tokio::sync::watch;

use super::durable::Durable;
use crate::approvals::{Answer, Ask, AskKind, Asker, PeerAsker, Reply};

/// The extension a legacy session's `tools/call` carries from the failover layer: the
/// `requestState`-like token its eval parks under, also written in the request's in-flight
/// record so that another node can tell whether the eval was saved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LegacyEvalToken(pub String);

/// The asker of a legacy eval that may park. See the module docs.
pub(crate) struct LegacyAsker {
    /// The client's elicitation; `None` when the client cannot be asked.
    peer: Option<PeerAsker>,
    token: String,
    durable: Arc<Durable>,
    inner: Arc<Mutex<Inner>>,
}

#[derive(Default)]
struct Inner {
    /// Each question put to the client, by key: its answer once it came.
    asked: HashMap<String, watch::Sender<Option<Answer>>>,
    /// Whether the eval is saved in the store (its answers go there).
    saved: bool,
    /// The tasks that put the questions, stopped when the request ends.
    tasks: Vec<tokio::task::AbortHandle>,
}

impl LegacyAsker {
    /// Asks through `peer` for the eval parked (when it parks) under `token` in `durable`.
    pub fn new(peer: Option<PeerAsker>, token: String, durable: Arc<Durable>) -> Arc<Self> {
        Arc::new(LegacyAsker {
            peer,
            token,
            durable,
            inner: Arc::default(),
        })
    }

    /// The token the eval parks under.
    pub fn token(&self) -> &str {
        &self.token
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The eval is saved in the store: answers that came meanwhile (after its call stopped
    /// waiting) and every later one are recorded there.
    pub fn saved(self: &Arc<Self>) {
        let answered: Vec<(String, Answer)> = {
            let mut inner = self.lock();
            inner.saved = true;
            inner
                .asked
                .iter()
                .filter_map(|(key, tx)| Some((key.clone(), tx.borrow().clone()?)))
                .collect()
        };
        for (key, answer) in answered {
            let this = self.clone();
            tokio::spawn(async move { this.record(&key, &answer).await });
        }
    }

    /// The request ended: the questions still open to its client are dropped (as a plain
    /// elicitation's are when its eval ends).
    pub fn close(&self) {
        for task in std::mem::take(&mut self.lock().tasks) {
            task.abort();
        }
    }

    /// The eval runs in memory again (resumed on this node): answers go to its calls.
    pub fn resumed(&self) {
        self.lock().saved = false;
    }

    /// `answer` came for `key`: to the eval's call, and to the store if the eval is saved.
    async fn answered(&self, key: &str, answer: Answer) {
        let saved = {
            let inner = self.lock();
            if let Some(tx) = inner.asked.get(key) {
                tx.send_replace(Some(answer.clone()));
            }
            inner.saved
        };
        if saved {
            self.record(key, &answer).await;
        }
    }

    /// Records `answer` to the ask `key` of the saved eval as its decision, and resumes the
    /// eval here. A timeout or a failed elicitation decides nothing (the approval API and the
    /// sweep at the deadline still can).
    async fn record(&self, key: &str, answer: &Answer) {
        if matches!(answer, Answer::Timeout | Answer::Failed(_)) {
            return;
        }
        let Some(id) = key.strip_prefix("codemode-") else {
            return;
        };
        match self
            .durable
            .answer(&self.token, id, answer, Channel::Elicitation)
            .await
        {
            Ok(()) => self.durable.resume_here(&self.token),
            Err(refused) => tracing::info!("the client's answer was not recorded: {refused}"),
        }
    }
}

/// The legacy requests open on this node that wait on a parked eval, by its token: an eval
/// resumed here asks through the request's client.
#[derive(Default)]
pub(crate) struct LegacyRequests(Mutex<HashMap<String, Arc<LegacyAsker>>>);

impl LegacyRequests {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<LegacyAsker>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `asker`'s request waits on its eval on this node until the guard drops.
    pub fn waits(self: &Arc<Self>, asker: Arc<LegacyAsker>) -> LegacyWait {
        let token = asker.token().to_string();
        self.lock().insert(token.clone(), asker);
        LegacyWait {
            requests: self.clone(),
            token,
        }
    }

    /// The asker of the legacy request waiting on `token` on this node, if one does.
    pub fn asker(&self, token: &str) -> Option<Arc<LegacyAsker>> {
        self.lock().get(token).cloned()
    }
}

/// See [`LegacyRequests::waits`]: the request's questions still open are dropped with it.
pub(crate) struct LegacyWait {
    requests: Arc<LegacyRequests>,
    token: String,
}

impl Drop for LegacyWait {
    fn drop(&mut self) {
        if let Some(asker) = self.requests.lock().remove(&self.token) {
            asker.close();
        }
    }
}

impl Asker for LegacyAsker {
    fn supports(&self) -> bool {
        self.peer.is_some()
    }

    fn channel(&self) -> Channel {
        match &self.peer {
            Some(_) => Channel::Elicitation,
            None => Channel::Fallback,
        }
    }

    fn ask(&self, ask: Ask) -> BoxFuture<'_, Reply> {
        let channel = self.channel();
        Box::pin(async move {
            let answer = match (&self.peer, &ask.kind) {
                (None, _) => Answer::Failed("the client does not support elicitation".into()),
                // An upstream's form is not kept across a park: asked as a plain elicitation.
                (Some(peer), AskKind::Form) => peer.elicit(&ask.question, ask.timeout).await,
                (Some(peer), _) => self.ask_keyed(peer.clone(), ask).await,
            };
            Reply::new(answer, channel)
        })
    }
}

impl LegacyAsker {
    /// Puts `ask` to the client from a task of its own under its key — once: asked again after
    /// a resume on this node, the call finds the question already asked, or already answered.
    async fn ask_keyed(&self, peer: PeerAsker, ask: Ask) -> Answer {
        let key = ask.key();
        let mut rx = {
            let mut inner = self.lock();
            match inner.asked.get(&key) {
                Some(tx) => tx.subscribe(),
                None => {
                    let (tx, rx) = watch::channel(None);
                    inner.asked.insert(key.clone(), tx);
                    // Its own task: the question stays open when the eval parks.
                    let this = LegacyAsker {
                        peer: None,
                        token: self.token.clone(),
                        durable: self.durable.clone(),
                        inner: self.inner.clone(),
                    };
                    let task = tokio::spawn(async move {
                        let answer = peer.elicit(&ask.question, ask.timeout).await;
                        this.answered(&key, answer).await;
                    });
                    inner.tasks.push(task.abort_handle());
                    rx
                }
            }
        };
        match rx.wait_for(Option::is_some).await {
            Ok(answer) => answer.clone().unwrap_or(Answer::Timeout),
            Err(_) => Answer::Failed("the question was dropped".into()),
        }
    }
}
