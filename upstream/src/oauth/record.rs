//! Where an upstream's login is kept: one record `oauth:<server>` holding its tokens and the
//! client codemode registered, sealed in the durable store (so every node of a cluster uses the
//! same login), or in memory when the pool has no store. Refreshes run under a lease
//! (`oauth-refresh:<server>`), so two nodes never spend a rotating refresh token twice.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use codemode_store::Store;
use oauth2::TokenResponse;
use rmcp::transport::auth::{
    AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};

/// How long a record with a refresh token is kept: its own lifetime is not told to clients, and
/// a token the server has stopped honouring is cleared when it says so.
const WITH_REFRESH: Duration = Duration::from_secs(365 * 24 * 3600);
/// How long a record without any expiry is kept (a registered client, a token that never says).
const UNDATED: Duration = Duration::from_secs(24 * 3600);
/// How long one node may hold the refresh lease (a refresh is one HTTP request).
const REFRESH_LEASE: Duration = Duration::from_secs(30);
/// How often a node waiting for another's refresh looks again.
const LEASE_POLL: Duration = Duration::from_millis(100);

/// A client codemode registered with an authorization server (RFC 7591), kept beside the tokens:
/// rmcp keeps only its ID, and a confidential client needs its secret again to refresh.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Registered {
    pub(crate) client_id: String,
    pub(crate) client_secret: Option<String>,
    pub(crate) redirect_uri: String,
}

/// One upstream's login, as kept.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct SavedLogin {
    /// The upstream URL the tokens are for: a login is never sent to another resource.
    pub(crate) resource: String,
    pub(crate) credentials: Option<StoredCredentials>,
    pub(crate) registered: Option<Registered>,
}

impl SavedLogin {
    /// When the access token expires, in seconds since the epoch, if it says.
    pub(crate) fn expires_at(&self) -> Option<u64> {
        let creds = self.credentials.as_ref()?;
        let token = creds.token_response.as_ref()?;
        // A server may say any lifetime: one past the end of time is as good as none.
        Some(
            creds
                .token_received_at?
                .saturating_add(token.expires_in()?.as_secs()),
        )
    }

    pub(crate) fn has_refresh_token(&self) -> bool {
        self.credentials
            .as_ref()
            .and_then(|c| c.token_response.as_ref())
            .is_some_and(|t| t.refresh_token().is_some())
    }

    pub(crate) fn has_tokens(&self) -> bool {
        self.credentials
            .as_ref()
            .is_some_and(|c| c.token_response.is_some())
    }

    /// How long the record should live.
    fn ttl(&self) -> Duration {
        if self.has_refresh_token() {
            return WITH_REFRESH;
        }
        match self.expires_at() {
            Some(at) => Duration::from_secs(at.saturating_sub(now_secs()).max(1)).min(WITH_REFRESH),
            None => UNDATED,
        }
    }
}

pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Where the records are: the durable store, or this process's memory.
#[derive(Clone)]
pub(crate) enum Backend {
    Sealed(Store),
    Memory(Arc<Mutex<HashMap<String, Vec<u8>>>>),
}

/// The login of one upstream in a [`Backend`]; rmcp's [`CredentialStore`] over it.
#[derive(Clone)]
pub(crate) struct LoginRecord {
    backend: Backend,
    server: String,
    resource: String,
}

fn store_error(what: &str, e: impl std::fmt::Display) -> AuthError {
    AuthError::CredentialStoreError(format!("{what}: {e}"))
}

impl LoginRecord {
    pub(crate) fn new(backend: Backend, server: &str, resource: &str) -> Self {
        LoginRecord {
            backend,
            server: server.to_string(),
            resource: resource.to_string(),
        }
    }

    fn key(&self) -> String {
        format!("oauth:{}", self.server)
    }

