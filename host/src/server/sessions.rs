//! rmcp's [`SessionStore`] on a [`Store`]: the `initialize` parameters of each legacy
//! (2025-11-25 and older) MCP session, kept sealed so that when the node holding the session
//! dies, another node restores it on the client's next request instead of answering "session
//! not found". Set it as `StreamableHttpServerConfig::session_store` on every node.
//!
//! The same store keeps each request of such a session while it is in flight
//! ([`InFlightRequest`]): when its node is gone and the client comes back for the request's
//! response stream, another node ends the request with an error instead of leaving the client
//! waiting (see `server::failover`).
//!
//! Records are under `mcp-session:<first 32 hex digits of SHA-256(session id)>`: a session id
//! is a bearer credential for its session, so a store reader must not learn live ones. Each
//! record lives [`DEFAULT_SESSION_TTL`] from its last write or restore. Requests in flight are under `mcp-request:<node>:<number>`, for
//! as long, unless their response ends first.

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use codemode_store::{Store, StoreError, StoreErrorKind, hex};

/// How long a legacy session's record lives after it was written or last restored.
pub(crate) const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// The key prefix of session records.
pub(crate) const SESSION_KEY_PREFIX: &str = "mcp-session:";

/// The key prefix of the records of requests in flight.
pub(crate) const REQUEST_KEY_PREFIX: &str = "mcp-request:";

/// The key prefix of the records naming the authenticated caller that opened each session.
pub(crate) const OWNER_KEY_PREFIX: &str = "mcp-owner:";

