//! A finished eval as the server delivers it: its outcome, and the media its result refers to
//! resolved against the eval's store ([`codemode_upstream::media`]) while the eval is still in
//! memory — so that the result can wait for its client (in memory, or in the durable store for
//! another node) after the eval and its store are gone.

use std::ops::Deref;

use codemode_runtime::EvalOutcome;
use codemode_upstream::{Attachment, Media};
use serde::{Deserialize, Serialize};

/// An eval's outcome and its media (see the module docs). Serialises as the outcome's own
/// members plus `media` and `unknown_media`, so that a result record without them (written
/// before media existed) still reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finished {
    /// What the eval did.
    #[serde(flatten)]
    pub outcome: EvalOutcome,
    /// The media blocks its result refers to, each once, in order of first reference.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub media: Vec<Attachment>,
    /// Media ids its result names that the eval's store does not hold: received before the
    /// eval was parked to the durable store (media stay in memory), or made up by the script.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown_media: Vec<String>,
}

impl Finished {
    /// `outcome`, with the media of `media` its result refers to (none when it failed).
    pub fn new(outcome: EvalOutcome, media: &Media) -> Self {
        let (media, unknown_media) = match outcome.ok {
            true => media.referenced(&outcome.result),
            false => (Vec::new(), Vec::new()),
        };
        Finished {
            outcome,
            media,
            unknown_media,
        }
    }
}

impl From<EvalOutcome> for Finished {
    /// An outcome that refers to no media (an eval that never ran, or failed).
    fn from(outcome: EvalOutcome) -> Self {
        Finished {
            outcome,
            media: Vec::new(),
            unknown_media: Vec::new(),
        }
    }
}

impl Deref for Finished {
    type Target = EvalOutcome;

    fn deref(&self) -> &EvalOutcome {
        &self.outcome
    }
}

#[cfg(test)]
#[path = "finished_tests.rs"]
mod tests;
