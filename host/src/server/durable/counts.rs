//! How many evals each client has parked from this node: the counts behind
//! `limits.perClient.maxParkedEvals` (see [`super::parked`]).

use std::collections::HashMap;
use std::sync::Mutex;

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

    /// How many evals are counted whose time is not up as of `now_ms`.
    pub fn waiting(&self, now_ms: u64) -> usize {
        self.lock().values().filter(|e| e.until_ms > now_ms).count()
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
