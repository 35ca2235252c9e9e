//! Our side of one upstream connection: the rmcp [`ClientHandler`] that declares the
//! elicitation capability (and sampling, when the pool can route it), forwards
//! `elicitation/create` and `sampling/createMessage` to the eval of the call they came during
//! ([`crate::server_requests`]), relays progress and log messages to the eval of the call they
//! are about ([`crate::relay`]), and reports `notifications/tools/list_changed`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, FormElicitationCapability, Implementation, ProgressNotificationParam,
    ProtocolVersion, ResourceUpdatedNotificationParam, SamplingCapability,
};
use rmcp::service::{InboundStreamOrigin, NotificationContext, RequestContext, RoleClient};
use rmcp::{ClientHandler, ErrorData as McpError};
use tokio::sync::{Notify, watch};

use crate::lent::LogMessage;
use crate::relay::CallRelays;
use crate::sequence::{Sequence, Stamp};
use crate::server_requests;

/// An upstream said one of its resources changed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourceUpdate {
    /// The upstream server's name.
    pub server: String,
    /// The resource's URI as the upstream knows it (not mapped).
    pub uri: String,
}

/// The rmcp client handler of one connection attempt to one upstream.
pub(crate) struct UpstreamClient {
    pub(crate) server: Arc<str>,
    /// Signalled on `notifications/tools/list_changed`.
    pub(crate) tools_changed: Arc<Notify>,
    /// Whether the `sampling` capability is declared (see [`crate::UpstreamPool::declare_sampling`]).
    pub(crate) declares_sampling: Arc<AtomicBool>,
    /// The calls in flight on this server, and where their notifications go.
    pub(crate) relays: Arc<CallRelays>,
    /// The pool's counter bumped when a server's resources or prompts change.
    pub(crate) listings_changed: Arc<watch::Sender<u64>>,
    /// Where `notifications/resources/updated` go (the pool's).
    pub(crate) updates: tokio::sync::broadcast::Sender<crate::ResourceUpdate>,
    /// The order the server sent its progress and log messages in.
    pub(crate) sequence: Arc<Sequence>,
}

/// A notification's number in its server's order, as the transport stamped it.
fn stamp_of(context: &NotificationContext<RoleClient>) -> Option<Stamp> {
    context.extensions.get::<Stamp>().copied()
}

/// Counts one elicitation in progress while alive.
impl ClientHandler for UpstreamClient {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        if self.declares_sampling.load(Ordering::Relaxed) {
            capabilities.sampling = Some(SamplingCapability::default());
        }
        let mut info = Implementation::new("codemode", env!("CARGO_PKG_VERSION"));
        info.title = Some("codemode (MCP proxy)".into());
        // The `initialize` lifecycle: ask for its newest version, which every upstream in
        // tests/peers speaks (asking for 2026-07-28 in `initialize` makes some servers guess).
        ClientConfig::new(capabilities, info)
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        let origin = context.extensions.get::<InboundStreamOrigin>();
        let (elicitor, answering) = match self.relays.route(origin, server_requests::elicitor).await
        {
            Ok(routed) => routed,
            Err(why) => {
                tracing::warn!(
                    "declined an elicitation from upstream `{}`: {why}",
                    self.server
                );
                return Ok(ElicitResult::new(ElicitationAction::Decline));
            }
        };
        let _counted = answering.start();
        // The server may cancel its request, the connection may end, or the script may stop
        // waiting on the call: then the handler's future is dropped, which withdraws the
        // question from the human.
        tokio::select! {
            answer = elicitor.elicit(&self.server, request) => {
                answer.map_err(|e| McpError::internal_error(e.message, None))
            }
            _ = context.ct.cancelled() => {
                Err(McpError::internal_error("the elicitation request was cancelled", None))
            }
            () = self.relays.until_done(&elicitor, server_requests::elicitor) => {
                Ok(ElicitResult::new(ElicitationAction::Cancel))
            }
        }
    }

    #[expect(
        deprecated,
        reason = "SEP-2577 deprecates sampling from protocol 2026-07-28 on, but servers of 2025-11-25 and older ask for it"
    )]
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, McpError> {
        let origin = context.extensions.get::<InboundStreamOrigin>();
        let (sampler, answering) = match self.relays.route(origin, server_requests::sampler).await {
            Ok(routed) => routed,
            Err(why) => return Err(server_requests::unattributed_sampling(&self.server, why)),
        };
        let _counted = answering.start();
        // Nobody is left asking about a request whose script stopped waiting (its call timed
        // out, its eval was cancelled): the human's question is withdrawn with the future.
        tokio::select! {
            answer = sampler.create_message(&self.server, params) => answer,
            _ = context.ct.cancelled() => {
                Err(McpError::invalid_request("the sampling request was cancelled", None))
            }
            () = self.relays.until_done(&sampler, server_requests::sampler) => Err(McpError::invalid_request(
                "codemode withdrew this sampling request: the script's call it came during ended before it was answered",
                None,
            )),
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.listings_changed.send_modify(|g| *g += 1);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.listings_changed.send_modify(|g| *g += 1);
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // Nobody listening is no error: no client subscribed.
        let _ = self.updates.send(crate::ResourceUpdate {
            server: self.server.to_string(),
            uri: params.uri,
        });
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        let _turn = self.sequence.turn(stamp_of(&context)).await;
        // A report naming no call yet is kept a while for the call about to claim it.
        if let Some((relay, update)) = self.relays.route_progress(params) {
            relay.progress(&self.server, update).await;
        }
    }

    async fn on_logging_message(
        &self,
        params: LogMessage,
        context: NotificationContext<RoleClient>,
    ) {
        let _turn = self.sequence.turn(stamp_of(&context)).await;
        match self.relays.sole() {
            Some(relay) => relay.log(&self.server, params).await,
            None => tracing::debug!(
                "dropped a log message from upstream `{}`: not exactly one eval has calls in flight on it",
                self.server
            ),
        }
    }
}
