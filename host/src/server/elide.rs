//! A JSON value as compact text within a byte budget, keeping it valid JSON of the same shape.
//!
//! [`fit`] elides in the middle: an array keeps its first and last items around a string item
//! `"… 180 more items …"`, an object its first and last keys around a `"…"` key, and a long
//! string its first and last characters around `… 12,345 more characters …`. How much is kept
//! is one level shared by every array, object and string, the largest whose text fits (found by
//! bisection), so a big table loses rows before its cells lose text. The text is
//! [`neutralize`]d: JSON already escapes control characters, and the visible escapes of bidi
//! and zero-width characters are JSON escapes too, so the text stays valid JSON.

use codemode_policies::neutralize;
use serde_json::{Map, Value};

/// The smallest budget [`fit`] can always meet: enough for any value elided to its markers.
pub(crate) const MIN_BUDGET: usize = 64;

/// Characters a string keeps per level (items an array or object keeps: one per level).
const CHARS_PER_LEVEL: usize = 8;

/// `value` as compact, neutralised JSON of at most `budget` bytes (at least [`MIN_BUDGET`]),
/// and whether anything was left out: `(0..200)` in 64 bytes is
/// `[0,1,2,3,4,5,6,7,8,9,"… 186 more items …",196,197,198,199]` (tests beside this file).
pub fn fit(value: &Value, budget: usize) -> (String, bool) {
    let budget = budget.max(MIN_BUDGET);
    let full = compact(value);
    if full.len() <= budget {
        return (full, false);
    }
    // Level `high` leaves nothing out (so it does not fit); level 0 keeps only markers.
    let (mut low, mut high) = (0, widest(value) + 1);
    let mut best = compact(&elide(value, 0));
    while high - low > 1 {
        let mid = low + (high - low) / 2;
        let text = compact(&elide(value, mid));
        if text.len() <= budget {
            (low, best) = (mid, text);
        } else {
            high = mid;
        }
    }
    if best.len() > budget {
        // Level 0 is a marker of at most ~60 bytes, under `MIN_BUDGET`; never return more than
        // asked all the same.
        best = "null".to_string();
    }
    (best, true)
}

fn compact(value: &Value) -> String {
    // Serialising a `Value` to a string cannot fail.
    neutralize(&serde_json::to_string(value).unwrap_or_default())
}

/// The level above which [`elide`] keeps everything of `value`.
fn widest(value: &Value) -> usize {
    match value {
        Value::Array(items) => items.iter().map(widest).fold(items.len(), usize::max),
        Value::Object(map) => map.values().map(widest).fold(map.len(), usize::max),
        Value::String(s) => s.chars().count().div_ceil(CHARS_PER_LEVEL),
        _ => 0,
    }
}

/// `value` with every array and object past `level` entries, and every string past
/// `level * CHARS_PER_LEVEL` characters, elided in the middle.
fn elide(value: &Value, level: usize) -> Value {
    match value {
        Value::Array(items) => {
            let keep = level.min(items.len());
            if keep == items.len() {
                return Value::Array(items.iter().map(|v| elide(v, level)).collect());
            }
            let (head, tail) = split(keep);
            let mut out: Vec<Value> = items[..head].iter().map(|v| elide(v, level)).collect();
            out.push(Value::String(format!(
                "… {} …",
                count(items.len() - keep, "more item", "more items")
            )));
            out.extend(items[items.len() - tail..].iter().map(|v| elide(v, level)));
            Value::Array(out)
        }
        Value::Object(map) => {
            let keep = level.min(map.len());
            if keep == map.len() {
                return Value::Object(
                    map.iter()
                        .map(|(k, v)| (k.clone(), elide(v, level)))
                        .collect(),
                );
            }
            let (head, tail) = split(keep);
            let mut out = Map::new();
            for (k, v) in map.iter().take(head) {
                out.insert(k.clone(), elide(v, level));
            }
            let mut marker = String::from("…");
            while map.contains_key(&marker) {
                marker.push('…');
            }
            out.insert(
                marker,
                Value::String(format!(
                    "… {} …",
                    count(map.len() - keep, "more key", "more keys")
                )),
            );
            for (k, v) in map.iter().skip(map.len() - tail) {
                out.insert(k.clone(), elide(v, level));
            }
            Value::Object(out)
        }
        Value::String(s) => {
            let count = s.chars().count();
            let keep = level * CHARS_PER_LEVEL;
            let marker_len = 30;
            if count <= keep + marker_len {
                return value.clone();
            }
            let (head, tail) = split(keep);
            let start: String = s.chars().take(head).collect();
            let end: String = s.chars().skip(count - tail).collect();
            Value::String(format!(
                "{start}… {} …{end}",
                self::count(count - keep, "more character", "more characters")
            ))
        }
        other => other.clone(),
    }
}

/// How many of `keep` kept entries come first (two thirds, rounded up) and last.
fn split(keep: usize) -> (usize, usize) {
    let head = (keep * 2).div_ceil(3);
    (head, keep - head)
}

/// `n` and the noun for it: `1 more item`, `12,345 more items`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{} {}", group(n), if n == 1 { one } else { many })
}

/// `n` with thousands separated by commas: `12,345`.
pub fn group(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
#[path = "elide_tests.rs"]
mod tests;
