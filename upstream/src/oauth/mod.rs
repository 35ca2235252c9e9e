//! OAuth 2.1 to HTTP upstreams, per the MCP authorization spec: discovery (RFC 9728 protected
//! resource metadata from the server's challenge or its well-known URLs, then RFC 8414 or
//! OpenID authorization-server metadata), client registration (pre-registered, client ID
//! metadata document, or dynamic, RFC 7591), PKCE S256, resource indicators (RFC 8707), scopes
//! from the challenge or `scopes_supported`, step-up on `403 insufficient_scope`, refresh
//! tokens — most of it rmcp's `auth` — and the client-credentials grant ([`grant`]).
//!
//! One login per upstream, kept by [`Logins`] (sealed in the durable store: every caller of
//! this codemode, and every node of a cluster, uses it). An upstream without a login answers
//! `401`; its status then says `needs login: codemode auth login <server>` and calls to it
//! fail at once with that text until someone logs in, which the upstream notices without a
//! restart. Tokens never reach scripts, messages, logs or the audit.

mod authorizing;
mod browser;
mod grant;
mod record;

use std::sync::Arc;

use codemode_config::{OAuthGrant, UpstreamOAuth};
use codemode_store::Store;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest,
    AuthorizationSession, CredentialStore, OAuthClientConfig,
};
use tokio::sync::watch;

pub(crate) use authorizing::{Authorizing, Challenges};
pub use browser::{Browser, LOGIN_WAIT};
use record::{Backend, LoginRecord, Registered, SavedLogin, now_secs};

/// What went wrong logging in to an upstream; the message names the upstream and never holds a
/// secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("upstream server `{server}`: {message}")]
pub struct OAuthError {
    /// The upstream.
    pub server: String,
    /// What happened.
    pub message: String,
}

impl OAuthError {
    pub(crate) fn new(server: &str, message: impl Into<String>) -> Self {
        OAuthError {
            server: server.to_string(),
            message: message.into(),
        }
    }

    fn auth(server: &str, e: &AuthError) -> Self {
        OAuthError::new(server, describe(e))
    }
}

/// rmcp's error, said for people (its texts already leave secrets out).
fn describe(e: &AuthError) -> String {
    codemode_policies::neutralize(&e.to_string())
}

/// The hint every "needs login" message carries.
pub fn login_hint(server: &str) -> String {
    format!("needs login: codemode auth login {server}")
}

/// Where one login stands, for `codemode auth status`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoginStatus {
    /// The upstream.
    pub server: String,
    /// Its state.
    pub state: LoginState,
    /// When the access token expires (seconds since the epoch), if it said.
    pub expires_at: Option<u64>,
    /// The scopes granted.
    pub scopes: Vec<String>,
}

/// The state of one login.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginState {
    /// Tokens are there (an expired access token with a refresh token counts: it is renewed on
    /// the next call).
    LoggedIn,
    /// No tokens.
    NeedsLogin,
    /// The access token expired and there is no refresh token.
    Expired,
}

impl LoginStatus {
    /// `name  logged in  expires 2026-11-28T10:00:00.000Z  scopes a b`, one line (fields
    /// apart by two spaces).
    pub fn line(&self) -> String {
        let state = match self.state {
            LoginState::LoggedIn => "logged in",
            LoginState::NeedsLogin => "needs login",
            LoginState::Expired => "expired",
        };
        let expiry = match self.expires_at {
            Some(at) => format!("expires {}", rfc3339(at)),
            None if self.state == LoginState::NeedsLogin => "-".into(),
            None => "no expiry given".into(),
        };
        let scopes = if self.scopes.is_empty() {
            "no scopes".to_string()
        } else {
            format!("scopes {}", self.scopes.join(" "))
        };
        codemode_policies::neutralize(&format!("{}  {state}  {expiry}  {scopes}", self.server))
    }
}

