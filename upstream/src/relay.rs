//! What an upstream server says about a call while it runs — its progress and its log
//! messages — goes to the eval that made the call, and to no other.
//!
//! Progress is tied to its call exactly: each request carries a progress token of its own
//! (`_meta.progressToken`, chosen by rmcp), and `notifications/progress` names it. A log message names no
//! request, so it is relayed only while every call in flight on that server belongs to one
//! eval; otherwise (no call, or calls of several evals) it is dropped with a debug line in
//! codemode's own log, never shown to someone else.
//!
//! rmcp handles each notification on a task of its own, so one sent just before a call's result
//! may be handled after the result arrived: a call stays counted as in flight for
//! [`LATE_NOTIFICATIONS`] after it ends, long enough for those tasks to run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ProgressNotificationParam, ProgressToken};

use codemode_runtime::BoxFuture;

/// The parameters of MCP's `notifications/message`.
#[expect(
    deprecated,
    reason = "SEP-2577 deprecates MCP logging from protocol 2026-07-28 on, but servers and clients of 2025-11-25 and older use it, and a proxy forwards what they say"
)]
pub type LogMessage = rmcp::model::LoggingMessageNotificationParam;

/// Receives an upstream's notifications about the calls of one eval (see the module docs).
///
/// Implementations forward them to the eval's client; time spent here delays the upstream
/// connection's other messages, so send and return.
pub trait CallRelay: Send + Sync {
    /// Upstream `server` reported progress on one of this eval's calls: `update` as the server
    /// sent it.
    fn progress<'a>(
        &'a self,
        server: &'a str,
        update: ProgressNotificationParam,
    ) -> BoxFuture<'a, ()>;

    /// Upstream `server` sent a log message while only this eval had calls in flight on it.
    fn log<'a>(&'a self, server: &'a str, message: LogMessage) -> BoxFuture<'a, ()>;

    /// Whether anything sent here can still reach someone. An ended call of a closed relay no
    /// longer counts as in flight (its late notifications would be dropped anyway), so it does
    /// not make the next eval's log messages ambiguous.
    fn is_open(&self) -> bool;
}

/// How long a call stays counted as in flight after its result arrived (see the module docs).
pub const LATE_NOTIFICATIONS: Duration = Duration::from_millis(250);

/// One call on the upstream.
struct Call {
    number: u64,
    /// The progress token rmcp gave the request (set once it is sent).
    token: Option<ProgressToken>,
    relay: Option<Arc<dyn CallRelay>>,
    /// Its result arrived (it stays for [`LATE_NOTIFICATIONS`]).
    ended: bool,
}

impl Call {
    /// Whether a log message arriving now may be about this call.
    fn counts(&self) -> bool {
        !self.ended || self.relay.as_ref().is_some_and(|r| r.is_open())
    }
}

/// The calls in flight on one upstream, each with the relay of its eval (`None`: a call nobody
/// listens to, which still makes a log message's eval ambiguous).
#[derive(Default)]
pub(crate) struct CallRelays {
    calls: Mutex<Vec<Call>>,
}

static NEXT_CALL: AtomicU64 = AtomicU64::new(1);

impl CallRelays {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Call>> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a call until the guard drops (and [`LATE_NOTIFICATIONS`] after).
    pub(crate) fn enter(self: &Arc<Self>, relay: Option<Arc<dyn CallRelay>>) -> InFlight {
        let number = NEXT_CALL.fetch_add(1, Ordering::Relaxed);
        self.lock().push(Call {
            number,
            token: None,
            relay,
            ended: false,
        });
        InFlight {
            relays: self.clone(),
            number,
        }
    }

    /// The relay of the call given `token`, while that call runs.
    pub(crate) fn by_token(&self, token: &ProgressToken) -> Option<Arc<dyn CallRelay>> {
        self.lock()
            .iter()
            .find(|c| c.token.as_ref() == Some(token))
            .and_then(|c| c.relay.clone())
    }

    /// The relay of the one eval every call in flight belongs to; `None` when there is no call,
    /// or calls of several evals (or one nobody listens to).
    pub(crate) fn sole(&self) -> Option<Arc<dyn CallRelay>> {
        let calls = self.lock();
        let mut counted = calls.iter().filter(|c| c.counts());
        let first = counted.next()?.relay.clone()?;
        counted
            .all(|c| c.relay.as_ref().is_some_and(|r| Arc::ptr_eq(r, &first)))
            .then_some(first)
    }
}

/// A call in flight (see [`CallRelays::enter`]).
pub(crate) struct InFlight {
    relays: Arc<CallRelays>,
    number: u64,
}

impl InFlight {
    /// The progress token rmcp gave the call's request, which the server's progress names.
    pub(crate) fn set_token(&self, token: ProgressToken) {
        if let Some(call) = self
            .relays
            .lock()
            .iter_mut()
            .find(|c| c.number == self.number)
        {
            call.token = Some(token);
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let (relays, number) = (self.relays.clone(), self.number);
        let forget = move || relays.lock().retain(|c| c.number != number);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return forget();
        };
        if let Some(call) = self.relays.lock().iter_mut().find(|c| c.number == number) {
            call.ended = true;
        }
        drop(runtime.spawn(async move {
            tokio::time::sleep(LATE_NOTIFICATIONS).await;
            forget();
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;
    use std::sync::atomic::AtomicBool;

    #[derive(Default)]
    struct Silent(AtomicBool);
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
    }

    fn token(n: i64) -> ProgressToken {
        ProgressToken(NumberOrString::Number(n))
    }

    #[test]
    fn a_log_message_has_an_eval_only_while_one_eval_has_calls() {
        let relays = Arc::new(CallRelays::default());
        let a: Arc<dyn CallRelay> = Arc::new(Silent::default());
        let b: Arc<dyn CallRelay> = Arc::new(Silent::default());
        assert!(relays.sole().is_none(), "no call in flight");
        let a1 = relays.enter(Some(a.clone()));
        a1.set_token(token(1));
        let a2 = relays.enter(Some(a.clone()));
        assert!(relays.sole().is_some_and(|r| Arc::ptr_eq(&r, &a)));
        let b1 = relays.enter(Some(b.clone()));
        b1.set_token(token(2));
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

    #[tokio::test]
    async fn an_ended_call_counts_a_while_unless_its_relay_is_closed() {
        let relays = Arc::new(CallRelays::default());
        let a = Arc::new(Silent::default());
        let a_dyn: Arc<dyn CallRelay> = a.clone();
        let b: Arc<dyn CallRelay> = Arc::new(Silent::default());
        let a1 = relays.enter(Some(a_dyn.clone()));
        a1.set_token(token(1));
        drop(a1);
        // Late progress and log messages of a's call still find it.
        assert!(relays.by_token(&token(1)).is_some());
        assert!(relays.sole().is_some_and(|r| Arc::ptr_eq(&r, &a_dyn)));
        let b1 = relays.enter(Some(b.clone()));
        assert!(relays.sole().is_none(), "a's call may still be talking");
        // a's request has its answer: nothing of it can be delivered, so b is alone.
        a.0.store(true, Ordering::Relaxed);
        assert!(relays.sole().is_some_and(|r| Arc::ptr_eq(&r, &b)));
        // Forgotten after a while (waited for as an event, with a deadline for a run that
        // never forgets).
        let waited = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            while relays.by_token(&token(1)).is_some() {
                tokio::time::sleep(LATE_NOTIFICATIONS / 5).await;
            }
        });
        assert!(waited.await.is_ok(), "an ended call is forgotten");
        drop(b1);
    }
}
