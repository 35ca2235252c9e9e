//! rmcp's [`SessionStore`] on a [`Store`]: the `initialize` parameters of each legacy
//! (2025-11-25 and older) MCP session, kept sealed so that when the node holding the session
//! dies, another node restores it on the client's next request instead of answering "session
//! not found" (the request in flight on the dead node is lost; the client sees its stream
//! end). Set it as `StreamableHttpServerConfig::session_store` on every node.
//!
//! Records are under `mcp-session:<first 32 hex digits of SHA-256(session id)>`: a session id
//! is a bearer credential for its session, so a store reader must not learn live ones. Each
//! record lives [`DEFAULT_SESSION_TTL`] (or what [`SealedSessionStore::with_ttl`] says) from
//! its last write or restore.

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};
use sha2::{Digest, Sha256};

use super::Store;
use super::key::hex;

/// How long a legacy session's record lives after it was written or last restored.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// The key prefix of session records.
pub const SESSION_KEY_PREFIX: &str = "mcp-session:";

/// Legacy MCP sessions' state in a [`Store`] (see the module docs).
#[derive(Debug, Clone)]
pub struct SealedSessionStore {
    store: Store,
    ttl: Duration,
}

impl SealedSessionStore {
    /// Sessions in `store`, each kept [`DEFAULT_SESSION_TTL`].
    pub fn new(store: Store) -> Self {
        SealedSessionStore {
            store,
            ttl: DEFAULT_SESSION_TTL,
        }
    }

    /// Keeps each session's record `ttl` after its last write or restore (at least 1 ms).
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl.max(Duration::from_millis(1));
        self
    }

    /// This store as rmcp wants it in `StreamableHttpServerConfig::session_store`.
    pub fn into_rmcp(self) -> Arc<dyn SessionStore> {
        Arc::new(self)
    }

    /// The record key of a session id.
    pub fn record_key(session_id: &str) -> String {
        let digest = Sha256::digest(session_id.as_bytes());
        format!("{SESSION_KEY_PREFIX}{}", hex(&digest[..16]))
    }
}

#[async_trait::async_trait]
impl SessionStore for SealedSessionStore {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let key = Self::record_key(session_id);
        let Some(record) = self.store.get(&key).await? else {
            return Ok(None);
        };
        let state: SessionState = serde_json::from_slice(&record.value).map_err(|e| {
            format!(
                "session record `{key}` in {} holds no session state: {e}",
                self.store.describe()
            )
        })?;
        // Restored: the session is in use again, so it lives another TTL.
        self.store.put(&key, &record.value, self.ttl).await?;
        Ok(Some(state))
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let value = serde_json::to_vec(state)?;
        self.store
            .put(&Self::record_key(session_id), &value, self.ttl)
            .await?;
        Ok(())
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        self.store.delete(&Self::record_key(session_id)).await?;
        Ok(())
    }
}
