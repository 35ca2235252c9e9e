//! A static preview of the tool calls a script may make, for approval prompts and
//! `codemode check`: UX only, never enforcement (enforcement is per call, on the real name).
//!
//! See [`extract_tool_calls`].

mod finder;
pub(crate) mod lines;
mod threads;

use oxc_allocator::Allocator;
use oxc_ast_visit::Visit;
use oxc_parser::{ParseOptions, Parser};
use oxc_span::SourceType;
use serde::{Deserialize, Serialize};

use lines::LineIndex;

/// The tool calls found in a script, and its syntax error if any.
///
/// Serialises to exactly
/// `{"calls": [{"tool", "line", "column", "dynamic"}], "parse_error": null | {"message", "line", "column"}}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preview {
    /// The call sites, in source order.
    pub calls: Vec<PreviewCall>,
    /// The first syntax error, if the script does not parse. `calls` then holds what the
    /// parser recovered, which may be incomplete.
    pub parse_error: Option<ParseErrorInfo>,
}

/// One call site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviewCall {
    /// The tool's name; `None` when it is computed at run time (`dynamic`).
    pub tool: Option<String>,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
    /// `true` when the name cannot be known statically: a computed key (`codemode[k]`) or the
    /// `codemode` object escaping into a variable or a call.
    pub dynamic: bool,
}

/// A syntax error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParseErrorInfo {
    /// The parser's message, e.g. ``Expected `)` but found `EOF` ``.
    pub message: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
}

impl Preview {
    /// The distinct tool names called statically, sorted.
    pub fn tools(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .calls
            .iter()
            .filter_map(|c| c.tool.as_deref())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Whether any call site's tool cannot be known statically.
    pub fn has_dynamic(&self) -> bool {
        self.calls.iter().any(|c| c.dynamic)
    }
}

/// Finds the `codemode.<tool>(…)` call sites of a script, without running it.
///
/// `code` may be a script body (top-level `await` and `return` allowed) or an
/// `async () => { … }` expression, in any of the forms [`normalize`](crate::normalize) accepts
/// (a fence, `export default`, TypeScript); positions are in `code` as written. Never fails: a syntax error is reported in
/// [`Preview::parse_error`], and so is a script larger than [`MAX_PREVIEW_CODE_BYTES`].
/// CPU-bound and brief (a script longer than a few hundred bytes is parsed on one of a few
/// long-lived threads with a large stack, so that deeply nested code cannot overflow the
/// caller's).
///
/// # What is found
///
/// | Code | Entry |
/// |---|---|
/// | `codemode.x(…)`, `codemode["x"](…)`, ``codemode[`x`](…)`` | tool `x` |
/// | `codemode.x?.(…)`, `codemode?.x(…)`, `(codemode).x(…)`, `(codemode.x)(…)` | tool `x` |
/// | `const { x } = codemode; x(…)`, `const { x: y } = codemode; y(…)` | tool `x` at each call |
/// | `const f = codemode.x; f(…)` | tool `x` at each call |
/// | `codemode[k](…)`, ``codemode[`${k}`](…)`` | dynamic (tool `null`) |
/// | `const c = codemode`, `f(codemode)`, `{ codemode }` — the object escapes | one dynamic entry there |
/// | `c.x(…)` where `const c = codemode` | tool `x` as well (besides the dynamic alias entry) |
/// | `codemode.x` not called directly (`list.map(codemode.x)`, `codemode.x.call(…)`) | tool `x` |
///
/// Calls nested in arguments (`codemode.a(await codemode.b())`) are all found, in source
/// order.
///
/// # Scoping (best effort)
///
/// A local binding named `codemode` (a parameter, `let`/`const`/`var`, a function or class
/// name, an import) shadows the global one in its scope: `codemode.x()` there is not reported.
/// Scopes are tracked syntactically (functions, blocks, loops, `catch`), and a binding counts
/// from its declaration on: `var` hoisting and uses before a declaration are not modelled, and
/// neither is `with`. The same holds for destructured and aliased names.
///
/// # Positions
///
/// Lines and columns are 1-based; columns count characters (Unicode scalar values), not bytes.
/// A call's position is the start of the call expression (its callee). Line breaks are `\n`,
/// `\r\n`, `\r`, U+2028 and U+2029, as in JavaScript.
///
/// # Example
///
/// ```
/// use codemode_policies::extract_tool_calls;
/// let p = extract_tool_calls("const r = await codemode.github__search({q: 'x'});\nreturn codemode[name](r);");
/// assert_eq!(p.tools(), ["github__search"]);
/// assert!(p.has_dynamic());
/// assert_eq!(serde_json::to_value(&p).unwrap()["calls"][1],
///            serde_json::json!({"tool": null, "line": 2, "column": 8, "dynamic": true}));
/// ```
pub fn extract_tool_calls(code: &str) -> Preview {
    let failed = |message: String| Preview {
        calls: Vec::new(),
        parse_error: Some(ParseErrorInfo {
            message,
            line: 1,
            column: 1,
        }),
    };
    if code.len() > MAX_PREVIEW_CODE_BYTES {
        return failed(format!(
            "the script is too large to preview ({} bytes; the limit is {MAX_PREVIEW_CODE_BYTES})",
            code.len()
        ));
    }
    // The parser and the visitor recurse once per nesting level (up to ~2 KiB of stack each,
    // unoptimised), and nesting is bounded only by the length: run them on a thread whose
    // stack fits the worst case of a script at the size limit. The stack is reserved, not
    // committed: only a deeply nested script touches much of it.
    match on_parse_stack(code, extract_on_this_thread) {
        Ok(Ok(preview)) => preview,
        Ok(Err(_panic)) => failed("the preview failed: the parser panicked".into()),
        Err(e) => failed(format!("the preview failed: cannot start its thread: {e}")),
    }
}

/// The largest script [`extract_tool_calls`] parses (64 KiB); larger ones get a
/// [`ParseErrorInfo`] saying so, and no calls.
pub const MAX_PREVIEW_CODE_BYTES: usize = 64 * 1024;

/// Stack of the preview thread: room for `MAX_PREVIEW_CODE_BYTES` nesting levels, twice over.
pub(crate) const PREVIEW_STACK_BYTES: usize = 256 << 20;

/// Scripts of at most this many bytes are parsed on the calling thread. A nesting level takes
/// at least one byte, so their parse recurses at most this deep: at ~2 KiB of stack a level
/// (unoptimised), 512 KiB, within a thread's default 2 MiB. Longer ones are handed to a parse
/// thread ([`threads`]: kept, so that no eval starts a thread of its own).
pub(crate) const ON_THIS_THREAD_BYTES: usize = 256;

/// Runs `parse(code)` where its recursion fits: on the calling thread for a script of at most
/// [`ON_THIS_THREAD_BYTES`], else on a parse thread with [`PREVIEW_STACK_BYTES`] of stack (with
/// a copy of `code`: the threads outlive the call). `Ok(Err(_))`: the parser panicked (a bug in
/// oxc); `Err`: no thread was idle and none could start.
pub(crate) fn on_parse_stack<T: Send + 'static>(
    code: &str,
    parse: fn(&str) -> T,
) -> std::io::Result<std::thread::Result<T>> {
    if code.len() <= ON_THIS_THREAD_BYTES {
        return Ok(std::panic::catch_unwind(|| parse(code)));
    }
    let code = code.to_owned();
    threads::run(code.len(), move || parse(&code))
}

