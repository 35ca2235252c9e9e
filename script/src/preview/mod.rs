//! A static preview of the tool calls a script may make, for approval prompts and
//! `codemode check`: UX only, never enforcement (enforcement is per call, on the real name).
//!
//! See [`extract_tool_calls`].

mod extract;
mod finder;
pub(crate) mod lines;
mod result_use;
mod stack;
mod threads;

pub use extract::{extract_tool_calls, locate_syntax_error, normalize_with_preview};
pub use result_use::{ResultUse, result_use};
pub(crate) use stack::{ON_THIS_THREAD_BYTES, PREVIEW_STACK_BYTES};

use oxc_allocator::Allocator;
use oxc_ast_visit::Visit;
use oxc_parser::{ParseOptions, Parser, ParserReturn};
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

/// The largest script [`extract_tool_calls`] parses (64 KiB); larger ones get a
/// [`ParseErrorInfo`] saying so, and no calls.
pub const MAX_PREVIEW_CODE_BYTES: usize = 64 * 1024;

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

/// The call sites of plain JavaScript (already normalised).
pub(crate) fn find_calls(code: &str) -> Preview {
    let allocator = Allocator::default();
    let ret = parse(&allocator, code);
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

/// Parses a script body (plain JavaScript, already normalised): top-level `return` and
/// `await` allowed.
fn parse<'a>(allocator: &'a Allocator, code: &'a str) -> ParserReturn<'a> {
    let options = ParseOptions {
        allow_return_outside_function: true,
        ..ParseOptions::default()
    };
    let parse = |source_type| {
        Parser::new(allocator, code, source_type)
            .with_options(options)
            .parse()
    };
    // "Unambiguous" accepts sloppy-mode scripts and top-level `await`, but not a top-level
    // `for await`: that needs a module, tried when the first parse fails.
    let ret = parse(SourceType::unambiguous());
    if ret.diagnostics.has_errors() {
        let module = parse(SourceType::mjs());
        if !module.diagnostics.has_errors() {
            return module;
        }
    }
    ret
}

#[cfg(test)]
mod tests;
