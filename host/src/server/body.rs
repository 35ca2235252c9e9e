//! Reading a request body under the listener limits of `server.http` (`maxRequestBody`,
//! `bodyReadTimeout`): one reader for every route of every listener, so that no route holds a
//! connection or its memory longer or larger than `/mcp` does. Callers authenticate first: a
//! body is read only for a request that may be served.

use axum::body::{Body, Bytes};
use codemode_config::ListenerLimits;
use http::{HeaderMap, header};

/// Why a body was not read. Every case leaves the connection unable to carry another request
/// (the body was not read whole), so the refusal must say `Connection: close`.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// Declared or found larger than `maxRequestBody`.
    TooLarge(u64),
    /// Not whole within `bodyReadTimeout` of the request head.
    TimedOut(std::time::Duration),
    /// The connection failed while the body arrived.
    Unreadable(String),
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::TooLarge(max) => write!(
                f,
                "the request body is larger than {max} bytes (server.http.maxRequestBody)"
            ),
            BodyError::TimedOut(after) => write!(
                f,
                "the request body did not arrive within {} s (server.http.bodyReadTimeout)",
                after.as_secs_f64()
            ),
            BodyError::Unreadable(why) => write!(f, "the request body could not be read: {why}"),
        }
    }
}

/// The whole body of a request with `headers`, refused at once when its `Content-Length` is
/// over the limit, and refused as soon as the bytes received pass it or the time runs out.
pub(crate) async fn read(
    headers: &HeaderMap,
    body: Body,
    limits: &ListenerLimits,
) -> Result<Bytes, BodyError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limits.max_request_body) {
        return Err(BodyError::TooLarge(limits.max_request_body));
    }
    let limit = usize::try_from(limits.max_request_body).unwrap_or(usize::MAX);
    match tokio::time::timeout(limits.body_read_timeout, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) if is_length_limit(&e) => Err(BodyError::TooLarge(limits.max_request_body)),
        Ok(Err(e)) => Err(BodyError::Unreadable(e.to_string())),
        Err(_) => Err(BodyError::TimedOut(limits.body_read_timeout)),
    }
}

fn is_length_limit(e: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if err.to_string().contains("length limit exceeded") {
            return true;
        }
        source = err.source();
    }
    false
}
