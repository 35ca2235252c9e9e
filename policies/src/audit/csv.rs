//! The CSV rendering of audit records (`audit query --format csv`): one column per field any
//! record may carry, every cell safe to open in a spreadsheet and to print on a terminal.

use serde_json::{Map, Value};

/// The CSV columns, in order: every field a record may carry (`tool_call` and `eval` fields
/// together; a field a record lacks is an empty cell). Arrays and objects (`args`, `options`,
/// `metadata`) are written as compact JSON.
pub(crate) const AUDIT_CSV_COLUMNS: &[&str] = &[
    "ts",
    "event",
    "eval_id",
    "call_id",
    "caller",
    "session_id",
    "profile",
    "tool",
    "risk",
    "disposition",
    "decision",
    "reason",
    "channel",
    "decided_by",
    "decision_reason",
    "status",
    "duration_ms",
    "args_sha256",
    "args",
    "redacted_paths",
    "output_sha256",
    "stage",
    "classification",
    "caller_permissions",
    "timeout_seconds",
    "question",
    "options",
    "answer",
    "metadata",
    "code_sha256",
    "ok",
    "error_kind",
    "fuel_used",
    "wall_ms",
    "tool_calls",
    "prev_hash",
    "hash",
];

/// A header row of [`AUDIT_CSV_COLUMNS`], then one row per record.
pub(super) fn render<'a>(records: impl Iterator<Item = &'a Map<String, Value>>) -> String {
    let mut out = AUDIT_CSV_COLUMNS.join(",");
    out.push('\n');
    for fields in records {
        let row: Vec<String> = AUDIT_CSV_COLUMNS
            .iter()
            .map(|c| csv_cell(fields.get(*c)))
            .collect();
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

/// The first characters that make a spreadsheet read a cell as a formula.
const CSV_FORMULA_STARTS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

fn csv_cell(v: Option<&Value>) -> String {
    let text = match v {
        None | Some(Value::Null) => return String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    let mut clean = crate::neutralize(&text);
    // A spreadsheet runs a cell that starts with one of these as a formula (OWASP "CSV
    // injection": `=HYPERLINK(…)`, `@SUM(…)`, `-2+3+cmd|…`): a quote in front makes it text.
    // Numbers and booleans are written by the audit, never a formula (`-1` stays a number).
    if matches!(v, Some(Value::String(s)) if s.starts_with(CSV_FORMULA_STARTS)) {
        clean.insert(0, '\'');
    }
    if clean.contains([',', '"']) {
        format!("\"{}\"", clean.replace('"', "\"\""))
    } else {
        clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn csv_cells_a_spreadsheet_would_run_are_quoted_as_text() {
        let cases = [
            (
                json!("=HYPERLINK(\"http://x\",\"y\")"),
                "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\"",
            ),
            (json!("+1+1"), "'+1+1"),
            (json!("-2+3+cmd|' /C calc'!A0"), "'-2+3+cmd|' /C calc'!A0"),
            (json!("@SUM(A1:A9)"), "'@SUM(A1:A9)"),
            (json!("\t=1"), "'\\t=1"),
            (json!("\r=1"), "'\\r=1"),
            // Elsewhere in the cell, or not a string: as it is.
            (json!("a=1"), "a=1"),
            (json!(-1), "-1"),
            (json!(1.5), "1.5"),
            (json!(""), ""),
        ];
        for (value, want) in cases {
            assert_eq!(csv_cell(Some(&value)), want, "{value}");
        }
        assert_eq!(csv_cell(None), "");
    }

    /// The gateway's fields have their columns; a script's question, option or metadata that a
    /// spreadsheet would run is text, and a control character is shown escaped.
    #[test]
    fn gateway_fields_have_columns_and_script_text_is_neutralised() {
        let record = json!({"event": "tool_call", "tool": "hitl_request", "stage": "execution",
            "classification": "write", "caller_permissions": ["a", "b"], "timeout_seconds": 60,
            "question": "=HYPERLINK(\"x\")\u{1b}", "options": ["=1", "b"], "answer": "@SUM(A1)",
            "metadata": {"k": "-1"}});
        let csv = render(std::iter::once(record.as_object().unwrap()));
        let rows: Vec<&str> = csv.lines().collect();
        let at = |c: &str| AUDIT_CSV_COLUMNS.iter().position(|k| *k == c).unwrap();
        assert!(at("output_sha256") < at("stage") && at("metadata") < at("code_sha256"));
        let cells: Vec<&str> = rows[1].split(',').collect();
        assert_eq!(
            cells[at("stage")..at("stage") + 4],
            ["execution", "write", "\"[\"\"a\"\"", "\"\"b\"\"]\""]
        );
        assert!(
            rows[1].ends_with(
                ",60,\"'=HYPERLINK(\"\"x\"\")\\u001b\",\"[\"\"=1\"\",\"\"b\"\"]\",'@SUM(A1),\"{\"\"k\"\":\"\"-1\"\"}\",,,,,,,,"
            ),
            "{}",
            rows[1]
        );
    }
}
