//! An upstream's progress and log messages handed on in the order it sent them, and before the
//! result they came before.
//!
//! rmcp handles each notification on a task of its own, so two of them, or one and the result
//! that followed it, can be handled in either order. [`Sequenced`] wraps the connection's
//! transport: as messages come in, in the server's order, it numbers each progress and log
//! notification ([`Stamp`], in the notification's extensions) and notes, for each response,
//! how many came before it. The handlers take their turns by number ([`Sequence::turn`]) and a
//! call waits for the ones before its result ([`Sequence::settle`]) — each wait bounded, so a
//! notification rmcp never hands over delays the next by at most [`WAIT_AT_MOST`].

use std::borrow::Cow;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, RequestId, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::watch;

/// The longest a notification waits for the one before it, or a result for those before it.
pub(crate) const WAIT_AT_MOST: Duration = Duration::from_secs(1);

/// A notification's number in its server's order (from 1).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stamp(u64);

/// The order of one upstream's notifications (across its connections).
pub(crate) struct Sequence {
    state: Mutex<Numbers>,
    /// The highest number handed on so far.
    delivered: watch::Sender<u64>,
}

#[derive(Default)]
struct Numbers {
    received: u64,
    /// For each response not yet claimed: the notifications received before it.
    before: HashMap<RequestId, u64>,
}

impl Default for Sequence {
    fn default() -> Self {
        Sequence {
            state: Mutex::default(),
            delivered: watch::Sender::new(0),
        }
    }
}

impl Sequence {
    fn numbers(&self) -> std::sync::MutexGuard<'_, Numbers> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until every notification numbered before `stamp` was handed on (at most
    /// [`WAIT_AT_MOST`]); the returned guard marks `stamp` handed on when dropped.
    pub(crate) async fn turn(&self, stamp: Option<Stamp>) -> Turn<'_> {
        if let Some(Stamp(n)) = stamp {
            self.reach(n.saturating_sub(1)).await;
        }
        Turn(self, stamp)
    }

    /// Waits until the notifications received before the response to `id` were handed on (at
    /// most [`WAIT_AT_MOST`]).
    pub(crate) async fn settle(&self, id: &RequestId) {
        let before = self.numbers().before.remove(id);
        if let Some(before) = before {
            self.reach(before).await;
        }
    }

    async fn reach(&self, n: u64) {
        let mut delivered = self.delivered.subscribe();
        let _ = tokio::time::timeout(WAIT_AT_MOST, delivered.wait_for(|d| *d >= n)).await;
    }

    /// Notes `message` as it comes in.
    fn note(&self, message: &mut RxJsonRpcMessage<RoleClient>) {
        let mut numbers = self.numbers();
        match message {
            JsonRpcMessage::Notification(n) => {
                let extensions = match &mut n.notification {
                    ServerNotification::ProgressNotification(p) => &mut p.extensions,
                    ServerNotification::LoggingMessageNotification(l) => &mut l.extensions,
                    _ => return,
                };
                numbers.received += 1;
                extensions.insert(Stamp(numbers.received));
            }
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {
                // Only a response that notifications still being handed on came before needs
                // waiting for; most find none, and leave no record.
                let received = numbers.received;
                if received <= *self.delivered.borrow() {
                    return;
                }
                let id = match message {
                    JsonRpcMessage::Response(r) => Some(r.id.clone()),
                    JsonRpcMessage::Error(e) => e.id.clone(),
                    _ => None,
                };
                if let Some(id) = id {
                    // Records of responses nobody claims (other requests than tool calls)
                    // must not pile up.
                    if numbers.before.len() >= 4096 {
                        numbers.before.clear();
                    }
                    numbers.before.insert(id, received);
                }
            }
            JsonRpcMessage::Request(_) => {}
        }
    }
}

/// A notification's turn (see [`Sequence::turn`]).
pub(crate) struct Turn<'a>(&'a Sequence, Option<Stamp>);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if let Some(Stamp(n)) = self.1 {
            self.0.delivered.send_modify(|d| *d = (*d).max(n));
        }
    }
}

/// A transport whose incoming messages are noted by a [`Sequence`].
pub(crate) struct Sequenced<T> {
    inner: T,
    sequence: std::sync::Arc<Sequence>,
}

impl<T> Sequenced<T> {
    pub(crate) fn new(inner: T, sequence: std::sync::Arc<Sequence>) -> Self {
        Sequenced { inner, sequence }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Sequenced<T> {
    type Error = T::Error;

    /// The wrapped transport's: rmcp puts it in its error messages.
    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        let received = self.inner.receive();
        let sequence = self.sequence.clone();
        async move {
            let mut message = received.await?;
            sequence.note(&mut message);
            Some(message)
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn handlers_take_their_turns_in_the_servers_order() {
        let sequence = Arc::new(Sequence::default());
        let order = Arc::new(Mutex::new(Vec::new()));
        // The second notification's handler starts first, as a rmcp task may.
        let second = {
            let (sequence, order) = (sequence.clone(), order.clone());
            tokio::spawn(async move {
                let _turn = sequence.turn(Some(Stamp(2))).await;
                order.lock().unwrap_or_else(|e| e.into_inner()).push(2);
            })
        };
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(order.lock().unwrap_or_else(|e| e.into_inner()).is_empty());
        {
            let _turn = sequence.turn(Some(Stamp(1))).await;
            order.lock().unwrap_or_else(|e| e.into_inner()).push(1);
        }
        assert!(second.await.is_ok());
        assert_eq!(*order.lock().unwrap_or_else(|e| e.into_inner()), [1, 2]);
        // A result whose notifications were all handed on goes on at once, and its record is
        // claimed.
        let id = RequestId::Number(7);
        sequence.numbers().before.insert(id.clone(), 2);
        sequence.settle(&id).await;
        assert!(sequence.numbers().before.is_empty());
    }
}
