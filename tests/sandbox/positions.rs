//! Where a tool call's failure points: the call's site in the user's code, in `error.line` and
//! `error.column` when uncaught and in the error's `stack` when caught; warnings a tool raises
//! placed at its call; hints for a tool name written with a dash.

use codemode_runtime::{
    BoxFuture, CallContext, ErrorKind, EvalOptions, ToolError, ToolHost, Warning,
};
use serde_json::{Value, json};

use crate::{basic_tools, eval_with, failed_in, ok, opts, show};

/// `(what, tool call as written, message of the uncaught error)`, each a different way for a
/// call to fail on the tool side.
const REJECTIONS: &[(&str, &str, &str)] = &[
    (
        "unknown tool",
        "codemode.nope({})",
        "UnknownToolError: unknown tool `nope`",
    ),
    (
        "tool failure",
        "codemode.fail({})",
        "ToolError: disk on fire",
    ),
    (
        "denial",
        "codemode.deny({})",
        "ToolCallDeniedError: writes are not allowed",
    ),
    (
        "invalid arguments",
        "codemode.add({a: 1, b: 'x'})",
        "ToolError: b must be a number",
    ),
    (
        "timeout of the call",
        "codemode.slow({})",
        "ToolError: `slow` timed out after 5s",
    ),
];

fn tools() -> codemode_runtime::FnTools {
    basic_tools().sync_tool("slow", |_| {
        Err(ToolError::failed("`slow` timed out after 5s"))
    })
}

/// The column QuickJS reports for a call `codemode.<name>(…)` starting at `at` (1-based): its
/// name's first character.
fn call_column(line: &str, call: &str) -> u32 {
    let at = line.find(call).expect("the call is on the line");
    (at + "codemode.".len() + 1) as u32
}

#[tokio::test]
async fn an_uncaught_rejection_is_reported_at_its_call() {
    for (what, call, message) in REJECTIONS {
        // Each code form: a plain script, one with `await`, one with `return`, an async arrow.
        let forms = [
            (format!("const a = 1;\n  {call}.then(() => 1)"), 2),
            (format!("const a = 1;\nconst b = 2;\n    await {call};"), 3),
            (format!("const a = 1;\n\n await {call};\nreturn a"), 3),
            (
                format!("async () => {{\n  const a = 1;\n  await {call};\n}}"),
                3,
            ),
        ];
        for (code, line) in forms {
            let outcome = eval_with(&code, &opts(), &tools()).await;
            let error = failed_in(what, &outcome, ErrorKind::Exception);
            let column = call_column(code.lines().nth(line - 1).unwrap(), call);
            assert_eq!(&error.message, message, "{what}: {code}");
            assert_eq!(
                (error.line, error.column),
                (Some(line as u32), Some(column)),
                "{what}: {code}: {}",
                show(&outcome)
            );
            let name = call["codemode.".len()..].split('(').next().unwrap();
            assert_eq!(
                error.stack.as_deref(),
                Some(format!("    at codemode.{name} (script.js:{line}:{column})\n").as_str()),
                "{what}: {code}"
            );
            assert_eq!(outcome.tool_calls.len(), 1, "{what}: {code}");
        }
    }
}

#[tokio::test]
async fn a_caught_rejection_has_its_call_in_its_stack() {
    for (what, call, _) in REJECTIONS {
        let code = format!(
            "const a = 1;\nlet stack;\ntry {{\n  await {call};\n}} catch (e) {{\n  stack = e.stack;\n}}\nstack"
        );
        let outcome = eval_with(&code, &opts(), &tools()).await;
        let column = call_column(code.lines().nth(3).unwrap(), call);
        let name = call["codemode.".len()..].split('(').next().unwrap();
        assert_eq!(
            ok(&outcome),
            &json!(format!("    at codemode.{name} (script.js:4:{column})\n")),
            "{what}"
        );
        // `console.log` of the caught error shows the same position.
        let code = format!("try {{ await {call}; }} catch (e) {{ console.log(e); }}\n1");
        let logged = eval_with(&code, &opts(), &tools()).await;
        let column = call_column(&code, call);
        assert!(
            logged.logs[0]
                .message
                .ends_with(&format!("\n    at codemode.{name} (script.js:1:{column})")),
            "{what}: {}",
            show(&logged)
        );
    }
}

/// Answers `{}` and warns through its call context.
struct Warns;

