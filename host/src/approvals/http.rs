//! The HTTP approval API and its web page, on the MCP listener (`"approvals": {"http": true}`)
//! or a listener of its own (`codemode serve --approvals-http ADDR`).
//!
//! - `GET /approvals` — the pending requests, each marked `decidable` by this caller (when not,
//!   `cannot_decide` says why: an ask of a risk level whose `approvers` the caller lacks is
//!   listed but refused); `?state=decided&limit=N` — the last decisions;
//! - `GET /approvals/stream` — Server-Sent Events `requested`, `decided`, `expired` (the pending
//!   requests first, as `requested`), and a last `end` when the stream ends: at its credential's
//!   expiry (`{"reason": "credential_expired"}`) or after `server.http.maxStreamLifetime`
//!   (`{"reason": "max_stream_lifetime"}`; reconnect). One caller holds at most
//!   `server.http.maxStreamsPerCaller` streams on a listener (`429` beyond);
//! - `POST /approvals/{id}` `{"decision", "reason"}` — `200 {"status": "decided"}`, or `401`,
//!   `403`, `404`, `409`, `422` (see [`DecideError`]); errors are `{"error": "…"}`;
//! - `GET /approvals/rules` — the remembered approvals (`{"rules": [...]}`, see
//!   [`codemode_policies::RememberedRule`]); `DELETE /approvals/rules/{id}` revokes one
//!   (`200 {"status": "revoked"}`, `404` for an id that names no live rule). Same permission as
//!   deciding (`approve`);
//! - `GET /approvals/ui` — the web page (embedded, no external assets). It is static and holds
//!   no data, so it is served without a credential (after the `Host`/`Origin` checks): its login
//!   form is how a token reaches the API calls it makes.
//!
//! Every other request passes the same [`Authenticate`] as the MCP endpoint, refused as `/mcp` refuses
//! (`401` with the same `WWW-Authenticate: Bearer` challenge, `resource_metadata` included under
//! `server.auth.oauth`) before anything else of it is read, and a body is read under the
//! same limits as `/mcp`'s (`server.http.maxRequestBody`, `bodyReadTimeout`; `413`, `408`); its
//! own listener has `/mcp`'s header read timeout. A decider needs the permission `approve` (and
//! `approve_self` for its own asks). Without authentication (loopback only) the decider is `local` with both.
//! Requests are refused (`403`) unless their `Host` is an allowed host (loopback names by
//! default) and their `Origin`, if any, is the listener's own origin or an allowed origin; a
//! `POST` without authentication must also be `Content-Type: application/json` with a
//! same-origin `Origin` — so neither a page elsewhere nor a DNS-rebinding one can approve.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::Extension;
use axum::Router;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use codemode_config::ListenerLimits;
use codemode_policies::{Caller, neutralize};
use serde::Deserialize;
use serde_json::json;

use super::broker::{
    APPROVE_PERMISSION, APPROVE_SELF_PERMISSION, ApprovalBroker, BrokerEvent, Choice, DecideError,
    mark_decidable, parse_decision,
};
use super::parked_feed::ParkedEvent;
use super::rules_api::reader;
use super::stream::{Feed, Item, StreamSlot, Streams, events, stream_bound};
use super::view::error;
use crate::auth::{AuthError, Authenticate, Credential, unauthorized};
use crate::server::body::BodyError;

/// The web page (HTML, CSS and script in one file).
const PAGE: &str = include_str!("page.html");

/// Which `Host` and `Origin` headers the API accepts, besides its own origin.
#[derive(Debug, Clone, Default)]
pub(crate) struct Origins {
    /// Extra host names (without port) accepted in `Host`; loopback names always are.
    pub allowed_hosts: Vec<String>,
    /// Extra origins (`https://ops.example.com`) accepted in `Origin`.
    pub allowed_origins: Vec<String>,
}

/// The listener limits in force for each request (the live config's, which a reload may change).
pub type Limits = Arc<dyn Fn() -> ListenerLimits + Send + Sync>;

