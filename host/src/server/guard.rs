//! What `/mcp` checks before rmcp sees a request: the body arrives in time and within its size
//! (`server.http.bodyReadTimeout`, `maxRequestBody`), it is one JSON-RPC message (malformed JSON
//! gets `400` with a JSON-RPC parse error, a batch `400` with an invalid-request error: MCP
//! 2025-06-18 and later have no batches), and an `initialize` that would open a legacy session
//! fits under the session caps (`maxSessions`, `maxSessionsPerClient`; `429` beyond). A request
//! whose JSON-RPC id is already in flight on the same legacy session gets `409` with an
//! invalid-request error at once (rmcp would answer only one of the two, and leave the other
//! open until the session expired).
//!
//! A call to an eval tool that the caller's OAuth token lacks the scopes for gets `403` with an
//! `insufficient_scope` challenge naming the scopes that would grant it
//! ([`Guard::scope_challenge`]).
//!
//! A legacy session belongs to the authenticated caller that opened it: another caller's
//! request naming it goes on as a request naming a session that does not exist, so it gets
//! rmcp's answer to an unknown session (`404`), and neither reaches the session nor learns that
//! it exists. The owner is kept in the durable store too, for the node that restores the session
//! after its own node is gone.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use codemode_config::ListenerLimits;
use codemode_policies::Caller;
use http::{HeaderValue, Method, StatusCode, header};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::{Value, json};

use super::ServerState;
use super::sessions::SealedSessionStore;
use crate::auth::Authenticate;

/// The header naming a legacy MCP session.
const SESSION_HEADER: &str = "mcp-session-id";
/// The first protocol version without sessions (an `initialize` at it or later opens none).
const STATELESS_PROTOCOL: &str = "2026-07-28";

/// The guard's state: the live config (for the limits), rmcp's session manager (whose map is
/// the truth about which sessions live), and which client opened each session.
#[derive(Clone)]
pub(super) struct Guard {
    state: Arc<ServerState>,
    sessions: Arc<LocalSessionManager>,
    owners: Arc<Mutex<HashMap<String, String>>>,
    in_flight: Arc<Mutex<HashSet<(String, String)>>>,
    /// Where sessions (and their owners) are kept for every node, when they are.
    session_store: Option<SealedSessionStore>,
    /// The authenticator of `/mcp`, for its scope challenges.
    auth: Arc<dyn Authenticate>,
}

/// Holds a `(session, id)` pair in flight until the response's body is dropped.
struct InFlight {
    set: Arc<Mutex<HashSet<(String, String)>>>,
    key: (String, String),
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.set
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.key);
    }
}

impl Guard {
    pub(super) fn new(
        state: Arc<ServerState>,
        sessions: Arc<LocalSessionManager>,
        (session_store, auth): (Option<SealedSessionStore>, Arc<dyn Authenticate>),
    ) -> Self {
        Guard {
            state,
            sessions,
            owners: Arc::default(),
            in_flight: Arc::default(),
            session_store,
            auth,
        }
    }

    /// Who opened `session`, when known here or in the store.
    async fn owner_of(&self, session: &str) -> Option<String> {
        let known = self
            .owners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(session)
            .cloned();
        if known.is_some() {
            return known;
        }
        let store = self.session_store.as_ref()?;
        match store.owner(session).await {
            Ok(owner) => owner,
            Err(e) => {
                // Unknown here and unreadable there: judged as a session nobody owns, which
                // rmcp cannot restore either while the store is unreadable.
                tracing::warn!("reading a legacy session's owner: {e}");
                None
            }
        }
    }

    /// Binds a request naming a legacy session to the session's owner: a request of anyone
    /// else has its session header replaced by one naming no session.
    async fn bind_to_owner(&self, parts: &mut http::request::Parts) {
        let Some(session) = parts
            .headers
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
        else {
            return;
        };
        let Some(owner) = self.owner_of(&session).await else {
            return;
        };
        // Sessions opened without authentication are bound to nobody (every caller is `local`).
        if !owner.starts_with(CALLER_PREFIX) || client_of(parts) == owner {
            return;
        }
        let mut nobody = [0u8; 16];
        let _ = getrandom::fill(&mut nobody);
        let nobody = format!("unknown-{}", codemode_store::hex(&nobody));
        if let Ok(value) = HeaderValue::from_str(&nobody) {
            parts.headers.insert(SESSION_HEADER, value);
        }
    }

    /// Remembers that `client` opened `session`, here and, for an authenticated caller, in the
    /// store.
    async fn opened(&self, session: &str, client: String) {
        if client.starts_with(CALLER_PREFIX)
            && let Some(store) = &self.session_store
            && let Err(e) = store.put_owner(session, &client).await
        {
            tracing::warn!("recording a legacy session's owner: {e}");
        }
        self.owners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(session.to_string(), client);
    }

