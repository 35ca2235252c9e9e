//! What both APIs' modules share: the tools offered, the calls asked for, a turn's reply.

use serde_json::Value;

/// A tool offered to the model: what codemode's `tools/list` gives.
#[derive(Debug, Clone)]
pub(crate) struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// A tool call the model asked for.
#[derive(Debug, Clone)]
pub(crate) struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// What the model did in one turn.
#[derive(Debug)]
pub(crate) enum Reply {
    /// Asked for these calls (in order).
    Calls(Vec<ToolCall>),
    /// Answered: the final text.
    Answer(String),
}

/// The start of a reply's text, for an error.
pub(crate) fn excerpt(text: &str) -> String {
    const MAX: usize = 300;
    match text.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}