#[derive(Clone)]
pub(super) struct Api {
    pub(super) broker: Arc<ApprovalBroker>,
    auth: Arc<dyn Authenticate>,
    origins: Arc<Origins>,
    limits: Limits,
    /// Open event streams by caller name.
    streams: Streams,
}

/// When the credential of the request expires (a request extension, beside its [`Caller`]).
#[derive(Debug, Clone, Copy)]
struct Expiry(Option<SystemTime>);

/// The approval API and page with loopback host names only. Marks `broker` as served.
pub fn router(broker: Arc<ApprovalBroker>, auth: Arc<dyn Authenticate>, limits: Limits) -> Router {
    router_with(broker, auth, Origins::default(), limits)
}

/// The approval API and page, accepting `origins` too. Marks `broker` as served.
pub(crate) fn router_with(
    broker: Arc<ApprovalBroker>,
    auth: Arc<dyn Authenticate>,
    origins: Origins,
    limits: Limits,
) -> Router {
    broker.set_served(true);
    let api = Api {
        broker,
        auth,
        origins: Arc::new(origins),
        limits,
        streams: Arc::default(),
    };
    Router::new()
        .route("/approvals", get(list))
        .route("/approvals/stream", get(stream))
        .route("/approvals/ui", get(page))
        .route("/approvals/{id}", post(decide))
        .route("/approvals/rules", get(super::rules_api::list))
        .route(
            "/approvals/rules/{id}",
            axum::routing::delete(super::rules_api::revoke),
        )
        .layer(middleware::from_fn_with_state(api.clone(), guard))
        .with_state(api)
}

impl axum::extract::FromRef<Api> for Arc<ApprovalBroker> {
    fn from_ref(api: &Api) -> Self {
        api.broker.clone()
    }
}

/// The host name of a `Host` header value (`[::1]:8080` → `[::1]`, `localhost:80` →
/// `localhost`), lowercased.
fn host_name(host: &str) -> String {
    let host = host.trim().to_ascii_lowercase();
    if host.starts_with('[') {
        return host
            .split(']')
            .next()
            .map_or(host.clone(), |h| format!("{h}]"));
    }
    host.rsplit_once(':')
        .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
        .map_or(host.clone(), |(name, _)| name.to_string())
}

/// [`error`] for a request refused before its body is read: the connection cannot carry
/// another request, so a keep-alive client is told not to send one on it (`Connection: close`).
fn refuse(status: StatusCode, message: impl Into<String>) -> Response {
    let mut response = error(status, message);
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Checks `Host` and `Origin` (every request), then who is asking (the [`Caller`] handlers
/// find in the request's extensions), then the same-origin rule for unauthenticated state
/// changes — all before a byte of the body is read.
async fn guard(State(api): State<Api>, mut request: Request, next: Next) -> Response {
    let headers = request.headers();
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return refuse(StatusCode::FORBIDDEN, "a Host header is required");
    };
    let name = host_name(host);
    let loopback = ["localhost", "127.0.0.1", "[::1]"].contains(&name.as_str());
    if !loopback
        && !api
            .origins
            .allowed_hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(&name))
    {
        return refuse(
            StatusCode::FORBIDDEN,
            format!("host `{name}` is not allowed"),
        );
    }
    // The listener's own origin, over HTTP or behind a TLS-terminating proxy.
    let own_host = host.trim().to_ascii_lowercase();
    let origin = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok());
    let same_origin = origin.is_some_and(|o| {
        let o = o.to_ascii_lowercase();
        o == format!("http://{own_host}") || o == format!("https://{own_host}")
    });
    if let Some(origin) = origin
        && !same_origin
        && !codemode_config::origin_allowed(origin, &api.origins.allowed_origins)
    {
        return refuse(
            StatusCode::FORBIDDEN,
            format!("origin `{origin}` is not allowed"),
        );
    }
    // The page is static and holds no data: its own login form is how a token reaches the
    // API calls it makes, so it is served to a browser that has none yet.
    if request.uri().path() == "/approvals/ui" && request.method() == axum::http::Method::GET {
        return next.run(request).await;
    }
    api.auth.prepare(headers).await;
    let credential = match decider(&api, headers) {
        Ok(credential) => credential,
        // The challenge `/mcp` gives: with OAuth, where to log in (`resource_metadata`).
        Err(e) => return unauthorized(&e, api.auth.resource_metadata()),
    };
    let changes = [axum::http::Method::POST, axum::http::Method::DELETE];
    if changes.contains(request.method()) && !api.auth.enabled() {
        let json_body = headers
            .get(header::CONTENT_TYPE)
            .and_then(|c| c.to_str().ok())
            .is_some_and(|c| {
                c.split(';')
                    .next()
                    .is_some_and(|t| t.trim() == "application/json")
            });
        if !json_body || !same_origin {
            return refuse(
                StatusCode::FORBIDDEN,
                "without authentication, a decision needs Content-Type: application/json and this listener's own Origin",
            );
        }
    }
    request
        .extensions_mut()
        .insert(Expiry(credential.expires_at));
    request.extensions_mut().insert(credential.caller);
    next.run(request).await
}

