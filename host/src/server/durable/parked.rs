//! How many evals each client has parked from this node (`limits.perClient.maxParkedEvals`).
//!
//! A parked eval holds no pool slot and no longer counts against `maxSuspendedEvals`, so
//! without a bound one client could fill the store with evals waiting for a human. Each node
//! counts the evals it parked per client until they are resumed (here, or seen gone from the
//! store when the count is at the cap: another node resumed them) or their approval time is up.
//! The count is per node: a client reaching several nodes may park up to the cap on each.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codemode_runtime::ParkRequest;

use super::Durable;

/// How often an eval kept in memory by `maxParkedEvals` tries again to park.
pub const PARK_RETRY: Duration = Duration::from_secs(2);

/// Who may park an eval after its wait: the eval's client and `requestState`, and the client's
/// `limits.perClient.maxParkedEvals`.
pub struct ParkGate {
    /// The client ([`crate::server::fair::client_key`]).
    pub client: String,
    /// The eval's `requestState`.
    pub token: String,
    /// How many evals the client may have parked from this node.
    pub cap: usize,
}

impl Durable {
    /// Requests `park` once `asks` has had an open ask for `suspendToStoreAfterSeconds`, if
    /// `gate`'s client is under its `maxParkedEvals` on this node; else the eval stays in memory
    /// (it says so in the log once) and parking is tried again every [`PARK_RETRY`].
    pub fn watch(
        self: &Arc<Self>,
        asks: Arc<crate::approvals::OpenAsks>,
        park: ParkRequest,
        gate: ParkGate,
    ) -> tokio::task::JoinHandle<()> {
        let after = self.after;
        let durable = self.clone();
        tokio::spawn(async move {
            const POLL: Duration = Duration::from_millis(50);
            let mut waiting_since: Option<tokio::time::Instant> = None;
            let mut refused = false;
            loop {
                if park.is_requested() {
                    return;
                }
                let open = !asks.snapshot().is_empty();
                let now = tokio::time::Instant::now();
                match (open, waiting_since) {
                    (false, _) => waiting_since = None,
                    (true, None) => waiting_since = Some(now),
                    (true, Some(since)) if now.duration_since(since) >= after => {
                        match durable.may_park(&gate).await {
                            Ok(()) => {
                                park.request();
                                return;
                            }
                            Err(count) => {
                                if !std::mem::replace(&mut refused, true) {
                                    tracing::warn!(
                                        "an eval of client `{}` stays in memory instead of being parked: the client has {count} evals parked from this node (limits.perClient.maxParkedEvals = {})",
                                        gate.client,
                                        gate.cap
                                    );
                                }
                                tokio::time::sleep(PARK_RETRY).await;
                                continue;
                            }
                        }
                    }
                    (true, Some(_)) => {}
                }
                tokio::time::sleep(POLL).await;
            }
        })
    }

    /// Counts `gate`'s eval as parked for its client, unless the client is at its cap on this
    /// node (`Err(count)`). At the cap, the evals counted are looked up in the store first:
    /// those another node resumed no longer count.
    async fn may_park(&self, gate: &ParkGate) -> Result<(), usize> {
        let now = codemode_store::now_ms();
        if self
            .parked
            .reserve(&gate.client, &gate.token, gate.cap, now)
            .is_ok()
        {
            return Ok(());
        }
        for token in self.parked.saved_tokens_of(&gate.client) {
            if token != gate.token
                && matches!(self.store.exists(&format!("eval:{token}")).await, Ok(false))
            {
                self.parked.release(&token);
            }
        }
        self.parked
            .reserve(&gate.client, &gate.token, gate.cap, now)
    }

    /// `token`'s eval does not (or no longer) count as parked from this node: it finished, was
    /// resumed, or could not be saved.
    pub fn not_parked(&self, token: &str) {
        self.parked.release(token);
    }
}

/// One counted eval.
struct Entry {
    client: String,
    /// When its approval time is up (ms since the Unix epoch); `u64::MAX` while it is being
    /// saved.
    until_ms: u64,
}

/// The evals this node parked, by `requestState` (see the module docs).
#[derive(Default)]
pub struct ParkedCounts {
    entries: Mutex<HashMap<String, Entry>>,
}

impl ParkedCounts {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts `token` as being parked for `client`, unless `client` already has `cap` counted
    /// (those whose time is up as of `now_ms` no longer count): then `Err(count)`.
    pub fn reserve(&self, client: &str, token: &str, cap: usize, now_ms: u64) -> Result<(), usize> {
        let mut entries = self.lock();
        entries.retain(|_, e| e.until_ms > now_ms);
        let count = entries
            .iter()
            .filter(|(t, e)| e.client == client && t.as_str() != token)
            .count();
        if count >= cap {
            return Err(count);
        }
        entries.insert(
            token.to_string(),
            Entry {
                client: client.to_string(),
                until_ms: u64::MAX,
            },
        );
        Ok(())
    }

    /// `token` was saved for `client`; it counts until `until_ms` unless released first.
    pub fn saved(&self, client: &str, token: &str, until_ms: u64) {
        self.lock().insert(
            token.to_string(),
            Entry {
                client: client.to_string(),
                until_ms,
            },
        );
    }

    /// `token` no longer counts: resumed, finished before it parked, or its save failed.
    pub fn release(&self, token: &str) {
        self.lock().remove(token);
    }

    /// The tokens counted for `client` whose evals were saved (not those being saved now:
    /// their `eval:` record is written last, so the store cannot tell yet whether they left).
    pub fn saved_tokens_of(&self, client: &str) -> Vec<String> {
        self.lock()
            .iter()
            .filter(|(_, e)| e.client == client && e.until_ms != u64::MAX)
            .map(|(t, _)| t.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_at_its_cap_is_refused_until_one_is_released_or_its_time_is_up() {
        let counts = ParkedCounts::default();
        assert_eq!(counts.reserve("a", "t1", 2, 0), Ok(()));
        counts.saved("a", "t1", 1_000);
        assert_eq!(counts.reserve("a", "t2", 2, 0), Ok(()));
        assert_eq!(counts.reserve("a", "t3", 2, 0), Err(2));
        // Reserving again under the same token does not count it twice; other clients are
        // counted apart.
        assert_eq!(counts.reserve("a", "t2", 2, 0), Ok(()));
        assert_eq!(counts.reserve("b", "u1", 2, 0), Ok(()));
        counts.release("t2");
        assert_eq!(counts.reserve("a", "t3", 2, 0), Ok(()));
        // t3 is being saved: only t1, saved, may be looked up in the store at the cap.
        assert_eq!(counts.saved_tokens_of("a"), ["t1"]);
        counts.saved("a", "t3", 5_000);
        // t1's time is up at 1,000 ms: it no longer counts.
        assert_eq!(counts.reserve("a", "t4", 2, 999), Err(2));
        assert_eq!(counts.reserve("a", "t4", 2, 1_000), Ok(()));
        counts.saved("a", "t4", 5_000);
        let mut tokens = counts.saved_tokens_of("a");
        tokens.sort();
        assert_eq!(tokens, ["t3", "t4"]);
    }
}
