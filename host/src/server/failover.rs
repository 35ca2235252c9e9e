//! A legacy (2025-11-25) session's response streams when the node serving them is gone.
//!
//! rmcp sends the response to each request of a legacy session on an SSE stream of its own,
//! whose event ids (`<index>/<stream>`) name a stream in the memory of the node serving it.
//! When that node dies, the client reconnects (`GET` with `Last-Event-ID`) through the load
//! balancer to another node, which restores the session from the store (rmcp's
//! `SessionStore`) but has no such stream: rmcp answers an empty stream, and the client
//! reconnects to it for ever.
//!
//! So on every node that keeps sessions in a store, this layer, in front of rmcp:
//! - marks each event id it sends on a session's streams with the node (a random id of this
//!   process) and, on a request's stream, the request's number: `<rmcp's id>~<node>~<number>`
//!   (`<rmcp's id>~<node>` on the session's standalone stream);
//! - records each request of a session in the store while it is in flight
//!   ([`InFlightRequest`], sealed; forgotten when its response stream ends), a `tools/call`
//!   with the token its eval parks under ([`LegacyEvalToken`], passed to the eval);
//! - on a reconnection naming this node, strips the mark and lets rmcp resume the stream;
//! - on a reconnection naming a request of another node, ends the request: takes its record
//!   from the store and answers one SSE event, its JSON-RPC error ([`NODE_LOST`],
//!   [`node_lost_message`], which says so when the eval was saved to the store and can still
//!   be decided on the approval API); `410 Gone` when the store has no such request of this session in
//!   flight (it ended, was ended already, or never was);
//! - on a reconnection naming another node's standalone stream, opens a new one here (what the
//!   lost node had not delivered is lost with it).
//!
//! Ids without a mark go to rmcp as they are.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use axum::body::{Body, BodyDataStream, Bytes};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use codemode_policies::neutralize;
use futures::Stream;
use http::{HeaderValue, Method, StatusCode, header};
use serde_json::{Value, json};

use super::legacy::LegacyEvalToken;
use super::state::ServerState;
use crate::server::sessions::{InFlightRequest, SealedSessionStore};

/// The header naming a legacy MCP session.
const SESSION_HEADER: &str = "mcp-session-id";
/// The header of a reconnection: the last event id the client got.
const LAST_EVENT_ID: &str = "last-event-id";
/// What separates rmcp's event id from the mark (never in rmcp's ids: digits and `/`).
const MARK: char = '~';

/// The JSON-RPC error code of a request whose node is gone: in JSON-RPC's server-error range,
/// the code the MCP SDKs give a closed connection.
pub(crate) const NODE_LOST: i64 = -32000;

/// The layer's state: the store, this node's id, the next request number.
#[derive(Clone)]
pub(super) struct Failover {
    inner: Arc<Inner>,
}

struct Inner {
    sessions: SealedSessionStore,
    /// The server, whose durable store says whether a lost request's eval was saved.
    state: Arc<ServerState>,
    node: String,
    next: AtomicU64,
}

impl Failover {
    /// The layer for one node (one process): its id is random, so a restarted node is another.
    pub(super) fn new(sessions: SealedSessionStore, state: Arc<ServerState>) -> Self {
        let mut bytes = [0u8; 8];
        if getrandom::fill(&mut bytes).is_err() {
            // Not secret, only distinct: the clock separates the nodes of one cluster.
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or_default();
            bytes = (nanos ^ u64::from(std::process::id())).to_be_bytes();
        }
        Failover {
            inner: Arc::new(Inner {
                sessions,
                state,
                node: format!("{:016x}", u64::from_be_bytes(bytes)),
                next: AtomicU64::new(1),
            }),
        }
    }

    /// `router` with every request through [`route`].
    pub(super) fn layer(self, router: axum::Router) -> axum::Router {
        router.layer(axum::middleware::from_fn_with_state(self, route))
    }
}

/// Where the event ids of a reconnection came from.
#[derive(Debug, PartialEq)]
struct Marked<'a> {
    /// rmcp's own id.
    event: &'a str,
    node: &'a str,
    /// The request's number; `None` on the standalone stream.
    request: Option<u64>,
}

