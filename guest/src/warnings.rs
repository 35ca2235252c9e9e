//! Warnings the guest raises about a script that finished but probably not as meant: its result
//! holds a promise, a tool call's promise was never awaited, or its result is `null` because its
//! last statement is not an expression. They travel in the outcome envelope's `warnings`
//! (guest/ABI.md), each `{"message", "line", "column"}` with positions in the user's code.

use std::cell::{Cell, RefCell};
use std::mem::ManuallyDrop;

/// At most this many warnings per eval; past it, one more says how many were left out.
const MAX_WARNINGS: usize = 10;

/// One warning: a message and a 1-based position in the user's code (0 = unknown).
struct Warning {
    message: String,
    line: u32,
    column: u32,
}

thread_local! {
    /// This run's warnings so far. `ManuallyDrop`: see `calls::PENDING`.
    static WARNINGS: RefCell<ManuallyDrop<Vec<Warning>>> =
        const { RefCell::new(ManuallyDrop::new(Vec::new())) };
    /// How many warnings were left out past [`MAX_WARNINGS`].
    static DROPPED: Cell<usize> = const { Cell::new(0) };
    /// Whether the script's own completion value (not a function's result) was `undefined`.
    static NO_COMPLETION: Cell<bool> = const { Cell::new(false) };
}

/// Forgets the previous run's warnings (an instance runs once, but `cm_run` does not rely on it).
pub fn reset() {
    WARNINGS.with(|w| w.borrow_mut().clear());
    DROPPED.set(0);
    NO_COMPLETION.set(false);
}

/// Adds a warning at `line`:`column` of the user's code (0 when unknown).
pub fn add(message: String, line: u32, column: u32) {
    WARNINGS.with(|w| {
        let mut w = w.borrow_mut();
        if w.len() < MAX_WARNINGS {
            w.push(Warning {
                message,
                line,
                column,
            });
        } else {
            DROPPED.set(DROPPED.get() + 1);
        }
    });
}

/// Notes that the script's completion value was `undefined`: [`finish`] then checks whether its
/// last statement was an expression.
pub fn note_no_completion() {
    NO_COMPLETION.set(true);
}

/// Whether the completion value was noted as `undefined`.
pub fn no_completion() -> bool {
    NO_COMPLETION.get()
}

/// The envelope with this run's warnings added as `"warnings": [...]` (unchanged when there are
/// none). `envelope` is a JSON object.
pub fn append_to(envelope: &str) -> Option<String> {
    let dropped = DROPPED.get();
    WARNINGS.with(|w| {
        let w = w.borrow();
        let body = envelope.trim_end().strip_suffix('}')?;
        if w.is_empty() {
            return None;
        }
        let mut out = String::with_capacity(envelope.len() + 64 * w.len());
        out.push_str(body);
        out.push_str(r#","warnings":["#);
        let position = |n: u32| {
            if n == 0 {
                "null".to_string()
            } else {
                n.to_string()
            }
        };
        let more = (dropped > 0).then(|| Warning {
            message: format!("{dropped} more warnings were left out"),
            line: 0,
            column: 0,
        });
        for (i, warning) in w.iter().chain(more.as_ref()).enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(r#"{"message":"#);
            crate::fast_json::append_json_string(&warning.message, &mut out);
            out.push_str(&format!(
                r#","line":{},"column":{}}}"#,
                position(warning.line),
                position(warning.column)
            ));
        }
        out.push_str("]}");
        Some(out)
    })
}

/// Keywords that start a statement that is not an expression statement (its completion value,
/// when it has one, is not what a script author means as the result).
const STATEMENT_KEYWORDS: [&str; 14] = [
    "const", "let", "var", "function", "async", "class", "if", "for", "while", "do", "try",
    "switch", "throw", "import",
];

/// Where the last top-level statement of `code` starts (1-based line and column, in characters)
/// when it is a declaration or another statement that is not an expression; `None` when it is
/// an expression, or when this cheap scan cannot tell (a regular expression literal, unbalanced
/// brackets…: then no warning is better than a wrong one).
///
/// Statements are taken to end at a `;`, a `}` or a line break outside any bracket, string,
/// template or comment; a statement that starts with one of [`STATEMENT_KEYWORDS`] or `{` is
/// not an expression.
pub fn last_statement_not_expression(code: &[u8]) -> Option<(u32, u32)> {
    let mut depth: i32 = 0;
    // Where the last statement's first token is.
    let mut last: Option<usize> = None;
    let mut i = 0;
    let n = code.len();
    // Whether the statement being scanned has a token yet.
    let mut seen_token = false;
    while i < n {
        let b = code[i];
        match b {
            b'/' if code.get(i + 1) == Some(&b'/') => {
                while i < n && code[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if code.get(i + 1) == Some(&b'*') => {
                let end = code[i + 2..].windows(2).position(|w| w == b"*/")?;
                i += 2 + end + 2;
                continue;
            }
            // A regular expression literal cannot be told from a division without parsing.
            b'/' => return None,
            b'"' | b'\'' | b'`' => {
                if !seen_token {
                    seen_token = true;
                    last = Some(i);
                }
                i += 1;
                while i < n && code[i] != b {
                    if code[i] == b'\\' {
                        i += 1;
                    } else if b == b'`' && code[i] == b'$' && code.get(i + 1) == Some(&b'{') {
                        return None; // a substitution can hold anything
                    } else if b != b'`' && code[i] == b'\n' {
                        return None;
                    }
                    i += 1;
                }
                if i >= n {
                    return None;
                }
            }
            b'(' | b'[' | b'{' => {
                if !seen_token {
                    seen_token = true;
                    last = Some(i);
                }
                depth += 1;
            }
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth < 0 {
                    return None;
                }
                if depth == 0 && b == b'}' {
                    seen_token = false;
                }
            }
            b';' | b'\n' if depth == 0 => seen_token = false,
            b' ' | b'\t' | b'\r' | b'\n' | b';' => {}
            _ => {
                if !seen_token {
                    seen_token = true;
                    last = Some(i);
                }
            }
        }
        i += 1;
    }
    if depth != 0 {
        return None;
    }
    let at = last?;
    let rest = &code[at..];
    let word_len = rest
        .iter()
        .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_' || *c == b'$'))
        .unwrap_or(rest.len());
    let word = std::str::from_utf8(&rest[..word_len]).ok()?;
    let is_statement = rest.first() == Some(&b'{') || STATEMENT_KEYWORDS.contains(&word);
    if !is_statement {
        return None;
    }
    let before = &code[..at];
    let line = before.iter().filter(|&&c| c == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |p| p + 1);
    let column = String::from_utf8_lossy(&code[line_start..at])
        .chars()
        .count()
        + 1;
    Some((u32::try_from(line).ok()?, u32::try_from(column).ok()?))
}