fn rfc3339(secs: u64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    codemode_policies::rfc3339_utc(at)
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

    /// Counts a login a request is about to start; false when [`authorizing::MAX_LOGINS`] in a
    /// row have not helped.
    pub(crate) fn count_login(&self, server: &str) -> bool {
        let mut counts = self
            .inner
            .unhelpful
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let count = counts.entry(server.to_string()).or_default();
        *count += 1;
        *count <= authorizing::MAX_LOGINS
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

    /// Whether the upstream at `url` has tokens now.
    pub(crate) async fn has_tokens(&self, server: &str, url: &str) -> bool {
        matches!(self.record(server, url).read().await, Ok(Some(saved)) if saved.has_tokens())
    }

    /// Logs in to `server` at `url`: the authorization-code flow through `browser`, or the
    /// client-credentials grant when `oauth` says so. `challenge` is the server's
    /// `WWW-Authenticate` (from a `401`, or a `403 insufficient_scope` for more scopes), else
    /// the server is asked for one.
    ///
    /// # Errors
    /// [`OAuthError`] naming the upstream: discovery, registration, the person not coming back
    /// within [`LOGIN_WAIT`], a redirect that does not match the login, the token endpoint.
    pub async fn login(
        &self,
        server: &str,
        url: &str,
        oauth: Option<&UpstreamOAuth>,
        browser: &Browser,
        challenge: Option<&str>,
    ) -> Result<LoginStatus, OAuthError> {
        let default = UpstreamOAuth::default();
        let oauth = oauth.unwrap_or(&default);
        let challenge = match challenge {
            Some(c) => Some(c.to_string()),
            None => authorizing::probe(server, url).await?,
        };
        let (manager, metadata) = self.manager(server, url, challenge.as_deref()).await?;
        match oauth.grant {
            OAuthGrant::ClientCredentials => {
                self.client_credentials(server, url, oauth, &metadata)
                    .await?
            }
            OAuthGrant::AuthorizationCode => {
                self.authorize(server, (url, oauth), (manager, metadata), browser)
                    .await?
            }
        }
        self.inner.changed.send_modify(|n| *n += 1);
        self.status(server, url).await
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

    /// The authorization-code flow with PKCE and a loopback redirect.
    async fn authorize(
        &self,
        server: &str,
        (url, oauth): (&str, &UpstreamOAuth),
        (mut manager, metadata): (AuthorizationManager, AuthorizationMetadata),
        browser: &Browser,
    ) -> Result<(), OAuthError> {
        let fail = |e: AuthError| OAuthError::auth(server, &e);
        let redirect = browser::Redirect::listen(server, oauth.redirect_uri.as_deref()).await?;
        let mut request = AuthorizationRequest::new(redirect.uri.clone())
            .with_client_name("codemode")
            .with_scopes(oauth.scopes.clone());
        let cimd = metadata
            .additional_fields
            .get("client_id_metadata_document_supported")
            .and_then(serde_json::Value::as_bool)
            == Some(true);
        let mut registered = None;
        if let Some(id) = &oauth.client_id {
            request = request.with_preregistered_client(id);
            if let Some(secret) = &oauth.client_secret {
                request = request.with_client_secret(secret);
            }
        } else if let Some(document) = oauth.client_metadata_url.as_deref().filter(|_| cimd) {
            request = request.with_client_metadata_url(document);
        } else {
            // Registered here rather than by rmcp, which would keep only the client ID: a
            // confidential client needs its secret again to refresh.
            let scopes: Vec<&str> = oauth.scopes.iter().map(String::as_str).collect();
            let client = manager
                .register_client("codemode", &redirect.uri, &scopes)
                .await
                .map_err(|e| {
                    OAuthError::new(
                        server,
                        format!("client registration failed: {}", describe(&e)),
                    )
                })?;
            request = request.with_preregistered_client(&client.client_id);
            if let Some(secret) = &client.client_secret {
                request = request.with_client_secret(secret);
            }
            registered = Some(Registered {
                client_id: client.client_id,
                client_secret: client.client_secret,
                redirect_uri: redirect.uri.clone(),
            });
        }
        let session = AuthorizationSession::new(manager, request)
            .await
            .map_err(|(_, e)| fail(e))?;
        browser.open(server, session.get_authorization_url())?;
        let back = redirect.wait(server).await?;
        check_state(server, session.get_authorization_url(), &back)?;
        session.handle_callback_url(&back).await.map_err(|e| {
            OAuthError::new(
                server,
                format!("the login did not complete: {}", describe(&e)),
            )
        })?;
        if let Some(registered) = registered {
            let record = self.record(server, url);
            let mut saved = record.read_or_new().await.map_err(fail)?;
            saved.registered = Some(registered);
            record.write(&saved).await.map_err(fail)?;
        }
        Ok(())
    }

    /// Removes the login of `server`; whether there was one.
    ///
    /// # Errors
    /// When the store cannot be reached.
    pub async fn logout(&self, server: &str, url: &str) -> Result<bool, OAuthError> {
        let removed = self
            .record(server, url)
            .remove()
            .await
            .map_err(|e| OAuthError::auth(server, &e))?;
        self.inner.changed.send_modify(|n| *n += 1);
        Ok(removed)
    }

    /// Where the login of `server` stands.
    ///
    /// # Errors
    /// When the store cannot be reached or the record does not open.
    pub async fn status(&self, server: &str, url: &str) -> Result<LoginStatus, OAuthError> {
        let saved = self
            .record(server, url)
            .read()
            .await
            .map_err(|e| OAuthError::auth(server, &e))?;
        Ok(status_of(server, saved.as_ref()))
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

/// Refuses a redirect whose `state` is not the one this login sent (a forged or stale one), and
/// one that says the login was refused.
fn check_state(server: &str, sent: &str, back: &str) -> Result<(), OAuthError> {
    let param = |url: &str, name: &str| {
        url::Url::parse(url).ok().and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        })
    };
    if let Some(error) = param(back, "error") {
        let said = param(back, "error_description")
            .map(|d| format!(": {}", codemode_policies::neutralize(&d)))
            .unwrap_or_default();
        return Err(OAuthError::new(
            server,
            format!(
                "the authorization server refused the login (`{}`{said})",
                codemode_policies::neutralize(&error)
            ),
        ));
    }
    if param(back, "state").is_none() || param(back, "state") != param(sent, "state") {
        return Err(OAuthError::new(
            server,
            "the browser came back with a `state` this login did not send (a forged or stale \
             redirect); nothing was saved: log in again",
        ));
    }
    Ok(())
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

/// Discovers the authorization server of `url` (from `challenge` when there is one) and gives
/// its metadata to `manager`.
///
/// A server of MCP's 2025-03-26 revision has no protected-resource metadata and is its own
/// authorization server, whose metadata sits at its origin's root and may name an issuer with a
/// path (`https://host/oauth`) that RFC 8414's check refuses; that one mismatch, within the
/// server's own origin, is accepted, with a warning.
async fn discover(
    server: &str,
    url: &str,
    manager: &mut AuthorizationManager,
    challenge: Option<&str>,
) -> Result<AuthorizationMetadata, OAuthError> {
    let failed =
        |e: &AuthError| OAuthError::new(server, format!("OAuth discovery failed: {}", describe(e)));
    let metadata = match manager.resolve_metadata_from_challenge(challenge).await {
        Ok(resolution) => resolution.metadata,
        Err(e) => {
            let AuthError::AuthorizationServerMismatch {
                expected_issuer,
                received_issuer,
            } = &e
            else {
                return Err(failed(&e));
            };
            let origin = origin_of(url);
            if origin.is_none()
                || origin_of(expected_issuer) != origin
                || origin_of(received_issuer) != origin
            {
                return Err(failed(&e));
            }
            let metadata = root_metadata(server, url)
                .await?
                .ok_or_else(|| failed(&e))?;
            tracing::warn!(server, issuer = %received_issuer,
                "the authorization server's metadata names an issuer with a path (MCP 2025-03-26 style); accepted within the server's own origin");
            metadata
        }
    };
    manager.set_metadata(metadata.clone());
    Ok(metadata)
}

/// `scheme://host:port` of `url`.
fn origin_of(url: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()
        .map(|u| u.origin().ascii_serialization())
}

/// The authorization-server metadata at the root of `url`'s origin, if it is there.
async fn root_metadata(
    server: &str,
    url: &str,
) -> Result<Option<AuthorizationMetadata>, OAuthError> {
    let Some(origin) = origin_of(url) else {
        return Ok(None);
    };
    let response = crate::crypto::http_client()
        .get(format!("{origin}/.well-known/oauth-authorization-server"))
        .send()
        .await
        .map_err(|e| OAuthError::new(server, format!("OAuth discovery failed: {e}")))?;
    if !response.status().is_success() {
        return Ok(None);
    }
    let body = response.bytes().await.unwrap_or_default();
    Ok(serde_json::from_slice(&body).ok())
}

fn status_of(server: &str, saved: Option<&SavedLogin>) -> LoginStatus {
    let scopes = saved
        .and_then(|s| s.credentials.as_ref())
        .map(|c| c.granted_scopes.clone())
        .unwrap_or_default();
    let expires_at = saved.and_then(SavedLogin::expires_at);
    let state = match saved {
        Some(s) if s.has_tokens() => {
            let expired = expires_at.is_some_and(|at| at <= now_secs());
            if expired && !s.has_refresh_token() {
                LoginState::Expired
            } else {
                LoginState::LoggedIn
            }
        }
        _ => LoginState::NeedsLogin,
    };
    LoginStatus {
        server: server.to_string(),
        state,
        expires_at,
        scopes,
    }
}
