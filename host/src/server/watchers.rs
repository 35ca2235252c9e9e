//! Who listens to which upstream resource (see [`super::subscriptions`]): the clients watching
//! each mapped URI, and the task that passes the upstreams' updates on to them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use codemode_policies::Caller;
use codemode_upstream::resources::{map_uri, policy_name, unmap_uri};
use codemode_upstream::{ResourceUpdate, UpstreamPool};
use rmcp::service::SubscriptionSink;
use rmcp::{Peer, RoleServer};
use tokio::sync::broadcast::error::RecvError;

/// The most resources one session (or listen stream) watches: each may hold a subscription on
/// an upstream.
pub(crate) const MAX_WATCHES: usize = 256;

/// Where one client hears about a resource.
#[derive(Clone)]
pub(crate) enum Target {
    /// A session of protocol 2025-11-25 or older (`resources/subscribe`).
    Session(Peer<RoleServer>),
    /// A 2026-07-28 `subscriptions/listen` stream.
    Stream(SubscriptionSink),
}

impl Target {
    /// Whether the client is gone: a session whose transport closed (a listen stream's watches
    /// end with the stream itself).
    fn is_gone(&self) -> bool {
        matches!(self, Target::Session(peer) if peer.is_transport_closed())
    }

    /// Sends the update; `false` when the client is gone.
    async fn notify(&self, mapped: &str) -> bool {
        match self {
            Target::Session(peer) => {
                !peer.is_transport_closed()
                    && peer
                        .notify_resource_updated(
                            rmcp::model::ResourceUpdatedNotificationParam::new(mapped),
                        )
                        .await
                        .is_ok()
            }
            Target::Stream(sink) => sink.notify_resource_updated(mapped).await.is_ok(),
        }
    }
}

struct Watcher {
    /// The session's id, or the listen stream's own.
    key: String,
    target: Target,
    /// Who asked: each update is decided again for them under the config in force then, so a
    /// reload that hides the resource silences it.
    caller: Caller,
}

/// Who listens to which mapped URI.
#[derive(Default)]
pub(crate) struct ResourceWatchers {
    by_uri: Mutex<HashMap<String, Vec<Watcher>>>,
}

impl ResourceWatchers {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Watcher>>> {
        self.by_uri.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `key`'s watch of `mapped` (once): `Some(true)` when nobody watched it before;
    /// `None`, adding nothing, when `key` already watches [`MAX_WATCHES`] other resources.
    pub(crate) fn add(
        &self,
        mapped: &str,
        key: &str,
        target: Target,
        caller: Caller,
    ) -> Option<bool> {
        let mut by_uri = self.lock();
        let held = by_uri
            .values()
            .filter(|ws| ws.iter().any(|w| w.key == key))
            .count();
        let watchers = by_uri.entry(mapped.to_string()).or_default();
        let first = watchers.is_empty();
        if !watchers.iter().any(|w| w.key == key) {
            if held >= MAX_WATCHES {
                if watchers.is_empty() {
                    by_uri.remove(mapped);
                }
                return None;
            }
            watchers.push(Watcher {
                key: key.to_string(),
                target,
                caller,
            });
        }
        Some(first)
    }

    /// Removes `key`'s watch of `mapped`; `true` when it was the last one.
    pub(crate) fn remove(&self, mapped: &str, key: &str) -> bool {
        let mut by_uri = self.lock();
        let Some(watchers) = by_uri.get_mut(mapped) else {
            return false;
        };
        let before = watchers.len();
        watchers.retain(|w| w.key != key);
        let last = before > 0 && watchers.is_empty();
        if watchers.is_empty() {
            by_uri.remove(mapped);
        }
        last
    }

    /// Drops the watches of sessions that went away without unsubscribing (closed or cut
    /// off); returns the mapped URIs nobody watches any more, whose upstream subscriptions the
    /// caller ends. Without this, a session that leaves without a word would hold its watches
    /// (and the upstream's subscriptions) until an update came, possibly never.
    pub(crate) fn remove_gone(&self) -> Vec<String> {
        let mut by_uri = self.lock();
        let mut emptied = Vec::new();
        by_uri.retain(|mapped, watchers| {
            watchers.retain(|w| !w.target.is_gone());
            if watchers.is_empty() {
                emptied.push(mapped.clone());
            }
            !watchers.is_empty()
        });
        emptied
    }

    fn targets(&self, mapped: &str) -> Vec<(String, Target, Caller)> {
        self.lock()
            .get(mapped)
            .map(|ws| {
                ws.iter()
                    .map(|w| (w.key.clone(), w.target.clone(), w.caller.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Whether a caller may hear of a resource (its policy name) under the config in force now.
pub(crate) trait Judge: Send + Sync {
    /// Whether `caller` may see the resource named `name` (`<server>__<original URI>`).
    fn lets_resource(&self, caller: &Caller, name: &str) -> bool;
}

/// Passes every upstream resource update to the clients watching it, until the pool goes.
pub(crate) async fn forward_updates(
    watchers: Arc<ResourceWatchers>,
    upstreams: UpstreamPool,
    judge: Arc<dyn Judge>,
) {
    let mut updates = upstreams.resource_updates();
    loop {
        match updates.recv().await {
            Ok(update) => watchers.updated(&upstreams, &*judge, update).await,
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(
                    "{missed} resource updates of upstreams were dropped: clients were too slow to take them"
                );
            }
            Err(RecvError::Closed) => return,
        }
    }
}

impl ResourceWatchers {
    /// Tells each watcher whose profile (in the config in force now) still lets the resource
    /// through; the others, and the clients gone, stop watching it.
    async fn updated(&self, upstreams: &UpstreamPool, judge: &dyn Judge, update: ResourceUpdate) {
        let mapped = map_uri(&update.server, &update.uri);
        let name = policy_name(&update.server, &update.uri);
        let mut gone = Vec::new();
        for (key, target, caller) in self.targets(&mapped) {
            let lets = judge.lets_resource(&caller, &name);
            if !lets || !target.notify(&mapped).await {
                gone.push(key);
            }
        }
        for key in gone {
            self.forget(upstreams, &mapped, &key).await;
        }
    }

    /// Ends the watches of sessions that are gone, and the upstream subscriptions nobody else
    /// holds (before a new watch is counted, so that abandoned ones neither count nor linger).
    pub(crate) async fn forget_gone(&self, upstreams: &UpstreamPool) {
        for mapped in self.remove_gone() {
            if let Some((server, original)) = unmap_uri(&mapped) {
                upstreams.unsubscribe_resource(server, original).await;
            }
        }
    }

    /// Ends `key`'s watch of `mapped`, and the upstream's subscription when it was the last.
    pub(crate) async fn forget(&self, upstreams: &UpstreamPool, mapped: &str, key: &str) {
        if self.remove(mapped, key)
            && let Some((server, original)) = unmap_uri(mapped)
        {
            upstreams.unsubscribe_resource(server, original).await;
        }
    }
}