    /// `router` with every request through [`check`].
    pub(super) fn layer(self, router: axum::Router) -> axum::Router {
        router.layer(axum::middleware::from_fn_with_state(self, check))
    }

    /// Checks a POSTed JSON body: one JSON-RPC 2.0 message object; an `initialize` that opens a
    /// legacy session must fit under the session caps. `Ok(Some(client))`: the message opens a
    /// session for `client`. `Err`: the refusal.
    async fn check_message(
        &self,
        parts: &http::request::Parts,
        bytes: &[u8],
        limits: &ListenerLimits,
    ) -> Result<Option<String>, Box<Response>> {
        if parts.method != Method::POST || !is_json(&parts.headers) {
            return Ok(None);
        }
        let message = match serde_json::from_slice::<Value>(bytes) {
            Ok(message) => message,
            Err(e) => {
                return Err(Box::new(refuse(
                    StatusCode::BAD_REQUEST,
                    -32700,
                    format!("Parse error: the body is not JSON ({e})"),
                    Value::Null,
                    false,
                )));
            }
        };
        let Value::Object(object) = &message else {
            let why = if message.is_array() {
                "JSON-RPC batches are not supported (MCP 2025-06-18 and later); send one message per request"
            } else {
                "the body must be one JSON-RPC 2.0 message object"
            };
            return Err(Box::new(refuse(
                StatusCode::BAD_REQUEST,
                -32600,
                format!("Invalid Request: {why}"),
                Value::Null,
                false,
            )));
        };
        let id = object.get("id").cloned().unwrap_or(Value::Null);
        if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(Box::new(refuse(
                StatusCode::BAD_REQUEST,
                -32600,
                "Invalid Request: `jsonrpc` must be \"2.0\"".to_string(),
                id,
                false,
            )));
        }
        if let Some(refused) = self.scope_challenge(object, parts, &id) {
            return Err(Box::new(refused));
        }
        if opens_legacy_session(object, &parts.headers) {
            let client = client_of(parts);
            if let Err((cap, message)) = self.admit(&client, limits).await {
                self.state.metrics.refused(cap);
                return Err(Box::new(refuse(
                    StatusCode::TOO_MANY_REQUESTS,
                    -32000,
                    message,
                    id,
                    false,
                )));
            }
            return Ok(Some(client));
        }
        Ok(None)
    }

    /// The scope challenge (MCP authorization, RFC 6750 §3.1) of a call to an eval tool whose
    /// required permissions the caller's token does not grant, when some scopes would: `403
    /// insufficient_scope` naming them, so that the client can get them and call again. Without
    /// such scopes the call goes on, to be answered as a tool the caller cannot see.
    fn scope_challenge(
        &self,
        message: &serde_json::Map<String, Value>,
        parts: &http::request::Parts,
        id: &Value,
    ) -> Option<Response> {
        if message.get("method").and_then(Value::as_str) != Some("tools/call") {
            return None;
        }
        let tool = message.get("params")?.get("name")?.as_str()?;
        let caller = parts.extensions.get::<Caller>()?;
        let config = self.state.config();
        if super::eval_tools::missing_permissions(&config, tool, caller).is_empty() {
            return None;
        }
        let scopes = self
            .auth
            .scopes_granting(&super::eval_tools::required_permissions(&config, tool))?;
        let message = format!(
            "the token's scopes do not grant what `{}` needs; a token with the scopes `{}` would",
            codemode_policies::neutralize(tool),
            scopes.join(" ")
        );
        let body =
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": message}});
        Some(crate::auth::insufficient_scope(
            &scopes,
            self.auth.resource_metadata(),
            body.to_string(),
        ))
    }

    /// Takes the request's `(session, id)` pair as in flight, when it is a request on a legacy
    /// session; held until the returned guard's response body is dropped. `Err`: the pair is
    /// already in flight.
    fn claim_id(
        &self,
        bytes: &[u8],
        headers: &http::HeaderMap,
    ) -> Result<Option<InFlight>, Box<Response>> {
        Ok(match request_in_session(bytes, headers) {
            Some(key) => {
                let mut set = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
                if !set.insert(key.clone()) {
                    return Err(Box::new(refuse(
                        StatusCode::CONFLICT,
                        -32600,
                        format!(
                            "Invalid Request: a request with id {} is already in flight on this session; use a new id",
                            key.1
                        ),
                        serde_json::from_str(&key.1).unwrap_or(Value::Null),
                        false,
                    )));
                }
                Some(InFlight {
                    set: self.in_flight.clone(),
                    key,
                })
            }
            None => None,
        })
    }
}

