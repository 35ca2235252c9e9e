//! Who listens to which upstream resource (see [`super::subscriptions`]): the clients watching
//! each mapped URI, how many each watches, and the task that passes the upstreams' updates on
//! (each client's own mailbox, [`super::delivery`]).
//!
//! Each URI's upstream subscription follows its watchers: subscribed when the first client
//! watches it, unsubscribed when the last leaves. The two steps of a change (the watchers here,
//! the request upstream) run under the URI's own gate, one change at a time, so that a new
//! watcher never counts on a subscription that a failing first subscribe or a last unsubscribe
//! is ending meanwhile: the upstream ends subscribed exactly when some client watches the URI.
//! Each change runs to its end in a task of its own ([`whole`]), so a request dropped midway (its
//! client cancelled it) leaves no watch without its subscription nor the reverse.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};

use codemode_policies::Caller;
use codemode_upstream::resources::{MappedUri, UpstreamRequestError};
use codemode_upstream::{ResourceUpdate, UpstreamPool};
use futures::future::BoxFuture;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

pub(crate) use super::delivery::MAX_WATCHES;
use super::delivery::{Listener, Mailbox, deliver};

/// The upstreams' side of subscriptions, as the watchers use it.
pub(crate) trait UpstreamSubscriptions: Send + Sync {
    /// Subscribes to `uri` (the upstream's own) on `server`.
    fn subscribe<'a>(
        &'a self,
        server: &'a str,
        uri: &'a str,
    ) -> BoxFuture<'a, Result<(), UpstreamRequestError>>;
    /// Ends the subscription to `uri` on `server` (a failure is the upstream's to log).
    fn unsubscribe<'a>(&'a self, server: &'a str, uri: &'a str) -> BoxFuture<'a, ()>;
    /// Whether `server` is configured now.
    fn has_server(&self, server: &str) -> bool;
}

impl UpstreamSubscriptions for UpstreamPool {
    fn subscribe<'a>(
        &'a self,
        server: &'a str,
        uri: &'a str,
    ) -> BoxFuture<'a, Result<(), UpstreamRequestError>> {
        self.subscribe_resource(server, uri)
    }

    fn unsubscribe<'a>(&'a self, server: &'a str, uri: &'a str) -> BoxFuture<'a, ()> {
        self.unsubscribe_resource(server, uri)
    }

    fn has_server(&self, server: &str) -> bool {
        UpstreamPool::has_server(self, server)
    }
}

/// The upstreams' side as the watchers' tasks hold it.
pub(crate) type SharedUpstreams = Arc<dyn UpstreamSubscriptions>;

/// Runs `change` to its end in a task of its own, even when the caller's future is dropped
/// midway (a request cancelled): a watch and its upstream subscription then change together or
/// not at all. `None` when the runtime is stopping.
async fn whole<T: Send + 'static>(change: impl Future<Output = T> + Send + 'static) -> Option<T> {
    match tokio::spawn(change).await {
        Ok(done) => Some(done),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => None,
    }
}

/// Why a watch was not added.
#[derive(Debug)]
pub(crate) enum WatchError {
    /// The client already watches [`MAX_WATCHES`] other resources.
    TooMany,
    /// The upstream refused the subscription (or is unknown, down, offering none).
    Upstream(UpstreamRequestError),
}

struct Watch {
    /// The session's id, or the listen stream's own.
    key: String,
    /// Who asked: each update is decided again for them under the config in force then, so a
    /// reload that hides the resource silences it.
    caller: Caller,
}

/// One client's watches and mailbox.
struct Client {
    uris: HashSet<String>,
    mailbox: Arc<Mailbox>,
}

type Gate = Arc<tokio::sync::Mutex<()>>;

#[derive(Default)]
struct Registry {
    by_uri: HashMap<String, Vec<Watch>>,
    /// Each client's watched URIs: its count for the cap without a scan, and what ends when
    /// it goes.
    clients: HashMap<String, Client>,
    /// The gates of the URIs being changed now (or waited for).
    gates: HashMap<String, Gate>,
}

