//! How resource updates reach the clients watching them (see [`super::watchers`]): each client
//! (a session or a listen stream) has its own mailbox and its own task sending from it, so a
//! client slow to take its notifications delays nobody else's.
//!
//! A mailbox holds each URI once: an update of a URI already waiting there is merged with it.
//! Updates only say "it changed" (the client reads the resource to learn how), so one waiting
//! ping is as good as two; this bounds a mailbox by the URIs its client watches
//! ([`MAX_WATCHES`]). A client that falls behind is named in a warning once per backlog.

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

use futures::future::BoxFuture;
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::SubscriptionSink;
use rmcp::{Peer, RoleServer};
use tokio::sync::{Notify, mpsc};

/// The most resources one session (or listen stream) watches: each may hold a subscription on
/// an upstream.
pub(crate) const MAX_WATCHES: usize = 256;

/// Where one client hears about resources.
pub(crate) trait Listener: Send + Sync {
    /// Sends `notifications/resources/updated` naming the mapped URI; `false` when the client
    /// is gone.
    fn notify<'a>(&'a self, mapped: &'a str) -> BoxFuture<'a, bool>;
}

/// A session of protocol 2025-11-25 or older (`resources/subscribe`).
pub(crate) struct SessionListener(pub(crate) Peer<RoleServer>);

impl Listener for SessionListener {
    fn notify<'a>(&'a self, mapped: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            !self.0.is_transport_closed()
                && self
                    .0
                    .notify_resource_updated(ResourceUpdatedNotificationParam::new(mapped))
                    .await
                    .is_ok()
        })
    }
}

/// A 2026-07-28 `subscriptions/listen` stream.
pub(crate) struct StreamListener(pub(crate) SubscriptionSink);

impl Listener for StreamListener {
    fn notify<'a>(&'a self, mapped: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move { self.0.notify_resource_updated(mapped).await.is_ok() })
    }
}

/// The updates waiting for one client, each URI once, oldest first.
#[derive(Default)]
pub(crate) struct Mailbox {
    waiting: Mutex<Waiting>,
    wake: Notify,
}

#[derive(Default)]
struct Waiting {
    order: VecDeque<String>,
    held: HashSet<String>,
    /// Whether an update was merged since the mailbox was last empty (warned once per backlog).
    merged: bool,
    closed: bool,
}

/// What [`Mailbox::post`] did with an update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Posted {
    /// Waiting to be sent.
    Queued,
    /// Merged with an update of the same URI still waiting.
    Merged,
    /// Dropped: the mailbox is full (more URIs than a client watches) or closed.
    Dropped,
}

impl Mailbox {
    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Leaves an update of `mapped` for the client `key` (named in the warnings).
    pub(crate) fn post(&self, key: &str, mapped: &str) -> Posted {
        let mut waiting = self.lock();
        if waiting.closed {
            return Posted::Dropped;
        }
        if waiting.held.contains(mapped) {
            if !waiting.merged {
                waiting.merged = true;
                tracing::warn!(
                    "client `{key}` is slow to take resource updates: an update of a resource already waiting for it is merged with that one"
                );
            }
            return Posted::Merged;
        }
        if waiting.order.len() >= MAX_WATCHES {
            tracing::warn!(
                "client `{key}` is slow to take resource updates: {MAX_WATCHES} wait already, this one is dropped"
            );
            return Posted::Dropped;
        }
        waiting.held.insert(mapped.to_string());
        waiting.order.push_back(mapped.to_string());
        drop(waiting);
        self.wake.notify_one();
        Posted::Queued
    }

    /// Ends the mailbox: what waits is dropped, and its task ends.
    pub(crate) fn close(&self) {
        let mut waiting = self.lock();
        waiting.closed = true;
        waiting.order.clear();
        waiting.held.clear();
        drop(waiting);
        self.wake.notify_one();
    }

    /// The oldest update waiting, once there is one; `None` once closed.
    pub(crate) async fn next(&self) -> Option<String> {
        loop {
            {
                let mut waiting = self.lock();
                if waiting.closed {
                    return None;
                }
                if let Some(mapped) = waiting.order.pop_front() {
                    waiting.held.remove(&mapped);
                    if waiting.order.is_empty() {
                        waiting.merged = false;
                    }
                    return Some(mapped);
                }
            }
            // `notify_one` keeps a permit when nobody waits: a post between the unlock and
            // this await is not missed.
            self.wake.notified().await;
        }
    }
}

/// Sends `key`'s updates from its mailbox to its listener until the mailbox closes; a client
/// found gone is reported on `gone` (its watches then end).
pub(crate) async fn deliver(
    key: String,
    mailbox: std::sync::Arc<Mailbox>,
    listener: std::sync::Arc<dyn Listener>,
    gone: mpsc::UnboundedSender<String>,
) {
    while let Some(mapped) = mailbox.next().await {
        if !listener.notify(&mapped).await {
            let _ = gone.send(key);
            return;
        }
    }
}