impl ToolHost for Warns {
    fn call<'a>(
        &'a self,
        name: &'a str,
        _args: Value,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            cx.warn(format!("{name} looks odd"));
            Ok(json!({}))
        })
    }
    fn tool_names(&self) -> Vec<String> {
        vec!["odd".into(), "strange".into()]
    }
}

#[tokio::test]
async fn a_tools_warning_is_placed_at_its_call() {
    let code = "const a = await codemode.odd();\nconst b = [1, 2].map(async () => {\n    return codemode.strange({});\n});\nawait Promise.all(b);\nreturn 1";
    let outcome = eval_with(code, &opts(), &Warns).await;
    assert_eq!(ok(&outcome), &json!(1));
    let warning = |message: &str, line, column| Warning {
        message: message.into(),
        line: Some(line),
        column: Some(column),
    };
    assert_eq!(
        outcome.warnings,
        [
            warning("odd looks odd", 1, 26),
            warning("strange looks odd", 3, 21),
            warning("strange looks odd", 3, 21),
        ],
        "{}",
        show(&outcome)
    );
}

/// `codemode.everything__get-sum(...)` is a subtraction: `sum` is not defined, or the tool the
/// script reached is `everything__get`. Both say how to write the dashed name.
#[tokio::test]
async fn a_tool_name_with_a_dash_written_as_an_identifier_gets_a_hint() {
    let tools = basic_tools().sync_tool("everything__get-sum", |_| Ok(json!(3)));
    let outcome = eval_with(
        "const a = 1;\nconst n = await codemode.everything__get-sum({a: 1, b: 2});\nn",
        &opts(),
        &tools,
    )
    .await;
    let error = failed_in("reference error", &outcome, ErrorKind::Exception);
    assert_eq!(
        error.message,
        "ReferenceError: sum is not defined (`codemode.everything__get-sum` subtracts: to call the tool \"everything__get-sum\", write codemode[\"everything__get-sum\"](...))"
    );
    assert_eq!((error.line, error.column), (Some(2), Some(42)));
    assert!(outcome.tool_calls.is_empty());

    let outcome = eval_with("await codemode.everything__get({})", &opts(), &tools).await;
    let error = failed_in("unknown prefix", &outcome, ErrorKind::Exception);
    assert_eq!(
        error.message,
        "UnknownToolError: unknown tool `everything__get`; the tool `everything__get-sum` has a dash in its name, which `codemode.everything__get-sum` would read as a subtraction: write codemode[\"everything__get-sum\"](...)"
    );

    // An unrelated ReferenceError gets no hint.
    let outcome = eval_with("const x = codemode.echo - 1;\nsum", &opts(), &tools).await;
    let error = failed_in("unrelated", &outcome, ErrorKind::Exception);
    assert_eq!(error.message, "ReferenceError: sum is not defined");
}

/// The names JavaScript looks up by itself are never tool calls: nothing reaches the ledger (or
/// counts against the tool-call limit), and `codemode` converts to a stable string.
#[tokio::test]
async fn protocol_names_are_never_tool_calls() {
    let code = "console.log(codemode);\n\
        const seen = [String(codemode), `${codemode}`, codemode + '', JSON.stringify(codemode),\n\
          Object.prototype.toString.call(codemode), typeof codemode.then, typeof codemode.toJSON,\n\
          typeof codemode.valueOf, typeof codemode.constructor, typeof codemode.inspect,\n\
          typeof codemode.toLocaleString, typeof codemode.__proto__,\n\
          typeof codemode[Symbol.toPrimitive], typeof codemode[Symbol.iterator],\n\
          'toString' in codemode, 'then' in codemode, 'echo' in codemode];\n\
        const awaited = await codemode;\n\
        seen.push(awaited === codemode);\n\
        seen";
    let mut options: EvalOptions = opts();
    options.max_tool_calls(Some(1));
    let outcome = eval_with(code, &options, &basic_tools()).await;
    assert_eq!(
        ok(&outcome),
        &json!([
            "[object codemode]",
            "[object codemode]",
            "[object codemode]",
            "{}",
            "[object codemode]",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            false,
            false,
            true,
            true
        ]),
        "{}",
        show(&outcome)
    );
    assert_eq!(outcome.logs[0].message, "{}");
    assert!(outcome.tool_calls.is_empty(), "{}", show(&outcome));
    assert!(outcome.warnings.is_empty(), "{}", show(&outcome));
}
