//! The channels of the one way to ask a human (an [`Ask`] put to an [`Asker`], answered by a
//! [`Reply`]: the policy layer's types, re-exported here).
//!
//! The channels that can put an ask to a human (one per eval, chosen by its entry point):
//! - [`elicitation::PeerAsker`]: the MCP client's own `elicitation/create` (protocol 2025-11-25
//!   and older; 2026-07-28 clients are asked through input-required results, see
//!   [`crate::server::suspend`]);
//! - [`terminal::TerminalAsker`]: the terminal of `codemode run`;
//! - [`NoAsker`]: nobody can be asked (the profile's `elicitationFallback` decides).
//!
//! Two decorators stack on the eval's channel, whatever the ask: [`channels::Channels`] also
//! offers it to the server-wide [`broker::ApprovalBroker`] when the HTTP approval API
//! ([`http`]) is served — the first answer wins — and keeps it in the eval's [`OpenAsks`] while
//! it waits, so that a parked eval's asks can be listed and answered and the answer taken when
//! the eval resumes; [`waits::WaitingAsker`] counts the eval's waits on a human. The policy
//! layer's approvals and the `hitl_request` tool's questions go through the same stack.

pub mod broker;
pub mod channels;
pub mod elicitation;
#[cfg(test)]
pub(crate) mod given;
pub mod http;
pub mod open;
pub mod parked_feed;
pub mod rules;
mod rules_api;
mod stream;
pub mod terminal;
pub mod view;
pub mod waits;

use serde_json::Value;

pub use codemode_policies::{Answer, Ask, AskKind, Asker, NoAsker, Question, Reply};

pub use broker::ApprovalBroker;
pub use channels::Channels;
pub use elicitation::PeerAsker;
pub use open::{Decided, Decisions, OpenAsk, OpenAsks};
pub use terminal::TerminalAsker;
pub use waits::{HumanWaits, WaitingAsker};

/// The option `answer` chose for a question step whose form field `field` offers `options`
/// (`None`: declined or dismissed).
///
/// # Errors
/// In words, when it names no option or one the step does not offer (the text neutralised), or
/// is not an answer at all (a timeout, a failure).
pub(crate) fn chosen_option(
    field: &str,
    options: &[&str],
    answer: &Answer,
) -> Result<Option<String>, String> {
    let listed = || {
        options
            .iter()
            .map(|o| codemode_policies::neutralize(o))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match answer {
        Answer::Decline | Answer::Cancel => Ok(None),
        Answer::Accept(content) => match content.get(field).and_then(Value::as_str) {
            Some(a) if options.contains(&a) => Ok(Some(a.to_string())),
            Some(a) => Err(format!(
                "`{}` is not one of the options ({})",
                codemode_policies::neutralize(a),
                listed()
            )),
            None => Err(format!(
                "the answer names no option (expected `{field}` with one of: {})",
                listed()
            )),
        },
        Answer::Timeout | Answer::Failed(_) => {
            Err("the answer is not an accepted, declined or cancelled elicitation result".into())
        }
    }
}

#[cfg(test)]
mod limits_tests;
#[cfg(test)]
mod rights_tests;
#[cfg(test)]
mod tests;
