//! What a platform watches a server through: `GET /healthz` (the process serves), `GET /readyz`
//! (it should get traffic) and `GET /metrics` (Prometheus, [`metrics`]).
//!
//! They are served on the `serve --http` listener, before authentication and outside `/mcp`'s
//! `Host` and `Origin` checks (a kubelet probes with `Host: <pod IP>` and no credentials), and
//! on the admin listener when one is configured (`server.admin.listen`, `--admin-http`). Their
//! bodies name checks and upstream servers, never an address, a URL or an error's text: those
//! go to the log.
//!
//! Readiness is what a load balancer needs to know: the first config is loaded, the `/mcp`
//! listener accepts (not yet bound, or draining at shutdown: not ready), and the durable store
//! answers. An upstream that is down, or a config reload that failed, is reported in `checks`
//! but never makes a node unready: one bad config push must not take every replica out.

pub(crate) mod health;
pub mod metrics;

pub(crate) use health::Listener;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode, header};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::ServerState;

/// How long a probe of the durable store may take before the store counts as not answering.
const STORE_PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a probe's answer is reused: probes from every kubelet, load balancer and curious
/// client cost the store one request per interval at most.
const STORE_PROBE_REUSE: Duration = Duration::from_secs(1);
/// The key a store probe asks about (never written).
const STORE_PROBE_KEY: &str = "health:probe";

/// `/healthz`, `/readyz` and `/metrics` on `state`'s server.
pub(crate) fn router(state: Arc<ServerState>) -> axum::Router {
    axum::Router::new()
        .route("/healthz", axum::routing::get(healthz))
        .route("/readyz", axum::routing::get(readyz))
        .route("/metrics", axum::routing::get(metrics_text))
        .with_state(state)
}

/// `router` with every response counted in `codemode_http_responses_total`.
pub(crate) fn count_responses(router: axum::Router, state: Arc<ServerState>) -> axum::Router {
    router.layer(axum::middleware::from_fn_with_state(state, count))
}

async fn count(State(state): State<Arc<ServerState>>, request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    state.metrics.http_response(response.status().as_u16());
    response
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body.to_string(),
    )
        .into_response()
}

async fn healthz() -> Response {
    json_response(StatusCode::OK, &json!({"status": "ok"}))
}

async fn readyz(State(state): State<Arc<ServerState>>) -> Response {
    let (ready, checks) = readiness(&state).await;
    if ready {
        json_response(
            StatusCode::OK,
            &json!({"status": "ready", "checks": checks}),
        )
    } else {
        json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"status": "not_ready", "checks": checks}),
        )
    }
}

/// Whether the server should get traffic, and every check's state.
async fn readiness(state: &Arc<ServerState>) -> (bool, Map<String, Value>) {
    let mut checks = Map::new();
    let mut ready = true;
    // The state exists once the first config is loaded and applied.
    checks.insert("config".into(), "ok".into());
    if let Some(listener) = state.health.listener_check() {
        ready &= listener == "ok";
        checks.insert("listener".into(), listener.into());
    }
    if state.durable().is_some() {
        let answers = store_answers(state).await;
        ready &= answers;
        let word = if answers { "ok" } else { "unreachable" };
        checks.insert("durable_store".into(), word.into());
    }
    let reload = if state.health.reload_failed.load(Ordering::Relaxed) {
        "failed"
    } else {
        "ok"
    };
    checks.insert("config_reload".into(), reload.into());
    let upstreams: Map<String, Value> = state
        .upstreams
        .status()
        .into_iter()
        .map(|s| {
            let word = match (s.connected, s.starting, s.needs_login) {
                (true, _, _) => "up",
                (false, true, _) => "starting",
                (false, false, true) => "needs login",
                (false, false, false) => "down",
            };
            (s.name, Value::from(word))
        })
        .collect();
    checks.insert("upstreams".into(), Value::Object(upstreams));
    (ready, checks)
}

/// Whether the durable store answered a probe within [`STORE_PROBE_TIMEOUT`] (an answer at
/// most [`STORE_PROBE_REUSE`] old is reused).
async fn store_answers(state: &Arc<ServerState>) -> bool {
    let Some(durable) = state.durable() else {
        return true;
    };
    let mut probe = state.health.store_probe.lock().await;
    if let Some((at, answered)) = *probe
        && at.elapsed() < STORE_PROBE_REUSE
    {
        return answered;
    }
    let answered =
        match tokio::time::timeout(STORE_PROBE_TIMEOUT, durable.store().exists(STORE_PROBE_KEY))
            .await
        {
            Ok(Ok(_)) => true,
            Ok(Err(e)) => {
                tracing::warn!("readiness: the durable store does not answer: {e}");
                false
            }
            Err(_) => {
                tracing::warn!(
                    "readiness: the durable store did not answer within {} s",
                    STORE_PROBE_TIMEOUT.as_secs()
                );
                false
            }
        };
    *probe = Some((Instant::now(), answered));
    answered
}

async fn metrics_text(State(state): State<Arc<ServerState>>, headers: HeaderMap) -> Response {
    if !state.metrics.enabled() {
        return json_response(
            StatusCode::NOT_FOUND,
            &json!({"error": "metrics are off (server.admin.metrics: false)"}),
        );
    }
    let token = *state
        .health
        .metrics_token
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(expected) = token
        && !bearer_matches(&headers, &expected)
    {
        let mut response = json_response(
            StatusCode::UNAUTHORIZED,
            &json!({"error": "/metrics needs the bearer token of server.admin.metricsAuth"}),
        );
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            http::HeaderValue::from_static("Bearer realm=\"codemode metrics\""),
        );
        return response;
    }
    let text = state.metrics.encode(&state.metrics_snapshot());
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

/// Whether `Authorization: Bearer T` carries the token whose SHA-256 is `expected`.
fn bearer_matches(headers: &HeaderMap, expected: &[u8; 32]) -> bool {
    let Some(token) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    let hash: [u8; 32] = Sha256::digest(token.trim().as_bytes()).into();
    hash.ct_eq(expected).into()
}
