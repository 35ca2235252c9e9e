//! The catalog of tools a script can call: what `search_tools` ranks and `get_tools` describes.
//!
//! Plain data, no MCP types: the server fills it from the upstream tool lists and the built-in
//! tools.

mod observed;
mod search;
mod typescript;

pub(crate) use observed::ObservedResults;
pub use observed::ObservedType;
pub use search::SearchHit;
pub(crate) use search::search;
pub(crate) use typescript::{compact_type, declarations, declarations_with, js_call_form};

use serde_json::Value;

/// One tool as scripts see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// The name scripts call: `server__tool`, or a built-in name.
    pub name: String,
    /// The tool's description, if any.
    pub description: String,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// JSON Schema of the structured result, when the tool declares one.
    pub output_schema: Option<Value>,
}

impl ToolInfo {
    /// Ranks `tools` against `query`; returns at most `limit` hits with a positive score, best
    /// first (ties by name). An empty query lists tools by name.
    pub fn search(tools: &[ToolInfo], query: &str, limit: usize) -> Vec<SearchHit> {
        search(tools, query, limit)
    }

    /// A `declare const codemode: { … }` block declaring each tool as a method. Everything in
    /// it the upstream chose (descriptions, names, property names, enum values) is shown as
    /// [`neutralize`](codemode_policies::neutralize) shows it: the block's own line breaks
    /// stay, every other control, format or invisible character is an escape — as in
    /// `search_tools`'s text.
    pub fn declarations(tools: &[ToolInfo]) -> String {
        declarations(tools)
    }

    /// [`ToolInfo::declarations`], a tool without an `outputSchema` typed by what `observed`
    /// gives for it (the results seen so far, see
    /// [`UpstreamPool::observed_type`](crate::UpstreamPool::observed_type)), marked as observed
    /// by a comment: a model reads it as a likely shape, not a promise.
    pub fn declarations_with(
        tools: &[ToolInfo],
        observed: &dyn Fn(&ToolInfo) -> Option<ObservedType>,
    ) -> String {
        declarations_with(tools, observed)
    }

    /// The first sentence or line of the description, at most 160 characters.
    pub fn summary(&self) -> String {
        let text = self.description.trim();
        let line = text.lines().next().unwrap_or("");
        let end = line.find(". ").map_or(line.len(), |i| i + 1);
        let mut out: String = line[..end].chars().take(160).collect();
        if out.len() < line[..end].len() {
            out.push('…');
        }
        out
    }
}
