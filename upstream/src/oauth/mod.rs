//! OAuth 2.1 to HTTP upstreams, per the MCP authorization spec: discovery (RFC 9728 protected
//! resource metadata from the server's challenge or its well-known URLs, then RFC 8414 or
//! OpenID authorization-server metadata), client registration (pre-registered, client ID
//! metadata document, or dynamic, RFC 7591), PKCE S256, resource indicators (RFC 8707), scopes
//! from the challenge or `scopes_supported`, step-up on `403 insufficient_scope`, refresh
//! tokens — most of it rmcp's `auth` — and the client-credentials grant (`grant`).
//!
//! One login per upstream, kept by [`Logins`] (sealed in the durable store: every caller of
//! this codemode, and every node of a cluster, uses it). An upstream without a login answers
//! `401`; its status then says `needs login: codemode auth login <server>` and calls to it
//! fail at once with that text until someone logs in, which the upstream notices without a
//! restart. Tokens never reach scripts, messages, logs or the audit.

mod authorize;
mod authorizing;
mod browser;
mod discovery;
mod error;
mod grant;
mod http;
mod record;
mod status;

use std::sync::Arc;

use codemode_config::{OAuthGrant, UpstreamOAuth};
use codemode_runtime::BoxFuture;
use codemode_store::Store;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, CredentialStore, OAuthClientConfig,
};
use tokio::sync::watch;

pub(crate) use authorizing::{Authorizing, Challenges};
pub use browser::{Browser, BrowserCommandError, ShowUrl};
use discovery::discover;
pub use error::OAuthError;
use error::describe;
use http::bounded;
pub use http::{UnreadResponse, oauth_http, read_bounded};
use record::{Backend, LoginRecord, SavedLogin, now_secs};
use status::status_of;
pub use status::{LoginState, LoginStatus};

/// Logins started by requests, in a row, none of which let a request through.
pub(crate) const MAX_LOGINS: u32 = 3;

/// The hint every "needs login" message carries.
pub(crate) fn login_hint(server: &str) -> String {
    format!("needs login: codemode auth login {server}")
}

/// The logins of a pool's upstreams (see the module docs). Cheap to clone.
#[derive(Clone)]
pub struct Logins {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Backend,
    /// How a login started by a call reaches a person (`codemode run --browser`); `None`: calls
    /// to an upstream that needs one fail with the `codemode auth login` hint.
    browser: Option<Browser>,
    /// Bumped on each login made here.
    changed: watch::Sender<u64>,
    /// Per upstream, the logins started by requests since one last let a request through.
    unhelpful: std::sync::Mutex<std::collections::HashMap<String, u32>>,
}

impl Default for Logins {
    fn default() -> Self {
        Logins::memory()
    }
}

impl std::fmt::Debug for Logins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = match self.inner.backend {
            Backend::Sealed(_) => "sealed",
            Backend::Memory(_) => "memory",
        };
        f.debug_struct("Logins").field("kept", &kept).finish()
    }
}

impl Logins {
    /// Logins kept in this process's memory only (lost when it exits).
    pub fn memory() -> Self {
        Self::with_backend(Backend::Memory(Arc::default()), None)
    }

    /// Logins kept sealed in `store` (shared with every node using it).
    pub fn sealed(store: Store) -> Self {
        Self::with_backend(Backend::Sealed(store), None)
    }

    fn with_backend(backend: Backend, browser: Option<Browser>) -> Self {
        Logins {
            inner: Arc::new(Inner {
                backend,
                browser,
                changed: watch::Sender::new(0),
                unhelpful: Default::default(),
            }),
        }
    }

    /// The same logins, a call that meets an upstream needing one (or more scopes) starting it
    /// through `browser` (`codemode run --browser`).
    pub fn interactive(&self, browser: Browser) -> Self {
        Self::with_backend(self.inner.backend.clone(), Some(browser))
    }

    pub(crate) fn browser(&self) -> Option<&Browser> {
        self.inner.browser.as_ref()
    }

