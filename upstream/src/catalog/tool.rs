//! [`ToolInfo`]: one tool as scripts see it.

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
