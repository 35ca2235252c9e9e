//! Warnings the guest raises about a script that finished but probably not as meant: a promise
//! in its result or in a call's arguments, a tool call nothing awaited, a `null` result from a
//! last statement that is not an expression. Each with its exact message and position; correct
//! scripts get none.

use codemode_runtime::Warning;
use serde_json::json;

use crate::{basic_tools, eval_with, ok, opts, show};

fn at(message: &str, line: u32, column: u32) -> Warning {
    Warning {
        message: message.into(),
        line: Some(line),
        column: Some(column),
    }
}

fn nowhere(message: &str) -> Warning {
    Warning {
        message: message.into(),
        line: None,
        column: None,
    }
}

const UNAWAITED: &str = "was never awaited: the script went on without its result or its error (did you forget `await`?)";
const NO_RESULT: &str = "the result is null: the script's last statement is not an expression and it has no `return` (end it with the value to return, or `return` it)";

#[tokio::test]
async fn each_warning_has_its_message_and_place() {
    let unawaited = |tool: &str| format!("the promise of this call to `{tool}` {UNAWAITED}");
    let cases: Vec<(&str, serde_json::Value, Vec<Warning>)> = vec![
        (
            "const p = codemode.echo({a: 1});\n({p})",
            json!({"p": {}}),
            vec![
                nowhere(
                    "the result contains a Promise (at key `p`), which is sent as {}: did you forget `await`?",
                ),
                at(&unawaited("echo"), 1, 20),
            ],
        ),
        (
            "const ps = [1, 2].map((a) => codemode.add({a, b: 1}));\nawait Promise.all(ps);\nreturn [ps[0], 1, ps[1]]",
            json!([{}, 1, {}]),
            vec![nowhere(
                "the result contains 2 Promises, the first (at key `0`), which is sent as {}: did you forget `await`?",
            )],
        ),
        (
            "const r = await codemode.echo({a: codemode.echo({})});\nr",
            json!({"a": {}}),
            vec![
                at(
                    "the arguments of codemode.echo contain a Promise (at key `a`), which is sent as {}: did you forget `await`?",
                    1,
                    26,
                ),
                at(&unawaited("echo"), 1, 44),
            ],
        ),
        (
            "codemode.echo({a: 1});\n  codemode.fail({});\n1",
            json!(1),
            vec![at(&unawaited("echo"), 1, 10), at(&unawaited("fail"), 2, 12)],
        ),
        (
            "const r = await codemode.echo({a: 1});",
            json!(null),
            vec![at(NO_RESULT, 1, 1)],
        ),
        (
            "const a = 1;\n// done\n  let q = a + 1\n",
            json!(null),
            vec![at(NO_RESULT, 3, 3)],
        ),
        (
            "const xs = [1, 2];\nfor (const x of xs) {\n  const r = await codemode.echo({x});\n}",
            json!(null),
            vec![at(NO_RESULT, 2, 1)],
        ),
    ];
    for (code, result, warnings) in cases {
        let outcome = eval_with(code, &opts(), &basic_tools()).await;
        assert_eq!(ok(&outcome), &result, "{code}");
        assert_eq!(outcome.warnings, warnings, "{code}: {}", show(&outcome));
    }
}

#[tokio::test]
async fn correct_scripts_get_no_warnings() {
    const CORRECT: &[&str] = &[
        "1 + 2",
        "null",
        "undefined",
        "console.log('x')",
        "const r = await codemode.echo({a: 1});\nr",
        "const r = await codemode.echo({a: 1});\nreturn r",
        "async () => { await codemode.echo({}); }",
        "const [a, b] = await Promise.all([codemode.add({a: 1, b: 2}), codemode.echo({})]);\n({a, b})",
        "codemode.echo({}).then((r) => r)",
        "const p = codemode.echo({});\nawait 1;\nawait p",
        "try { await codemode.fail({}); } catch (e) { e.message }",
        "codemode.fail({}).catch(() => 'handled')",
        "return codemode.echo({a: 1})",
        "function f() {}\nf()",
        "let x = 1;\nx = x / 2;\n",
        "const o = {a: 1}\no",
        "if (true) { 1 }",
        "JSON.stringify(Promise.resolve(1))",
    ];
    for code in CORRECT {
        let outcome = eval_with(code, &opts(), &basic_tools()).await;
        assert!(outcome.ok, "{code}: {}", show(&outcome));
        assert!(outcome.warnings.is_empty(), "{code}: {}", show(&outcome));
    }
}

/// A script that fails is told of the calls nothing awaited (a forgotten `await` often explains
/// the failure), at their lines; the warnings that only make sense of a result are not given.
#[tokio::test]
async fn a_failed_script_is_told_only_of_unawaited_calls() {
    let outcome = eval_with(
        "const p = codemode.echo({});\nthrow new Error('stop')",
        &opts(),
        &basic_tools(),
    )
    .await;
    assert!(!outcome.ok);
    assert_eq!(
        outcome.warnings,
        vec![at(
            &format!("the promise of this call to `echo` {UNAWAITED}"),
            1,
            20
        )],
        "{}",
        show(&outcome)
    );
    // A failed script whose last statement is not an expression gets no "result is null".
    let outcome = eval_with(
        "let x = 1;\nthrow new Error('stop')",
        &opts(),
        &basic_tools(),
    )
    .await;
    assert!(!outcome.ok);
    assert!(outcome.warnings.is_empty(), "{}", show(&outcome));
}