    /// Counts a login a request is about to start; false when [`MAX_LOGINS`] in a
    /// row have not helped.
    pub(crate) fn count_login(&self, server: &str) -> bool {
        let mut counts = self
            .inner
            .unhelpful
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let count = counts.entry(server.to_string()).or_default();
        *count += 1;
        *count <= MAX_LOGINS
    }

    /// A request went through after a login.
    pub(crate) fn login_helped(&self, server: &str) {
        self.inner
            .unhelpful
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(server);
    }

    pub(crate) fn record(&self, server: &str, url: &str) -> LoginRecord {
        LoginRecord::new(self.inner.backend.clone(), server, url)
    }

    /// Bumped on each login made through these logins.
    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changed.subscribe()
    }

    /// Which login the upstream at `url` has now: a digest of its access token, `None` without
    /// one (or when the store cannot be read). Two different values are two different logins.
    pub(crate) async fn login_stamp(&self, server: &str, url: &str) -> Option<String> {
        use oauth2::TokenResponse as _;
        use sha2::Digest as _;
        let saved = self.record(server, url).read().await.ok()??;
        let token = saved.credentials?.token_response?;
        let digest = sha2::Sha256::digest(token.access_token().secret().as_bytes());
        Some(codemode_store::hex(&digest))
    }

    /// Logs in to `server` at `url`: the authorization-code flow through `browser`, or the
    /// client-credentials grant when `oauth` says so. `challenge` is the server's
    /// `WWW-Authenticate` (from a `401`, or a `403 insufficient_scope` for more scopes), else
    /// the server is asked for one.
    ///
    /// # Errors
    /// [`OAuthError`] naming the upstream: discovery, registration, the person not coming back
    /// within [`Browser::LOGIN_WAIT`], a redirect that does not match the login, the token
    /// endpoint.
    pub fn login<'a>(
        &'a self,
        server: &'a str,
        url: &'a str,
        oauth: Option<&'a UpstreamOAuth>,
        browser: &'a Browser,
        challenge: Option<&'a str>,
    ) -> BoxFuture<'a, Result<LoginStatus, OAuthError>> {
        Box::pin(async move {
            let default = UpstreamOAuth::default();
            let oauth = oauth.unwrap_or(&default);
            let challenge = match challenge {
                Some(c) => Some(c.to_string()),
                None => discovery::probe(server, url).await?,
            };
            let discovered = self.manager(server, url, challenge.as_deref());
            let (manager, metadata) = bounded(server, "OAuth discovery", discovered).await?;
            match oauth.grant {
                OAuthGrant::ClientCredentials => {
                    let granted = self.client_credentials(server, url, oauth, &metadata);
                    bounded(server, "the token request", granted).await?
                }
                OAuthGrant::AuthorizationCode => {
                    self.authorize(server, (url, oauth), (manager, metadata), browser)
                        .await?
                }
            }
            self.inner.changed.send_modify(|n| *n += 1);
            self.status(server, url).await
        })
    }

    /// A manager for `url` over its login record, the server's metadata discovered.
    async fn manager(
        &self,
        server: &str,
        url: &str,
        challenge: Option<&str>,
    ) -> Result<(AuthorizationManager, AuthorizationMetadata), OAuthError> {
        crate::crypto::install();
        let mut manager = AuthorizationManager::new(url)
            .await
            .map_err(|e| OAuthError::auth(server, &e))?;
        manager.set_credential_store(self.record(server, url));
        let metadata = discover(server, url, &mut manager, challenge).await?;
        Ok((manager, metadata))
    }

    async fn client_credentials(
        &self,
        server: &str,
        url: &str,
        oauth: &UpstreamOAuth,
        metadata: &AuthorizationMetadata,
    ) -> Result<(), OAuthError> {
        let credentials = grant::client_credentials(server, url, oauth, metadata).await?;
        self.record(server, url)
            .save(credentials)
            .await
            .map_err(|e| OAuthError::auth(server, &e))
    }

    /// Removes the login of `server`; whether there was one.
    ///
    /// # Errors
    /// When the store cannot be reached.
    pub fn logout<'a>(
        &'a self,
        server: &'a str,
        url: &'a str,
    ) -> BoxFuture<'a, Result<bool, OAuthError>> {
        Box::pin(async move {
            let removed = self
                .record(server, url)
                .remove()
                .await
                .map_err(|e| OAuthError::auth(server, &e))?;
            self.inner.changed.send_modify(|n| *n += 1);
            Ok(removed)
        })
    }

    /// Where the login of `server` stands.
    ///
    /// # Errors
    /// When the store cannot be reached or the record does not open.
    pub fn status<'a>(
        &'a self,
        server: &'a str,
        url: &'a str,
    ) -> BoxFuture<'a, Result<LoginStatus, OAuthError>> {
        Box::pin(async move {
            let saved = self
                .record(server, url)
                .read()
                .await
                .map_err(|e| OAuthError::auth(server, &e))?;
            Ok(status_of(server, saved.as_ref()))
        })
    }

    /// A manager for a connection to `url`: its saved login loaded (metadata discovered, the
    /// client configured) when there is one; else empty, requests going out unauthenticated
    /// until the server's challenge starts a login. A client-credentials upstream gets its
    /// token here.
    pub(crate) async fn connection_manager(
        &self,
        server: &str,
        url: &str,
        oauth: Option<&UpstreamOAuth>,
    ) -> Result<AuthorizationManager, OAuthError> {
        let record = self.record(server, url);
        let saved = record
            .read()
            .await
            .map_err(|e| OAuthError::auth(server, &e))?;
        let headless = oauth.is_some_and(|o| o.grant == OAuthGrant::ClientCredentials);
        let usable = saved.as_ref().is_some_and(|s| {
            s.has_tokens()
                && (s.has_refresh_token() || s.expires_at().is_none_or(|at| at > now_secs() + 60))
        });
        if headless && !usable {
            let (_, metadata) = self.manager(server, url, None).await?;
            let default = UpstreamOAuth::default();
            self.client_credentials(server, url, oauth.unwrap_or(&default), &metadata)
                .await?;
        }
        crate::crypto::install();
        let mut manager = AuthorizationManager::new(url)
            .await
            .map_err(|e| OAuthError::auth(server, &e))?;
        manager.set_credential_store(record.clone());
        if saved.as_ref().is_some_and(SavedLogin::has_tokens) || headless {
            discover(server, url, &mut manager, None).await?;
        }
        let loaded = manager.initialize_from_store().await.map_err(|e| {
            OAuthError::new(server, format!("OAuth discovery failed: {}", describe(&e)))
        })?;
        if loaded {
            let saved = record
                .read()
                .await
                .map_err(|e| OAuthError::auth(server, &e))?;
            configure_saved_client(&mut manager, saved.as_ref(), oauth)
                .map_err(|e| OAuthError::auth(server, &e))?;
        }
        Ok(manager)
    }
}

/// Gives the manager the client's secret and redirect URI again (rmcp keeps only its ID).
fn configure_saved_client(
    manager: &mut AuthorizationManager,
    saved: Option<&SavedLogin>,
    oauth: Option<&UpstreamOAuth>,
) -> Result<(), AuthError> {
    let Some(creds) = saved.and_then(|s| s.credentials.as_ref()) else {
        return Ok(());
    };
    let registered = saved
        .and_then(|s| s.registered.as_ref())
        .filter(|r| r.client_id == creds.client_id);
    let configured = oauth.filter(|o| o.client_id.as_deref() == Some(creds.client_id.as_str()));
    let secret = registered
        .and_then(|r| r.client_secret.clone())
        .or_else(|| configured.and_then(|o| o.client_secret.clone()));
    let redirect = registered
        .map(|r| r.redirect_uri.clone())
        .or_else(|| configured.and_then(|o| o.redirect_uri.clone()))
        .unwrap_or_else(|| "http://127.0.0.1/callback".into());
    let mut config = OAuthClientConfig::new(creds.client_id.clone(), redirect);
    if let Some(secret) = secret {
        config = config.with_client_secret(secret);
    }
    config.scopes = creds.granted_scopes.clone();
    manager.configure_client(config)
}