/// A refusal with a JSON-RPC error body; `Connection: close` when the body was not read whole.
fn refuse(status: StatusCode, code: i64, message: String, id: Value, close: bool) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    if close {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

async fn check(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    let limits = guard.state.config().server.http.limits;
    let (mut parts, body) = request.into_parts();
    let bytes = match super::body::read(&parts.headers, body, &limits).await {
        Ok(bytes) => bytes,
        Err(e @ super::body::BodyError::TooLarge(_)) => {
            return refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                -32600,
                format!("Invalid Request: {e}"),
                Value::Null,
                true,
            );
        }
        Err(e @ super::body::BodyError::TimedOut(_)) => {
            return refuse(
                StatusCode::REQUEST_TIMEOUT,
                -32600,
                format!("Invalid Request: {e}"),
                Value::Null,
                true,
            );
        }
        Err(e @ super::body::BodyError::Unreadable(_)) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                -32700,
                format!("Parse error: {e}"),
                Value::Null,
                true,
            );
        }
    };
    let opens_session = match guard.check_message(&parts, &bytes, &limits).await {
        Ok(opens_session) => opens_session,
        Err(refused) => return *refused,
    };
    guard.bind_to_owner(&mut parts).await;
    let in_flight = match guard.claim_id(&bytes, &parts.headers) {
        Ok(in_flight) => in_flight,
        Err(refused) => return *refused,
    };
    let mut response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    if let Some(in_flight) = in_flight {
        // The id stays taken while the response (an SSE stream, often) is being sent.
        use futures::StreamExt;
        let body = std::mem::take(response.body_mut());
        *response.body_mut() = Body::from_stream(body.into_data_stream().map(move |chunk| {
            let _ = &in_flight;
            chunk
        }));
    }
    if let Some(client) = opens_session
        && let Some(session) = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
    {
        guard.opened(session, client).await;
    }
    response
}

impl Guard {
    /// Refuses a new session when the server or `client` is at its cap; forgets the owners of
    /// sessions rmcp no longer has (closed or expired).
    async fn admit(
        &self,
        client: &str,
        limits: &ListenerLimits,
    ) -> Result<(), (&'static str, String)> {
        let live = self.sessions.sessions.read().await;
        let mut owners = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        owners.retain(|session, _| live.keys().any(|id| id.as_ref() == session.as_str()));
        if live.len() >= limits.max_sessions {
            return Err((
                "max_sessions",
                format!(
                    "too many sessions: the server has {} open (server.http.maxSessions = {}); close one or retry later",
                    live.len(),
                    limits.max_sessions
                ),
            ));
        }
        let mine = owners.values().filter(|c| c.as_str() == client).count();
        if mine >= limits.max_sessions_per_client {
            return Err((
                "max_sessions_per_client",
                format!(
                    "too many sessions: client `{client}` has {mine} open (server.http.maxSessionsPerClient = {}); close one (HTTP DELETE) or retry later",
                    limits.max_sessions_per_client
                ),
            ));
        }
        Ok(())
    }
}

/// An `initialize` without a session, at a protocol version that still has sessions.
fn opens_legacy_session(
    message: &serde_json::Map<String, Value>,
    headers: &http::HeaderMap,
) -> bool {
    message.get("method").and_then(Value::as_str) == Some("initialize")
        && !headers.contains_key(SESSION_HEADER)
        && message
            .get("params")
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str)
            .is_none_or(|v| v < STATELESS_PROTOCOL)
}

/// `(session, id as JSON)` of a JSON-RPC request (not a notification or response) sent on a
/// legacy session.
fn request_in_session(bytes: &[u8], headers: &http::HeaderMap) -> Option<(String, String)> {
    let session = headers.get(SESSION_HEADER)?.to_str().ok()?;
    let message: Value = serde_json::from_slice(bytes).ok()?;
    message.get("method")?;
    let id = message.get("id")?;
    Some((session.to_string(), id.to_string()))
}

/// How [`client_of`] names an authenticated caller.
const CALLER_PREFIX: &str = "caller:";

/// Who opens a session: the authenticated caller, else the peer's address.
fn client_of(parts: &http::request::Parts) -> String {
    if let Some(caller) = parts.extensions.get::<Caller>()
        && caller.name != Caller::local().name
    {
        return format!("{CALLER_PREFIX}{}", caller.name);
    }
    match parts.extensions.get::<ConnectInfo<SocketAddr>>() {
        Some(ConnectInfo(addr)) => format!("address:{}", addr.ip()),
        None => "address:unknown".to_string(),
    }
}

fn is_json(headers: &http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        })
}
