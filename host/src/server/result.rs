//! Eval outcomes as MCP tool results: a text block a model (or a person) can read, spending
//! few tokens, and the same facts as compact structured content ([`compact`]).
//!
//! The text block: the result as compact JSON (past `limits.maxResultText`, elided in the middle
//! keeping valid JSON of the same shape, see [`super::elide`]) or the error, then the warnings,
//! the logs and the tool calls — each call on a line, or past [`LEDGER_LISTED`] calls a count
//! per tool and status with the failures and their reasons. Every script- or tool-chosen text
//! is [`neutralize`]d and each entry is one line with a prefix of its section, so nothing a
//! script prints can start a line that looks like one of the section headers.
//!
//! Media: when the result refers to media its calls received (values such as `{type: "image",
//! mimeType, size, id}`, see [`codemode_upstream::media`]), each block it names goes after the
//! text block, once, as the upstream sent it; the text ends with a `Media:` section (one line
//! per block: its type, MIME type, size and the content index it is at) and `structuredContent`
//! gets `media: [{id, type, content}]`, `content` being that index. A reference to an id the
//! eval does not hold (received before the eval was saved to the durable store, where media do
//! not go; or made up) is listed with a note instead, and no block.

use std::fmt::Write as _;

use codemode_policies::{bounded, neutralize};
use codemode_runtime::{CallStatus, EvalOutcome, ToolCallRecord};
use codemode_upstream::Attachment;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Value, json};

use super::elide::{self, count, group};
use super::finished::Finished;

/// The most tool calls the text block lists one per line; past it, they are summarised.
pub(crate) const LEDGER_LISTED: usize = 10;
/// The most tools, and groups of failed calls, a ledger summary names.
const SUMMARY_LINES: usize = 20;
/// The longest reason (of a failed call) shown in the text, in characters.
const REASON_CHARS: usize = 300;

/// What an unknown media reference is told (see the module docs).
pub(crate) const UNKNOWN_MEDIA: &str = "not attached: this eval holds no media of this id with this value (another eval's id, a value the script changed or an outputs rule masked, or media over limits.maxMediaBytes of the eval resumed from the durable store)";

/// The `CallToolResult` of an eval: one text block ([`render`], the result within
/// `text_budget` bytes), then the media blocks its result refers to, `structuredContent` with
/// the same facts as compact JSON ([`compact`]), and `isError` when the script failed.
pub(crate) fn eval_result(finished: &Finished, text_budget: usize) -> CallToolResult {
    let outcome = &finished.outcome;
    let mut structured = compact(outcome, text_budget);
    let mut text = render(outcome, text_budget);
    let listed = media_entries(finished);
    if !listed.is_empty() {
        let _ = write!(text, "\n\nMedia:");
        for (line, _) in &listed {
            let _ = write!(text, "\n- {line}");
        }
        structured["media"] = Value::Array(listed.into_iter().map(|(_, v)| v).collect());
    }
    let mut result = CallToolResult::structured(structured);
    result.content = vec![ContentBlock::text(text)];
    result
        .content
        .extend(finished.media.iter().map(|a| a.block.clone()));
    result.is_error = Some(!outcome.ok);
    result
}

/// One line of the `Media:` section and one `media` entry per attached block (the first at
/// content index 1) and per unknown reference.
fn media_entries(finished: &Finished) -> Vec<(String, Value)> {
    let attached = finished.media.iter().enumerate().map(|(i, a)| {
        let (kind, about) = about(a);
        let line = format!("{kind}{about} (id {}): content block {}", a.id, i + 1);
        (line, json!({"id": a.id, "type": kind, "content": i + 1}))
    });
    let unknown = finished.unknown_media.iter().map(|id| {
        let line = format!("id {id}: {UNKNOWN_MEDIA}");
        (line, json!({"id": id, "note": UNKNOWN_MEDIA}))
    });
    attached.chain(unknown).collect()
}

