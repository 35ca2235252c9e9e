//! JavaScript as models write it, read without running it — the one crate of codemode that
//! parses JavaScript (with [oxc](https://oxc.rs)).
//!
//! - [`normalize`] turns a markdown fence, `export default async () => {…}` or TypeScript into
//!   the plain JavaScript the sandbox runs, every line and column where the user wrote it (so
//!   errors, stacks and call sites need no mapping); [`ScriptError`] says what and where when it
//!   cannot.
//! - [`extract_tool_calls`] lists a script's `codemode.<tool>(…)` call sites, the [`Preview`] an
//!   approval prompt and `codemode check` show. It is a preview, never enforcement: a name
//!   computed at run time is only flagged as dynamic.
//! - [`normalize_with_preview`] does both in one parse (what an eval does);
//!   [`locate_syntax_error`] puts the sandbox's syntax error at its token; [`result_use`] names
//!   the tool whose result a failing property access was on.
//!
//! Deep nesting makes a parser recurse: scripts past a few hundred bytes are parsed on the
//! runtime's [`ThreadPool`](codemode_runtime::ThreadPool) with deep stacks, never on the
//! caller's thread, and any input, however nested, gets an answer rather than a stack overflow.
//!
//! # Example
//!
//! ```
//! use codemode_script::{extract_tool_calls, normalize};
//!
//! let written = "```ts\nconst r: { n: number } = await codemode.fs__read({ path: \"/x\" });\nreturn r.n;\n```";
//! let js = normalize(written)?;
//! assert_eq!(js.lines().nth(1), Some("const r                = await codemode.fs__read({ path: \"/x\" });"));
//!
//! let preview = extract_tool_calls(&js);
//! assert_eq!(preview.calls.len(), 1);
//! assert_eq!(preview.calls[0].tool.as_deref(), Some("fs__read"));
//! assert_eq!((preview.calls[0].line, preview.calls[0].column), (2, 32));
//! # Ok::<(), codemode_script::ScriptError>(())
//! ```

#![doc(test(attr(deny(warnings))))]

mod forms;
mod preview;

pub use forms::{Language, MAX_NORMALIZE_BYTES, ScriptError, normalize};
pub use preview::{
    MAX_PREVIEW_CODE_BYTES, ParseErrorInfo, Preview, PreviewCall, ResultUse, extract_tool_calls,
    locate_syntax_error, normalize_with_preview, result_use,
};
