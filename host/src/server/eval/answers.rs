//! A retry's answers while it waits on its eval in memory, and the ones that came too early
//! to be taken: as the eval was leaving memory to be saved.

use rmcp::model::{InputRequests, InputResponses};

use crate::server::suspend::{RefusedAnswer, Suspended};

/// A retry's answers, as its wait on the eval in memory uses them. An answer that reached no
/// question may have come as its eval was leaving memory (a park withdraws the eval's questions
/// before the save): when the eval is saved with that question, the answer goes to the store
/// (`Waited::Saved`); when the save fails and the eval goes on here (it spills), the eval asks
/// the same question again under the same key, and the answer is given to it then, so that the
/// client is not asked twice.
pub(super) struct RetryAnswers {
    /// The keys the retry answered.
    answered: Vec<String>,
    /// The answers no question has taken yet.
    unclaimed: InputResponses,
}

impl RetryAnswers {
    /// A request that answers nothing.
    pub(super) fn none() -> Self {
        RetryAnswers {
            answered: Vec::new(),
            unclaimed: InputResponses::new(),
        }
    }

    /// `responses`, of which those to the keys `refused` reached no question.
    pub(super) fn new(responses: &InputResponses, refused: &[String]) -> Self {
        RetryAnswers {
            answered: responses.keys().cloned().collect(),
            unclaimed: responses
                .iter()
                .filter(|(key, _)| refused.contains(key))
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect(),
        }
    }

    /// Whether the retry answered one of `requests` (the questions a saved eval waits on).
    pub(super) fn answered_any(&self, requests: &InputRequests) -> bool {
        self.answered.iter().any(|key| requests.contains_key(key))
    }

    /// Whether one of `requests` (asked in memory) is a question whose answer no question took.
    pub(super) fn unclaimed_any(&self, requests: &InputRequests) -> bool {
        self.unclaimed.keys().any(|key| requests.contains_key(key))
    }

    /// Gives `suspended` the unclaimed answers to `requests`, checked as on arrival.
    ///
    /// # Errors
    /// The first of them that does not fit its question (none is given then).
    pub(super) fn give(
        &mut self,
        suspended: &Suspended,
        requests: &InputRequests,
    ) -> Result<(), RefusedAnswer> {
        let (now, later) = std::mem::take(&mut self.unclaimed)
            .into_iter()
            .partition(|(key, _)| requests.contains_key(key));
        self.unclaimed = later;
        suspended.check(&now)?;
        for key in suspended.answer(&now) {
            // Withdrawn again in between: kept for the next time it is asked.
            if let Some(value) = now.get(&key) {
                self.unclaimed.insert(key, value.clone());
            }
        }
        Ok(())
    }

    /// Logs the answers no question took (the request ends without them).
    pub(super) fn warn_unclaimed(&self) {
        if !self.unclaimed.is_empty() {
            let keys: Vec<String> = self.unclaimed.keys().map(|k| shown_key(k)).collect();
            tracing::warn!(
                "refused answers to questions this eval has not asked (or no longer asks): {}",
                keys.join(", ")
            );
        }
    }
}

/// A question key a client sent, as a log line may show it: the client chooses it, so its
/// control and invisible characters are neutralised (no forged line) and it is bounded.
pub(super) fn shown_key(key: &str) -> String {
    codemode_policies::bounded(&codemode_policies::neutralize(key), 80)
}

#[cfg(test)]
mod tests {
    /// Red team: a key is the client's text; a newline in it must not start a log line of its
    /// own (the text log format writes messages as they are).
    #[test]
    fn a_key_in_a_log_line_cannot_forge_a_line() {
        assert_eq!(
            super::shown_key("q\n2026-11-29T00:00:00Z  INFO approved by admin\u{202e}"),
            r"q\n2026-11-29T00:00:00Z  INFO approved by admin\u202e"
        );
        let long = super::shown_key(&"k".repeat(500));
        assert!(long.contains(" … (420 more characters) … "), "{long}");
    }
}
