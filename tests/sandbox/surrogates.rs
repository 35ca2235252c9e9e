//! Lone UTF-16 surrogates, which JS strings may hold and UTF-8 cannot, never crash anything.

use codemode_runtime::{CallStatus, ErrorKind, FnTools};
use serde_json::{Value, json};

use crate::{eval, eval_with, ok, opts, show};

#[tokio::test]
async fn in_tool_names_and_log_messages_they_are_replaced() {
    let tools = FnTools::new().sync_tool("a\u{FFFD}b", |_| Ok(json!("reached")));
    let outcome = eval_with(
        "console.log('x\\uD800y', 'z\\uDC00');\nawait codemode['a\\uD800b']({})",
        &opts(),
        &tools,
    )
    .await;
    assert_eq!(ok(&outcome), "reached", "{}", show(&outcome));
    assert_eq!(
        outcome.logs[0].message,
        "x\u{FFFD}y z\u{FFFD}",
        "{}",
        show(&outcome)
    );
    assert_eq!(outcome.tool_calls[0].tool, "a\u{FFFD}b");
    assert_eq!(outcome.tool_calls[0].status, CallStatus::Ok);

    // An unknown tool with such a name: a clean UnknownToolError.
    let outcome = eval_with(
        "try { await codemode['\\uDBFF']() } catch (e) { e.name }",
        &opts(),
        &tools,
    )
    .await;
    assert_eq!(ok(&outcome), "UnknownToolError", "{}", show(&outcome));
    assert_eq!(outcome.tool_calls[0].tool, "\u{FFFD}");
}

#[tokio::test]
async fn in_thrown_messages_they_are_replaced() {
    let outcome = eval("throw new Error('bad \\uD800 thing');").await;
    let error = crate::failed(&outcome, ErrorKind::Exception);
    assert_eq!(
        error.message,
        "Error: bad \u{FFFD} thing",
        "{}",
        show(&outcome)
    );
}

#[tokio::test]
async fn in_tool_arguments_they_are_replaced() {
    let tools = FnTools::new().sync_tool("echo", Ok);
    let code = "try {\n  return ['resolved', await codemode.echo({s: 'a\\uD800'})];\n} catch (e) {\n  return ['rejected', e.name];\n}";
    let outcome = eval_with(code, &opts(), &tools).await;
    assert_eq!(
        ok(&outcome),
        &json!(["resolved", {"s": "a\u{FFFD}"}]),
        "{}",
        show(&outcome)
    );
    assert_eq!(outcome.tool_calls[0].status, CallStatus::Ok);
}

#[tokio::test]
async fn in_results_they_are_replaced() {
    let cases = [
        ("'\\uD800'", json!("\u{FFFD}")),
        ("({k: 'x\\uDC00y'})", json!({"k": "x\u{FFFD}y"})),
        ("['\\uDBFF\\uDBFF']", json!(["\u{FFFD}\u{FFFD}"])),
    ];
    for (code, want) in cases {
        let outcome = eval(code).await;
        assert_eq!(ok(&outcome), &want, "{code}: {}", show(&outcome));
        // The outcome serialises (and parses back) as the same JSON.
        let json = serde_json::to_string(&outcome).unwrap();
        let back: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back["result"], want, "{code}");
    }
}
