//! How many evals each client has parked from this node, and their bytes: the counts behind
//! `limits.perClient.maxParkedEvals`, `limits.perClient.maxParkedBytes` and
//! `durable.maxParkedBytes` (see [`super::parked`]).

use std::collections::HashMap;
use std::sync::Mutex;

/// One counted eval.
struct Entry {
    client: String,
    /// When its approval time is up (ms since the Unix epoch); `u64::MAX` while it is being
    /// saved.
    until_ms: u64,
    /// The bytes of its saved record (`0` until they are known).
    bytes: u64,
}

/// The byte caps of parked state: per client and for the whole node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ByteCaps {
    /// `limits.perClient.maxParkedBytes`.
    pub per_client: u64,
    /// `durable.maxParkedBytes`.
    pub per_node: u64,
}

/// The evals this node parked, by `requestState` (see the module docs).
#[derive(Default)]
pub(crate) struct ParkedCounts {
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
                bytes: 0,
            },
        );
        Ok(())
    }

    /// Counts `bytes` of parked state for `token` of `client`, unless that would take the
    /// client or the node past `caps` (those whose time is up as of `now_ms` no longer count):
    /// then `Err` says which cap, with the bytes already held.
    pub(crate) fn admit_bytes(
        &self,
        (client, token): (&str, &str),
        bytes: u64,
        caps: ByteCaps,
        now_ms: u64,
    ) -> Result<(), String> {
        let mut entries = self.lock();
        entries.retain(|_, e| e.until_ms > now_ms);
        let others = entries.iter().filter(|(t, _)| t.as_str() != token);
        let (mine, all) = others.fold((0u64, 0u64), |(mine, all), (_, e)| {
            let held = if e.client == client { e.bytes } else { 0 };
            (mine.saturating_add(held), all.saturating_add(e.bytes))
        });
        if mine.saturating_add(bytes) > caps.per_client {
            return Err(format!(
                "parking it would pass limits.perClient.maxParkedBytes ({} bytes): client `{client}` has {mine} bytes parked from this node and this eval is {bytes} bytes",
                caps.per_client
            ));
        }
        if all.saturating_add(bytes) > caps.per_node {
            return Err(format!(
                "parking it would pass durable.maxParkedBytes ({} bytes): this node has {all} bytes parked and this eval is {bytes} bytes",
                caps.per_node
            ));
        }
        let entry = entries.entry(token.to_string()).or_insert_with(|| Entry {
            client: client.to_string(),
            until_ms: u64::MAX,
            bytes: 0,
        });
        entry.bytes = bytes;
        Ok(())
    }

    /// `token` was saved for `client`; it counts (with its bytes) until `until_ms` unless
    /// released first.
    pub fn saved(&self, client: &str, token: &str, until_ms: u64) {
        let mut entries = self.lock();
        let entry = entries.entry(token.to_string()).or_insert_with(|| Entry {
            client: client.to_string(),
            until_ms,
            bytes: 0,
        });
        entry.client = client.to_string();
        entry.until_ms = until_ms;
    }

    /// The bytes of parked state counted on this node, all clients together.
    pub fn bytes(&self) -> u64 {
        self.lock().values().map(|e| e.bytes).sum()
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
    pub(crate) fn saved_tokens_of(&self, client: &str) -> Vec<String> {
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

    /// Found by the red team: one eval parked at 22 MiB, and 256 of them per client per node
    /// fit the count caps. Parked bytes are capped per client and per node.
    #[test]
    fn parked_bytes_are_capped_per_client_and_per_node() {
        let counts = ParkedCounts::default();
        let caps = ByteCaps {
            per_client: 100,
            per_node: 150,
        };
        assert_eq!(counts.admit_bytes(("a", "t1"), 60, caps, 0), Ok(()));
        counts.saved("a", "t1", 1_000);
        assert_eq!(
            counts.admit_bytes(("a", "t2"), 41, caps, 0),
            Err("parking it would pass limits.perClient.maxParkedBytes (100 bytes): client `a` has 60 bytes parked from this node and this eval is 41 bytes".into())
        );
        // Saving the same eval again counts its new size, not both.
        assert_eq!(counts.admit_bytes(("a", "t1"), 100, caps, 0), Ok(()));
        assert_eq!(counts.admit_bytes(("a", "t1"), 60, caps, 0), Ok(()));
        assert_eq!(counts.admit_bytes(("b", "u1"), 80, caps, 0), Ok(()));
        assert_eq!(counts.bytes(), 140);
        assert_eq!(
            counts.admit_bytes(("c", "v1"), 11, caps, 0),
            Err("parking it would pass durable.maxParkedBytes (150 bytes): this node has 140 bytes parked and this eval is 11 bytes".into())
        );
        // Released, or past its time, an eval's bytes no longer count.
        counts.release("u1");
        assert_eq!(counts.admit_bytes(("c", "v1"), 11, caps, 0), Ok(()));
        assert_eq!(counts.admit_bytes(("a", "t2"), 100, caps, 1_000), Ok(()));
    }
}
