//! The approval stream's events for the asks of parked evals. Those asks live in the durable
//! store, shared by every node, not in this process's broker: while a stream is open, the
//! store is read every [`POLL`] and what changed since is sent — `requested` for an ask newly
//! listed, `decided` for one decided (on any node, by any channel), `expired` for one gone
//! unanswered — so the page and `codemode approve` show every ask any node lists within two
//! polls, and move on once it is decided. A decision given through this node's API is sent at
//! once (see [`ParkedFeed::poll`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::broadcast;

use codemode_policies::Caller;

use super::view::{Choice, DecideError};

/// The asks of evals parked in the durable store (any node's): listed and decided through the
/// approval API beside this process's own pending requests.
pub trait ParkedAsks: Send + Sync {
    /// Their views, as the API shows them; `Err` (in words) when they cannot be read now.
    fn list(&self) -> codemode_runtime::BoxFuture<'_, Result<Vec<serde_json::Value>, String>>;
    /// The decisions given to them, as the API shows decisions, newest first; `Err` (in
    /// words) when they cannot be read now.
    fn decided(&self) -> codemode_runtime::BoxFuture<'_, Result<Vec<serde_json::Value>, String>>;
    /// Decides ask `id` — an approval with a decision, a question with one of its options or
    /// `decline` — (the same checks as [`ApprovalBroker::decide`]) and resumes its eval.
    fn decide<'a>(
        &'a self,
        id: &'a str,
        decider: &'a Caller,
        choice: Choice,
        reason: Option<String>,
    ) -> codemode_runtime::BoxFuture<'a, Result<(), DecideError>>;
}

/// How often the store is read while a stream is open: an ask any node lists reaches every
/// stream within this (and one read of the store).
pub(crate) const POLL: Duration = Duration::from_secs(1);

/// One change to the parked asks, as the stream sends it.
#[derive(Debug, Clone)]
pub struct ParkedEvent {
    /// `requested`, `decided` or `expired`.
    pub name: &'static str,
    /// The ask as the approval API lists it (with the decision's fields once decided).
    pub view: Arc<Value>,
}

/// What the streams were last told of an ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Told {
    Requested,
    Decided,
}

/// The parked asks' events of one broker, and what its streams were told so far.
pub struct ParkedFeed {
    events: broadcast::Sender<ParkedEvent>,
    told: Mutex<HashMap<String, (Told, Arc<Value>)>>,
    /// Serialises polls (the watcher's and those after a decision), so that one change is
    /// sent once.
    polling: tokio::sync::Mutex<()>,
    watching: std::sync::atomic::AtomicBool,
}