impl<'a> Marked<'a> {
    /// `None` for an id without a well-formed mark (a node is 16 hex digits).
    fn parse(id: &'a str) -> Option<Self> {
        let mut parts = id.split(MARK);
        let event = parts.next()?;
        let node = parts
            .next()
            .filter(|n| n.len() == 16 && n.bytes().all(|b| b.is_ascii_hexdigit()))?;
        let request = match parts.next() {
            Some(n) => Some(n.parse().ok()?),
            None => None,
        };
        parts.next().is_none().then_some(Marked {
            event,
            node,
            request,
        })
    }
}

async fn route(State(failover): State<Failover>, request: Request, next: Next) -> Response {
    let Some(session) = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
    else {
        return next.run(request).await;
    };
    match *request.method() {
        Method::POST => failover.post(&session, request, next).await,
        Method::GET => failover.get(&session, request, next).await,
        _ => next.run(request).await,
    }
}

impl Failover {
    /// A request of a session: recorded while in flight, its stream's ids marked.
    async fn post(&self, session: &str, request: Request, next: Next) -> Response {
        let (parts, body) = request.into_parts();
        // The guard has read the body whole (and bounded it): this only takes the bytes.
        let bytes = match axum::body::to_bytes(body, usize::MAX).await {
            Ok(bytes) => bytes,
            Err(_) => return next.run(Request::from_parts(parts, Body::empty())).await,
        };
        let message: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let (Some(method), Some(id)) = (
            message.get("method").and_then(Value::as_str),
            message.get("id"),
        ) else {
            // A notification or a response: no stream of its own.
            return next
                .run(Request::from_parts(parts, Body::from(bytes)))
                .await;
        };
        let eval = (method == "tools/call").then(super::suspend::random_token);
        let in_flight = InFlightRequest {
            session: SealedSessionStore::record_key(session),
            id: id.clone(),
            method: method.to_string(),
            tool: (method == "tools/call")
                .then(|| message["params"]["name"].as_str().map(str::to_string))
                .flatten(),
            eval: eval.clone(),
        };
        let mut parts = parts;
        if let Some(token) = eval {
            parts.extensions.insert(LegacyEvalToken(token));
        }
        let number = self.inner.next.fetch_add(1, Ordering::Relaxed);
        // The JSON-RPC id is the client's choice: one too big to keep is not recorded (if this
        // node dies, a reconnection then gets 410 instead of the node-lost error).
        let size = serde_json::to_vec(&in_flight).map_or(usize::MAX, |v| v.len());
        if size > MAX_RECORD_BYTES {
            let response = next
                .run(Request::from_parts(parts, Body::from(bytes)))
                .await;
            return self.mark(response, None);
        }
        // Written beside the request, not before it: a slow or unreachable store (up to its
        // command timeout) must not hold up the session.
        let sessions = self.inner.sessions.clone();
        let node = self.inner.node.clone();
        let recorded = tokio::spawn(async move {
            if let Err(e) = sessions.put_request(&node, number, &in_flight).await {
                tracing::warn!(
                    "request {number} of a legacy session is not recorded as in flight (another node cannot end it if this one dies): {e}"
                );
            }
        });
        let response = next
            .run(Request::from_parts(parts, Body::from(bytes)))
            .await;
        self.mark(response, Some((number, Forget::After(recorded))))
    }

