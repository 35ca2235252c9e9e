//! The URIs one upstream connection holds subscribed for codemode's clients, subscribed again
//! on each new session of it (a new session knows none).

use std::collections::BTreeSet;
use std::sync::Mutex;

use rmcp::model::SubscribeRequestParams;
use rmcp::{Peer, RoleClient};

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

    /// Holds `uri`; false when it was held already.
    pub(crate) fn insert(&self, uri: &str) -> bool {
        self.lock().insert(uri.to_string())
    }

    /// Lets `uri` go; false when it was not held.
    pub(crate) fn remove(&self, uri: &str) -> bool {
        self.lock().remove(uri)
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