/// A block's type and `, image/png, 1,234 bytes` (or its URI), upstream text neutralised.
fn about(a: &Attachment) -> (&'static str, String) {
    let size = || group(usize::try_from(a.size().unwrap_or_default()).unwrap_or(usize::MAX));
    match &a.block {
        ContentBlock::Image(i) => (
            "image",
            format!(", {}, {} bytes", neutralize(&i.mime_type), size()),
        ),
        ContentBlock::Audio(i) => (
            "audio",
            format!(", {}, {} bytes", neutralize(&i.mime_type), size()),
        ),
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::BlobResourceContents { uri, .. } => (
                "resource",
                format!(" {}, {} bytes", neutralize(uri), size()),
            ),
            _ => ("resource", String::new()),
        },
        ContentBlock::ResourceLink(l) => ("resource_link", format!(" {}", neutralize(&l.uri))),
        _ => ("media", String::new()),
    }
}

/// The outcome as the structured content: its keys (`ok`, `result`, `error`, `warnings`,
/// `logs`, `tool_calls`, `stats`), with what the text block leaves out left out here too —
/// the result elided to `result_budget` bytes (`result_elided: {kept, total}` says so), times
/// rounded to whole milliseconds, and past [`LEDGER_LISTED`] calls the ledger summarised as in
/// the text: `{count, ok, error, denied, by_tool: [{tool, ok, …}], failed: [{ids, tool, status,
/// reason}]}`.
pub fn compact(outcome: &EvalOutcome, result_budget: usize) -> Value {
    let (text, elided) = elide::fit(&outcome.result, result_budget);
    let result = if elided {
        serde_json::from_str(&text).unwrap_or(Value::Null)
    } else {
        outcome.result.clone()
    };
    let mut out = json!({
        "ok": outcome.ok,
        "result": result,
        "error": outcome.error,
        "warnings": outcome.warnings,
        "logs": outcome.logs,
        "tool_calls": compact_ledger(&outcome.tool_calls),
        "stats": {
            "fuel_used": outcome.stats.fuel_used,
            "wall_ms": outcome.stats.wall_ms.round(),
            "memory_peak_bytes": outcome.stats.memory_peak_bytes,
        },
    });
    if elided {
        let total = serde_json::to_string(&outcome.result).map_or(0, |t| t.len());
        out["result_elided"] = json!({"kept": text.len(), "total": total});
    }
    out
}

/// The ledger as [`compact`] gives it: each call up to [`LEDGER_LISTED`], else counts.
fn compact_ledger(calls: &[ToolCallRecord]) -> Value {
    if calls.len() <= LEDGER_LISTED {
        return calls
            .iter()
            .map(|c| {
                let mut entry = json!({"id": c.id, "tool": c.tool, "status": c.status.as_str(),
                       "reason": c.reason, "duration_ms": c.duration_ms.round()});
                if let Some(note) = &c.note {
                    entry["note"] = json!(note);
                }
                entry
            })
            .collect();
    }
    let counts = |statuses: &mut dyn Iterator<Item = CallStatus>| {
        let mut n = serde_json::Map::new();
        for s in statuses {
            let entry = n.entry(s.as_str()).or_insert(json!(0));
            *entry = json!(entry.as_u64().unwrap_or(0) + 1);
        }
        n
    };
    let mut tools: Vec<(&str, Vec<CallStatus>)> = Vec::new();
    for call in calls {
        match tools.iter_mut().find(|(t, _)| *t == call.tool) {
            Some((_, statuses)) => statuses.push(call.status),
            None => tools.push((&call.tool, vec![call.status])),
        }
    }
    let by_tool: Vec<Value> = tools
        .iter()
        .take(SUMMARY_LINES)
        .map(|(tool, statuses)| {
            let mut entry = counts(&mut statuses.iter().copied());
            entry.insert("tool".into(), json!(tool));
            Value::Object(entry)
        })
        .collect();
    let failed: Vec<Value> = failures(calls)
        .iter()
        .take(SUMMARY_LINES)
        .map(|(c, ids)| {
            json!({"ids": ids.iter().take(3).collect::<Vec<_>>(), "count": ids.len(),
                   "tool": c.tool, "status": c.status.as_str(), "reason": c.reason})
        })
        .collect();
    let mut out = counts(&mut calls.iter().map(|c| c.status));
    out.insert("count".into(), json!(calls.len()));
    out.insert("by_tool".into(), json!(by_tool));
    out.insert("failed".into(), json!(failed));
    let noted: Vec<u64> = calls
        .iter()
        .filter(|c| c.note.is_some())
        .map(|c| c.id)
        .collect();
    if !noted.is_empty() {
        out.insert("approved".into(), json!(noted.len()));
    }
    Value::Object(out)
}

