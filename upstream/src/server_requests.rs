//! A server's own requests during a call — `elicitation/create`, `sampling/createMessage` —
//! go to the eval whose call they came during, and to no other.
//!
//! - **Streamable HTTP** says which call: a request arriving on the response stream of our
//!   `tools/call` POST is about that call (rmcp marks it
//!   [`InboundStreamOrigin::OutboundRequest`] with the call's request id), so it goes to that
//!   call's eval exactly, whatever else runs on the server.
//! - A request on the standalone GET stream is about no call — MCP: messages there "SHOULD be
//!   unrelated to any concurrently-running JSON-RPC request" — once the server has shown it
//!   follows that (it sent a request on a call's stream): it is then refused, since it may be
//!   about a call that already returned, and putting it to whoever runs a call now would show
//!   one client's question to another client's human. Servers that send every request on the
//!   standalone stream (the MCP TypeScript SDK's `server.request(…)` without
//!   `relatedRequestId`; the conformance suite's own test server does) get the stdio rule.
//! - **stdio** says nothing: a request is routed only while every call running on that
//!   connection is one eval's. With the server's `isolateSessions` each eval has a connection
//!   of its own ([`crate::isolated`]), so that always holds there.
//!
//! A request is sent before the result of the call it is about, so only calls still running
//! count. rmcp tells a call its request id once the request is sent, which may be after the
//! server's request about it was read: a request naming an id no call has yet waits up to
//! [`CLAIM_WAIT`] for a call to claim it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rmcp::ErrorData as McpError;
use rmcp::model::RequestId;
use rmcp::service::InboundStreamOrigin;

use crate::lent::Answering;
use crate::relay::{Call, CallRelays};

/// How long a server's request naming a request id no call has yet waits for its call.
pub(crate) const CLAIM_WAIT: Duration = Duration::from_secs(2);

/// Why a server's request could not be tied to one eval's call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unrouted {
    /// It arrived on the standalone stream (HTTP) of a server that sends its requests about a
    /// call on the call's stream: about no call.
    Standalone,
    /// It arrived on a call's stream, but that call ended (or is not one of ours).
    Ended,
    /// No call runs on the connection (stdio).
    NoCall,
    /// Calls of several evals run on the connection (stdio): it cannot be told whose.
    Several,
    /// Its call's eval has nobody to answer it (a client's own request, a call without a
    /// human or model).
    NobodyToAnswer,
}

impl std::fmt::Display for Unrouted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unrouted::Standalone => {
                "it came on the server's standalone stream, which (as the server sends its requests about a call on the call's own stream) is about no call in flight"
            }
            Unrouted::Ended => "the call it came during has ended",
            Unrouted::NoCall => "no call is in flight on the server",
            Unrouted::Several => {
                "calls of several scripts are in flight on the server, and its transport does not say whose call it is about (the server's isolateSessions gives each script its own connection)"
            }
            Unrouted::NobodyToAnswer => "the call it came during has nobody to answer it",
        })
    }
}

/// Which of a call's answerers a request wants (its elicitor, its sampler).
pub(crate) type Pick<T> = fn(&Call) -> Option<&Arc<T>>;

/// The answerer a request goes to, with its eval's count of requests being answered (where
/// the request counts while it is answered).
pub(crate) type Routed<T> = (Arc<T>, Answering);

/// `pick` of `call`, with the call's count.
fn picked<T: ?Sized>(call: &Call, pick: Pick<T>) -> Option<Routed<T>> {
    Some((pick(call)?.clone(), call.answering.clone()))
}

impl CallRelays {
    /// The answerer (`pick` of the call) of the eval a server's request arriving from `origin`
    /// is about (see the module docs).
    pub(crate) async fn route<T: ?Sized>(
        &self,
        origin: Option<&InboundStreamOrigin>,
        pick: Pick<T>,
    ) -> Result<Routed<T>, Unrouted> {
        match origin {
            Some(InboundStreamOrigin::OutboundRequest(id)) => {
                self.associates.store(true, Ordering::Relaxed);
                self.claimed(id, pick).await
            }
            Some(InboundStreamOrigin::Unassociated) if self.associates.load(Ordering::Relaxed) => {
                Err(Unrouted::Standalone)
            }
            Some(InboundStreamOrigin::Unassociated) | None => self.sole_answerer(pick),
        }
    }

    /// The answerer of the call that sent request `id`, waiting up to [`CLAIM_WAIT`] for the
    /// call to learn its id.
    async fn claimed<T: ?Sized>(
        &self,
        id: &RequestId,
        pick: Pick<T>,
    ) -> Result<Routed<T>, Unrouted> {
        let mut changes = self.changes.subscribe();
        let find = || {
            self.with_calls(|calls| {
                let call = calls.iter().find(|c| c.request.as_ref() == Some(id))?;
                Some(if call.ended {
                    Err(Unrouted::Ended)
                } else {
                    picked(call, pick).ok_or(Unrouted::NobodyToAnswer)
                })
            })
        };
        let waited = tokio::time::timeout(CLAIM_WAIT, async {
            loop {
                if let Some(routed) = find() {
                    return routed;
                }
                // The sender lives as long as `self`: `changed` fails only if it is gone.
                if changes.changed().await.is_err() {
                    return Err(Unrouted::Ended);
                }
            }
        });
        waited.await.unwrap_or(Err(Unrouted::Ended))
    }