/// Who listens to which mapped URI.
pub(crate) struct ResourceWatchers {
    registry: Mutex<Registry>,
    /// Where delivery tasks report a client gone.
    gone: mpsc::UnboundedSender<String>,
    gone_reports: Mutex<Option<mpsc::UnboundedReceiver<String>>>,
}

impl Default for ResourceWatchers {
    fn default() -> Self {
        let (gone, reports) = mpsc::unbounded_channel();
        ResourceWatchers {
            registry: Mutex::default(),
            gone,
            gone_reports: Mutex::new(Some(reports)),
        }
    }
}

/// Holds a URI's gate entry while a change waits for it or runs; the entry goes with the last.
struct Ticket<'a> {
    watchers: &'a ResourceWatchers,
    mapped: &'a str,
    gate: Gate,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        let mut registry = self.watchers.lock();
        // Clones are made only under this lock: a count of two is the map's and this one's.
        let ours = registry
            .gates
            .get(self.mapped)
            .is_some_and(|g| Arc::ptr_eq(g, &self.gate));
        if ours && Arc::strong_count(&self.gate) == 2 {
            registry.gates.remove(self.mapped);
        }
    }
}

impl ResourceWatchers {
    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn ticket<'a>(&'a self, mapped: &'a str) -> Ticket<'a> {
        let gate = self
            .lock()
            .gates
            .entry(mapped.to_string())
            .or_default()
            .clone();
        Ticket {
            watchers: self,
            mapped,
            gate,
        }
    }

    /// How many resources `key` watches.
    pub(crate) fn watch_count(&self, key: &str) -> usize {
        self.lock().clients.get(key).map_or(0, |c| c.uris.len())
    }

    /// Adds `key`'s watch of `mapped` (once): `Some(true)` when nobody watched it before;
    /// `None`, adding nothing, when `key` already watches [`MAX_WATCHES`] other resources.
    fn add(
        &self,
        mapped: &str,
        key: &str,
        listener: &Arc<dyn Listener>,
        caller: Caller,
    ) -> Option<bool> {
        let mut registry = self.lock();
        let registry = &mut *registry;
        let client = registry.clients.entry(key.to_string()).or_insert_with(|| {
            let mailbox = Arc::new(Mailbox::default());
            tokio::spawn(deliver(
                key.to_string(),
                mailbox.clone(),
                listener.clone(),
                self.gone.clone(),
            ));
            Client {
                uris: HashSet::new(),
                mailbox,
            }
        });
        if client.uris.contains(mapped) {
            return Some(false);
        }
        if client.uris.len() >= MAX_WATCHES {
            return None;
        }
        client.uris.insert(mapped.to_string());
        let watches = registry.by_uri.entry(mapped.to_string()).or_default();
        watches.push(Watch {
            key: key.to_string(),
            caller,
        });
        Some(watches.len() == 1)
    }

    /// Removes `key`'s watch of `mapped`; `true` when it was the last one.
    fn remove(&self, mapped: &str, key: &str) -> bool {
        let mut registry = self.lock();
        if let Some(client) = registry.clients.get_mut(key)
            && client.uris.remove(mapped)
            && client.uris.is_empty()
        {
            client.mailbox.close();
            registry.clients.remove(key);
        }
        let Some(watches) = registry.by_uri.get_mut(mapped) else {
            return false;
        };
        let before = watches.len();
        watches.retain(|w| w.key != key);
        let last = before > 0 && watches.is_empty();
        if watches.is_empty() {
            registry.by_uri.remove(mapped);
        }
        last
    }

    /// Adds `key`'s watch of the mapped `uri`, subscribing the upstream when it is the first;
    /// when the upstream refuses, nothing is left watched. Completes even when this future is
    /// dropped midway ([`whole`]).
    pub(crate) async fn watch(
        self: &Arc<Self>,
        upstreams: &SharedUpstreams,
        mapped: &str,
        key: &str,
        watcher: (Arc<dyn Listener>, Caller),
    ) -> Result<(), WatchError> {
        let (watchers, upstreams) = (self.clone(), upstreams.clone());
        let (mapped, key) = (mapped.to_string(), key.to_string());
        let change = async move {
            watchers
                .watch_now(upstreams.as_ref(), &mapped, &key, watcher)
                .await
        };
        whole(change).await.unwrap_or_else(|| {
            Err(WatchError::Upstream(UpstreamRequestError::Failed(
                "codemode is stopping".into(),
            )))
        })
    }

