//! [`CallScope`]: what one eval lends the upstream calls it makes.

use std::sync::Arc;

use super::isolated::EvalSessions;
use super::lent::{Answerers, Answering, CallRelay, CallSampler, UpstreamElicitation};
use super::media::Media;

/// Where the upstream servers' progress and log messages about an eval's calls go, who answers
/// their sampling and elicitation requests, and where the media of their results are kept.
/// Cheap to clone: clones share the eval's connections to servers that isolate sessions
/// (`isolateSessions`, closed when the last clone drops) and its count of the servers' requests
/// being answered (its calls' timeouts pause meanwhile).
///
/// `CallScope::default()` relays nothing, refuses sampling, declines elicitation and keeps
/// media in a store of its own of [`Media::DEFAULT_MAX_BYTES`] that nobody attaches from; the
/// `with_*` methods lend the eval's own.
#[derive(Clone, Default)]
pub struct CallScope {
    pub(crate) relay: Option<Arc<dyn CallRelay>>,
    pub(crate) media: Media,
    pub(crate) sampler: Option<Arc<dyn CallSampler>>,
    pub(crate) elicitor: Option<Arc<dyn UpstreamElicitation>>,
    pub(crate) sessions: EvalSessions,
    pub(crate) traceparent: Option<String>,
    pub(crate) answering: Answering,
}

impl CallScope {
    /// The eval's relay (none: the notifications are dropped).
    pub fn with_relay(mut self, relay: Option<Arc<dyn CallRelay>>) -> Self {
        self.relay = relay;
        self
    }

    /// The eval's media store.
    pub fn with_media(mut self, media: Media) -> Self {
        self.media = media;
        self
    }

    /// Who answers the upstream servers' sampling requests during the eval's calls (none:
    /// they are refused).
    pub fn with_sampler(mut self, sampler: Option<Arc<dyn CallSampler>>) -> Self {
        self.sampler = sampler;
        self
    }

    /// Who answers the upstream servers' elicitation requests during the eval's calls, its
    /// human (none: they are declined).
    pub fn with_elicitor(mut self, elicitor: Option<Arc<dyn UpstreamElicitation>>) -> Self {
        self.elicitor = elicitor;
        self
    }

    /// The W3C `traceparent` of the call's `upstream_request` span, sent on as the request's
    /// `_meta.traceparent` and, to an HTTP server, as a `traceparent` header.
    pub fn with_traceparent(mut self, traceparent: Option<String>) -> Self {
        self.traceparent = traceparent;
        self
    }

    /// What one call borrows of the scope while it runs.
    pub(crate) fn answerers(&self) -> Answerers {
        Answerers {
            relay: self.relay.clone(),
            sampler: self.sampler.clone(),
            elicitor: self.elicitor.clone(),
            answering: self.answering.clone(),
        }
    }
}