    /// The answerer of the one eval every call still running here belongs to.
    fn sole_answerer<T: ?Sized>(&self, pick: Pick<T>) -> Result<Routed<T>, Unrouted> {
        self.with_calls(|calls| {
            let mut running = calls.iter().filter(|c| !c.ended);
            let first = running.next().ok_or(Unrouted::NoCall)?;
            let first = picked(first, pick).ok_or(Unrouted::NobodyToAnswer)?;
            if running.all(|c| pick(c).is_some_and(|a| Arc::ptr_eq(a, &first.0))) {
                Ok(first)
            } else {
                Err(Unrouted::Several)
            }
        })
    }

    /// Returns once no call whose `pick` is `answerer` runs here any more: a request of the
    /// server still unanswered then has no script waiting on it.
    pub(crate) async fn until_done<T: ?Sized>(&self, answerer: &Arc<T>, pick: Pick<T>) {
        let mut changes = self.changes.subscribe();
        loop {
            let runs = self.with_calls(|calls| {
                calls
                    .iter()
                    .any(|c| !c.ended && pick(c).is_some_and(|a| Arc::ptr_eq(a, answerer)))
            });
            // The sender lives as long as `self`: `changed` fails only if it is gone.
            if !runs || changes.changed().await.is_err() {
                return;
            }
        }
    }
}

/// A call's elicitor.
pub(crate) fn elicitor(call: &Call) -> Option<&Arc<dyn crate::UpstreamElicitation>> {
    call.elicitor.as_ref()
}

/// A call's sampler.
pub(crate) fn sampler(call: &Call) -> Option<&Arc<dyn crate::CallSampler>> {
    call.sampler.as_ref()
}

