//! What an upstream server says about a call while it runs — its progress and its log
//! messages — goes to the eval that made the call, and to no other.
//!
//! Progress is tied to its call exactly: each request carries a progress token of its own
//! (`_meta.progressToken`, chosen by rmcp), and `notifications/progress` names it. A log message names no
//! request, so it is relayed only while every call in flight on that server belongs to one
//! eval; otherwise (no call, or calls of several evals) it is dropped with a debug line in
//! codemode's own log, never shown to someone else.
//!
//! rmcp handles each notification on a task of its own, so one sent just before (or just
//! after) a call's result may be handled after the result arrived: a call stays counted as in
//! flight for [`LATE_NOTIFICATIONS`] after it ends. Calls of one audience (one client: see
//! [`CallRelay::audience`]) do not make each other ambiguous; a log message then goes to the
//! audience's most recent eval whose request is still open.
//!
//! A server's own requests (`elicitation/create`, `sampling/createMessage`) are routed by the
//! call they came during ([`crate::server_requests`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::Peer;
use rmcp::model::{ClientRequest, ProgressNotificationParam, ProgressToken, RequestId};
use rmcp::service::{PeerRequestOptions, RequestHandle, RoleClient, ServiceError};

use crate::lent::{Answerers, Answering, CallRelay, CallSampler, UpstreamElicitation};

/// How long a call stays counted as in flight after its result arrived (see the module docs).
pub(crate) const LATE_NOTIFICATIONS: Duration = Duration::from_millis(250);

/// One call on the upstream.
pub(crate) struct Call {
    number: u64,
    /// The progress token rmcp gave the request (set once it is sent).
    token: Option<ProgressToken>,
    /// The JSON-RPC id rmcp gave the request (set once it is sent): a server's request that
    /// arrives on that request's HTTP response stream is about this call.
    pub(crate) request: Option<RequestId>,
    relay: Option<Arc<dyn CallRelay>>,
    /// Who answers the server's sampling requests during the call (its eval's sampler), until
    /// the call ends.
    pub(crate) sampler: Option<Arc<dyn CallSampler>>,
    /// Who answers the server's elicitation requests during the call (its eval's), until the
    /// call ends.
    pub(crate) elicitor: Option<Arc<dyn UpstreamElicitation>>,
    /// Its eval's count of requests being answered: a request routed to the call counts there.
    pub(crate) answering: Answering,
    /// Whether its result arrived: a server's request (unlike a notification) is sent before
    /// the result it waits on, so an ended call is no longer one a request can be about.
    pub(crate) ended: bool,
}

/// The calls in flight on one upstream, each with the relay of its eval (`None`: a call nobody
/// listens to, which still makes a log message's eval ambiguous).
#[derive(Default)]
pub(crate) struct CallRelays {
    calls: Mutex<Calls>,
    /// Bumped whenever a call is sent or ends (see [`crate::server_requests`]).
    pub(crate) changes: tokio::sync::watch::Sender<u64>,
    /// Whether the server sent a request on a call's own HTTP stream: its requests on the
    /// standalone stream are then about no call (see [`crate::server_requests`]).
    pub(crate) associates: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
struct Calls {
    list: Vec<Call>,
    /// Progress that named no call's token yet: rmcp tells a call its token only once the
    /// request is sent, and a fast server's first report can be handled before that.
    unclaimed: Vec<(Instant, ProgressNotificationParam)>,
}

/// How long progress naming no call's token is kept for the call that will claim it.
const UNCLAIMED_FOR: Duration = Duration::from_secs(2);
/// The most such reports kept (per upstream).
const UNCLAIMED_MAX: usize = 64;

static NEXT_CALL: AtomicU64 = AtomicU64::new(1);

impl CallRelays {
    fn lock(&self) -> std::sync::MutexGuard<'_, Calls> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `f` of the calls in flight (and those ended within [`LATE_NOTIFICATIONS`]).
    pub(crate) fn with_calls<R>(&self, f: impl FnOnce(&[Call]) -> R) -> R {
        f(&self.lock().list)
    }

