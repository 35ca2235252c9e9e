//! Resource subscriptions on upstreams (`resources/subscribe`), held for codemode's own
//! clients: each URI subscribed once per upstream however many clients want it (counting them
//! is the server's business), renewed when the upstream's session is re-established (a new
//! session knows none) or a reload starts the server anew with another spec, and every
//! `notifications/resources/updated` the upstreams send handed to whoever listens
//! ([`UpstreamPool::resource_updates`]), the server named.

use codemode_runtime::BoxFuture;
use rmcp::model::{SubscribeRequestParams, UnsubscribeRequestParams};
use tokio::sync::broadcast;

use super::client::ResourceUpdate;
use super::pool::UpstreamPool;
use super::resources::{UpstreamRequestError, ask};

impl UpstreamPool {
    /// Subscribes to `uri` (the upstream's own URI) on `server`, unless already subscribed;
    /// its updates then arrive on [`resource_updates`](Self::resource_updates), also after the
    /// server's session is re-established.
    ///
    /// # Errors
    /// [`UpstreamRequestError`] naming the server: unknown, not connected, offering no
    /// subscriptions, or refusing this one (nothing is then held).
    pub fn subscribe_resource<'a>(
        &'a self,
        server: &'a str,
        uri: &'a str,
    ) -> BoxFuture<'a, Result<(), UpstreamRequestError>> {
        Box::pin(async move {
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
            if !up.subscribed().insert(uri) {
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
                up.subscribed().remove(uri);
            }
            subscribed
        })
    }

    /// Ends the subscription to `uri` on `server`, if held. A server that is gone, down or
    /// refusing leaves nothing held here either.
    pub fn unsubscribe_resource<'a>(&'a self, server: &'a str, uri: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let Some(up) = self.upstream(server) else {
                return;
            };
            if !up.subscribed().remove(uri) {
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
        })
    }

    /// The upstreams' `notifications/resources/updated`, from now on.
    pub fn resource_updates(&self) -> broadcast::Receiver<ResourceUpdate> {
        self.updates().subscribe()
    }
}
