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
async fn in_tool_arguments_they_do_not_crash() {
    let tools = FnTools::new().sync_tool("echo", Ok);
    let code = "try {\n  return ['resolved', await codemode.echo({s: 'a\\uD800'})];\n} catch (e) {\n  return ['rejected', e.name];\n}";
    let outcome = eval_with(code, &opts(), &tools).await;
    let result = ok(&outcome);
    let fine = result == &json!(["resolved", {"s": "a\u{FFFD}"}])
        || result == &json!(["rejected", "ToolError"]);
    assert!(fine, "{}", show(&outcome));
}

#[tokio::test]
async fn in_results_they_round_trip_or_fail_clearly() {
    for code in ["'\\uD800'", "({k: 'x\\uDC00y'})", "['\\uDBFF\\uDBFF']"] {
        let outcome = eval(code).await;
        let json = serde_json::to_string(&outcome).unwrap();
        assert!(serde_json::from_str::<Value>(&json).is_ok());
        if outcome.ok {
            assert!(
                json.contains("\u{FFFD}") || json.to_lowercase().contains("\\\\ud"),
                "{code}: {json}"
            );
        } else {
            let error = outcome.error.as_ref().unwrap();
            assert_eq!(error.kind, ErrorKind::Exception, "{code}: {json}");
            assert!(
                error.message.contains("surrogate"),
                "{code}: the message should name the problem: {json}"
            );
        }
    }
}
