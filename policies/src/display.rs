//! What a human reads: script-chosen text (tool names, arguments, `hitl_request` questions,
//! console output) made safe to show, so that it can never hide or fake a line of a prompt.
//!
//! [`neutralize`] makes every control character and invisible formatting character visible as an
//! escape (`\n`, `\u001b`, `\u202e`); [`summarize_args`] shows a call's arguments with every
//! top-level key in view, each value bounded.

use std::fmt::Write as _;

use serde_json::Value;

/// `text` with every character that could move the cursor, start an escape sequence, reorder or
/// hide text replaced by a visible escape: `\n`, `\r`, `\t`, and `\uXXXX` for the other C0 and C1
/// control characters, DEL, the bidirectional overrides and isolates, zero-width characters, the
/// line and paragraph separators and the byte-order mark. Everything else (a backslash too) is
/// kept as it is.
///
/// ```
/// use codemode_policies::neutralize;
/// assert_eq!(neutralize("ok\n\u{1b}[2Kapproved"), "ok\\n\\u001b[2Kapproved");
/// assert_eq!(neutralize("a\u{202e}b"), "a\\u202eb");
/// assert_eq!(neutralize("plain – text"), "plain – text");
/// ```
pub fn neutralize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if needs_escape(c) => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Whether `c` is invisible or changes how the text around it is shown.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00ad}'                  // soft hyphen
            | '\u{061c}'                // Arabic letter mark
            | '\u{180e}'                // Mongolian vowel separator
            | '\u{200b}'..='\u{200f}'   // zero-width characters, LRM, RLM
            | '\u{2028}'..='\u{202e}'   // line/paragraph separators, bidi embeddings/overrides
            | '\u{2060}'..='\u{2069}'   // word joiner, invisible operators, bidi isolates
            | '\u{feff}'                // byte-order mark
            | '\u{fff9}'..='\u{fffb}' // interlinear annotations
        )
}

/// The longest preview of one value (and of one key) in an argument summary, in characters.
pub const ARGS_VALUE_PREVIEW_CHARS: usize = 200;

/// The most top-level keys an argument summary lists; the rest are counted.
pub const ARGS_SUMMARY_MAX_KEYS: usize = 100;

/// A call's arguments as a human first sees them: for an object, one line per top-level key
/// (`"key": value`, in key order), each key and each value as compact JSON bounded to
/// [`ARGS_VALUE_PREVIEW_CHARS`] characters — a longer one is elided in the middle, with the
/// number of characters left out — so no key can be pushed out of view by a long sibling; any
/// other value is one bounded line. Past [`ARGS_SUMMARY_MAX_KEYS`] keys, a last line counts the
/// others. The result is [`neutralize`]d (JSON already escapes control characters; this also
/// catches bidi and zero-width ones). The full arguments are one step away in every prompt.
///
/// ```
/// use codemode_policies::summarize_args;
/// assert_eq!(summarize_args(&serde_json::json!({"a": 1})), "{\n  \"a\": 1\n}");
/// let long = summarize_args(&serde_json::json!({"body": "x".repeat(5000), "to": "eve"}));
/// assert!(long.ends_with("\"to\": \"eve\"\n}"));
/// assert!(long.contains(" … (4802 more characters) … "));
/// ```
pub fn summarize_args(args: &Value) -> String {
    let Value::Object(map) = args else {
        return bounded(&compact(args));
    };
    if map.is_empty() {
        return "{}".to_string();
    }
    let mut out = String::from("{\n");
    for (key, value) in map.iter().take(ARGS_SUMMARY_MAX_KEYS) {
        let key = bounded(&compact(&Value::String(key.clone())));
        let _ = writeln!(out, "  {key}: {}", bounded(&compact(value)));
    }
    if map.len() > ARGS_SUMMARY_MAX_KEYS {
        let _ = writeln!(
            out,
            "  … and {} more keys (see the full arguments)",
            map.len() - ARGS_SUMMARY_MAX_KEYS
        );
    }
    out.push('}');
    out
}

fn compact(value: &Value) -> String {
    // Serialising a `Value` to a string cannot fail.
    serde_json::to_string(value).unwrap_or_default()
}

/// `text` neutralised and, past [`ARGS_VALUE_PREVIEW_CHARS`] characters, elided in the middle.
fn bounded(text: &str) -> String {
    let text = neutralize(text);
    let count = text.chars().count();
    if count <= ARGS_VALUE_PREVIEW_CHARS {
        return text;
    }
    let head = ARGS_VALUE_PREVIEW_CHARS * 2 / 3;
    let tail = ARGS_VALUE_PREVIEW_CHARS - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(count - tail).collect();
    format!(
        "{start} … ({} more characters) … {end}",
        count - head - tail
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn neutralize_makes_every_control_visible() {
        let cases = [
            ("", ""),
            ("a\nb", "a\\nb"),
            ("\r\t", "\\r\\t"),
            ("\u{1b}[31mred", "\\u001b[31mred"),
            ("\u{7f}\u{9b}", "\\u007f\\u009b"),
            ("x\u{202e}gpj.exe", "x\\u202egpj.exe"),
            (
                "a\u{200b}b\u{2066}c\u{2028}d\u{feff}",
                "a\\u200bb\\u2066c\\u2028d\\ufeff",
            ),
            ("back\\slash é 日本", "back\\slash é 日本"),
        ];
        for (input, want) in cases {
            assert_eq!(neutralize(input), want, "{input:?}");
        }
    }

    #[test]
    fn summaries_keep_every_key_in_view() {
        assert_eq!(summarize_args(&json!({})), "{}");
        assert_eq!(summarize_args(&json!(null)), "null");
        assert_eq!(
            summarize_args(&json!({"path": "/x", "n": [1, 2]})),
            "{\n  \"n\": [1,2]\n  \"path\": \"/x\"\n}"
        );
        // A long value is elided in the middle; its sibling stays in view.
        let s = summarize_args(&json!({"a": "x".repeat(1000), "b": true}));
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines.len(), 4, "{s}");
        assert_eq!(
            lines[1],
            format!(
                "  \"a\": \"{} … (802 more characters) … {}\"",
                "x".repeat(132),
                "x".repeat(66)
            )
        );
        assert_eq!(lines[2], "  \"b\": true");
        // Hostile keys and values cannot add lines.
        let s = summarize_args(&json!({"k\n  \"ok\": 1": "\u{1b}[2K\u{202e}v"}));
        assert_eq!(s, "{\n  \"k\\n  \\\"ok\\\": 1\": \"\\u001b[2K\\u202ev\"\n}");
        // Many keys: the first ones, then a count.
        let many: serde_json::Map<String, Value> =
            (0..150).map(|i| (format!("k{i:03}"), json!(i))).collect();
        let s = summarize_args(&Value::Object(many));
        assert_eq!(s.lines().count(), ARGS_SUMMARY_MAX_KEYS + 3);
        assert!(
            s.ends_with("  … and 50 more keys (see the full arguments)\n}"),
            "{s}"
        );
        // A huge value stays small.
        let s = summarize_args(&json!(vec![1; 100_000]));
        assert!(s.chars().count() < ARGS_VALUE_PREVIEW_CHARS + 40, "{s}");
        assert!(s.contains("(199801 more characters)"), "{s}");
    }
}
