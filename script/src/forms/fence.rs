//! A script wrapped in one markdown fence (```` ```ts … ``` ````): the fence lines become empty
//! lines, so every other line keeps its number and its columns.

use std::borrow::Cow;

use super::ScriptError;

/// The language a fence names (```` ```ts ````), which decides which parse is tried first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// ```` ```js ````, ```` ```javascript ````, ```` ```mjs ````.
    JavaScript,
    /// ```` ```ts ````, ```` ```typescript ````, ```` ```mts ````.
    TypeScript,
}

/// The language tags a fence may carry, and what each means.
const TAGS: &[(&str, Option<Language>)] = &[
    ("", None),
    ("js", Some(Language::JavaScript)),
    ("javascript", Some(Language::JavaScript)),
    ("mjs", Some(Language::JavaScript)),
    ("ts", Some(Language::TypeScript)),
    ("typescript", Some(Language::TypeScript)),
    ("mts", Some(Language::TypeScript)),
];

/// The code without its fence, and the fence's language (`None`: no fence, or a bare one).
pub(super) struct Unfenced<'s> {
    pub(super) code: Cow<'s, str>,
    pub(super) language: Option<Language>,
}

/// One line of the text: its content and its line terminator (`""` on the last line).
struct Line<'s> {
    number: u32,
    content: &'s str,
    ending: &'s str,
}

fn lines(src: &str) -> impl Iterator<Item = Line<'_>> {
    let mut rest = src;
    let mut number = 0u32;
    std::iter::from_fn(move || {
        if rest.is_empty() && number > 0 {
            return None;
        }
        number = number.saturating_add(1);
        let (content, ending, next) = match rest.find(['\n', '\r']) {
            Some(i) => {
                let len = if rest[i..].starts_with("\r\n") { 2 } else { 1 };
                (&rest[..i], &rest[i..i + len], &rest[i + len..])
            }
            None => (rest, "", ""),
        };
        rest = next;
        Some(Line {
            number,
            content,
            ending,
        })
    })
}

/// The tag of a fence line (```` ```ts ```` → `ts`), or `None` when the line is not a fence.
fn fence_tag(line: &str) -> Option<&str> {
    line.trim().strip_prefix("```").map(str::trim)
}

/// Removes the fence around `src` when its first non-blank line opens one.
///
/// A fenced script is one fenced block with nothing but whitespace around it. The block must be
/// closed; a second block, or text after the block, is an error (send one script). Text before
/// the opening fence means the script is not fenced at all: it goes to the parser as it is.
pub(super) fn unfence(src: &str) -> Result<Unfenced<'_>, ScriptError> {
    let not_fenced = Unfenced {
        code: Cow::Borrowed(src),
        language: None,
    };
    let mut all = lines(src);
    let Some(open) = all.by_ref().find(|l| !l.content.trim().is_empty()) else {
        return Ok(not_fenced);
    };
    let Some(tag) = fence_tag(open.content) else {
        return Ok(not_fenced);
    };
    let language = match TAGS.iter().find(|(t, _)| t.eq_ignore_ascii_case(tag)) {
        Some((_, language)) => *language,
        None => {
            return Err(ScriptError::at(
                open.number,
                1,
                format!(
                    "a ```{} fenced block: codemode runs JavaScript or TypeScript (```js, ```ts, or a bare ```)",
                    tag.chars().take(40).collect::<String>()
                ),
            ));
        }
    };
    let mut out = String::with_capacity(src.len());
    // Everything up to the opening fence is blank: keep its line breaks only.
    for line in lines(src).take(open.number as usize - 1) {
        out.push_str(line.ending);
    }
    out.push_str(open.ending);
    let mut closed = false;
    for line in all {
        if !closed {
            if fence_tag(line.content) == Some("") {
                closed = true;
                out.push_str(line.ending);
            } else {
                out.push_str(line.content);
                out.push_str(line.ending);
            }
            continue;
        }
        if line.content.trim().is_empty() {
            out.push_str(line.content);
            out.push_str(line.ending);
        } else if fence_tag(line.content).is_some() {
            return Err(ScriptError::at(
                line.number,
                1,
                "a second fenced code block: send one script (one block, or the code alone)",
            ));
        } else {
            return Err(ScriptError::at(
                line.number,
                1,
                "text after the fenced code block: send only the code",
            ));
        }
    }
    if !closed {
        return Err(ScriptError::at(
            open.number,
            1,
            "the ``` fence opened here is never closed: end the code with a ``` line",
        ));
    }
    Ok(Unfenced {
        code: Cow::Owned(out),
        language,
    })
}