    /// [`watch`](Self::watch), in the task that runs it to its end.
    async fn watch_now(
        &self,
        upstreams: &dyn UpstreamSubscriptions,
        mapped: &str,
        key: &str,
        (listener, caller): (Arc<dyn Listener>, Caller),
    ) -> Result<(), WatchError> {
        let Some(MappedUri { server, original }) = MappedUri::parse(mapped) else {
            return Ok(());
        };
        let ticket = self.ticket(mapped);
        let _changing = ticket.gate.lock().await;
        match self.add(mapped, key, &listener, caller) {
            None => Err(WatchError::TooMany),
            Some(false) => Ok(()),
            Some(true) => {
                let subscribed = upstreams.subscribe(server, original).await;
                if subscribed.is_err() {
                    self.remove(mapped, key);
                }
                subscribed.map_err(WatchError::Upstream)
            }
        }
    }

    /// Ends `key`'s watch of `mapped`, and the upstream's subscription when it was the last;
    /// `false` when `key` did not watch it. Completes even when this future is dropped midway
    /// ([`whole`]).
    pub(crate) async fn forget(
        self: &Arc<Self>,
        upstreams: &SharedUpstreams,
        mapped: &str,
        key: &str,
    ) -> bool {
        let (watchers, upstreams) = (self.clone(), upstreams.clone());
        let (mapped, key) = (mapped.to_string(), key.to_string());
        let change = async move { watchers.forget_now(upstreams.as_ref(), &mapped, &key).await };
        whole(change).await.unwrap_or(false)
    }

    /// [`forget`](Self::forget), in the task that runs it to its end.
    async fn forget_now(
        &self,
        upstreams: &dyn UpstreamSubscriptions,
        mapped: &str,
        key: &str,
    ) -> bool {
        let watched = self
            .lock()
            .clients
            .get(key)
            .is_some_and(|c| c.uris.contains(mapped));
        if !watched {
            return false;
        }
        let ticket = self.ticket(mapped);
        let _changing = ticket.gate.lock().await;
        if self.remove(mapped, key)
            && let Some(MappedUri { server, original }) = MappedUri::parse(mapped)
        {
            upstreams.unsubscribe(server, original).await;
        }
        true
    }

    /// Ends every watch of `key` (a session closed, a client found gone).
    pub(crate) async fn forget_client(self: &Arc<Self>, upstreams: &SharedUpstreams, key: &str) {
        let uris: Vec<String> = self
            .lock()
            .clients
            .get(key)
            .map(|c| c.uris.iter().cloned().collect())
            .unwrap_or_default();
        for mapped in uris {
            self.forget(upstreams, &mapped, key).await;
        }
    }

    /// Drops the watches of resources whose server is no longer configured (a reload removed
    /// it): their subscriptions went with the server. Clients are told nothing more than the
    /// `list_changed` every removal of a server sends; returns how many URIs were let go.
    pub(crate) async fn drop_removed(&self, upstreams: &dyn UpstreamSubscriptions) -> usize {
        let orphans: Vec<String> = self
            .lock()
            .by_uri
            .keys()
            .filter(|mapped| {
                MappedUri::parse(mapped).is_some_and(|m| !upstreams.has_server(m.server))
            })
            .cloned()
            .collect();
        for mapped in &orphans {
            let ticket = self.ticket(mapped);
            let _changing = ticket.gate.lock().await;
            let keys: Vec<String> = self
                .lock()
                .by_uri
                .get(mapped.as_str())
                .map(|ws| ws.iter().map(|w| w.key.clone()).collect())
                .unwrap_or_default();
            for key in keys {
                self.remove(mapped, &key);
            }
        }
        orphans.len()
    }

