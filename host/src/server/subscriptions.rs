//! Resource subscriptions through codemode: a client subscribes to a mapped URI
//! (`codemode://<server>/<uri>`) — with `resources/subscribe` on protocol 2025-11-25 and older,
//! or in a `subscriptions/listen` stream's `resourceSubscriptions` on 2026-07-28 — and hears
//! `notifications/resources/updated` (the URI mapped) whenever the upstream says the resource
//! changed. Decided like a read: a resource the session's profile does not let through is
//! refused as not found (in a listen stream: never subscribed, so never heard of); every
//! `resources/subscribe` is audited (`event: "access"`).
//!
//! The upstream is subscribed once per URI, when the first client wants it, and unsubscribed
//! when the last one leaves: by `resources/unsubscribe`, by the end of its listen stream, or —
//! for a session that went away without a word — at the next update, or the next subscribe or
//! unsubscribe of any client, which finds its transport closed.

use codemode_policies::{AccessAuditRecord, Caller, Decision, bounded};
use codemode_runtime::CallStatus;
use codemode_upstream::resources::{policy_name, unmap_uri};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer};

use super::handler::CodemodeServer;
use super::resources::{SHOWN_CHARS, not_found, upstream_error};
use super::watchers::{MAX_WATCHES, Target};

/// The longest mapped URI (in bytes) codemode subscribes to: each watched URI is held here and
/// on the upstream for as long as the watch lasts, so a request body full of one URI, times
/// [`MAX_WATCHES`] per session, would otherwise hold gigabytes.
pub(crate) const MAX_URI_BYTES: usize = 8 * 1024;

/// Why `uri` is not subscribed to when it is longer than [`MAX_URI_BYTES`].
fn too_long(uri: &str) -> Option<String> {
    (uri.len() > MAX_URI_BYTES).then(|| {
        format!(
            "a resource URI of {} bytes is longer than the {MAX_URI_BYTES} codemode subscribes to",
            uri.len()
        )
    })
}

impl CodemodeServer {
    /// `resources/subscribe` of a mapped URI (protocol 2025-11-25 and older).
    pub(super) async fn resource_subscribe(
        &self,
        uri: &str,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let governed = self.governed(ctx);
        let shown = bounded(uri, SHOWN_CHARS);
        let refuse = |name: &str, reason: &str| {
            let mut record = AccessAuditRecord::now("", "resources/subscribe", name);
            record.decision = Decision::Denied;
            record.status = CallStatus::Denied;
            record.reason = Some(reason.into());
            self.audit_access(&governed, record);
        };
        if let Some(reason) = too_long(uri) {
            refuse(&shown, &reason);
            return Err(McpError::invalid_params(reason, None));
        }
        let Some((server, original)) = unmap_uri(uri) else {
            refuse(&shown, "not a resource of codemode");
            return Err(not_found(&format!(
                "`{shown}` is not a resource of codemode: its resources are `codemode://<server>/<the upstream's URI>` (see resources/list)"
            )));
        };
        let name = policy_name(server, original);
        if !governed.lets_resource(&name) {
            refuse(&name, "the profile does not let this resource through");
            return Err(not_found(&format!("no resource `{shown}`")));
        }
        let mut record = AccessAuditRecord::now("", "resources/subscribe", &name);
        let target = Target::Session(ctx.peer.clone());
        let caller = governed.caller.clone();
        if let Err(e) = self.watch(uri, &self.session_id, (target, caller)).await {
            record.status = CallStatus::Error;
            record.reason = Some(e.message.to_string());
            self.audit_access(&governed, record);
            return Err(e);
        }
        self.audit_access(&governed, record);
        Ok(())
    }

    /// Adds `key`'s watch of the mapped `uri`, subscribing the upstream when it is the first;
    /// when the upstream refuses, nothing is left watched.
    async fn watch(
        &self,
        uri: &str,
        key: &str,
        (target, caller): (Target, Caller),
    ) -> Result<(), McpError> {
        let watchers = &self.state.resource_watchers;
        let Some((server, original)) = unmap_uri(uri) else {
            return Ok(());
        };
        watchers.forget_gone(&self.state.upstreams).await;
        let Some(first) = watchers.add(uri, key, target, caller) else {
            return Err(McpError::invalid_request(
                format!(
                    "this session already watches {MAX_WATCHES} resources, the most codemode keeps for one; unsubscribe from one first"
                ),
                None,
            ));
        };
        if first {
            let subscribed = self
                .state
                .upstreams
                .subscribe_resource(server, original)
                .await;
            if subscribed.is_err() {
                watchers.remove(uri, key);
            }
            return subscribed.map_err(upstream_error);
        }
        Ok(())
    }

    /// `resources/unsubscribe`: this session no longer hears about `uri` (nothing to say when it
    /// never did).
    pub(super) async fn resource_unsubscribe(&self, uri: &str) {
        let watchers = &self.state.resource_watchers;
        watchers.forget_gone(&self.state.upstreams).await;
        watchers
            .forget(&self.state.upstreams, uri, &self.session_id)
            .await;
    }

    /// A 2026-07-28 listen stream's `resourceSubscriptions`: each resource the profile lets
    /// through is watched until the stream ends.
    pub(super) async fn watch_stream_resources(
        &self,
        ctx: &SubscriptionContext,
    ) -> Vec<(String, String)> {
        let uris = ctx
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        if uris.is_empty() {
            return Vec::new();
        }
        let governed = self.governed(ctx.request_context());
        let key = format!("listen-{}", self.state.new_session_id());
        let mut watched = Vec::new();
        for uri in uris {
            if let Some(reason) = too_long(&uri) {
                tracing::info!("subscriptions/listen: {reason}");
                continue;
            }
            let Some((server, original)) = unmap_uri(&uri) else {
                continue;
            };
            if !governed.lets_resource(&policy_name(server, original)) {
                continue;
            }
            let target = Target::Stream(ctx.sink().clone());
            if let Err(e) = self
                .watch(&uri, &key, (target, governed.caller.clone()))
                .await
            {
                tracing::info!("subscriptions/listen: {}", e.message);
                continue;
            }
            watched.push((key.clone(), uri));
        }
        watched
    }

    /// Ends what [`watch_stream_resources`](Self::watch_stream_resources) started.
    pub(super) async fn unwatch_stream_resources(&self, watched: Vec<(String, String)>) {
        for (key, uri) in watched {
            self.state
                .resource_watchers
                .forget(&self.state.upstreams, &uri, &key)
                .await;
        }
    }
}
