//! The lease a node holds on a resumed eval while it runs it (`running:<requestState>`), so
//! that a retry on another node waits for the eval's result, or learns that its node died.

use std::sync::Arc;
use std::time::Duration;

use super::{Durable, Lease};

/// How long a node's mark on a resumed eval it runs lasts unless renewed: a retry elsewhere
/// learns within this long of the node's death that the eval will not finish.
pub const RUNNING_LEASE: Duration = Duration::from_secs(6);
/// How often the node running a resumed eval renews its lease.
const RUNNING_RENEW: Duration = Duration::from_secs(2);

/// Whether a resumed eval is running ([`Durable::running`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Running {
    /// On a node that renews its lease.
    Yes,
    /// It was, on a node that stopped renewing the lease before the eval ended (it died).
    Abandoned,
    /// No node runs it (never resumed, or it ended).
    No,
    /// The store cannot be read: nobody here can tell.
    Unknown,
}

impl Durable {
    /// Marks `token` as resumed on this node until its result is kept (or `ttl` passes), so
    /// that a retry elsewhere waits for the result instead of saying the eval is gone. The mark
    /// holds a lease renewed every [`RUNNING_RENEW`] while this node runs the eval: when the
    /// node dies, the lease runs out within [`RUNNING_LEASE`], and a retry says so.
    pub(crate) async fn mark_running(self: &Arc<Self>, token: &str, ttl: Duration) {
        self.put_running(token, ttl).await;
        let durable = self.clone();
        let key = token.to_string();
        let renew = tokio::spawn(async move {
            loop {
                tokio::time::sleep(RUNNING_RENEW).await;
                durable.put_running(&key, ttl).await;
            }
        });
        if let Some(old) = self
            .renewing()
            .insert(token.to_string(), Lease { renew, ttl })
        {
            old.renew.abort();
        }
    }

    fn renewing(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Lease>> {
        self.renewing.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How long `token`'s eval may run after its resume on this node, if it runs here.
    pub(super) fn running_ttl(&self, token: &str) -> Option<Duration> {
        self.renewing().get(token).map(|lease| lease.ttl)
    }

    async fn put_running(&self, token: &str, ttl: Duration) {
        let until = codemode_store::now_ms()
            .saturating_add(u64::try_from(RUNNING_LEASE.as_millis()).unwrap_or(u64::MAX));
        let _ = self
            .store
            .put(&format!("running:{token}"), &until.to_le_bytes(), ttl)
            .await;
    }

    /// Ends [`mark_running`](Self::mark_running).
    pub(crate) async fn unmark_running(&self, token: &str) {
        if let Some(lease) = self.renewing().remove(token) {
            lease.renew.abort();
        }
        let _ = self.store.delete(&format!("running:{token}")).await;
    }

    /// Whether `token`'s eval runs on some node after a resume, or ran on a node that stopped.
    pub async fn running(&self, token: &str) -> Running {
        match self.store.get(&format!("running:{token}")).await {
            Ok(Some(record)) => {
                let until = record
                    .value
                    .get(..8)
                    .and_then(|b| <[u8; 8]>::try_from(b).ok())
                    .map_or(0, u64::from_le_bytes);
                if until > codemode_store::now_ms() {
                    Running::Yes
                } else {
                    Running::Abandoned
                }
            }
            Ok(None) => Running::No,
            Err(_) => Running::Unknown,
        }
    }
}