/// The caller deciding and its credential's expiry; without authentication, `local` with every
/// approval permission.
fn decider(api: &Api, headers: &HeaderMap) -> Result<Credential, AuthError> {
    if !api.auth.enabled() {
        return Ok(Credential {
            caller: Caller::new(Caller::LOCAL, [APPROVE_PERMISSION, APPROVE_SELF_PERMISSION]),
            expires_at: None,
        });
    }
    api.auth.credential(headers)
}

#[derive(Deserialize)]
struct ListQuery {
    state: Option<String>,
    limit: Option<usize>,
}

async fn list(
    State(api): State<Api>,
    Extension(caller): Extension<Caller>,
    Query(q): Query<ListQuery>,
) -> Response {
    if let Err(e) = reader(&caller) {
        return e.into_response();
    }
    match q.state.as_deref() {
        None | Some("pending") => {
            let mut views: Vec<serde_json::Value> = api
                .broker
                .pending()
                .iter()
                .filter_map(|v| serde_json::to_value(v.as_ref()).ok())
                .collect();
            if let Some(parked) = api.broker.parked() {
                match parked.list().await {
                    Ok(saved) => merge_by_id(&mut views, saved),
                    Err(e) => return partial(marked(views, &caller), e),
                }
            }
            axum::Json(json!({"approvals": marked(views, &caller)})).into_response()
        }
        Some("decided") => {
            let limit = q.limit.unwrap_or(50);
            let mut views: Vec<serde_json::Value> = api
                .broker
                .decided(limit)
                .iter()
                .filter_map(|v| serde_json::to_value(v.as_ref()).ok())
                .collect();
            // Decisions on parked evals' asks are in the store, for every node to list.
            if let Some(parked) = api.broker.parked() {
                match parked.decided().await {
                    Ok(saved) => merge_by_id(&mut views, saved),
                    Err(e) => return partial(views, e),
                }
                views.sort_by(|a, b| b["decided_at"].as_str().cmp(&a["decided_at"].as_str()));
                views.truncate(limit);
            }
            axum::Json(json!({"approvals": views})).into_response()
        }
        Some(other) => error(
            StatusCode::BAD_REQUEST,
            format!("unknown state `{other}` (expected pending or decided)"),
        ),
    }
}

