//! [`CallScope`]: what one eval lends the upstream calls it makes.

use std::sync::Arc;

use super::isolated::EvalSessions;
use super::lent::{Answerers, Answering, CallRelay, CallSampler, UpstreamElicitation};
use super::media::Media;

/// Where the upstream servers' progress and log messages about an eval's calls go, who answers
/// their sampling and elicitation requests, and where the media of their results are kept.
/// Cheap to clone.
#[derive(Clone, Default)]
pub struct CallScope {
    /// The eval's relay. Default: none (the notifications are dropped).
    pub relay: Option<Arc<dyn CallRelay>>,
    /// The eval's media store. Default: a store of its own, of
    /// [`DEFAULT_MAX_MEDIA_BYTES`](crate::DEFAULT_MAX_MEDIA_BYTES), that nobody attaches from.
    pub media: Media,
    /// Who answers the upstream servers' sampling requests during the eval's calls. Default:
    /// none (they are refused).
    pub sampler: Option<Arc<dyn CallSampler>>,
    /// Who answers the upstream servers' elicitation requests during the eval's calls (its
    /// human). Default: none (they are declined).
    pub elicitor: Option<Arc<dyn UpstreamElicitation>>,
    /// The eval's own connections to the servers that isolate sessions (`isolateSessions`),
    /// closed when the last clone of the scope drops. Default: none opened yet.
    pub sessions: EvalSessions,
    /// The W3C `traceparent` of the call's `upstream_request` span, sent on as the request's
    /// `_meta.traceparent` and, to an HTTP server, as a `traceparent` header. Default: none.
    pub traceparent: Option<String>,
    /// How many of the servers' requests the eval's human or model is answering now (its
    /// calls' timeouts pause meanwhile). Default: a count of its own; a scope's clones share it.
    pub answering: Answering,
}

impl CallScope {
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
