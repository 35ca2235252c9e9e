//! Code as models write it: a markdown fence, `export default async () => {…}`, TypeScript.
//!
//! [`normalize`] turns any of these into the plain JavaScript the sandbox runs, keeping every
//! line and column where the user wrote it, so that errors, stacks and call sites need no
//! mapping. `codemode run`, the MCP server's eval tools (both through the host's
//! `GovernedEval`), `codemode check` and [`extract_tool_calls`](crate::extract_tool_calls) all
//! accept the same forms.

mod error;
mod fence;
mod strip;

pub use error::ScriptError;
pub use fence::Language;

use std::borrow::Cow;

use oxc_allocator::Allocator;
use oxc_ast_visit::Visit;
use oxc_parser::{ParseOptions, Parser, ParserReturn};
use oxc_span::SourceType;

use crate::preview::lines::LineIndex;

/// The largest script [`normalize`] parses (64 KiB, as the preview's
/// [`MAX_PREVIEW_CODE_BYTES`](crate::MAX_PREVIEW_CODE_BYTES)); a larger one is passed on
/// unchanged (plain JavaScript still runs; a fence or TypeScript is then the sandbox's syntax
/// error).
pub const MAX_NORMALIZE_BYTES: usize = crate::preview::MAX_PREVIEW_CODE_BYTES;

/// Turns a script as a model wrote it into plain JavaScript with every line and column where
/// it was.
///
/// | Written | Runs as |
/// |---|---|
/// | plain JavaScript (a body, or `async () => {…}`) | itself, byte for byte (borrowed) |
/// | one ```` ```js ````/```` ```ts ````/```` ```javascript ````/```` ```typescript ````/bare ```` ``` ```` fence, whitespace around | the code, fence lines left empty |
/// | `export default async () => {…}`, `export default async function main() {…}` | `;0, async …` (its value is called and awaited) |
/// | TypeScript types (annotations, `interface`, `type`, `as`, `satisfies`, `!`, generics, `declare`, `x?:`, `x!:`, `import type`, overloads, `implements`, `public`/`private`/`readonly` …) | blanked with spaces, line breaks kept |
///
/// Code is read as TypeScript first (JavaScript under a ```` ```js ```` fence), then as the
/// other when that fails. Valid JavaScript has no type syntax and so comes out unchanged; the
/// one difference is `f<T>(x)`, a generic call in TypeScript and a comparison in JavaScript
/// (fence such code as ```` ```js ```` to keep the comparison). When both parses fail, the one
/// that got further decides: TypeScript's error is returned, JavaScript's is left to the
/// sandbox (the code is passed on unchanged, and the sandbox reports it).
///
/// # Errors
///
/// A [`ScriptError`] with the position in `code` for: a fence with another language, a fence
/// never closed, a second fenced block or text after it; a TypeScript syntax error; TypeScript
/// that needs a transform (`enum`, `namespace`/`module` with values, parameter properties,
/// decorators, `import x = …`, `export =`).
///
/// # Example
///
/// ```
/// use codemode_script::normalize;
/// let code = "```ts\nconst n: number = 1;\nreturn n as number;\n```\n";
/// assert_eq!(normalize(code).unwrap(), "\nconst n         = 1;\nreturn n          ;\n\n");
/// let plain = "return 1 + 1;";
/// assert!(matches!(normalize(plain).unwrap(), std::borrow::Cow::Borrowed(p) if p == plain));
/// ```
pub fn normalize(code: &str) -> Result<Cow<'_, str>, ScriptError> {
    if code.len() > MAX_NORMALIZE_BYTES {
        return Ok(Cow::Borrowed(code));
    }
    let spawned =
        crate::preview::on_parse_stack(code, |code| normalize_on_this_thread(code).map(changed));
    match spawned {
        Ok(Ok(result)) => result.map(|script| script.map_or(Cow::Borrowed(code), Cow::Owned)),
        // A parser panic is a bug in oxc: the sandbox gets the code as it is and reports.
        Ok(Err(_panic)) => Ok(Cow::Borrowed(code)),
        Err(_cannot_spawn) => Ok(Cow::Borrowed(code)),
    }
}

/// A normalised script that owns its text: `None` when it is the code as given (the only
/// script [`normalize_on_this_thread`] borrows), so that a parse thread's result is `'static`
/// and the caller borrows its own code again.
pub(crate) fn changed(script: Cow<'_, str>) -> Option<String> {
    match script {
        Cow::Borrowed(_) => None,
        Cow::Owned(script) => Some(script),
    }
}