async fn stream(
    State(api): State<Api>,
    Extension(caller): Extension<Caller>,
    Extension(Expiry(expires_at)): Extension<Expiry>,
) -> Response {
    if let Err(e) = reader(&caller) {
        return e.into_response();
    }
    let limits = (api.limits)();
    let slot = match StreamSlot::take(&api.streams, &caller.name, limits.max_streams_per_caller) {
        Ok(slot) => slot,
        Err(open) => {
            return error(
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "too many approval streams: `{}` has {open} open on this listener (server.http.maxStreamsPerCaller = {}); close one or retry later",
                    neutralize(&caller.name),
                    limits.max_streams_per_caller
                ),
            );
        }
    };
    let (lifetime, end) = stream_bound(limits.max_stream_lifetime, expires_at, SystemTime::now());
    let now = tokio::time::Instant::now();
    // A lifetime past what an `Instant` holds is as good as none (136 years).
    let deadline = now
        .checked_add(lifetime)
        .unwrap_or_else(|| now + Duration::from_secs(u64::from(u32::MAX)));
    // Subscribe before the snapshot: a request made in between appears twice (same id), never
    // not at all.
    let rx = api.broker.subscribe();
    let parked = api
        .broker
        .parked()
        .map(|parked| api.broker.parked_feed().subscribe(parked));
    let mut first: Vec<Item> = api
        .broker
        .pending()
        .into_iter()
        .map(|view| Item::Live(BrokerEvent::Requested(view)))
        .collect();
    if let Some(listed) = api.broker.parked() {
        // Unreadable now: the feed's next poll sends them.
        for view in listed.list().await.unwrap_or_default() {
            first.push(Item::Parked(ParkedEvent {
                name: "requested",
                view: Arc::new(view),
            }));
        }
    }
    let feed = Feed {
        first: first.into_iter(),
        rx,
        parked,
        deadline,
        end,
        slot: Some(slot),
        reader: caller,
    };
    Sse::new(events(feed))
        .keep_alive(KeepAlive::default())
        .into_response()
}

#[derive(Deserialize)]
struct DecisionBody {
    decision: String,
    reason: Option<String>,
    /// A question's option, with `"decision": "answer"`.
    answer: Option<String>,
}

async fn decide(
    State(api): State<Api>,
    Path(id): Path<String>,
    Extension(caller): Extension<Caller>,
    request: Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let body = match crate::server::body::read(&parts.headers, body, &(api.limits)()).await {
        Ok(body) => body,
        Err(e) => {
            let status = match e {
                BodyError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
                BodyError::TimedOut(_) => StatusCode::REQUEST_TIMEOUT,
                BodyError::Unreadable(_) => StatusCode::BAD_REQUEST,
            };
            return refuse(status, e.to_string());
        }
    };
    let body: DecisionBody = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("expected {{\"decision\": …, \"reason\": …}}: {e}"),
            );
        }
    };
    let choice = match (body.decision.as_str(), body.answer) {
        ("answer", Some(a)) => Choice::Answer(a),
        ("answer", None) => {
            return error(
                StatusCode::UNPROCESSABLE_ENTITY,
                "`\"decision\": \"answer\"` needs `answer`: one of the question's options",
            );
        }
        (name, _) => match parse_decision(name) {
            Some(d) => Choice::Decision(d),
            None => {
                return error(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    format!(
                        "unknown decision `{}` (expected approve_once, approve_eval, approve_session, approve_remember, decline or answer)",
                        neutralize(name)
                    ),
                );
            }
        },
    };
    let parked = api.broker.parked().filter(|_| api.broker.is_unknown(&id));
    let decided = match parked {
        Some(parked) => {
            let decided = parked.decide(&id, &caller, choice, body.reason).await;
            if decided.is_ok() {
                // The streams are told now, not at the next poll.
                api.broker.parked_feed().poll(parked.as_ref()).await;
            }
            decided
        }
        None => api.broker.decide(&id, &caller, choice, body.reason),
    };
    match decided {
        Ok(()) => axum::Json(json!({"status": "decided"})).into_response(),
        Err(e) => {
            let status = match &e {
                DecideError::NotFound(_) => StatusCode::NOT_FOUND,
                DecideError::Closed(..) => StatusCode::CONFLICT,
                DecideError::Forbidden(_) => StatusCode::FORBIDDEN,
                DecideError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
                _ => StatusCode::UNPROCESSABLE_ENTITY,
            };
            error(status, e.to_string())
        }
    }
}

/// The pending `views`, each marked with whether `reader` may decide it.
fn marked(mut views: Vec<serde_json::Value>, reader: &Caller) -> Vec<serde_json::Value> {
    for view in &mut views {
        mark_decidable(view, reader);
    }
    views
}

/// Adds the views of `more` whose ids `views` lacks.
fn merge_by_id(views: &mut Vec<serde_json::Value>, more: Vec<serde_json::Value>) {
    let mut seen: std::collections::HashSet<String> = views
        .iter()
        .filter_map(|v| v.get("id").and_then(|i| i.as_str()).map(str::to_string))
        .collect();
    for view in more {
        let id = view.get("id").and_then(|i| i.as_str()).map(str::to_string);
        if id.is_none_or(|id| seen.insert(id)) {
            views.push(view);
        }
    }
}

