//! The approval event stream's bounds: it ends at its credential's expiry or after
//! `server.http.maxStreamLifetime`, whichever comes first, with a last event `end` saying which;
//! and one caller holds at most `server.http.maxStreamsPerCaller` streams on a listener. (An
//! earlier stream authenticated once, when it opened, and then lived as long as its client:
//! one opened with a JWT kept receiving every request, arguments included, after the token
//! had expired.)

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::response::sse::Event;
use futures::Stream;
use serde_json::json;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use super::broker::{BrokerEvent, mark_decidable};
use super::parked_feed::ParkedEvent;
use codemode_policies::Caller;

/// Open event streams by caller name (one map per listener).
pub(super) type Streams = Arc<Mutex<HashMap<String, usize>>>;

/// A caller's place among the open event streams, given back when dropped.
pub(super) struct StreamSlot {
    streams: Streams,
    caller: String,
}

impl StreamSlot {
    /// A place for one more stream of `caller`, or how many it holds open when that is `max`.
    pub(super) fn take(streams: &Streams, caller: &str, max: usize) -> Result<StreamSlot, usize> {
        let mut open = streams.lock().unwrap_or_else(|e| e.into_inner());
        let mine = open.entry(caller.to_string()).or_insert(0);
        if *mine >= max {
            return Err(*mine);
        }
        *mine += 1;
        Ok(StreamSlot {
            streams: streams.clone(),
            caller: caller.to_string(),
        })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(mine) = open.get_mut(&self.caller) {
            *mine = mine.saturating_sub(1);
            if *mine == 0 {
                open.remove(&self.caller);
            }
        }
    }
}

/// Why a stream ended (the `reason` of its last event, `end`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StreamEnd {
    /// The credential that opened it expired.
    CredentialExpired,
    /// It was open `server.http.maxStreamLifetime`.
    Lifetime,
}

impl StreamEnd {
    fn reason(self) -> &'static str {
        match self {
            StreamEnd::CredentialExpired => "credential_expired",
            StreamEnd::Lifetime => "max_stream_lifetime",
        }
    }
}

/// How long a stream opened at `now` stays open, and why it ends then: at its credential's
/// expiry, if that comes first, else after `max`.
pub(super) fn stream_bound(
    max: Duration,
    expires_at: Option<SystemTime>,
    now: SystemTime,
) -> (Duration, StreamEnd) {
    match expires_at.map(|at| at.duration_since(now).unwrap_or(Duration::ZERO)) {
        Some(left) if left <= max => (left, StreamEnd::CredentialExpired),
        _ => (max, StreamEnd::Lifetime),
    }
}

/// One event of a stream: the broker's, about this process's asks, or the store's, about
/// parked evals' asks (any node's).
pub(super) enum Item {
    Live(BrokerEvent),
    Parked(ParkedEvent),
}

impl Item {
    fn name(&self) -> &'static str {
        match self {
            Item::Live(event) => event.name(),
            Item::Parked(event) => event.name,
        }
    }

    /// The event's view as JSON; a request is marked with whether `reader` may decide it.
    fn data(&self, reader: &Caller) -> String {
        let view = match self {
            Item::Live(event) => serde_json::to_value(event.view()),
            Item::Parked(event) => serde_json::to_value(event.view.as_ref()),
        };
        let mut view = view.unwrap_or_default();
        if self.name() == "requested" {
            mark_decidable(&mut view, reader);
        }
        view.to_string()
    }
}

/// What a stream sends: the pending requests (this process's and the parked evals'), then the
/// broker's and the parked asks' events until the deadline.
pub(super) struct Feed {
    pub(super) first: std::vec::IntoIter<Item>,
    pub(super) rx: broadcast::Receiver<BrokerEvent>,
    /// The parked asks' events, when a durable store is used.
    pub(super) parked: Option<broadcast::Receiver<ParkedEvent>>,
    pub(super) deadline: tokio::time::Instant,
    pub(super) end: StreamEnd,
    pub(super) slot: Option<StreamSlot>,
    /// Who reads the stream.
    pub(super) reader: Caller,
}

impl Feed {
    /// The next event; `None` when the broker is gone.
    async fn next(&mut self) -> Option<Item> {
        if let Some(event) = self.first.next() {
            return Some(event);
        }
        loop {
            let got = tokio::select! {
                event = self.rx.recv() => Ok(event),
                event = recv_parked(&mut self.parked) => Err(event),
            };
            match got {
                Ok(Ok(event)) => return Some(Item::Live(event)),
                Err(Ok(event)) => return Some(Item::Parked(event)),
                // A slow reader missed events: it keeps the newer ones (a page reloads the
                // list).
                Ok(Err(RecvError::Lagged(_))) | Err(Err(RecvError::Lagged(_))) => {}
                Ok(Err(RecvError::Closed)) => return None,
                Err(Err(RecvError::Closed)) => self.parked = None,
            }
        }
    }
}

/// The next parked asks' event; never, without a store.
async fn recv_parked(
    parked: &mut Option<broadcast::Receiver<ParkedEvent>>,
) -> Result<ParkedEvent, RecvError> {
    match parked {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

pub(super) fn events(feed: Feed) -> impl Stream<Item = Result<Event, Infallible>> {
    futures::stream::unfold(Some(feed), |feed| async move {
        let mut feed = feed?;
        let deadline = feed.deadline;
        let next = tokio::select! {
            biased;
            () = tokio::time::sleep_until(deadline) => None,
            event = feed.next() => Some(event),
        };
        match next {
            Some(Some(event)) => Some((
                Ok(Event::default()
                    .event(event.name())
                    .data(event.data(&feed.reader))),
                Some(feed),
            )),
            Some(None) => None,
            None => {
                // The place is free before the client reads that the stream ended.
                drop(feed.slot.take());
                let data = json!({"reason": feed.end.reason()}).to_string();
                Some((Ok(Event::default().event("end").data(data)), None))
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::{Duration, StreamEnd, SystemTime, stream_bound};

    #[test]
    fn a_stream_ends_at_its_credentials_expiry_or_its_lifetime_whichever_comes_first() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let hour = Duration::from_secs(3600);
        for (expires_at, want) in [
            (None, (hour, StreamEnd::Lifetime)),
            (
                Some(now + Duration::from_secs(90)),
                (Duration::from_secs(90), StreamEnd::CredentialExpired),
            ),
            (Some(now + hour * 2), (hour, StreamEnd::Lifetime)),
            (
                Some(now - Duration::from_secs(5)),
                (Duration::ZERO, StreamEnd::CredentialExpired),
            ),
        ] {
            assert_eq!(stream_bound(hour, expires_at, now), want, "{expires_at:?}");
        }
    }
}
