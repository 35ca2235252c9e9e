//! Eval outcomes as MCP tool results: the [`EvalOutcome`] JSON as structured content, plus a
//! text block a model (or a person) can read.

use std::fmt::Write as _;

use codemode_runtime::{ErrorKind, EvalOutcome};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

/// Longest text rendering of the result value before it is cut (the structured content always
/// carries all of it).
const MAX_RESULT_TEXT: usize = 16 * 1024;

/// The `CallToolResult` of an eval: `structuredContent` = the outcome, one text block, and
/// `isError` when the script failed.
pub fn eval_result(outcome: &EvalOutcome) -> CallToolResult {
    let structured = serde_json::to_value(outcome)
        .unwrap_or_else(|e| json!({"ok": false, "error": e.to_string()}));
    let mut result = CallToolResult::structured(structured);
    result.content = vec![ContentBlock::text(render(outcome))];
    result.is_error = Some(!outcome.ok);
    result
}

/// A readable summary: result (or error), logs, and the ledger.
pub fn render(outcome: &EvalOutcome) -> String {
    let mut out = String::new();
    if outcome.ok {
        let mut text =
            serde_json::to_string_pretty(&outcome.result).unwrap_or_else(|_| "null".into());
        if text.len() > MAX_RESULT_TEXT {
            let mut cut = MAX_RESULT_TEXT;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            let total = text.len();
            text.truncate(cut);
            let _ = write!(
                text,
                "\n… (truncated; {total} bytes in all, see the structured content)"
            );
        }
        let _ = writeln!(out, "Result:\n{text}");
    } else if let Some(error) = &outcome.error {
        let position = match (error.line, error.column) {
            (Some(l), Some(c)) => format!(" at line {l}, column {c}"),
            (Some(l), None) => format!(" at line {l}"),
            _ => String::new(),
        };
        let _ = writeln!(out, "Error ({}){position}: {}", error.kind, error.message);
        if let Some(stack) = error.stack.as_deref().filter(|s| !s.trim().is_empty()) {
            let _ = writeln!(out, "{}", stack.trim_end());
        }
    }
    if !outcome.logs.is_empty() {
        let _ = writeln!(out, "\nLogs:");
        for log in &outcome.logs {
            let _ = writeln!(out, "[{}] {}", log.level.as_str(), log.message);
        }
    }
    if !outcome.tool_calls.is_empty() {
        let _ = writeln!(out, "\nTool calls:");
        for call in &outcome.tool_calls {
            let reason = call
                .reason
                .as_deref()
                .map(|r| format!(" — {r}"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "#{} {} {} ({:.1} ms){reason}",
                call.id,
                call.tool,
                call.status.as_str(),
                call.duration_ms
            );
        }
    }
    out.trim_end().to_string()
}

/// JSON Schema of the structured content of eval tools (the `EvalOutcome` shape).
pub fn outcome_schema() -> Value {
    let nullable_int = json!({"type": ["integer", "null"]});
    json!({
        "type": "object",
        "properties": {
            "ok": {"type": "boolean"},
            "result": {"description": "the script's result (null when ok is false)"},
            "error": {
                "type": ["object", "null"],
                "properties": {
                    "kind": {"type": "string", "enum": ErrorKind::ALL.map(ErrorKind::as_str)},
                    "message": {"type": "string"},
                    "line": nullable_int,
                    "column": nullable_int,
                    "stack": {"type": ["string", "null"]}
                },
                "required": ["kind", "message", "line", "column", "stack"]
            },
            "warnings": {"type": "array", "items": {"type": "object", "properties": {
                "message": {"type": "string"}, "line": nullable_int, "column": nullable_int},
                "required": ["message", "line", "column"]}},
            "logs": {"type": "array", "items": {"type": "object", "properties": {
                "level": {"type": "string", "enum": ["log", "info", "warn", "error", "debug"]},
                "message": {"type": "string"}}, "required": ["level", "message"]}},
            "tool_calls": {"type": "array", "items": {"type": "object", "properties": {
                "id": {"type": "integer"}, "tool": {"type": "string"},
                "status": {"type": "string", "enum": ["ok", "error", "denied"]},
                "reason": {"type": ["string", "null"]}, "duration_ms": {"type": "number"}},
                "required": ["id", "tool", "status", "reason", "duration_ms"]}},
            "stats": {"type": "object", "properties": {
                "fuel_used": {"type": "integer"}, "wall_ms": {"type": "number"},
                "memory_peak_bytes": {"type": "integer"}},
                "required": ["fuel_used", "wall_ms", "memory_peak_bytes"]}
        },
        "required": ["ok", "result", "error", "warnings", "logs", "tool_calls", "stats"]
    })
}