/// The text block (see the module docs); the result's JSON takes at most `result_budget` bytes.
pub fn render(outcome: &EvalOutcome, result_budget: usize) -> String {
    let mut out = String::new();
    if outcome.ok {
        let (text, elided) = elide::fit(&outcome.result, result_budget);
        if elided {
            let total = serde_json::to_string(&outcome.result).map_or(0, |t| t.len());
            let _ = writeln!(
                out,
                "Result (elided to {} of {} bytes):\n{text}",
                group(text.len()),
                group(total)
            );
        } else {
            let _ = writeln!(out, "Result:\n{text}");
        }
    } else if let Some(error) = &outcome.error {
        let _ = writeln!(
            out,
            "Error ({}){}: {}",
            error.kind,
            position(error.line, error.column, " at "),
            neutralize(&error.message)
        );
        if let Some(stack) = error.stack.as_deref().filter(|s| !s.trim().is_empty()) {
            // Indented: no line of a stack (which a script can set) starts where a header does.
            for line in stack.trim_end().lines() {
                let _ = writeln!(out, "  {}", neutralize(line.trim_start()));
            }
        }
    }
    if !outcome.warnings.is_empty() {
        let _ = writeln!(out, "\nWarnings:");
        for w in &outcome.warnings {
            let at = position(w.line, w.column, "");
            let sep = if at.is_empty() { "" } else { ": " };
            let _ = writeln!(out, "- {at}{sep}{}", neutralize(&w.message));
        }
    }
    if !outcome.logs.is_empty() {
        let _ = writeln!(out, "\nLogs:");
        for log in &outcome.logs {
            let _ = writeln!(out, "[{}] {}", log.level.as_str(), neutralize(&log.message));
        }
    }
    let error = outcome.error.as_ref().map(|e| e.message.as_str());
    ledger(&mut out, &outcome.tool_calls, error);
    out.trim_end().to_string()
}

/// `line 3, column 5` after `lead`, or nothing without a line.
fn position(line: Option<u32>, column: Option<u32>, lead: &str) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!("{lead}line {l}, column {c}"),
        (Some(l), None) => format!("{lead}line {l}"),
        _ => String::new(),
    }
}

/// The tool calls: one line each up to [`LEDGER_LISTED`], else counts and the failures.
fn ledger(out: &mut String, calls: &[ToolCallRecord], error: Option<&str>) {
    if calls.is_empty() {
        return;
    }
    if calls.len() <= LEDGER_LISTED {
        let _ = writeln!(out, "\nTool calls:");
        for call in calls {
            let _ = writeln!(
                out,
                "#{} {} {}{}{}",
                call.id,
                neutralize(&call.tool),
                call.status.as_str(),
                told_once(call.reason.as_deref(), error),
                note(call)
            );
        }
        return;
    }
    let totals = tally(calls.iter().map(|c| c.status));
    let _ = writeln!(out, "\nTool calls: {} ({totals}):", calls.len());
    // Per tool, in order of first call.
    let mut tools: Vec<(&str, Vec<CallStatus>)> = Vec::new();
    for call in calls {
        match tools.iter_mut().find(|(t, _)| *t == call.tool) {
            Some((_, statuses)) => statuses.push(call.status),
            None => tools.push((&call.tool, vec![call.status])),
        }
    }
    for (tool, statuses) in tools.iter().take(SUMMARY_LINES) {
        let _ = writeln!(
            out,
            "- {}: {}",
            neutralize(tool),
            tally(statuses.iter().copied())
        );
    }
    if tools.len() > SUMMARY_LINES {
        let _ = writeln!(
            out,
            "- … {}",
            count(tools.len() - SUMMARY_LINES, "more tool", "more tools")
        );
    }
    let approved: Vec<String> = calls
        .iter()
        .filter(|c| c.note.is_some())
        .map(|c| format!("#{}", c.id))
        .collect();
    if !approved.is_empty() {
        let shown = approved
            .iter()
            .take(SUMMARY_LINES)
            .cloned()
            .collect::<Vec<_>>();
        let more = if approved.len() > SUMMARY_LINES {
            ", …"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "- approved by a human: {} ({}{more})",
            approved.len(),
            shown.join(", ")
        );
    }
    failed(out, calls, error);
}

