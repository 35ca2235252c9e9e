//! What a write would change, for an approval prompt: the current content and the new one as a
//! unified diff, each line framed and neutralised like the argument summary
//! ([`crate::summarize_args`]).

use std::fmt::Write as _;

use similar::{ChangeTag, TextDiff};

use crate::display::{ARGS_VALUE_PREVIEW_CHARS, bounded};

/// The largest content (current or new) diffed, in bytes; past it the prompt says so.
pub const MAX_DIFF_BYTES: usize = 256 * 1024;
/// The most diff lines shown; the rest are counted.
const MAX_DIFF_LINES: usize = 60;
/// Unchanged lines shown around each change.
const CONTEXT_LINES: usize = 3;

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
/// and bounded to 200 characters, so no content can fake a line of the prompt; hunk headers and
/// what is left out after [`MAX_DIFF_LINES`] lines follow `    ┆`.
///
/// [`neutralize`]: crate::neutralize
///
/// ```
/// use codemode_policies::change_summary;
/// let shown = change_summary("a\nb\n", "a\nc\n");
/// assert_eq!(shown, "Changes to the current content (2 lines → 2 lines):\n    ┆ @@ -1,2 +1,2 @@\n    │ a\n    │-b\n    │+c\n");
/// ```
pub fn change_summary(current: &str, new: &str) -> String {
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
    let mut shown = 0;
    let mut left_out = 0;
    for hunk in diff
        .unified_diff()
        .context_radius(CONTEXT_LINES)
        .iter_hunks()
    {
        if shown < MAX_DIFF_LINES {
            let _ = writeln!(out, "    ┆ {}", hunk.header());
        }
        for change in hunk.iter_changes() {
            if shown >= MAX_DIFF_LINES {
                left_out += 1;
                continue;
            }
            shown += 1;
            let sign = match change.tag() {
                ChangeTag::Delete => '-',
                ChangeTag::Insert => '+',
                ChangeTag::Equal => ' ',
            };
            let text = change.value();
            let text = text.strip_suffix('\n').unwrap_or(text);
            let _ = writeln!(
                out,
                "    │{sign}{}",
                bounded(text, ARGS_VALUE_PREVIEW_CHARS)
            );
        }
    }
    if left_out > 0 {
        let _ = writeln!(out, "    ┆ … ({left_out} more diff lines) …");
    }
    out
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
    fn long_diffs_are_cut_and_large_contents_refused() {
        let current: String = (0..200).map(|i| format!("{i}\n")).collect();
        let new: String = (0..200).map(|i| format!("{}\n", i * 2)).collect();
        let shown = change_summary(&current, &new);
        assert_eq!(
            shown.lines().filter(|l| l.starts_with("    │")).count(),
            MAX_DIFF_LINES
        );
        assert!(shown.ends_with(" more diff lines) …\n"), "{shown}");
        let big = "x".repeat(MAX_DIFF_BYTES + 1);
        assert_eq!(
            change_summary(&big, "y"),
            "No diff: the current content is 262145 bytes and the new one 1; diffs are shown up to 256 KiB.\n"
        );
    }
}