/// The most `<` a script may have to be parsed as TypeScript (see [`normalize_on_this_thread`]):
/// a bound on oxc's worst case (about 10 MB at this count), not on real scripts' generics.
pub(crate) const MAX_TS_ANGLE_BRACKETS: usize = 24;

/// [`normalize`] on the calling thread (whose stack must fit the code's nesting).
pub(crate) fn normalize_on_this_thread(code: &str) -> Result<Cow<'_, str>, ScriptError> {
    let unfenced = fence::unfence(code)?;
    let src: &str = &unfenced.code;
    let allocator = Allocator::default();
    // TypeScript is (nearly) a superset: valid JavaScript parses as TypeScript without a
    // single type node, and so comes out unchanged. Only a ```js fence asks for JavaScript's
    // reading of the few forms the two read differently (`f<T>(x)`: a comparison in JavaScript).
    // oxc's TypeScript parser can take memory exponential in the number of `<` on some invalid
    // inputs (363 bytes with 39 `<` took 8 GB; found by the `preview` fuzz target): past
    // `MAX_TS_ANGLE_BRACKETS`, the code is read as JavaScript only, and one that is not valid
    // JavaScript goes to the sandbox as written, which reports its syntax error.
    if src.bytes().filter(|&b| b == b'<').count() > MAX_TS_ANGLE_BRACKETS {
        let js = parse(&allocator, src, Language::JavaScript);
        return Ok(if js.diagnostics.has_errors() {
            unfenced.code
        } else {
            let mut stripper = strip::Stripper::new(src);
            stripper.visit_program(&js.program);
            if stripper.is_empty() {
                unfenced.code
            } else {
                Cow::Owned(stripper.apply())
            }
        });
    }
    let order = match unfenced.language {
        Some(Language::JavaScript) => [Language::JavaScript, Language::TypeScript],
        _ => [Language::TypeScript, Language::JavaScript],
    };
    let first = parse(&allocator, src, order[0]);
    let chosen = if first.diagnostics.has_errors() {
        let second = parse(&allocator, src, order[1]);
        if second.diagnostics.has_errors() {
            let (js, ts) = match order[0] {
                Language::JavaScript => (&first, &second),
                Language::TypeScript => (&second, &first),
            };
            let (js_at, ts_at) = (error_offset(js), error_offset(ts));
            if ts_at > js_at {
                let lines = LineIndex::new(src);
                let (line, column) = lines.line_column(ts_at);
                let message = ts
                    .diagnostics
                    .errors()
                    .next()
                    .map(|d| d.message.to_string())
                    .unwrap_or_default();
                return Err(ScriptError::at(line, column, message));
            }
            // The sandbox reports JavaScript's error (located by oxc afterwards).
            return Ok(unfenced.code);
        }
        second
    } else {
        first
    };
    let mut stripper = strip::Stripper::new(src);
    stripper.visit_program(&chosen.program);
    if let Some((offset, message)) = stripper.error.take() {
        let (line, column) = LineIndex::new(src).line_column(offset);
        return Err(ScriptError::at(line, column, message));
    }
    if stripper.is_empty() {
        return Ok(unfenced.code);
    }
    Ok(Cow::Owned(stripper.apply()))
}

/// Parses `src` as a script body (top-level `await` and `return` allowed), or as a module when
/// that fails (a top-level `for await`, `export default`).
fn parse<'a>(allocator: &'a Allocator, src: &'a str, language: Language) -> ParserReturn<'a> {
    let options = ParseOptions {
        allow_return_outside_function: true,
        ..ParseOptions::default()
    };
    let base = match language {
        Language::JavaScript => SourceType::unambiguous(),
        Language::TypeScript => SourceType::ts(),
    };
    let run = |source_type| {
        Parser::new(allocator, src, source_type)
            .with_options(options)
            .parse()
    };
    let ret = run(base);
    if ret.diagnostics.has_errors() {
        let module = run(base.with_module(true));
        if !module.diagnostics.has_errors() {
            return module;
        }
    }
    ret
}

/// Where a failed parse's first error is (byte offset).
fn error_offset(ret: &ParserReturn<'_>) -> u32 {
    ret.diagnostics
        .errors()
        .next()
        .and_then(|d| {
            let label = d.labels.iter().find(|l| l.primary()).or(d.labels.first());
            label.map(|l| l.offset())
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