    /// Records a call of the eval lending `lent` (none: a call nobody listens to or answers
    /// for) until the guard drops (and [`LATE_NOTIFICATIONS`] after).
    pub(crate) fn enter(self: &Arc<Self>, lent: Option<Answerers>) -> InFlight {
        let number = NEXT_CALL.fetch_add(1, Ordering::Relaxed);
        let lent = lent.unwrap_or_default();
        self.lock().list.push(Call {
            number,
            token: None,
            request: None,
            relay: lent.relay,
            sampler: lent.sampler,
            elicitor: lent.elicitor,
            answering: lent.answering,
            ended: false,
        });
        InFlight {
            relays: self.clone(),
            number,
        }
    }

    /// The relay `update` goes to: the one of the call given its token; when no call has it
    /// (yet), `update` is kept a while for the call about to claim it.
    pub(crate) fn route_progress(
        &self,
        update: ProgressNotificationParam,
    ) -> Option<(Arc<dyn CallRelay>, ProgressNotificationParam)> {
        let mut calls = self.lock();
        let owner = calls
            .list
            .iter()
            .find(|c| c.token.as_ref() == Some(&update.progress_token));
        if let Some(call) = owner {
            return call.relay.clone().map(|relay| (relay, update));
        }
        calls
            .unclaimed
            .retain(|(at, _)| at.elapsed() < UNCLAIMED_FOR);
        if calls.unclaimed.len() >= UNCLAIMED_MAX {
            calls.unclaimed.remove(0);
        }
        calls.unclaimed.push((Instant::now(), update));
        None
    }

    /// The relay of the call given `token`, while that call runs.
    #[cfg(test)]
    pub(crate) fn by_token(&self, token: &ProgressToken) -> Option<Arc<dyn CallRelay>> {
        self.lock()
            .list
            .iter()
            .find(|c| c.token.as_ref() == Some(token))
            .and_then(|c| c.relay.clone())
    }

    /// The relay a log message goes to: when every call in flight (or ended within
    /// [`LATE_NOTIFICATIONS`]) has a relay of one audience, the latest of them whose request is
    /// still open; `None` when there is no call, calls of several audiences, or a call nobody
    /// listens to.
    pub(crate) fn sole(&self) -> Option<Arc<dyn CallRelay>> {
        let calls = self.lock();
        let calls = &calls.list;
        let audience = calls.first()?.relay.as_ref()?.audience().to_string();
        let one_audience = calls
            .iter()
            .all(|c| c.relay.as_ref().is_some_and(|r| r.audience() == audience));
        if !one_audience {
            return None;
        }
        calls
            .iter()
            .rev()
            .filter_map(|c| c.relay.clone())
            .find(|r| r.is_open())
    }
}

/// A call in flight (see [`CallRelays::enter`]).
pub(crate) struct InFlight {
    relays: Arc<CallRelays>,
    number: u64,
}

impl InFlight {
    /// Sends `request` as this call: its id and progress token recorded once rmcp gives them
    /// ([`InFlight::sent`]), so that the server's requests on its HTTP response stream reach
    /// the call's eval and its progress the call's relay (reports that came first replayed).
    pub(crate) async fn send(
        &self,
        (peer, server): (&Peer<RoleClient>, &str),
        request: ClientRequest,
    ) -> Result<RequestHandle<RoleClient>, ServiceError> {
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await?;
        if let Some((relay, early)) = self.sent(handle.id.clone(), handle.progress_token.clone()) {
            for update in early {
                relay.progress(server, update).await;
            }
        }
        Ok(handle)
    }

