//! The HTTP client of an upstream that may use OAuth: rmcp's [`AuthClient`] (a saved token on
//! every request, refreshed when it expires), which notes each challenge the server answers
//! with and, where a login can be made without asking anyone first (the client-credentials
//! grant, or `codemode run --browser`), logs in and sends the request again: on `401`, and on
//! `403 insufficient_scope` for more scopes (step-up). At most [`MAX_LOGINS`] such logins in a
//! row that did not help, across requests and reconnections: a server that keeps asking is
//! not asked again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use codemode_config::{OAuthGrant, UpstreamOAuth};
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::{AuthClient, AuthError};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::Sse;

use super::error::{OAuthError, describe};
use super::{Browser, Logins, MAX_LOGINS};
use crate::bounded_http::BoundedHttp;

/// The last challenge the server answered with, until a request goes through.
#[derive(Clone, Default)]
pub(crate) struct Challenges(Arc<Mutex<Option<String>>>);

impl Challenges {
    fn set(&self, challenge: Option<String>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = challenge;
    }

    /// Whether the last request was refused for want of a login.
    pub(crate) fn pending(&self) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }
}

/// Who may log in when the server asks.
struct Relogin {
    logins: Logins,
    server: String,
    url: String,
    oauth: Option<UpstreamOAuth>,
    browser: Browser,
    /// One login at a time.
    one_at_a_time: tokio::sync::Mutex<()>,
}

/// rmcp's [`AuthClient`] over [`BoundedHttp`], with challenges noted and answered (see the
/// module docs).
#[derive(Clone)]
pub(crate) struct Authorizing {
    inner: AuthClient<BoundedHttp>,
    /// The saved login, forgotten when the authorization server no longer knows its client.
    record: super::record::LoginRecord,
    relogin: Option<Arc<Relogin>>,
    challenges: Challenges,
}

impl Authorizing {
    /// The client of a connection to `url`.
    pub(crate) async fn new(
        logins: &Logins,
        (server, url): (&str, &str),
        oauth: Option<&UpstreamOAuth>,
        http: BoundedHttp,
        challenges: Challenges,
    ) -> Result<Self, OAuthError> {
        let manager = logins.connection_manager(server, url, oauth).await?;
        let headless = oauth.is_some_and(|o| o.grant == OAuthGrant::ClientCredentials);
        let browser = match logins.browser() {
            Some(browser) => Some(browser.clone()),
            // The client-credentials grant shows nobody anything.
            None if headless => Some(Browser::Show(std::sync::Arc::new(|_: &str, _: &str| {}))),
            None => None,
        };
        let relogin = browser.map(|browser| {
            Arc::new(Relogin {
                logins: logins.clone(),
                server: server.to_string(),
                url: url.to_string(),
                oauth: oauth.cloned(),
                browser,
                one_at_a_time: tokio::sync::Mutex::new(()),
            })
        });
        Ok(Authorizing {
            inner: AuthClient::new(http, manager),
            record: logins.record(server, url),
            relogin,
            challenges,
        })
    }

    /// Logs in for `challenge` when someone may; whether to send the request again.
    async fn relogin(&self, challenge: &str) -> bool {
        let Some(relogin) = &self.relogin else {
            return false;
        };
        let _one = relogin.one_at_a_time.lock().await;
        if !relogin.logins.count_login(&relogin.server) {
            tracing::warn!(server = %relogin.server, "{MAX_LOGINS} logins in a row did not satisfy the server; not logging in again");
            return false;
        }
        let logged_in = relogin
            .logins
            .login(
                &relogin.server,
                &relogin.url,
                relogin.oauth.as_ref(),
                &relogin.browser,
                Some(challenge).filter(|c| !c.is_empty()),
            )
            .await;
        if let Err(e) = logged_in {
            tracing::warn!(server = %relogin.server, error = %e, "logging in failed");
            return false;
        }
        // The manager reads the new tokens from the record; it needs the (maybe new) client.
        match relogin
            .logins
            .connection_manager(&relogin.server, &relogin.url, relogin.oauth.as_ref())
            .await
        {
            Ok(manager) => *self.inner.auth_manager.lock().await = manager,
            Err(e) => {
                tracing::warn!(server = %relogin.server, error = %e, "loading the new login failed")
            }
        }
        true
    }

    /// Runs `send` until it is not refused for want of a login, or no login helps.
    async fn answering<T, F, Fut>(&self, send: F) -> Result<T, StreamableHttpError<reqwest::Error>>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, StreamableHttpError<reqwest::Error>>>,
    {
        let mut unauthorized_once = false;
        let mut logged_in = false;
        loop {
            let result = send().await;
            let (challenge, step_up) = match &result {
                Err(StreamableHttpError::AuthRequired(c)) => {
                    (c.www_authenticate_header.clone(), false)
                }
                Err(StreamableHttpError::InsufficientScope(c)) => {
                    (c.www_authenticate_header.clone(), true)
                }
                Err(StreamableHttpError::Auth(AuthError::TokenRefreshFailed(why)))
                    if client_refused(why) =>
                {
                    // Its tokens and client are worth nothing now: a new login registers anew.
                    if let Err(e) = self.record.remove().await {
                        tracing::warn!(error = %e, "forgetting a refused login failed");
                    }
                    (String::new(), false)
                }
                Ok(_) => {
                    self.challenges.set(None);
                    if let (true, Some(relogin)) = (logged_in, &self.relogin) {
                        relogin.logins.login_helped(&relogin.server);
                    }
                    return result;
                }
                Err(_) => return scrubbed(result),
            };
            self.challenges.set(Some(challenge.clone()));
            if (!step_up && unauthorized_once) || !self.relogin(&challenge).await {
                return scrubbed(result);
            }
            unauthorized_once |= !step_up;
            logged_in = true;
        }
    }
}

impl StreamableHttpClient for Authorizing {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.answering(|| {
            self.inner.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.answering(|| {
            self.inner.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.answering(|| {
            self.inner.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.answering(|| {
            self.inner.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}

/// `result` with an OAuth error said in codemode's words ([`describe`](super::describe)): rmcp's
/// own text carries what the authorization server said, which could echo a secret, and this
/// error becomes the upstream's "last error", shown to scripts and in tool descriptions.
fn scrubbed<T>(
    result: Result<T, StreamableHttpError<reqwest::Error>>,
) -> Result<T, StreamableHttpError<reqwest::Error>> {
    result.map_err(|e| match e {
        StreamableHttpError::Auth(e) => {
            StreamableHttpError::Auth(AuthError::OAuthError(describe(&e)))
        }
        other => other,
    })
}

/// Whether a failed refresh was the authorization server refusing the client itself (it forgot
/// the registration, or the client may not refresh): a definitive answer, like `invalid_grant`,
/// which rmcp reports apart only for the latter.
fn client_refused(why: &str) -> bool {
    ["invalid_client", "unauthorized_client"]
        .iter()
        .any(|code| why.contains(&format!("error response: {code}")))
}
