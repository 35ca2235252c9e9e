//! Resource subscriptions through codemode: a client subscribes to a mapped URI
//! (`codemode://<server>/<uri>`) — with `resources/subscribe` on protocol 2025-11-25 and older,
//! or in a `subscriptions/listen` stream's `resourceSubscriptions` on 2026-07-28 — and hears
//! `notifications/resources/updated` (the URI mapped) whenever the upstream says the resource
//! changed. Decided like a read: a resource the session's profile does not let through is
//! refused as not found (in a listen stream: never subscribed, so never heard of); every
//! `resources/subscribe`, every URI of a listen stream's `resourceSubscriptions` and every
//! `resources/unsubscribe` is audited (`event: "access"`).
//!
//! The upstream is subscribed once per URI, when the first client wants it, and unsubscribed
//! when the last one leaves: by `resources/unsubscribe`, by the end of its listen stream, by the
//! end of its session (closed or expired: [`super::watchers::SessionEnd`]), or when an update finds it gone.

use std::sync::Arc;

use codemode_policies::{AccessAuditRecord, Caller, Decision, bounded};
use codemode_runtime::CallStatus;
use codemode_upstream::resources::MappedUri;
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer};

use super::delivery::{Listener, SessionListener, StreamListener};
use super::handler::CodemodeServer;
use super::resources::{Governed, SHOWN_CHARS, not_found, upstream_error};
use super::watchers::{MAX_WATCHES, SharedUpstreams, WatchError};

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

/// Why the mapped `uri` may not be watched by `governed`, as (name audited, reason, error).
fn refusal(governed: &Governed, uri: &str) -> Option<(String, String, McpError)> {
    let shown = bounded(uri, SHOWN_CHARS);
    if let Some(reason) = too_long(uri) {
        return Some((
            shown,
            reason.clone(),
            McpError::invalid_params(reason, None),
        ));
    }
    let Some(MappedUri { server, original }) = MappedUri::parse(uri) else {
        let error = not_found(&format!(
            "`{shown}` is not a resource of codemode: its resources are `codemode://<server>/<the upstream's URI>` (see resources/list)"
        ));
        return Some((shown, "not a resource of codemode".into(), error));
    };
    let name = MappedUri { server, original }.policy_name();
    if !governed.lets_resource(&name) {
        let error = not_found(&format!("no resource `{shown}`"));
        return Some((
            name,
            "the profile does not let this resource through".into(),
            error,
        ));
    }
    None
}

/// The name a mapped URI is audited under: its policy name, or the URI itself (shortened)
/// when it is not codemode's.
fn audited_name(uri: &str) -> String {
    match MappedUri::parse(uri) {
        Some(mapped) if too_long(uri).is_none() => mapped.policy_name(),
        _ => bounded(uri, SHOWN_CHARS),
    }
}

impl CodemodeServer {
    /// The upstreams, as the watchers' tasks hold them.
    fn shared_upstreams(&self) -> SharedUpstreams {
        Arc::new(self.state.upstreams.clone())
    }

    /// `resources/subscribe` of a mapped URI (protocol 2025-11-25 and older).
    pub(super) async fn resource_subscribe(
        &self,
        uri: &str,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let governed = self.governed(ctx);
        let listener: Arc<dyn Listener> = Arc::new(SessionListener(ctx.peer.clone()));
        self.subscribe_audited(
            "resources/subscribe",
            &governed,
            uri,
            (&self.session_id, listener),
        )
        .await
    }

    /// Decides, watches and audits (as `method`) `key`'s subscription to the mapped `uri`.
    async fn subscribe_audited(
        &self,
        method: &str,
        governed: &Governed,
        uri: &str,
        (key, listener): (&str, Arc<dyn Listener>),
    ) -> Result<(), McpError> {
        if let Some((name, reason, error)) = refusal(governed, uri) {
            let mut record = AccessAuditRecord::now("", method, &name);
            record.decision = Decision::Denied;
            record.status = CallStatus::Denied;
            record.reason = Some(reason);
            self.audit_access(governed, record);
            return Err(error);
        }
        let mut record = AccessAuditRecord::now("", method, &audited_name(uri));
        let watched = self
            .watch(uri, key, (listener, governed.caller.clone()))
            .await;
        if let Err(e) = &watched {
            record.status = CallStatus::Error;
            record.reason = Some(e.message.to_string());
        }
        self.audit_access(governed, record);
        watched
    }

    /// Adds `key`'s watch of the mapped `uri`, subscribing the upstream when it is the first;
    /// when the upstream refuses, nothing is left watched.
    async fn watch(
        &self,
        uri: &str,
        key: &str,
        watcher: (Arc<dyn Listener>, Caller),
    ) -> Result<(), McpError> {
        let watchers = &self.state.resource_watchers;
        match watchers
            .watch(&self.shared_upstreams(), uri, key, watcher)
            .await
        {
            Ok(()) => Ok(()),
            Err(WatchError::TooMany) => Err(McpError::invalid_request(
                format!(
                    "this session already watches {MAX_WATCHES} resources, the most codemode keeps for one; unsubscribe from one first"
                ),
                None,
            )),
            Err(WatchError::Upstream(e)) => Err(upstream_error(e)),
        }
    }

    /// `resources/unsubscribe`: this session no longer hears about `uri` (nothing to say when it
    /// never did). Audited, the reason saying when the session did not watch it.
    pub(super) async fn resource_unsubscribe(&self, uri: &str, ctx: &RequestContext<RoleServer>) {
        let watchers = &self.state.resource_watchers;
        let watched = watchers
            .forget(&self.shared_upstreams(), uri, &self.session_id)
            .await;
        let mut record = AccessAuditRecord::now("", "resources/unsubscribe", &audited_name(uri));
        if !watched {
            record.reason = Some("this session did not watch it".into());
        }
        self.audit_access(&self.governed(ctx), record);
    }

    /// A 2026-07-28 listen stream's `resourceSubscriptions`: each resource the profile lets
    /// through is watched until the stream ends; each is audited (`subscriptions/listen`).
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
        let listener: Arc<dyn Listener> = Arc::new(StreamListener(ctx.sink().clone()));
        let mut watched = Vec::new();
        for uri in uris {
            let subscribed = self
                .subscribe_audited(
                    "subscriptions/listen",
                    &governed,
                    &uri,
                    (&key, listener.clone()),
                )
                .await;
            match subscribed {
                Ok(()) => watched.push((key.clone(), uri)),
                Err(e) => tracing::info!(
                    "subscriptions/listen: {}",
                    codemode_policies::neutralize(&e.message)
                ),
            }
        }
        watched
    }

    /// Ends what [`watch_stream_resources`](Self::watch_stream_resources) started.
    pub(super) async fn unwatch_stream_resources(&self, watched: Vec<(String, String)>) {
        for (key, uri) in watched {
            self.state
                .resource_watchers
                .forget(&self.shared_upstreams(), &uri, &key)
                .await;
        }
    }
}