    /// The saved login, if there is one for this upstream's URL.
    pub(crate) async fn read(&self) -> Result<Option<SavedLogin>, AuthError> {
        let key = self.key();
        let bytes = match &self.backend {
            Backend::Sealed(store) => store
                .get(&key)
                .await
                .map_err(|e| store_error("reading the login", e))?
                .map(|r| r.value),
            Backend::Memory(map) => map
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&key)
                .cloned(),
        };
        let Some(bytes) = bytes else { return Ok(None) };
        let saved: SavedLogin = serde_json::from_slice(&bytes)
            .map_err(|e| store_error("the saved login does not read", e))?;
        Ok((saved.resource == self.resource).then_some(saved))
    }

    /// Saves `saved` (for this upstream's URL), or removes the record when it holds nothing.
    pub(crate) async fn write(&self, saved: &SavedLogin) -> Result<(), AuthError> {
        if saved.credentials.is_none() && saved.registered.is_none() {
            return self.remove().await.map(drop);
        }
        let key = self.key();
        let bytes = serde_json::to_vec(saved).map_err(|e| store_error("saving the login", e))?;
        match &self.backend {
            Backend::Sealed(store) => store
                .put(&key, &bytes, saved.ttl())
                .await
                .map_err(|e| store_error("saving the login", e)),
            Backend::Memory(map) => {
                map.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(key, bytes);
                Ok(())
            }
        }
    }

    /// Removes the login; whether there was one.
    pub(crate) async fn remove(&self) -> Result<bool, AuthError> {
        let key = self.key();
        match &self.backend {
            Backend::Sealed(store) => store
                .delete(&key)
                .await
                .map_err(|e| store_error("removing the login", e)),
            Backend::Memory(map) => Ok(map
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&key)
                .is_some()),
        }
    }

    /// The login as kept, or an empty one for this upstream.
    pub(crate) async fn read_or_new(&self) -> Result<SavedLogin, AuthError> {
        Ok(self.read().await?.unwrap_or_else(|| SavedLogin {
            resource: self.resource.clone(),
            credentials: None,
            registered: None,
        }))
    }
}

#[async_trait]
impl CredentialStore for LoginRecord {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self.read().await?.and_then(|saved| saved.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let mut saved = self.read_or_new().await?;
        saved.credentials = Some(credentials);
        self.write(&saved).await
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let mut saved = self.read_or_new().await?;
        saved.credentials = None;
        self.write(&saved).await
    }

    async fn on_refresh_token_rejected(
        &self,
        rejected: &StoredCredentials,
    ) -> Result<(), AuthError> {
        // Only the tokens that were refused: another node may have saved new ones meanwhile.
        let mut saved = self.read_or_new().await?;
        let same = saved.credentials.as_ref().is_some_and(|c| {
            c.token_received_at == rejected.token_received_at && c.client_id == rejected.client_id
        });
        if same {
            saved.credentials = None;
            self.write(&saved).await?;
        }
        Ok(())
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let Backend::Sealed(store) = &self.backend else {
            // One process: rmcp's manager is behind a mutex already.
            return Ok(None);
        };
        let key = format!("oauth-refresh:{}", self.server);
        let deadline = tokio::time::Instant::now() + REFRESH_LEASE;
        loop {
            let taken = store
                .put_if_absent(&key, b"refreshing", REFRESH_LEASE)
                .await
                .map_err(|e| store_error("taking the refresh lease", e))?;
            if taken {
                return Ok(Some(CredentialRefreshGuard::new(Lease {
                    store: store.clone(),
                    key,
                })));
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(AuthError::CredentialStoreError(format!(
                    "another node has been refreshing the login of `{}` for {REFRESH_LEASE:?}",
                    self.server
                )));
            }
            tokio::time::sleep(LEASE_POLL).await;
        }
    }
}

/// The refresh lease, given back when dropped (or when its time runs out, if this node died).
struct Lease {
    store: Store,
    key: String,
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let (store, key) = (self.store.clone(), std::mem::take(&mut self.key));
            drop(runtime.spawn(async move { store.delete(&key).await }));
        }
    }
}
