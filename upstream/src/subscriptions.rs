//! Resource subscriptions on upstreams (`resources/subscribe`), held for codemode's own
//! clients: each URI subscribed once per upstream however many clients want it (counting them
//! is the server's business), renewed when the upstream's session is re-established (a new
//! session knows none) or a reload starts the server anew with another spec, and every
//! `notifications/resources/updated` the upstreams send handed to whoever listens
//! ([`UpstreamPool::resource_updates`]), the server named.

use std::collections::BTreeSet;
use std::sync::Mutex;

use rmcp::model::{SubscribeRequestParams, UnsubscribeRequestParams};
use rmcp::{Peer, RoleClient};
use tokio::sync::broadcast;

use super::pool::UpstreamPool;
use super::resources::{UpstreamRequestError, ask};

/// An upstream said one of its resources changed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourceUpdate {
    /// The upstream server's name.
    pub server: String,
    /// The resource's URI as the upstream knows it (not mapped).
    pub uri: String,
}

/// How many updates wait for a slow listener before the oldest are dropped (a listener that
/// lags learns how many it missed).
pub(crate) const UPDATES_KEPT: usize = 256;

/// The URIs codemode holds subscribed on one upstream.
#[derive(Default)]
pub(crate) struct Subscribed(Mutex<BTreeSet<String>>);

impl Subscribed {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every URI held, for a new session to subscribe to again.
    pub(crate) fn all(&self) -> Vec<String> {
        self.lock().iter().cloned().collect()
    }
}

/// Subscribes `peer`, a new session of `server`, to `uris` again; a refusal is logged (the
/// resource may be gone), the others still renewed.
pub(crate) async fn renew(server: &str, peer: Peer<RoleClient>, uris: Vec<String>) {
    for uri in uris {
        #[expect(
            deprecated,
            reason = "resources/subscribe is how upstreams of 2025-11-25 and older take subscriptions"
        )]
        let renewed = peer
            .subscribe(SubscribeRequestParams::new(uri.clone()))
            .await;
        if let Err(e) = renewed {
            tracing::warn!(
                "upstream `{server}` refused to renew the subscription to `{}`: {e}",
                codemode_policies::neutralize(&uri)
            );
        }
    }
}

impl UpstreamPool {
    /// Subscribes to `uri` (the upstream's own URI) on `server`, unless already subscribed;
    /// its updates then arrive on [`resource_updates`](Self::resource_updates), also after the
    /// server's session is re-established.
    ///
    /// # Errors
    /// [`UpstreamRequestError`] naming the server: unknown, not connected, offering no
    /// subscriptions, or refusing this one (nothing is then held).
    pub async fn subscribe_resource(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<(), UpstreamRequestError> {
        let up = self.server_for(server, "resources/subscribe")?;
        let offered = up.peer().and_then(|p| p.peer_info()).is_some_and(|info| {
            info.capabilities
                .resources
                .as_ref()
                .is_some_and(|r| r.subscribe == Some(true))
        });
        if up.peer().is_some() && !offered {
            return Err(UpstreamRequestError::NotFound(format!(
                "upstream server `{}` offers no resource subscriptions",
                codemode_policies::neutralize(server)
            )));
        }
        if !up.subscribed().lock().insert(uri.to_string()) {
            return Ok(());
        }
        let params = SubscribeRequestParams::new(uri.to_string());
        #[expect(
            deprecated,
            reason = "resources/subscribe is how upstreams of 2025-11-25 and older take subscriptions"
        )]
        let subscribed = ask(&up, ("resources/subscribe", None), |p| async move {
            p.subscribe(params).await
        })
        .await;
        if subscribed.is_err() {
            up.subscribed().lock().remove(uri);
        }
        subscribed
    }

    /// Ends the subscription to `uri` on `server`, if held. A server that is gone, down or
    /// refusing leaves nothing held here either.
    pub async fn unsubscribe_resource(&self, server: &str, uri: &str) {
        let Some(up) = self.upstream(server) else {
            return;
        };
        if !up.subscribed().lock().remove(uri) {
            return;
        }
        let params = UnsubscribeRequestParams::new(uri.to_string());
        #[expect(
            deprecated,
            reason = "resources/unsubscribe is how upstreams of 2025-11-25 and older end subscriptions"
        )]
        let ended = ask(&up, ("resources/unsubscribe", None), |p| async move {
            p.unsubscribe(params).await
        })
        .await;
        if let Err(e) = ended {
            tracing::debug!("{e}");
        }
    }

    /// The upstreams' `notifications/resources/updated`, from now on.
    pub fn resource_updates(&self) -> broadcast::Receiver<ResourceUpdate> {
        self.updates().subscribe()
    }
}