/// The error an upstream gets for a sampling request no eval can be found for.
pub(crate) fn unattributed_sampling(server: &str, why: Unrouted) -> McpError {
    tracing::warn!("refused a sampling request from upstream `{server}`: {why}");
    McpError::invalid_request(
        format!(
            "codemode refused this sampling request: it could not tie it to one script's call on `{server}` whose client can sample: {why}"
        ),
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CallScope;
    use codemode_runtime::BoxFuture;
    use rmcp::model::{ElicitRequestParams, ElicitResult, NumberOrString, ProgressToken};

    /// An elicitor whose identity is all that matters.
    struct Human;
    impl crate::UpstreamElicitation for Human {
        fn elicit<'a>(
            &'a self,
            _: &'a str,
            _: ElicitRequestParams,
        ) -> BoxFuture<'a, Result<ElicitResult, crate::ElicitationFailed>> {
            Box::pin(async { Err(crate::ElicitationFailed::new("unused")) })
        }
    }

    type Elicitor = Arc<dyn crate::UpstreamElicitation>;

    fn eval() -> (Elicitor, CallScope) {
        let human: Elicitor = Arc::new(Human);
        let scope = CallScope {
            elicitor: Some(human.clone()),
            ..CallScope::default()
        };
        (human, scope)
    }

    fn id(n: i64) -> RequestId {
        NumberOrString::Number(n)
    }

    fn on_stream_of(n: i64) -> InboundStreamOrigin {
        InboundStreamOrigin::OutboundRequest(id(n))
    }

    fn token(n: i64) -> ProgressToken {
        ProgressToken(NumberOrString::Number(n))
    }

    async fn routed(
        relays: &CallRelays,
        origin: Option<&InboundStreamOrigin>,
    ) -> Result<Elicitor, Unrouted> {
        relays.route(origin, elicitor).await.map(|(to, _)| to)
    }

    fn same(a: &Result<Elicitor, Unrouted>, b: &Elicitor) -> bool {
        a.as_ref().is_ok_and(|a| Arc::ptr_eq(a, b))
    }

    #[tokio::test]
    async fn over_http_a_request_goes_to_the_call_whose_stream_it_came_on() {
        let relays = Arc::new(CallRelays::default());
        let ((a, a_scope), (b, b_scope)) = (eval(), eval());
        let a1 = relays.enter(Some(a_scope.answerers()));
        a1.sent(id(1), token(1));
        let b1 = relays.enter(Some(b_scope.answerers()));
        b1.sent(id(2), token(2));
        // Two evals' calls at once: each request still finds its own.
        assert!(same(&routed(&relays, Some(&on_stream_of(1))).await, &a));
        assert!(same(&routed(&relays, Some(&on_stream_of(2))).await, &b));
        // The standalone stream of a server that uses calls' streams is about no call, even
        // with one eval alone.
        drop(b1);
        assert_eq!(
            routed(&relays, Some(&InboundStreamOrigin::Unassociated))
                .await
                .err(),
            Some(Unrouted::Standalone)
        );
        // A request on an ended call's stream goes to nobody (not to a's call, running now).
        assert_eq!(
            routed(&relays, Some(&on_stream_of(2))).await.err(),
            Some(Unrouted::Ended)
        );
        // A client's own request (no answerer) on its stream.
        let read = relays.enter(None);
        read.sent(id(3), token(3));
        assert_eq!(
            routed(&relays, Some(&on_stream_of(3))).await.err(),
            Some(Unrouted::NobodyToAnswer)
        );
        drop((a1, read));
    }

    /// A server that sends every request on the standalone stream (as the MCP TypeScript SDK's
    /// `server.request` does without `relatedRequestId`) gets the stdio rule.
    #[tokio::test]
    async fn a_server_that_never_uses_calls_streams_gets_the_one_eval_rule() {
        let relays = Arc::new(CallRelays::default());
        let ((a, a_scope), (_, b_scope)) = (eval(), eval());
        let standalone = InboundStreamOrigin::Unassociated;
        let a1 = relays.enter(Some(a_scope.answerers()));
        a1.sent(id(1), token(1));
        assert!(same(&routed(&relays, Some(&standalone)).await, &a));
        let b1 = relays.enter(Some(b_scope.answerers()));
        assert_eq!(
            routed(&relays, Some(&standalone)).await.err(),
            Some(Unrouted::Several)
        );
        drop(b1);
        // Once it sent one on a call's stream, its standalone stream is about no call.
        assert!(same(&routed(&relays, Some(&on_stream_of(1))).await, &a));
        assert_eq!(
            routed(&relays, Some(&standalone)).await.err(),
            Some(Unrouted::Standalone)
        );
        drop(a1);
    }

    #[tokio::test]
    async fn a_request_read_before_its_call_knows_its_id_waits_for_it() {
        let relays = Arc::new(CallRelays::default());
        let (a, a_scope) = eval();
        let call = relays.enter(Some(a_scope.answerers()));
        let origin = on_stream_of(9);
        let route = routed(&relays, Some(&origin));
        tokio::pin!(route);
        assert!(
            futures::poll!(route.as_mut()).is_pending(),
            "no call has id 9 yet"
        );
        call.sent(id(9), token(9));
        assert!(same(&route.await, &a));
        // An id no call ever claims: refused once the wait is over.
        assert_eq!(
            routed(&relays, Some(&on_stream_of(10))).await.err(),
            Some(Unrouted::Ended)
        );
        drop(call);
    }

    /// A reconnected server's session numbers its requests from the start again: a request on
    /// the stream of the new session's call goes to that call's eval, not to an earlier
    /// session's call that had the same id (ended within the late-notification window, or
    /// still winding down).
    #[tokio::test]
    async fn a_request_id_reused_by_a_new_session_names_the_new_call() {
        let relays = Arc::new(CallRelays::default());
        let ((a, a_scope), (b, b_scope), (c, c_scope)) = (eval(), eval(), eval());
        let old_ended = relays.enter(Some(a_scope.answerers()));
        old_ended.sent(id(3), token(3));
        drop(old_ended);
        let old_running = relays.enter(Some(a_scope.answerers()));
        old_running.sent(id(4), token(4));
        // The session closed and was opened again: its calls have ids 3 and 4 again.
        let new3 = relays.enter(Some(b_scope.answerers()));
        new3.sent(id(3), token(3));
        let new4 = relays.enter(Some(c_scope.answerers()));
        new4.sent(id(4), token(4));
        assert!(same(&routed(&relays, Some(&on_stream_of(3))).await, &b));
        assert!(same(&routed(&relays, Some(&on_stream_of(4))).await, &c));
        assert!(!same(&routed(&relays, Some(&on_stream_of(4))).await, &a));
        drop((old_running, new3, new4));
    }

    #[tokio::test]
    async fn over_stdio_a_request_goes_to_the_one_eval_with_calls_running() {
        let relays = Arc::new(CallRelays::default());
        let ((a, a_scope), (_, b_scope)) = (eval(), eval());
        assert_eq!(routed(&relays, None).await.err(), Some(Unrouted::NoCall));
        let a1 = relays.enter(Some(a_scope.answerers()));
        let a2 = relays.enter(Some(a_scope.answerers()));
        assert!(same(&routed(&relays, None).await, &a));
        let b1 = relays.enter(Some(b_scope.answerers()));
        assert_eq!(routed(&relays, None).await.err(), Some(Unrouted::Several));
        // An ended call no longer counts, although its late notifications still find it,
        // nor does it hold its eval's answerer.
        drop(b1);
        assert!(same(&routed(&relays, None).await, &a));
        let read = relays.enter(None);
        assert_eq!(routed(&relays, None).await.err(), Some(Unrouted::Several));
        drop((read, a1));
        let done = relays.until_done(&a, elicitor);
        tokio::pin!(done);
        assert!(
            futures::poll!(done.as_mut()).is_pending(),
            "a's call still runs"
        );
        drop(a2);
        assert_eq!(routed(&relays, None).await.err(), Some(Unrouted::NoCall));
        done.await;
        assert_eq!(
            Arc::strong_count(&a),
            2,
            "a's scope and a: no call holds it"
        );
    }
}
