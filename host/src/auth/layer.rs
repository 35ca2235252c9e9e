//! The axum layer that authenticates every request before any handling: a refused request gets
//! `401` with `WWW-Authenticate: Bearer`; an accepted one carries its [`Caller`] as a request
//! extension (rmcp hands the request's `http::request::Parts` to the MCP handler, so the caller
//! reaches each tool call through [`caller_of`]).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use codemode_policies::Caller;

use super::authenticate::{AuthError, Authenticate};

/// `router` with every request authenticated by `auth` (see the module docs).
pub fn require_auth(router: axum::Router, auth: Arc<dyn Authenticate>) -> axum::Router {
    router.layer(axum::middleware::from_fn_with_state(auth, authenticate))
}

async fn authenticate(
    State(auth): State<Arc<dyn Authenticate>>,
    mut request: Request,
    next: Next,
) -> Response {
    auth.prepare(request.headers()).await;
    match auth.authenticate(request.headers()) {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(error) => unauthorized(&error, auth.resource_metadata()),
    }
}

/// The `401` (or `503`) refusing a request for `error`; its challenge names the
/// protected-resource metadata at `resource_metadata` (MCP authorization) when there is one.
pub(crate) fn unauthorized(error: &AuthError, resource_metadata: Option<&str>) -> Response {
    let mut params = Vec::new();
    if let Some(url) = resource_metadata {
        params.push(format!("resource_metadata=\"{}\"", quotable(url)));
    }
    // RFC 6750 §3: the error code, with a description free of quotes and control characters.
    let status = match error {
        AuthError::Invalid(why) => {
            params.push("error=\"invalid_token\"".into());
            params.push(format!("error_description=\"{}\"", quotable(why)));
            http::StatusCode::UNAUTHORIZED
        }
        AuthError::Unavailable(_) => http::StatusCode::SERVICE_UNAVAILABLE,
        _ => http::StatusCode::UNAUTHORIZED,
    };
    let challenge = if params.is_empty() {
        "Bearer".to_string()
    } else {
        format!("Bearer {}", params.join(", "))
    };
    let body = serde_json::json!({ "error": error.to_string() }).to_string();
    (
        status,
        [
            (http::header::WWW_AUTHENTICATE, challenge),
            (http::header::CONTENT_TYPE, "application/json".to_string()),
            // The request's body is never read: the connection cannot carry another request,
            // and a keep-alive client must be told before it sends one on it.
            (http::header::CONNECTION, "close".to_string()),
        ],
        body,
    )
        .into_response()
}

/// The `403` refusing a request whose token lacks a scope it needs (RFC 6750 §3.1, MCP
/// authorization's scope challenge): `WWW-Authenticate` names `scopes`, the scopes that grant
/// what the request needs, so that the client can ask the authorization server for them and
/// retry; `body` is the response's body (JSON).
pub(crate) fn insufficient_scope(
    scopes: &[String],
    resource_metadata: Option<&str>,
    body: String,
) -> Response {
    let mut params = Vec::new();
    if let Some(url) = resource_metadata {
        params.push(format!("resource_metadata=\"{}\"", quotable(url)));
    }
    params.push("error=\"insufficient_scope\"".into());
    params.push(format!("scope=\"{}\"", quotable(&scopes.join(" "))));
    (
        http::StatusCode::FORBIDDEN,
        [
            (
                http::header::WWW_AUTHENTICATE,
                format!("Bearer {}", params.join(", ")),
            ),
            (http::header::CONTENT_TYPE, "application/json".to_string()),
        ],
        body,
    )
        .into_response()
}

/// `text` with what may not appear in a quoted header parameter replaced.
fn quotable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c == '"' || c == '\\' || c.is_control() {
                '\''
            } else {
                c
            }
        })
        .collect()
}

/// The caller the layer attached to an MCP request (`ctx.extensions` of an rmcp request
/// context); [`Caller::local`] where there is none (stdio, in-process).
pub fn caller_of(extensions: &rmcp::model::Extensions) -> Caller {
    extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Caller>())
        .cloned()
        .unwrap_or_else(Caller::local)
}