impl Default for ParkedFeed {
    fn default() -> Self {
        ParkedFeed {
            events: broadcast::channel(256).0,
            told: Mutex::new(HashMap::new()),
            polling: tokio::sync::Mutex::new(()),
            watching: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl ParkedFeed {
    /// New events from now on; the first subscriber starts the watcher reading `parked`.
    pub fn subscribe(
        self: &Arc<Self>,
        parked: &Arc<dyn ParkedAsks>,
    ) -> broadcast::Receiver<ParkedEvent> {
        let rx = self.events.subscribe();
        if !self
            .watching
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            tokio::spawn(watch(Arc::downgrade(self), parked.clone()));
        }
        rx
    }

    fn told(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Told, Arc<Value>)>> {
        // A map of plain data: a panic elsewhere cannot leave it inconsistent.
        self.told.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads the store once and sends what changed since the last read. A store that cannot
    /// be read now changes nothing (the next poll tries again).
    pub async fn poll(&self, parked: &dyn ParkedAsks) {
        if self.events.receiver_count() == 0 {
            return;
        }
        let _one = self.polling.lock().await;
        let (Ok(listed), Ok(decided)) = (parked.list().await, parked.decided().await) else {
            return;
        };
        let changes = self.changes(listed, decided);
        for event in changes {
            let _ = self.events.send(event);
        }
    }

    /// What changed between what the streams were told and the store's `listed` asks and
    /// `decided` decisions; remembers it as told.
    fn changes(&self, listed: Vec<Value>, decided: Vec<Value>) -> Vec<ParkedEvent> {
        let decided: HashMap<String, Value> = decided
            .into_iter()
            .filter_map(|v| Some((v.get("id")?.as_str()?.to_string(), v)))
            .collect();
        let mut told = self.told();
        let mut out = Vec::new();
        let mut listed_ids = Vec::with_capacity(listed.len());
        for view in listed {
            let Some(id) = view.get("id").and_then(Value::as_str).map(str::to_string) else {
                continue;
            };
            listed_ids.push(id.clone());
            if decided.contains_key(&id) || told.contains_key(&id) {
                continue;
            }
            let view = Arc::new(view);
            told.insert(id, (Told::Requested, view.clone()));
            out.push(ParkedEvent {
                name: "requested",
                view,
            });
        }
        let decided_ids: Vec<String> = decided.keys().cloned().collect();
        for (id, view) in decided {
            if told.get(&id).is_some_and(|(t, _)| *t == Told::Decided) {
                continue;
            }
            let view = Arc::new(view);
            told.insert(id, (Told::Decided, view.clone()));
            out.push(ParkedEvent {
                name: "decided",
                view,
            });
        }
        // A decision no longer in the store needs no memory.
        told.retain(|id, (t, _)| *t == Told::Requested || decided_ids.contains(id));
        // Gone from the store without a decision: its time was up (or its eval ended).
        let gone: Vec<String> = told
            .iter()
            .filter(|(id, (t, _))| *t == Told::Requested && !listed_ids.contains(*id))
            .map(|(id, _)| id.clone())
            .collect();
        for id in gone {
            if let Some((_, view)) = told.remove(&id) {
                let mut view = (*view).clone();
                view["decision"] = Value::String("expired".into());
                out.push(ParkedEvent {
                    name: "expired",
                    view: Arc::new(view),
                });
            }
        }
        out
    }
}

/// Polls the store every [`POLL`] while a stream is open; forgets what was told when none is
/// (the next stream starts from the store's listing), and ends with the feed.
async fn watch(feed: Weak<ParkedFeed>, parked: Arc<dyn ParkedAsks>) {
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(feed) = feed.upgrade() else {
            return;
        };
        if feed.events.receiver_count() == 0 {
            feed.told().clear();
            continue;
        }
        feed.poll(parked.as_ref()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(events: &[ParkedEvent]) -> Vec<(&'static str, String)> {
        events
            .iter()
            .map(|e| {
                (
                    e.name,
                    e.view["id"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn each_change_is_told_once() {
        let feed = ParkedFeed::default();
        let ask = |id: &str| json!({"id": id, "tool": "t"});
        let decision = |id: &str| json!({"id": id, "decision": "approve_once"});
        let told = feed.changes(vec![ask("a"), ask("b")], vec![]);
        assert_eq!(
            names(&told),
            [("requested", "a".into()), ("requested", "b".into())]
        );
        assert!(feed.changes(vec![ask("a"), ask("b")], vec![]).is_empty());
        // `a` decided (its record stays listed until its eval resumes), `b` gone unanswered,
        // `c` new.
        let told = feed.changes(vec![ask("a"), ask("c")], vec![decision("a")]);
        let mut got = names(&told);
        got.sort();
        assert_eq!(
            got,
            [
                ("decided", "a".into()),
                ("expired", "b".into()),
                ("requested", "c".into())
            ]
        );
        let expired = told.iter().find(|e| e.name == "expired").unwrap();
        assert_eq!(expired.view["decision"], "expired");
        assert!(
            feed.changes(vec![ask("a"), ask("c")], vec![decision("a")])
                .is_empty()
        );
        // Decided before any stream saw it requested: still told, once.
        let told = feed.changes(vec![ask("c"), ask("d")], vec![decision("a"), decision("d")]);
        assert_eq!(names(&told), [("decided", "d".into())]);
    }
}