    /// Posts the update of `uri` on `server` to each watcher whose profile (in the config in
    /// force now) still lets the resource through; the others stop watching it, in a task of
    /// their own (ending the upstream's subscription waits on the upstream). Returns at once:
    /// each client's task sends at its own pace.
    pub(crate) async fn updated(
        self: &Arc<Self>,
        upstreams: &SharedUpstreams,
        judge: &dyn Judge,
        (server, uri): (&str, &str),
    ) {
        let resource = MappedUri {
            server,
            original: uri,
        };
        let mapped = resource.to_string();
        let name = resource.policy_name();
        let hidden: Vec<String> = {
            let registry = self.lock();
            let Some(watches) = registry.by_uri.get(&mapped) else {
                return;
            };
            let mut hidden = Vec::new();
            for watch in watches {
                if !judge.lets_resource(&watch.caller, &name) {
                    hidden.push(watch.key.clone());
                } else if let Some(client) = registry.clients.get(&watch.key) {
                    client.mailbox.post(&watch.key, &mapped);
                }
            }
            hidden
        };
        if hidden.is_empty() {
            return;
        }
        let (watchers, upstreams) = (self.clone(), upstreams.clone());
        tokio::spawn(async move {
            for key in hidden {
                watchers.forget(&upstreams, &mapped, &key).await;
            }
        });
    }
}

fn update_of(update: &ResourceUpdate) -> (&str, &str) {
    (&update.server, &update.uri)
}

/// Whether a caller may hear of a resource (its policy name) under the config in force now.
pub(crate) trait Judge: Send + Sync {
    /// Whether `caller` may see the resource named `name` (`<server>__<original URI>`).
    fn lets_resource(&self, caller: &Caller, name: &str) -> bool;
}

/// Passes every upstream resource update to the clients watching it, and ends the watches of
/// clients found gone, until the pool goes.
pub(crate) async fn forward_updates(
    watchers: Arc<ResourceWatchers>,
    upstreams: UpstreamPool,
    judge: Arc<dyn Judge>,
) {
    let mut updates = upstreams.resource_updates();
    let reports = watchers
        .gone_reports
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    let Some(mut gone) = reports else {
        return;
    };
    let shared: SharedUpstreams = Arc::new(upstreams.clone());
    loop {
        tokio::select! {
            update = updates.recv() => match update {
                Ok(update) => watchers.updated(&shared, &*judge, update_of(&update)).await,
                Err(RecvError::Lagged(missed)) => tracing::warn!(
                    "{missed} resource updates of upstreams were dropped: they came faster than codemode passes them on"
                ),
                Err(RecvError::Closed) => return,
            },
            // Off this loop: ending the upstream subscriptions waits on the upstreams.
            Some(key) = gone.recv() => {
                let (watchers, upstreams) = (watchers.clone(), shared.clone());
                tokio::spawn(async move { watchers.forget_client(&upstreams, &key).await });
            }
        }
    }
}

/// Ends a session's watches when the session ends: rmcp drops a session's handler (the last
/// clone of its `CodemodeServer`) once the session closes — a `DELETE`, its keep-alive running
/// out, its transport gone — and offers no other word of it (rmcp 3.9's session manager ends
/// an expired session inside its worker; `Peer::is_transport_closed` can only be polled).
/// Only the session's requests hold the handler besides rmcp: an eval's own task holds the
/// server state, not the handler, and rmcp cancels the requests still running at most 5 s
/// after the session ends (its drain of their responses), so an eval in flight delays this
/// by no more than that.
pub(crate) struct SessionEnd {
    pub(crate) watchers: Arc<ResourceWatchers>,
    pub(crate) upstreams: SharedUpstreams,
    pub(crate) session_id: String,
}

impl Drop for SessionEnd {
    fn drop(&mut self) {
        if self.watchers.watch_count(&self.session_id) == 0 {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (watchers, upstreams) = (self.watchers.clone(), self.upstreams.clone());
        let key = std::mem::take(&mut self.session_id);
        runtime.spawn(async move { watchers.forget_client(&upstreams, &key).await });
    }
}

#[cfg(test)]
#[path = "watchers_tests.rs"]
mod tests;