/// ` (approved by alice via http)`: a call's note, neutralised and bounded; empty without one.
fn note(call: &ToolCallRecord) -> String {
    call.note
        .as_deref()
        .map(|n| format!(" ({})", bounded(n, REASON_CHARS)))
        .unwrap_or_default()
}

/// The failed calls, grouped by tool, status and reason, in order of first failure.
fn failures(calls: &[ToolCallRecord]) -> Vec<(&ToolCallRecord, Vec<u64>)> {
    let mut failures: Vec<(&ToolCallRecord, Vec<u64>)> = Vec::new();
    for call in calls.iter().filter(|c| c.status != CallStatus::Ok) {
        let same = |(first, _): &&mut (&ToolCallRecord, Vec<u64>)| {
            first.tool == call.tool && first.status == call.status && first.reason == call.reason
        };
        match failures.iter_mut().find(|f| same(f)) {
            Some((_, ids)) => ids.push(call.id),
            None => failures.push((call, vec![call.id])),
        }
    }
    failures
}

/// The failed calls' lines of the text (see [`failures`]).
fn failed(out: &mut String, calls: &[ToolCallRecord], error: Option<&str>) {
    let failures = failures(calls);
    if failures.is_empty() {
        return;
    }
    let _ = writeln!(out, "Failed:");
    for (call, ids) in failures.iter().take(SUMMARY_LINES) {
        let mut shown: Vec<String> = ids.iter().take(3).map(|id| format!("#{id}")).collect();
        if ids.len() > 3 {
            shown.push(format!("… ({} calls)", group(ids.len())));
        }
        let _ = writeln!(
            out,
            "- {} {} {}{}",
            shown.join(", "),
            neutralize(&call.tool),
            call.status.as_str(),
            told_once(call.reason.as_deref(), error)
        );
    }
    if failures.len() > SUMMARY_LINES {
        let rest: usize = failures[SUMMARY_LINES..]
            .iter()
            .map(|(_, ids)| ids.len())
            .sum();
        let _ = writeln!(
            out,
            "- … {}",
            count(rest, "more failed call", "more failed calls")
        );
    }
}

/// `198 ok, 1 error, 1 denied` (statuses that occur, in that order).
fn tally(statuses: impl Iterator<Item = CallStatus>) -> String {
    let mut n = [0usize; 3];
    for s in statuses {
        n[match s {
            CallStatus::Ok => 0,
            CallStatus::Error => 1,
            CallStatus::Denied => 2,
        }] += 1;
    }
    [CallStatus::Ok, CallStatus::Error, CallStatus::Denied]
        .iter()
        .zip(n)
        .filter(|(_, n)| *n > 0)
        .map(|(s, n)| format!("{} {}", group(n), s.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// [`reason`], or ` — the error above` when the eval's error already says it (an uncaught
/// rejection of that call): the text tells it once.
fn told_once(reason_text: Option<&str>, error: Option<&str>) -> String {
    match (reason_text, error) {
        (Some(r), Some(e)) if !r.is_empty() && e.contains(r) => " — the error above".to_string(),
        _ => reason(reason_text),
    }
}

/// ` — reason`, neutralised and bounded to [`REASON_CHARS`]; empty without one.
fn reason(reason: Option<&str>) -> String {
    let Some(reason) = reason else {
        return String::new();
    };
    let text = neutralize(reason);
    let chars = text.chars().count();
    if chars <= REASON_CHARS {
        return format!(" — {text}");
    }
    let head = REASON_CHARS * 2 / 3;
    let tail = REASON_CHARS - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(chars - tail).collect();
    format!(
        " — {start}… {} …{end}",
        count(chars - head - tail, "more character", "more characters")
    )
}

#[cfg(test)]
#[path = "result_tests.rs"]
mod tests;