fn extract_on_this_thread(code: &str) -> Preview {
    // Fenced, `export default` or TypeScript code: its JavaScript, at the same positions.
    let code = match crate::script::normalize_on_this_thread(code) {
        Ok(code) => code,
        Err(e) => {
            return Preview {
                calls: Vec::new(),
                parse_error: Some(ParseErrorInfo {
                    message: e.message,
                    line: e.line,
                    column: e.column,
                }),
            };
        }
    };
    find_calls(&code)
}

/// The call sites of plain JavaScript (already normalised).
pub(crate) fn find_calls(code: &str) -> Preview {
    let allocator = Allocator::default();
    let options = ParseOptions {
        allow_return_outside_function: true,
        ..ParseOptions::default()
    };
    let parse = |source_type| {
        Parser::new(&allocator, code, source_type)
            .with_options(options)
            .parse()
    };
    // "Unambiguous" accepts sloppy-mode scripts and top-level `await`, but not a top-level
    // `for await`: that needs a module, tried when the first parse fails.
    let mut ret = parse(SourceType::unambiguous());
    if ret.diagnostics.has_errors() {
        let module = parse(SourceType::mjs());
        if !module.diagnostics.has_errors() {
            ret = module;
        }
    }
    let lines = LineIndex::new(code);

    let mut finder = finder::Finder::default();
    finder.visit_program(&ret.program);
    let calls = finder
        .hits
        .into_iter()
        .map(|hit| {
            let (line, column) = lines.line_column(hit.offset);
            PreviewCall {
                dynamic: hit.tool.is_none(),
                tool: hit.tool,
                line,
                column,
            }
        })
        .collect();

    let parse_error = ret.diagnostics.errors().next().map(|d| {
        let label = d.labels.iter().find(|l| l.primary()).or(d.labels.first());
        let (line, column) = lines.line_column(label.map_or(0, |l| l.offset()));
        ParseErrorInfo {
            message: d.message.to_string(),
            line,
            column,
        }
    });
    Preview { calls, parse_error }
}

#[cfg(test)]
mod tests;

/// Gives a syntax error from the sandbox the exact position oxc finds.
///
/// QuickJS reports the line of a syntax error well but not its column, so the runtime leaves
/// the column out; when oxc also rejects the code, its line and column replace the sandbox's
/// (the sandbox's message is kept). Other errors, and code oxc accepts, are left as they are.
pub fn locate_syntax_error(code: &str, error: &mut codemode_runtime::EvalError) {
    if error.kind != codemode_runtime::ErrorKind::Syntax {
        return;
    }
    if let Some(found) = extract_tool_calls(code).parse_error
        && found.line > 0
    {
        error.line = Some(found.line);
        error.column = Some(found.column);
    }
}
