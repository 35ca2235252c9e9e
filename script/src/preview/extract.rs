//! The preview of a script as written: [`extract_tool_calls`] normalises it (a fence,
//! `export default`, TypeScript) and finds its calls; [`normalize_with_preview`] does both for
//! an eval; [`locate_syntax_error`] places a sandbox's syntax error.

use std::borrow::Cow;

use super::{MAX_PREVIEW_CODE_BYTES, ParseErrorInfo, Preview, find_calls, on_parse_stack};
use crate::ScriptError;
use crate::forms::{MAX_NORMALIZE_BYTES, changed, normalize_on_this_thread};

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
/// | `globalThis.codemode.x(…)`, `this["codemode"].x(…)` (also `self`, `window`, `global`) | tool `x` |
/// | `eval(…)`, `Function(…)`, `new Function(…)`, `f.constructor`, `globalThis.eval` — code run from a string | dynamic, where it is named |
/// | `globalThis[k]`, `globalThis["code" + "mode"]`, a bare `globalThis` (`Reflect.get(globalThis, k)`) | dynamic |
///
/// Calls nested in arguments (`codemode.a(await codemode.b())`) are all found, in source
/// order.
///
/// # Scoping (best effort)
///
/// A local binding named `codemode` (a parameter, `let`/`const`/`var`, a function or class
/// name, an import) shadows the global one in its scope: `codemode.x()` there is not reported;
/// likewise for `eval`, `Function` and the global object's names. `this` is taken for the
/// global object everywhere (a script's top level runs without a receiver), so `this[k]` in a
/// method is a dynamic entry too. A computed key on any other object (`[].map[k]`, which may be
/// `"constructor"`) is not reported: the preview shows what a script names, it does not bound
/// what it can reach.
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
/// use codemode_script::extract_tool_calls;
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

pub(super) fn extract_on_this_thread(code: &str) -> Preview {
    // Fenced, `export default` or TypeScript code: its JavaScript, at the same positions.
    let code = match normalize_on_this_thread(code) {
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

/// [`normalize`](crate::normalize), and the [`Preview`] of the resulting JavaScript, in one go: what an eval
/// needs before it starts, for one hand-off to a parse thread instead of two. The preview is
/// the same as [`extract_tool_calls`] of `code` would give.
///
/// # Errors
///
/// As [`normalize`](crate::normalize).
pub fn normalize_with_preview(code: &str) -> Result<(Cow<'_, str>, Preview), ScriptError> {
    if code.len() > MAX_NORMALIZE_BYTES {
        return Ok((Cow::Borrowed(code), extract_tool_calls(code)));
    }
    let spawned = on_parse_stack(code, |code| {
        let script = normalize_on_this_thread(code)?;
        let preview = find_calls(&script);
        Ok((changed(script), preview))
    });
    match spawned {
        Ok(Ok(result)) => result
            .map(|(script, preview)| (script.map_or(Cow::Borrowed(code), Cow::Owned), preview)),
        // A parser panic is a bug in oxc: the sandbox gets the code as it is and reports.
        Ok(Err(_)) | Err(_) => Ok((Cow::Borrowed(code), extract_tool_calls(code))),
    }
}

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
