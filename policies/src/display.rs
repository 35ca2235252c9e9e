//! What a human reads: script-chosen text (tool names, arguments, `hitl_request` questions,
//! console output) made safe to show, so that it can never hide or fake a line of a prompt.
//!
//! [`neutralize`] makes every control character and every invisible or format character visible
//! as an escape (`\n`, `\u001b`, `\u202e`, `\u{e0020}`); [`summarize_args`] shows a call's arguments with every
//! top-level key in view, each value bounded.

use std::fmt::Write as _;

use serde_json::Value;

/// `text` with every character that could move the cursor, start an escape sequence, reorder or
/// hide text replaced by a visible escape: `\n`, `\r`, `\t`, and `\uXXXX` (`\u{XXXXX}` past
/// U+FFFF) for every other character [`is_invisible`] names — the C0 and C1 controls and DEL,
/// every format character (general category Cf: bidi controls, zero-width characters, the
/// byte-order mark, tags…) and every default-ignorable code point (variation selectors, Hangul
/// fillers, the combining grapheme joiner…), and the line and paragraph separators. Everything
/// else (a backslash too) is kept as it is.
///
/// ```
/// use codemode_policies::neutralize;
/// assert_eq!(neutralize("ok\n\u{1b}[2Kapproved"), "ok\\n\\u001b[2Kapproved");
/// assert_eq!(neutralize("a\u{202e}b"), "a\\u202eb");
/// assert_eq!(neutralize("Cancel\u{e0020}"), "Cancel\\u{e0020}");
/// assert_eq!(neutralize("plain – text"), "plain – text");
/// ```
pub fn neutralize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_invisible(c) => push_escape(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

/// `text` [`neutralize`]d with its backticks escaped, for showing inside backticks: a name that
/// holds one (a token's subject, say) cannot close the quote and write the rest of the line.
///
/// ```
/// use codemode_policies::quoted;
/// assert_eq!(quoted("alice` (verified) and `bob"), "alice\\` (verified) and \\`bob");
/// ```
pub fn quoted(text: &str) -> String {
    neutralize(text).replace('`', "\\`")
}

/// `\uXXXX` for a character of the Basic Multilingual Plane, `\u{XXXXX}` past it (so that
/// U+E0020 cannot read as U+E002 followed by `0`).
fn push_escape(out: &mut String, c: char) {
    let code = u32::from(c);
    if code <= 0xffff {
        let _ = write!(out, "\\u{code:04x}");
    } else {
        let _ = write!(out, "\\u{{{code:x}}}");
    }
}

/// The code points [`neutralize`] escapes besides the controls (`char::is_control`), as
/// inclusive ranges in order: the union of Unicode's `Default_Ignorable_Code_Point`
/// (DerivedCoreProperties.txt, reserved ones included, so that a later Unicode version's
/// assignments there stay invisible here) and general category `Cf` (format), plus the line and
/// paragraph separators (U+2028, U+2029). Renderers outside Rust (the approval page's script)
/// escape exactly this set: see [`invisible_ranges`].
const INVISIBLE: &[(char, char)] = &[
    ('\u{00ad}', '\u{00ad}'),   // soft hyphen
    ('\u{034f}', '\u{034f}'),   // combining grapheme joiner
    ('\u{0600}', '\u{0605}'),   // Arabic number signs (Cf)
    ('\u{061c}', '\u{061c}'),   // Arabic letter mark
    ('\u{06dd}', '\u{06dd}'),   // Arabic end of ayah (Cf)
    ('\u{070f}', '\u{070f}'),   // Syriac abbreviation mark (Cf)
    ('\u{0890}', '\u{0891}'),   // Arabic pound/piastre mark above (Cf)
    ('\u{08e2}', '\u{08e2}'),   // Arabic disputed end of ayah (Cf)
    ('\u{115f}', '\u{1160}'),   // Hangul choseong/jungseong fillers
    ('\u{17b4}', '\u{17b5}'),   // Khmer inherent vowels
    ('\u{180b}', '\u{180f}'),   // Mongolian free variation selectors, vowel separator
    ('\u{200b}', '\u{200f}'),   // zero-width space, (non-)joiner, LRM, RLM
    ('\u{2028}', '\u{202e}'),   // line/paragraph separators, bidi embeddings/overrides
    ('\u{2060}', '\u{206f}'),   // word joiner, invisible operators, bidi isolates, deprecated
    ('\u{3164}', '\u{3164}'),   // Hangul filler
    ('\u{fe00}', '\u{fe0f}'),   // variation selectors 1–16
    ('\u{feff}', '\u{feff}'),   // byte-order mark, zero-width no-break space
    ('\u{ffa0}', '\u{ffa0}'),   // halfwidth Hangul filler
    ('\u{fff0}', '\u{fffb}'),   // reserved specials, interlinear annotations
    ('\u{110bd}', '\u{110bd}'), // Kaithi number sign (Cf)
    ('\u{110cd}', '\u{110cd}'), // Kaithi number sign above (Cf)
    ('\u{13430}', '\u{1343f}'), // Egyptian hieroglyph format controls (Cf)
    ('\u{1bca0}', '\u{1bca3}'), // shorthand format controls
    ('\u{1d173}', '\u{1d17a}'), // musical symbol beams, ties, slurs, phrases
    ('\u{e0000}', '\u{e0fff}'), // tags, variation selectors 17–256, reserved
];

/// Whether [`neutralize`] escapes `c`: a control character, or one that is invisible or
/// changes how the text around it is shown (see [`invisible_ranges`]).
pub fn is_invisible(c: char) -> bool {
    if c < '\u{a0}' {
        return c.is_control();
    }
    INVISIBLE
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Whether `text` says nothing a human can read: it is empty or made only of whitespace and of
/// characters [`neutralize`] escapes (a "reason" of zero-width spaces and Hangul fillers is blank).
///
/// ```
/// use codemode_policies::is_blank;
/// assert!(is_blank(" \u{200b}\u{3164}\u{e0020}\n"));
/// assert!(!is_blank("\u{200b}ok"));
/// ```
pub fn is_blank(text: &str) -> bool {
    text.chars().all(|c| c.is_whitespace() || is_invisible(c))
}

/// Every character [`neutralize`] escapes, as inclusive ranges in code point order: the C0
/// controls, DEL and the C1 controls, then the invisible and format characters. For renderers
/// that cannot call [`neutralize`] (the approval page's script) to build the same set.
pub fn invisible_ranges() -> impl Iterator<Item = (char, char)> {
    [('\u{0}', '\u{1f}'), ('\u{7f}', '\u{9f}')]
        .into_iter()
        .chain(INVISIBLE.iter().copied())
}

/// The longest preview of one value (and of one key) in an argument summary, in characters.
pub const ARGS_VALUE_PREVIEW_CHARS: usize = 200;

/// The most top-level keys an argument summary lists; the rest are counted.
pub const ARGS_SUMMARY_MAX_KEYS: usize = 100;

/// The longest path-like value an argument summary shows whole, in characters: Linux's
/// `PATH_MAX` (a longer path is refused by the system anyway).
pub const ARGS_PATH_PREVIEW_CHARS: usize = 4096;

/// The most path-like values an argument summary lists from inside one elided value.
const ARGS_NESTED_PATHS: usize = 20;

/// A call's arguments as a human first sees them: for an object, one line per top-level key
/// (`"key": value`, in key order), each key and each value as compact JSON bounded to
/// `ARGS_VALUE_PREVIEW_CHARS` (200) characters — a longer one is elided in the middle, with the
/// number of characters left out — so no key can be pushed out of view by a long sibling; any
/// other value is one bounded line. A path-like string (a separator, no line break) is never
/// elided in the middle: it is shown whole up to `ARGS_PATH_PREVIEW_CHARS`, with its
/// normalised form when it is absolute and reads otherwise; an elided array or object is
/// followed by a line for each path-like string inside it. A string with line breaks (a file's
/// new content) is a framed block: its size on the key's line, then each of its lines after
/// `    │ ` (the first 12 and the last 6 of a longer one, the rest counted), so that no line
/// of a value can read as a line of the prompt; one inside an array or object gets such a
/// block too, under its JSON Pointer. Past `ARGS_SUMMARY_MAX_KEYS` (100) keys, a last line counts
/// the others. The result is [`neutralize`]d (JSON already escapes control characters; this also
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
        return preview(args);
    };
    if map.is_empty() {
        return "{}".to_string();
    }
    let mut out = String::from("{\n");
    for (name, value) in map.iter().take(ARGS_SUMMARY_MAX_KEYS) {
        let key = bounded(
            &compact(&Value::String(name.clone())),
            ARGS_VALUE_PREVIEW_CHARS,
        );
        match value {
            Value::String(text) if is_text(text) => {
                let _ = writeln!(out, "  {key}: {}", text_header(text));
                text_block(&mut out, text, TEXT_PREFIX);
            }
            _ => {
                let _ = writeln!(out, "  {key}: {}", preview(value));
                nested_paths(&mut out, key_pointer(name), value);
                nested_texts(&mut out, key_pointer(name), value);
            }
        }
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

/// Whether a string reads as a path (or a URL): it has a separator and no line break. The
/// middle of such a value is where a traversal (`/data/…/../../etc/passwd`) hides, so it is
/// never elided there.
fn is_path_like(s: &str) -> bool {
    s.contains(['/', '\\']) && !s.contains(['\n', '\r'])
}

/// One value of a summary: a path-like string whole (up to `ARGS_PATH_PREVIEW_CHARS`) with
/// its normalised form when that differs; anything else as compact JSON, bounded.
fn preview(value: &Value) -> String {
    match value {
        Value::String(s) if is_path_like(s) => path_preview(s),
        other => bounded(&compact(other), ARGS_VALUE_PREVIEW_CHARS),
    }
}

/// A path-like value, whole, and for an absolute path that `.`, `..` or repeated separators
/// make read otherwise, the path it names (`(normalised: "/etc/passwd")`).
fn path_preview(s: &str) -> String {
    let shown = bounded(
        &compact(&Value::String(s.to_string())),
        ARGS_PATH_PREVIEW_CHARS,
    );
    if !s.starts_with('/') {
        return shown;
    }
    let normal = crate::profile::normalize_path(s);
    if normal == s {
        return shown;
    }
    let normal = bounded(&compact(&Value::String(normal)), ARGS_PATH_PREVIEW_CHARS);
    format!("{shown} (normalised: {normal})")
}

/// The JSON Pointer of a top-level key.
fn key_pointer(key: &str) -> String {
    format!("/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// When `value` (an array or object, at JSON Pointer `at`) is elided in its line, a line for
/// each path-like string inside it (`    /paths/2: "…"`), so that none hides in the elided part.
fn nested_paths(out: &mut String, mut at: String, value: &Value) {
    if !(value.is_array() || value.is_object())
        || compact(value).chars().count() <= ARGS_VALUE_PREVIEW_CHARS
    {
        return;
    }
    let mut found = Vec::new();
    collect_strings(value, &mut at, &mut found, is_path_like);
    for (pointer, path) in found.iter().take(ARGS_NESTED_PATHS) {
        let pointer = bounded(pointer, ARGS_VALUE_PREVIEW_CHARS);
        let _ = writeln!(out, "    {pointer}: {}", path_preview(path));
    }
    if found.len() > ARGS_NESTED_PATHS {
        let _ = writeln!(
            out,
            "    … and {} more paths (see the full arguments)",
            found.len() - ARGS_NESTED_PATHS
        );
    }
}

/// Every string inside `value` that `wanted` picks, with its JSON Pointer from `at`.
fn collect_strings<'a>(
    value: &'a Value,
    at: &mut String,
    found: &mut Vec<(String, &'a str)>,
    wanted: fn(&str) -> bool,
) {
    let len = at.len();
    match value {
        Value::String(s) if wanted(s) => found.push((at.clone(), s.as_str())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let _ = write!(at, "/{i}");
                collect_strings(item, at, found, wanted);
                at.truncate(len);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                at.push_str(&key_pointer(key));
                collect_strings(item, at, found, wanted);
                at.truncate(len);
            }
        }
        _ => {}
    }
}

/// The prefix of every line of a multi-line string's block: no line of a value can read as a
/// line of the prompt (`  "key": …`).
const TEXT_PREFIX: &str = "    │ ";
/// The prefix of the lines of a multi-line string found inside an array or object.
const NESTED_TEXT_PREFIX: &str = "      │ ";
/// A multi-line string's block shows its first lines and its last ones; the middle is counted.
const TEXT_HEAD_LINES: usize = 12;
const TEXT_TAIL_LINES: usize = 6;
/// The most multi-line strings shown as blocks from inside one array or object.
const NESTED_TEXTS: usize = 10;

/// Whether a string is text to show as a block: it has a line break.
fn is_text(s: &str) -> bool {
    s.contains(['\n', '\r'])
}

/// What stands on a multi-line string's own line: its size (`text: 4 lines, 57 characters`).
fn text_header(s: &str) -> String {
    let lines = text_lines(s).len();
    format!("(text: {lines} lines, {} characters)", s.chars().count())
}

/// A multi-line string as a framed block, each of its lines after `prefix`, [`neutralize`]d
/// and bounded (a `\r` or any other control shows as an escape, so no line can be faked); past
/// [`TEXT_HEAD_LINES`] + [`TEXT_TAIL_LINES`] lines, the first and the last ones with the number
/// left out between them.
fn text_block(out: &mut String, s: &str, prefix: &str) {
    let lines = text_lines(s);
    let whole = lines.len() <= TEXT_HEAD_LINES + TEXT_TAIL_LINES;
    let tail_from = lines.len().saturating_sub(TEXT_TAIL_LINES);
    for (i, text) in lines.iter().enumerate() {
        if !whole && i == TEXT_HEAD_LINES {
            let margin = prefix.strip_suffix("│ ").unwrap_or(prefix);
            let _ = writeln!(
                out,
                "{margin}┆ … ({} more lines) …",
                tail_from - TEXT_HEAD_LINES
            );
        }
        if whole || i < TEXT_HEAD_LINES || i >= tail_from {
            let _ = writeln!(out, "{prefix}{}", bounded(text, ARGS_VALUE_PREVIEW_CHARS));
        }
    }
}

/// The lines of a text, split at `\n`: a final line break ends the last line rather than
/// starting an empty one (as a file's lines are counted); a `\r` stays, to be shown escaped.
fn text_lines(s: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = s.split('\n').collect();
    if lines.len() > 1 && lines.last() == Some(&"") {
        lines.pop();
    }
    lines
}

/// For an array or object (at JSON Pointer `at`), a block for each multi-line string inside it
/// (`    /edits/0/newText: (text: 3 lines, 40 characters)` and its lines), which its compact
/// line shows only as escapes.
fn nested_texts(out: &mut String, mut at: String, value: &Value) {
    if !(value.is_array() || value.is_object()) {
        return;
    }
    let mut found = Vec::new();
    collect_strings(value, &mut at, &mut found, is_text);
    for (pointer, text) in found.iter().take(NESTED_TEXTS) {
        let pointer = bounded(pointer, ARGS_VALUE_PREVIEW_CHARS);
        let _ = writeln!(out, "    {pointer}: {}", text_header(text));
        text_block(out, text, NESTED_TEXT_PREFIX);
    }
    if found.len() > NESTED_TEXTS {
        let _ = writeln!(
            out,
            "    … and {} more texts (see the full arguments)",
            found.len() - NESTED_TEXTS
        );
    }
}

/// `text` neutralised and, past `limit` characters, elided in the middle.
pub fn bounded(text: &str, limit: usize) -> String {
    let text = neutralize(text);
    let count = text.chars().count();
    if count <= limit {
        return text;
    }
    let head = limit * 2 / 3;
    let tail = limit - head;
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
    fn multi_line_strings_are_framed_blocks() {
        let args = json!({
            "path": "/tmp/a.txt",
            "content": "line one\n  \"fake\": \"line\"\r\n\u{1b}[2Klast",
            "edits": [{"oldText": "a\nb", "newText": "c"}],
        });
        assert_eq!(
            summarize_args(&args),
            "{\n  \"content\": (text: 3 lines, 35 characters)\n    │ line one\n    │   \"fake\": \
             \"line\"\\r\n    │ \\u001b[2Klast\n  \"edits\": [{\"newText\":\"c\",\"oldText\":\"a\\nb\"}]\n    \
             /edits/0/oldText: (text: 2 lines, 3 characters)\n      │ a\n      │ b\n  \"path\": \
             \"/tmp/a.txt\"\n}"
        );
        let long: Vec<String> = (1..=40).map(|i| format!("row {i}")).collect();
        let shown = summarize_args(&json!({"body": long.join("\n")}));
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines[1], "  \"body\": (text: 40 lines, 270 characters)");
        assert_eq!(lines[2], "    │ row 1");
        assert_eq!(lines[13], "    │ row 12");
        assert_eq!(lines[14], "    ┆ … (22 more lines) …");
        assert_eq!(lines[15], "    │ row 35");
        assert_eq!(lines[20], "    │ row 40");
        assert_eq!(lines[21], "}");
    }

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
    fn neutralize_escapes_every_default_ignorable_and_format_character() {
        let cases = [
            // A whole sentence in tag characters, after a visible word.
            (
                "Cancel\u{e0020}\u{e0061}\u{e007f}",
                "Cancel\\u{e0020}\\u{e0061}\\u{e007f}",
            ),
            (
                "\u{115f}\u{1160}\u{3164}\u{ffa0}",
                "\\u115f\\u1160\\u3164\\uffa0",
            ),
            ("a\u{34f}b", "a\\u034fb"),
            (
                "ok\u{fe0f}\u{e0100}\u{e01ef}",
                "ok\\ufe0f\\u{e0100}\\u{e01ef}",
            ),
            ("\u{180b}\u{180f}\u{17b4}", "\\u180b\\u180f\\u17b4"),
            ("\u{206f}\u{fff0}\u{fff8}", "\\u206f\\ufff0\\ufff8"),
            (
                "\u{1bca0}\u{1d173}\u{1d17a}",
                "\\u{1bca0}\\u{1d173}\\u{1d17a}",
            ),
            (
                "\u{ad}\u{61c}\u{600}\u{13430}",
                "\\u00ad\\u061c\\u0600\\u{13430}",
            ),
            // Neighbours that are visible stay.
            (
                "\u{a0}\u{3000}\u{1d172}\u{e1000}",
                "\u{a0}\u{3000}\u{1d172}\u{e1000}",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(neutralize(input), want, "{input:?}");
        }
        let ranges: Vec<(char, char)> = invisible_ranges().collect();
        assert!(
            ranges.windows(2).all(|w| w[0].1 < w[1].0),
            "ranges in order, disjoint"
        );
    }

    /// Differential check against the Unicode tables of `unicode-general-category`: every
    /// format character (Cf) and every control (Cc) is escaped, so a newer Unicode version's
    /// format characters cannot slip through unnoticed.
    #[test]
    fn every_format_and_control_character_is_invisible() {
        use unicode_general_category::{GeneralCategory, get_general_category};
        for c in (0..=0x10ffff_u32).filter_map(char::from_u32) {
            let category = get_general_category(c);
            if matches!(category, GeneralCategory::Format | GeneralCategory::Control) {
                assert!(is_invisible(c), "U+{:04X} ({category:?})", u32::from(c));
            }
        }
    }

    /// Found by the red team: the elided middle of a long path hid a traversal. A path is
    /// shown whole, with the path it names; paths inside an elided value get lines of their own.
    #[test]
    fn a_path_is_never_elided_in_the_middle() {
        let hidden = format!("/data/{}/../../../etc/passwd", "a/".repeat(150));
        let s = summarize_args(&json!({"path": hidden, "content": "x"}));
        assert_eq!(
            s,
            format!(
                "{{\n  \"content\": \"x\"\n  \"path\": \"{hidden}\" (normalised: \"/data/{}etc/passwd\")\n}}",
                "a/".repeat(147)
            )
        );
        // Whole up to PATH_MAX; past it, elided like any long value.
        let long = format!("/{}", "b".repeat(ARGS_PATH_PREVIEW_CHARS + 10));
        let s = summarize_args(&json!({"path": long}));
        assert!(s.contains(" … (13 more characters) … "), "{s}");
        // A relative path or a URL is shown whole; a long text is not a path.
        let relative = format!("{}../../etc/passwd", "d/".repeat(200));
        assert_eq!(
            summarize_args(&json!({"p": relative})),
            format!("{{\n  \"p\": \"{relative}\"\n}}")
        );
        let text = format!("a/b\n{}", "t".repeat(500));
        assert!(summarize_args(&json!({"t": text})).contains("more characters"));
        // Paths inside an elided array each get a line, by JSON Pointer.
        let paths =
            json!({"paths": ["/ok/1", "x".repeat(300), {"to": "/srv/../root/.ssh/id_ed25519"}]});
        let s = summarize_args(&paths);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[2..4],
            [
                "    /paths/0: \"/ok/1\"",
                "    /paths/2/to: \"/srv/../root/.ssh/id_ed25519\" (normalised: \"/root/.ssh/id_ed25519\")"
            ],
            "{s}"
        );
        // A short array is on its line whole: no extra lines.
        assert_eq!(
            summarize_args(&json!({"p": ["/a/../b"]})).lines().count(),
            3
        );
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