    /// The id and progress token rmcp gave the call's request (the server's requests about it
    /// arrive on that id's stream, its progress names the token); returns the call's relay with
    /// the reports that named the token before it was known, in order.
    pub(crate) fn sent(
        &self,
        request: RequestId,
        token: ProgressToken,
    ) -> Option<(Arc<dyn CallRelay>, Vec<ProgressNotificationParam>)> {
        let mut calls = self.relays.lock();
        // A session numbers its requests and tokens uniquely, but a reconnected server's next
        // session numbers them from the start again: an earlier call holding the same id or
        // token (ended, or winding down on the closed session) names them no more.
        for other in calls.list.iter_mut().filter(|c| c.number != self.number) {
            if other.request.as_ref() == Some(&request) {
                other.request = None;
            }
            if other.token.as_ref() == Some(&token) {
                other.token = None;
            }
        }
        let call = calls.list.iter_mut().find(|c| c.number == self.number)?;
        call.token = Some(token.clone());
        call.request = Some(request);
        self.relays.changes.send_modify(|n| *n += 1);
        let relay = call.relay.clone()?;
        let (early, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut calls.unclaimed)
            .into_iter()
            .partition(|(_, u)| u.progress_token == token);
        calls.unclaimed = rest;
        Some((relay, early.into_iter().map(|(_, u)| u).collect()))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(call) = self
            .relays
            .lock()
            .list
            .iter_mut()
            .find(|c| c.number == self.number)
        {
            call.ended = true;
            // Not kept for the late notifications: the sampler and the elicitor hold their
            // eval's resources (its channels, its slot among the client's evals), which must go
            // with the eval.
            call.sampler = None;
            call.elicitor = None;
        }
        self.relays.changes.send_modify(|n| *n += 1);
        let (relays, number) = (self.relays.clone(), self.number);
        let forget = move || relays.lock().list.retain(|c| c.number != number);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return forget();
        };
        drop(runtime.spawn(async move {
            tokio::time::sleep(LATE_NOTIFICATIONS).await;
            forget();
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codemode_runtime::BoxFuture;
    use rmcp::model::NumberOrString;

    use crate::lent::LogMessage;
    use std::sync::atomic::AtomicBool;

    #[derive(Default)]
    struct Silent(AtomicBool, &'static str);
    impl CallRelay for Silent {
        fn progress<'a>(&'a self, _: &'a str, _: ProgressNotificationParam) -> BoxFuture<'a, ()> {
            Box::pin(async {})
        }
        fn log<'a>(&'a self, _: &'a str, _: LogMessage) -> BoxFuture<'a, ()> {
            Box::pin(async {})
        }
        fn is_open(&self) -> bool {
            !self.0.load(Ordering::Relaxed)
        }
        fn audience(&self) -> &str {
            self.1
        }
    }

    fn relay(audience: &'static str) -> Arc<Silent> {
        Arc::new(Silent(AtomicBool::new(false), audience))
    }

    fn token(n: i64) -> ProgressToken {
        ProgressToken(NumberOrString::Number(n))
    }

    /// What an eval whose notifications go to `relay` lends its calls.
    fn listening(relay: Arc<dyn CallRelay>) -> Answerers {
        Answerers {
            relay: Some(relay),
            ..Answerers::default()
        }
    }

    /// A reconnected server's session numbers its progress tokens from the start again: a
    /// progress report naming a token goes to the new session's call that has it, not to the
    /// eval of an earlier session's call (ended within [`LATE_NOTIFICATIONS`]) that had it.
    #[tokio::test]
    async fn a_progress_token_reused_by_a_new_session_names_the_new_call() {
        let relays = Arc::new(CallRelays::default());
        let a: Arc<dyn CallRelay> = relay("session A");
        let b: Arc<dyn CallRelay> = relay("session B");
        let old = relays.enter(Some(listening(a.clone())));
        old.sent(RequestId::Number(3), token(3));
        drop(old);
        let new = relays.enter(Some(listening(b.clone())));
        new.sent(RequestId::Number(3), token(3));
        let to = relays.by_token(&token(3)).expect("a call has token 3");
        assert!(
            Arc::ptr_eq(&to, &b),
            "the new call's eval, not the old one's"
        );
        drop(new);
    }

    #[test]
    fn a_log_message_has_an_eval_only_while_one_eval_has_calls() {
        let relays = Arc::new(CallRelays::default());
        let a: Arc<dyn CallRelay> = relay("session A");
        let b: Arc<dyn CallRelay> = relay("session B");
        assert!(relays.sole().is_none(), "no call in flight");
        let a1 = relays.enter(Some(listening(a.clone())));
        a1.sent(RequestId::Number(1), token(1));
        let a2 = relays.enter(Some(listening(a.clone())));
        assert!(relays.sole().is_some_and(|r| Arc::ptr_eq(&r, &a)));
        let b1 = relays.enter(Some(listening(b.clone())));
        b1.sent(RequestId::Number(2), token(2));
        assert!(relays.sole().is_none(), "two evals");
        assert!(
            relays
                .by_token(&token(1))
                .is_some_and(|r| Arc::ptr_eq(&r, &a))
        );
        assert!(
            relays
                .by_token(&token(2))
                .is_some_and(|r| Arc::ptr_eq(&r, &b))
        );
        assert!(relays.by_token(&token(3)).is_none());
        drop(b1);
        assert!(relays.by_token(&token(2)).is_none(), "its call ended");
        let unrelayed = relays.enter(None);
        assert!(relays.sole().is_none(), "a call nobody listens to");
        drop((unrelayed, a1, a2));
        assert!(relays.sole().is_none());
        assert!(relays.by_token(&token(1)).is_none());
    }

    #[test]
    fn progress_before_the_token_is_known_waits_for_its_call() {
        let relays = Arc::new(CallRelays::default());
        let a: Arc<dyn CallRelay> = relay("session A");
        let call = relays.enter(Some(listening(a.clone())));
        let early = |n: f64| ProgressNotificationParam::new(token(7), n);
        assert!(
            relays.route_progress(early(1.0)).is_none(),
            "kept for its call"
        );
        assert!(relays.route_progress(early(2.0)).is_none());
        let other = ProgressNotificationParam::new(token(8), 1.0);
        assert!(relays.route_progress(other).is_none());
        let (to, claimed) = call
            .sent(RequestId::Number(7), token(7))
            .expect("a relayed call");
        assert!(Arc::ptr_eq(&to, &a));
        let values: Vec<f64> = claimed.iter().map(|u| u.progress).collect();
        assert_eq!(values, [1.0, 2.0]);
        let (to, later) = relays.route_progress(early(3.0)).expect("its call now");
        assert!(Arc::ptr_eq(&to, &a));
        assert_eq!(later.progress, 3.0);
    }

    #[tokio::test]
    async fn an_ended_call_counts_a_while_and_one_audience_shares() {
        let relays = Arc::new(CallRelays::default());
        let a1 = relay("session A");
        let a1_dyn: Arc<dyn CallRelay> = a1.clone();
        let b: Arc<dyn CallRelay> = relay("session B");
        let call = relays.enter(Some(listening(a1_dyn.clone())));
        call.sent(RequestId::Number(1), token(1));
        drop(call);
        // Late progress and log messages of a's call still find it.
        assert!(relays.by_token(&token(1)).is_some());
        assert!(relays.sole().is_some_and(|r| Arc::ptr_eq(&r, &a1_dyn)));
        // Another client's call while a's may still be talking: ambiguous, even once a's
        // request has its answer.
        let b1 = relays.enter(Some(listening(b.clone())));
        a1.0.store(true, Ordering::Relaxed);
        assert!(relays.sole().is_none(), "another audience");
        drop(b1);
        // The same client's next eval: its log messages are its own at once.
        let a2: Arc<dyn CallRelay> = relay("session A");
        let a2_call = relays.enter(Some(listening(a2.clone())));
        let waited = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            // b's ended call counts until it is forgotten.
            while !relays.sole().is_some_and(|r| Arc::ptr_eq(&r, &a2)) {
                tokio::time::sleep(LATE_NOTIFICATIONS / 5).await;
            }
        });
        assert!(waited.await.is_ok());
        assert!(relays.sole().is_some_and(|r| Arc::ptr_eq(&r, &a2)));
        drop(a2_call);
        // Forgotten after a while (waited for as an event, with a deadline for a run that
        // never forgets).
        let waited = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            while relays.by_token(&token(1)).is_some() {
                tokio::time::sleep(LATE_NOTIFICATIONS / 5).await;
            }
        });
        assert!(waited.await.is_ok(), "an ended call is forgotten");
    }
}