/// `503` with this node's own `views` and why the saved ones are missing: a listing never
/// looks complete when it is not.
fn partial(views: Vec<serde_json::Value>, why: String) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        axum::Json(json!({"approvals": views, "incomplete": true, "error": why})),
    )
        .into_response()
}

async fn page() -> Response {
    let mut response = Html(PAGE).into_response();
    let h = response.headers_mut();
    // The page runs only its own inline script and talks only to this listener.
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    response
}

/// Why the approval API's own listener was not bound; the message names the address and why.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct BindError(String);

/// Binds the approval API's own listener (`serve --approvals-http ADDR`, with `/mcp`'s listen
/// backlog) and prints
/// `approvals at http://ADDR/approvals/ui` on stderr; serve it with [`serve`].
///
/// # Errors
/// The address cannot be bound, or it is not a loopback address while `auth` checks nothing.
#[expect(
    clippy::print_stderr,
    reason = "the documented `approvals at` line, printed whatever the log filter"
)]
pub async fn bind(
    addr: std::net::SocketAddr,
    auth: &dyn Authenticate,
) -> Result<tokio::net::TcpListener, BindError> {
    if !auth.enabled() && !addr.ip().is_loopback() {
        return Err(BindError(format!(
            "refusing to serve the approval API on {addr} without authentication: use a loopback address such as 127.0.0.1:PORT"
        )));
    }
    let listener = crate::server::listener::bind(addr)
        .map_err(|e| BindError(format!("cannot listen on {addr} for the approval API: {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| BindError(format!("cannot listen on {addr} for the approval API: {e}")))?;
    eprintln!("approvals at http://{local}/approvals/ui");
    Ok(listener)
}

/// Serves the approval API and page on `listener` until `shutdown`, with `/mcp`'s connection
/// handling: a request head must arrive within `headerReadTimeout` and fit in 64 KiB, a body
/// within `bodyReadTimeout`, and connections are capped by `maxConnections` and
/// `maxConnectionsPerIp` (of the limits in force when this is called). The broker counts as
/// served from this call on (before the returned future is first polled).
pub fn serve(
    listener: tokio::net::TcpListener,
    broker: Arc<ApprovalBroker>,
    auth: Arc<dyn Authenticate>,
    limits: Limits,
    shutdown: tokio_util::sync::CancellationToken,
) -> impl std::future::Future<Output = ()> + Send {
    let in_force = limits();
    let app = router(broker, auth, limits);
    crate::server::listener::serve(listener, app, in_force, shutdown)
}

#[cfg(test)]
mod tests {
    use super::{PAGE, host_name};

    /// The page's script escapes exactly what `neutralize` escapes: its regex class is the one
    /// built from `invisible_ranges()`.
    #[test]
    fn the_page_neutralizes_the_same_characters_as_the_host() {
        let escape = |c: char| {
            let code = u32::from(c);
            if code <= 0xffff {
                format!("\\u{code:04x}")
            } else {
                format!("\\u{{{code:x}}}")
            }
        };
        let class: String = codemode_policies::invisible_ranges()
            .map(|(lo, hi)| {
                if lo == hi {
                    escape(lo)
                } else {
                    format!("{}-{}", escape(lo), escape(hi))
                }
            })
            .collect();
        let regex = format!("String(text).replace(/[{class}]/gu, (c) => {{");
        assert!(
            PAGE.contains(&regex),
            "the page's neutralize must use {regex}"
        );
    }

    #[test]
    fn host_names() {
        for (host, want) in [
            ("localhost:8080", "localhost"),
            ("LOCALHOST", "localhost"),
            ("127.0.0.1:1", "127.0.0.1"),
            ("[::1]:9", "[::1]"),
            ("[::1]", "[::1]"),
            ("evil.example:80", "evil.example"),
        ] {
            assert_eq!(host_name(host), want, "{host}");
        }
    }
}