/// A request of a legacy session in flight on one node: what another node needs to end it with
/// an error once that node is gone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct InFlightRequest {
    /// The session's [`SealedSessionStore::record_key`] (a hash, never the id itself).
    pub session: String,
    /// The request's JSON-RPC id.
    pub id: Value,
    /// The request's JSON-RPC method.
    pub method: String,
    /// The tool called, for `tools/call`.
    pub tool: Option<String>,
    /// For `tools/call`, the token its eval parks under when it waits for a human (the eval
    /// is then in the store, and the approval API of any node can still decide it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval: Option<String>,
}

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
    #[cfg(test)]
    pub(crate) fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl.max(Duration::from_millis(1));
        self
    }

    /// This store as rmcp wants it in `StreamableHttpServerConfig::session_store`.
    pub(crate) fn into_rmcp(self) -> Arc<dyn SessionStore> {
        Arc::new(self)
    }

    /// The record key of a session id.
    pub(crate) fn record_key(session_id: &str) -> String {
        let digest = Sha256::digest(session_id.as_bytes());
        format!("{SESSION_KEY_PREFIX}{}", hex(&digest[..16]))
    }

    /// The record key of the owner of a session id.
    pub(crate) fn owner_key(session_id: &str) -> String {
        let digest = Sha256::digest(session_id.as_bytes());
        format!("{OWNER_KEY_PREFIX}{}", hex(&digest[..16]))
    }

    /// Records that `owner` opened session `session_id`, for as long as a session record
    /// lives (every node then refuses the session to anyone else).
    ///
    /// # Errors
    ///
    /// As [`Store::put`].
    pub(crate) async fn put_owner(&self, session_id: &str, owner: &str) -> Result<(), StoreError> {
        self.store
            .put(&Self::owner_key(session_id), owner.as_bytes(), self.ttl)
            .await
    }

    /// Who opened session `session_id`, when it was recorded; read again, the record lives
    /// another TTL (as the session's own record on restore).
    ///
    /// # Errors
    ///
    /// As [`Store::get`].
    pub async fn owner(&self, session_id: &str) -> Result<Option<String>, StoreError> {
        let key = Self::owner_key(session_id);
        let Some(record) = self.store.get(&key).await? else {
            return Ok(None);
        };
        self.store.put(&key, &record.value, self.ttl).await?;
        Ok(Some(String::from_utf8_lossy(&record.value).into_owned()))
    }

    /// The record key of request `number` of the node (process) `node`.
    pub(crate) fn request_key(node: &str, number: u64) -> String {
        format!("{REQUEST_KEY_PREFIX}{node}:{number}")
    }

    /// Records request `number` of `node` as in flight, for as long as a session record lives.
    ///
    /// # Errors
    ///
    /// As [`Store::put`]; `InvalidArgument` when `node` holds characters a key cannot.
    pub(crate) async fn put_request(
        &self,
        node: &str,
        number: u64,
        request: &InFlightRequest,
    ) -> Result<(), StoreError> {
        let value = serde_json::to_vec(request).unwrap_or_default();
        self.store
            .put(&Self::request_key(node, number), &value, self.ttl)
            .await
    }

    /// Request `number` of `node`, while it is in flight (`None` once its response ended, or
    /// when it was never recorded).
    ///
    /// # Errors
    ///
    /// As [`Store::get`]; `Unreadable` when the record holds no request.
    pub async fn request(
        &self,
        node: &str,
        number: u64,
    ) -> Result<Option<InFlightRequest>, StoreError> {
        let key = Self::request_key(node, number);
        let Some(record) = self.store.get(&key).await? else {
            return Ok(None);
        };
        self.parse_request(&key, &record.value).map(Some)
    }

    /// Takes request `number` of `node` out of the store: of nodes racing for it, exactly one
    /// gets it (the one that ends the request).
    ///
    /// # Errors
    ///
    /// As [`Store::take`]; `Unreadable` when the record holds no request.
    pub(crate) async fn take_request(
        &self,
        node: &str,
        number: u64,
    ) -> Result<Option<InFlightRequest>, StoreError> {
        let key = Self::request_key(node, number);
        let Some(record) = self.store.take(&key).await? else {
            return Ok(None);
        };
        self.parse_request(&key, &record.value).map(Some)
    }

    fn parse_request(&self, key: &str, value: &[u8]) -> Result<InFlightRequest, StoreError> {
        serde_json::from_slice(value).map_err(|e| {
            StoreError::new(
                StoreErrorKind::Unreadable,
                format!(
                    "record `{key}` in {} holds no request in flight: {e}",
                    self.store.describe()
                ),
            )
        })
    }

    /// Forgets request `number` of `node`: its response has ended.
    ///
    /// # Errors
    ///
    /// As [`Store::delete`].
    pub(crate) async fn forget_request(&self, node: &str, number: u64) -> Result<(), StoreError> {
        self.store
            .delete(&Self::request_key(node, number))
            .await
            .map(|_| ())
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

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use codemode_store::{LocalStore, StateKey};

    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    fn local(dir: &Path, key_byte: u8) -> Store {
        Store::local(
            LocalStore::open(dir, false).unwrap(),
            &StateKey::from_bytes([key_byte; 32]),
        )
    }

    fn file_names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[tokio::test]
    async fn sessions_are_kept_sealed_under_a_hash_of_their_id() {
        use rmcp::model::{ClientCapabilities, Implementation, InitializeRequestParams};
        use rmcp::transport::streamable_http_server::session::SessionState;

        let dir = codemode_test_support::scratch_dir("store", "sessions");
        let node_a = SealedSessionStore::new(local(&dir, 1)).into_rmcp();
        let node_b = SealedSessionStore::new(local(&dir, 1)).into_rmcp();
        let params = InitializeRequestParams::new(
            ClientCapabilities::default(),
            Implementation::new("test-client", "1.0"),
        );
        let session = "3f2a9c4e-secret-session-id";
        node_a
            .store(session, &SessionState::new(params.clone()))
            .await
            .unwrap();
        let names = file_names(&dir);
        assert_eq!(names, [SealedSessionStore::record_key(session)]);
        assert!(names[0].starts_with("mcp-session:") && !names[0].contains("secret"));
        let loaded = node_b.load(session).await.unwrap().unwrap();
        assert_eq!(
            serde_json::to_value(&loaded.initialize_params).unwrap(),
            serde_json::to_value(&params).unwrap()
        );
        assert!(node_b.load("another-session").await.unwrap().is_none());
        node_b.delete(session).await.unwrap();
        assert!(node_a.load(session).await.unwrap().is_none());
        // A record that is not session state is an error, not a panic or a silent miss.
        let store = local(&dir, 1);
        store
            .put(&SealedSessionStore::record_key("s2"), b"not json", MINUTE)
            .await
            .unwrap();
        let e = node_a.load("s2").await.unwrap_err().to_string();
        assert!(e.contains("holds no session state"), "{e}");
    }

    /// The caller that opened a session is known to every node sharing the store, under a
    /// hash of the session id.
    #[tokio::test]
    async fn a_sessions_owner_is_known_to_every_node() {
        let dir = codemode_test_support::scratch_dir("store", "session-owners");
        let node_a = SealedSessionStore::new(local(&dir, 1));
        let node_b = SealedSessionStore::new(local(&dir, 1));
        let session = "9b1c-secret-session-id";
        assert_eq!(node_b.owner(session).await.unwrap(), None);
        node_a.put_owner(session, "caller:alice").await.unwrap();
        assert_eq!(
            node_b.owner(session).await.unwrap().as_deref(),
            Some("caller:alice")
        );
        let names = file_names(&dir);
        assert_eq!(names, [SealedSessionStore::owner_key(session)]);
        assert!(names[0].starts_with("mcp-owner:") && !names[0].contains("secret"));
    }
}