    /// A session's standalone stream, or a reconnection to a stream.
    async fn get(&self, session: &str, mut request: Request, next: Next) -> Response {
        let Some(last) = request
            .headers()
            .get(LAST_EVENT_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
        else {
            let response = next.run(request).await;
            return self.mark(response, None);
        };
        let Some(marked) = Marked::parse(&last) else {
            return next.run(request).await;
        };
        if marked.node.eq_ignore_ascii_case(&self.inner.node) {
            let event = HeaderValue::from_str(marked.event).unwrap_or(HeaderValue::from_static(""));
            request.headers_mut().insert(LAST_EVENT_ID, event);
            let response = next.run(request).await;
            // Its ids are marked as the request's; its record is forgotten only if it is this
            // session's (anyone may send a Last-Event-ID naming another session's request).
            let owner = SealedSessionStore::record_key(session);
            return self.mark(
                response,
                marked.request.map(|n| (n, Forget::IfOwnedBy(owner))),
            );
        }
        let node = marked.node.to_ascii_lowercase();
        let Some(number) = marked.request else {
            // The lost node's standalone stream: a new one here.
            request.headers_mut().remove(LAST_EVENT_ID);
            let response = next.run(request).await;
            return self.mark(response, None);
        };
        // Looked at first (a reconnection of another session must not consume it), then taken:
        // the request ends once, however many nodes its client reaches (the TypeScript SDK
        // reconnects after an error event; the next attempt gets 410, and it gives up).
        let session = SealedSessionStore::record_key(session);
        let found = match self.inner.sessions.request(&node, number).await {
            Ok(Some(lost)) if lost.session == session => {
                self.inner.sessions.take_request(&node, number).await
            }
            other => other.map(|_| None),
        };
        match found {
            Ok(Some(lost)) if lost.session == session => {
                tracing::info!(
                    "a reconnection to request {number} of node {node}, which is gone: ended with an error"
                );
                let saved = self.eval_saved(&lost).await;
                node_lost_response(&lost, saved)
            }
            Ok(_) => (
                StatusCode::GONE,
                "Gone: the request this Last-Event-ID names is not in flight on any node of this session (it was answered or ended already, or its record expired)",
            )
                .into_response(),
            Err(e) => (
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "Service Unavailable: the node serving this stream is gone, and the store does not say which request it was: {e}"
                ),
            )
                .into_response(),
        }
    }

    /// Whether the eval of `lost` (a `tools/call`) is in the durable store: parked, resumed
    /// on some node, or finished there.
    async fn eval_saved(&self, lost: &InFlightRequest) -> bool {
        let (Some(token), Some(durable)) = (&lost.eval, self.inner.state.durable()) else {
            return false;
        };
        matches!(durable.knows(token).await, Ok(true))
    }

    /// `response` with its event ids marked as this node's (and, for a request's stream, the
    /// request's number) when it is an SSE stream; a request's record is forgotten when its
    /// stream ends or its client drops it, as `forget` says.
    fn mark(&self, response: Response, request: Option<(u64, Forget)>) -> Response {
        let number = request.as_ref().map(|(n, _)| *n);
        let forget = request.map(|(number, forget)| {
            let sessions = self.inner.sessions.clone();
            let node = self.inner.node.clone();
            move || {
                // A dropped body may be dropped outside the runtime (at shutdown): then nothing
                // is forgotten, and the record expires.
                let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                    return;
                };
                runtime.spawn(async move {
                    match forget {
                        Forget::After(recorded) => {
                            let _ = recorded.await;
                        }
                        Forget::IfOwnedBy(owner) => match sessions.request(&node, number).await {
                            Ok(Some(recorded)) if recorded.session == owner => {}
                            _ => return,
                        },
                    }
                    if let Err(e) = sessions.forget_request(&node, number).await {
                        tracing::debug!("request {number} stays recorded until it expires: {e}");
                    }
                });
            }
        });
        let is_stream = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_stream {
            if let Some(forget) = forget {
                forget();
            }
            return response;
        }
        let suffix = match number {
            Some(n) => format!("{MARK}{}{MARK}{n}", self.inner.node),
            None => format!("{MARK}{}", self.inner.node),
        };
        let (parts, body) = response.into_parts();
        let stream = MarkIds {
            inner: body.into_data_stream(),
            suffix: suffix.into_bytes(),
            pending: Vec::new(),
            on_end: forget.map(|f| Box::new(f) as Box<dyn FnOnce() + Send>),
            done: false,
        };
        Response::from_parts(parts, Body::from_stream(stream))
    }
}

/// What a client is told when the node serving its request is gone; `saved` when the
/// request's eval is in the durable store.
pub(crate) fn node_lost_message(request: &InFlightRequest, saved: bool) -> String {
    let what = match &request.tool {
        Some(tool) => format!("`{}` of `{}`", request.method, tool),
        None => format!("`{}`", request.method),
    };
    let eval = if saved {
        "Its eval was saved to the durable store while it waited for a human: the approval API of any node (`GET /approvals`) can still decide it, and it then completes on that node (its result is not returned here). Do not run the script again unless it is refused or times out."
    } else {
        "An eval that was not saved to the durable store lived only in its node's memory: the tool calls it made stay made, and none of it goes on on this node. Check what the script did before running it again."
    };
    neutralize(&format!(
        "the codemode node serving this request ({what}) is gone: it stopped, or the load balancer no longer sends this session to it. The request ends here without its result. {eval} The session goes on here."
    ))
}

