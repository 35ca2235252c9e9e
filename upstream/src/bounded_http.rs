//! The HTTP client of a streamable-HTTP upstream: rmcp's reqwest client, with one change — an
//! answer too large to read fails its call instead of the whole session.
//!
//! rmcp's client reads one SSE event, or one JSON body, up to 16 MiB
//! ([`MAX_MESSAGE`](super::bounded::MAX_MESSAGE)); past it the response stream ends with an
//! error, which rmcp treats as the transport failing: the session closes, and every call in
//! flight on that upstream with it, while the server is reconnected. Here such an error on the
//! response to a request becomes that request's JSON-RPC error ([`TOO_LARGE`]), as for a stdio
//! upstream ([`super::bounded`]); the session goes on.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use serde_json::{Value, json};
use sse_stream::Sse;

use super::bounded::{MAX_MESSAGE, TOO_LARGE};

/// The most redirects followed for one request (rmcp's number).
const MAX_REDIRECTS: usize = 10;

/// rmcp's reqwest client for one upstream, with oversized answers turned into errors of their
/// requests (see the module docs).
#[derive(Clone)]
pub(crate) struct BoundedHttp {
    inner: reqwest::Client,
}

impl BoundedHttp {
    /// rmcp's default client: no idle pooling, same-origin 307/308 redirects only.
    ///
    /// # Errors
    /// When reqwest cannot build a client (no TLS provider installed).
    pub(crate) fn new() -> Result<Self, String> {
        let inner = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(same_origin_redirects())
            .build()
            .map_err(|e| format!("cannot build an HTTP client: {e}"))?;
        Ok(BoundedHttp { inner })
    }
}

/// Follows only 307 and 308 redirects to the same origin, at most [`MAX_REDIRECTS`]: rmcp's
/// policy (the method and body are kept, and credentials never leave the origin).
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("exceeded {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

/// The JSON-RPC error answering request `id` whose answer was over `max` bytes.
fn too_large(id: &Value, max: usize) -> Option<ServerJsonRpcMessage> {
    let message = format!(
        "its answer was over the {max} bytes codemode reads in one message (a large image or file?); it was dropped"
    );
    serde_json::from_value(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603,
        "message": message, "data": {"codemode": TOO_LARGE}}}))
    .ok()
}

/// Whether `error` is rmcp's "SSE event exceeded the maximum size".
fn event_too_large(error: &SseError) -> bool {
    error.to_string().contains("exceeded the maximum size")
}

/// `stream`, its error for an event over `max` bytes replaced by the error answering `id`.
fn answered(
    stream: BoxStream<'static, Result<Sse, SseError>>,
    id: Value,
    max: usize,
) -> BoxStream<'static, Result<Sse, SseError>> {
    stream
        .map(move |event| match event {
            Err(e) if event_too_large(&e) => match too_large(&id, max) {
                Some(error) => Ok(Sse {
                    event: Some("message".into()),
                    data: serde_json::to_string(&error).ok(),
                    id: None,
                    retry: None,
                }),
                None => Err(e),
            },
            other => other,
        })
        .boxed()
}

/// The `_meta.traceparent` of a `tools/call` request, as a header value.
fn traceparent_of(message: &ClientJsonRpcMessage) -> Option<HeaderValue> {
    let ClientJsonRpcMessage::Request(request) = message else {
        return None;
    };
    let ClientRequest::CallToolRequest(call) = &request.request else {
        return None;
    };
    let traceparent = call.params.meta.as_ref()?.get_traceparent()?;
    HeaderValue::from_str(traceparent).ok()
}

impl StreamableHttpClient for BoundedHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.post_message_with_max_sse_event_size(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            MAX_MESSAGE,
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        mut custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        // A traced call's context goes in the header an HTTP server's own tracing reads too.
        if let Some(traceparent) = traceparent_of(&message) {
            custom_headers.insert(HeaderName::from_static("traceparent"), traceparent);
        }
        // Only a request has an answer to stand in for.
        let id = match &message {
            ClientJsonRpcMessage::Request(request) => serde_json::to_value(&request.id).ok(),
            _ => None,
        };
        let response = self
            .inner
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        match (response, id) {
            (Ok(StreamableHttpPostResponse::Sse(stream, session)), Some(id)) => Ok(
                StreamableHttpPostResponse::Sse(answered(stream, id, max_sse_event_size), session),
            ),
            (Err(StreamableHttpError::ResponseBodyTooLarge { max_size }), Some(id)) => {
                match too_large(&id, max_size) {
                    Some(error) => Ok(StreamableHttpPostResponse::Json(error, None)),
                    None => Err(StreamableHttpError::ResponseBodyTooLarge { max_size }),
                }
            }
            (response, _) => response,
        }
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
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            MAX_MESSAGE,
        )
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
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
