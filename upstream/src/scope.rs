//! [`CallScope`]: what one eval lends the upstream calls it makes.

use std::sync::Arc;

use super::media::Media;
use super::relay::CallRelay;

/// Where the upstream servers' progress and log messages about an eval's calls go, and where
/// the media of their results are kept. Cheap to clone.
#[derive(Clone, Default)]
pub struct CallScope {
    /// The eval's relay. Default: none (the notifications are dropped).
    pub relay: Option<Arc<dyn CallRelay>>,
    /// The eval's media store. Default: a store of its own, of
    /// [`DEFAULT_MAX_MEDIA_BYTES`](crate::DEFAULT_MAX_MEDIA_BYTES), that nobody attaches from.
    pub media: Media,
}