/// One SSE event ending `request` with [`NODE_LOST`].
fn node_lost_response(request: &InFlightRequest, saved: bool) -> Response {
    let error = json!({
        "jsonrpc": "2.0",
        "id": request.id,
        "error": {
            "code": NODE_LOST,
            "message": node_lost_message(request, saved),
            "data": {"reason": "node-lost", "evalSaved": saved},
        },
    });
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        format!("data: {error}\n\n"),
    )
        .into_response()
}

/// When a request's record is forgotten ([`Failover::mark`]).
enum Forget {
    /// After its writing (still under way, maybe) ends: the request's own response stream.
    After(tokio::task::JoinHandle<()>),
    /// If the record belongs to the session with this record key: a reconnection.
    IfOwnedBy(String),
}

/// The largest in-flight record kept (its JSON-RPC id is the client's choice).
const MAX_RECORD_BYTES: usize = 4096;

/// An SSE body with `suffix` appended to each non-empty `id:` field; `on_end` runs once, when
/// the stream ends or is dropped (its client went away: a record kept for a client that may
/// never come back would outlive the request by the session's lifetime; one that does come
/// back to this node gets its stream, and only a node death in between then ends the request
/// with 410 instead of the node-lost error).
struct MarkIds {
    inner: BodyDataStream,
    suffix: Vec<u8>,
    /// The start of a line not yet whole.
    pending: Vec<u8>,
    on_end: Option<Box<dyn FnOnce() + Send>>,
    done: bool,
}

impl MarkIds {
    /// The whole lines of `pending` + `chunk`, marked; keeps the rest.
    fn whole_lines(&mut self, chunk: &[u8]) -> Vec<u8> {
        self.pending.extend_from_slice(chunk);
        let Some(last) = self.pending.iter().rposition(|&b| b == b'\n') else {
            return Vec::new();
        };
        let rest = self.pending.split_off(last + 1);
        let whole = std::mem::replace(&mut self.pending, rest);
        let mut out = Vec::with_capacity(whole.len() + self.suffix.len());
        for line in whole.split_inclusive(|&b| b == b'\n') {
            out.extend_from_slice(&mark_line(line, &self.suffix));
        }
        out
    }
}

/// `line` with `suffix` after its value when it is a non-empty `id:` field.
fn mark_line(line: &[u8], suffix: &[u8]) -> Vec<u8> {
    let Some(field) = line.strip_prefix(b"id:") else {
        return line.to_vec();
    };
    let body_len = field
        .iter()
        .rposition(|&b| b != b'\n' && b != b'\r')
        .map_or(0, |i| i + 1);
    let (value, end) = field.split_at(body_len);
    let value = value.strip_prefix(b" ").unwrap_or(value);
    if value.is_empty() {
        return line.to_vec();
    }
    [b"id: ".as_slice(), value, suffix, end].concat()
}

impl Stream for MarkIds {
    type Item = Result<Bytes, axum::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            match Pin::new(&mut this.inner).poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(chunk))) => {
                    let out = this.whole_lines(&chunk);
                    if !out.is_empty() {
                        return Poll::Ready(Some(Ok(Bytes::from(out))));
                    }
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => {
                    this.done = true;
                    if let Some(on_end) = this.on_end.take() {
                        on_end();
                    }
                    let rest = std::mem::take(&mut this.pending);
                    if !rest.is_empty() {
                        return Poll::Ready(Some(Ok(Bytes::from(mark_line(&rest, &this.suffix)))));
                    }
                }
            }
        }
    }
}

impl Drop for MarkIds {
    fn drop(&mut self) {
        if let Some(on_end) = self.on_end.take() {
            on_end();
        }
    }
}

#[cfg(test)]
#[path = "failover_tests.rs"]
mod tests;
