//! One `tools/call` to an upstream: its timeout (paused while the server waits on a human), its
//! progress token told to the call's relay, its cancellation when abandoned, its answer made a
//! JS value or a [`ToolError`] naming the server.

use std::future::Future;
use std::time::{Duration, Instant};

use rmcp::Peer;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, CancelledNotificationParam,
    ClientRequest, RequestId, RequestMetaObject, ServerResult,
};
use rmcp::service::{RoleClient, ServiceError};
use serde_json::{Value, json};

use codemode_runtime::{CallContext, ToolError};

use super::Upstream;
use crate::bounded;
use crate::convert;
use crate::relay::InFlight;
use crate::scope::CallScope;
use crate::sequence::Sequence;

impl Upstream {
    /// Calls `tool` with `args` (checked to be an object); `qualified` is the script's name
    /// for it, used in messages. The result's media go to `media`.
    pub(crate) async fn call(
        &self,
        (qualified, tool): (&str, &str),
        args: Value,
        cx: &CallContext,
        scope: &CallScope,
    ) -> Result<Value, ToolError> {
        let server = &*self.name;
        let (shared, session) = self.connected_peer(qualified, tool)?;
        let arguments = convert::arguments(qualified, args)?;
        // A server isolating sessions is called over the eval's own connection.
        let (peer, relays, sequence) = if self.spec.isolate_sessions {
            let open = |relays, sequence| self.open_private(relays, sequence);
            let lent = scope.sessions.lend((server, &self.spec), open).await?;
            (lent.peer, lent.relays, lent.sequence)
        } else {
            (shared, self.relays.clone(), self.sequence.clone())
        };
        let mut params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        if let Some(traceparent) = &scope.traceparent {
            let mut meta = RequestMetaObject::default();
            meta.set_traceparent(traceparent.clone());
            params.meta = Some(meta);
        }
        let in_flight = relays.enter(Some(scope.answerers()));
        let timeout = self.spec.call_timeout;
        let call = call_tool((&peer, server, &sequence), params, &in_flight);
        let answer = deadline(call, timeout, &scope.answering, cx).await;
        match answer {
            None => Err(ToolError::failed(format!(
                "upstream server `{server}` did not answer `{tool}` within {timeout:?}"
            ))),
            Some(Ok(CallToolResponse::Complete(result))) => {
                convert::tool_result(result, server, &scope.media)
            }
            Some(Ok(_)) => Err(ToolError::failed(format!(
                "upstream server `{server}` answered `{tool}` with a result kind codemode does \
                 not support (input_required or task)"
            ))),
            Some(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                // Calls made from now on fail fast, even before the supervisor notices (an
                // eval's own connection is opened again at its next call).
                if !self.spec.isolate_sessions {
                    self.mark_closed(session);
                }
                Err(ToolError::failed(format!(
                    "upstream server `{server}` closed the connection during `{tool}`"
                )))
            }
            Some(Err(ServiceError::McpError(e)))
                if e.data.as_ref().and_then(|d| d.get("codemode"))
                    == Some(&json!(bounded::TOO_LARGE)) =>
            {
                Err(ToolError::failed(format!(
                    "upstream server `{server}` answered `{tool}`, but {}",
                    e.message
                )))
            }
            Some(Err(ServiceError::McpError(e))) => Err(ToolError::Failed {
                message: format!("upstream server `{server}` refused `{tool}`: {}", e.message),
                data: Some(json!({ "code": e.code.0, "data": e.data })),
            }),
            Some(Err(e)) => Err(ToolError::failed(format!(
                "upstream server `{server}` failed `{tool}`: {e}"
            ))),
        }
    }
}

/// `tools/call` as rmcp's `call_tool_once` makes it, telling `in_flight` the progress token rmcp
/// gave the request (so the server's progress on it reaches the call's eval).
async fn call_tool(
    (peer, server, sequence): (&Peer<RoleClient>, &str, &Sequence),
    params: CallToolRequestParams,
    in_flight: &InFlight,
) -> Result<CallToolResponse, ServiceError> {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = in_flight.send((peer, server), request).await?;
    let mut abandoned = Abandoned(Some((peer.clone(), handle.id.clone())));
    let id = handle.id.clone();
    let result = handle.await_response().await;
    abandoned.0 = None;
    // What the server said before its result reaches the eval before the result does.
    sequence.settle(&id).await;
    match result? {
        ServerResult::CallToolResult(result) => Ok(CallToolResponse::Complete(result)),
        ServerResult::InputRequiredResult(result) => Ok(CallToolResponse::InputRequired(result)),
        ServerResult::CreateTaskResult(result) => Ok(CallToolResponse::Task(result)),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// A request whose answer nobody waits for any more (its call timed out, or its eval ended):
/// the server is told with `notifications/cancelled`, so it stops working on it.
struct Abandoned(Option<(Peer<RoleClient>, RequestId)>);

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some((peer, id)) = self.0.take() else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let param = CancelledNotificationParam::new(
                Some(id),
                Some("request abandoned by the caller".into()),
            );
            drop(runtime.spawn(async move { peer.notify_cancelled(param).await }));
        }
    }
}

/// Runs `fut` for at most `timeout`, not counting time while the eval is `answering` the
/// server (its human or model); the eval's own timeout is paused for that time too.
/// `None` when the time ran out (`fut` is dropped, which cancels the request upstream).
async fn deadline<F: Future>(
    fut: F,
    timeout: Duration,
    answering: &crate::lent::Answering,
    cx: &CallContext,
) -> Option<F::Output> {
    tokio::pin!(fut);
    let mut rx = answering.subscribe();
    let mut left = timeout;
    loop {
        let since = Instant::now();
        tokio::select! {
            out = &mut fut => return Some(out),
            _ = tokio::time::sleep(left) => return None,
            _ = rx.wait_for(|n| *n > 0) => left = left.saturating_sub(since.elapsed()),
        }
        let _paused = cx.pause_timeout();
        tokio::select! {
            out = &mut fut => return Some(out),
            _ = rx.wait_for(|n| *n == 0) => {}
        }
    }
}
