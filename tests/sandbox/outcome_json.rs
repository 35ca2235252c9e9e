//! The JSON shape of [`EvalOutcome`], as `codemode run --json` and the MCP server return it.

use std::collections::BTreeSet;

use codemode_runtime::EvalOutcome;
use serde_json::{Value, json};

use crate::{basic_tools, eval_with, opts, show};

fn keys(value: &Value) -> BTreeSet<&str> {
    value
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {value}"))
        .keys()
        .map(String::as_str)
        .collect()
}

fn set<'a>(names: &[&'a str]) -> BTreeSet<&'a str> {
    names.iter().copied().collect()
}

const TOP: &[&str] = &[
    "ok",
    "result",
    "error",
    "warnings",
    "logs",
    "tool_calls",
    "stats",
];
const ERROR: &[&str] = &["kind", "message", "line", "column", "stack"];
const LOG: &[&str] = &["level", "message"];
const CALL: &[&str] = &["id", "tool", "status", "reason", "duration_ms"];
const STATS: &[&str] = &["fuel_used", "wall_ms", "memory_peak_bytes"];

#[tokio::test]
async fn success_shape() {
    let code = "console.warn('careful', {a: 1});\ntry { await codemode.fail({}); } catch (e) {}\nawait codemode.deny({}).catch(() => {});\n({sum: await codemode.add({a: 1, b: 2})})";
    let outcome = eval_with(code, &opts(), &basic_tools()).await;
    let value = serde_json::to_value(&outcome).unwrap();
    assert_eq!(keys(&value), set(TOP), "{}", show(&outcome));
    assert_eq!(value["ok"], json!(true));
    assert_eq!(value["result"], json!({"sum": 3}));
    assert_eq!(value["error"], Value::Null);
    assert_eq!(
        value["logs"],
        json!([{"level": "warn", "message": r#"careful {"a":1}"#}])
    );
    let calls = value["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 3, "{}", show(&outcome));
    for call in calls {
        assert_eq!(keys(call), set(CALL), "{call}");
        assert!(
            call["id"].is_u64() && call["tool"].is_string() && call["duration_ms"].is_number(),
            "{call}"
        );
    }
    let statuses: Vec<_> = calls
        .iter()
        .map(|c| (c["status"].as_str().unwrap(), c["reason"].clone()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("error", json!("disk on fire")),
            ("denied", json!("policy_denied")),
            ("ok", Value::Null)
        ],
        "{}",
        show(&outcome)
    );
    assert_eq!(keys(&value["stats"]), set(STATS));
    let stats = &value["stats"];
    assert!(stats["fuel_used"].as_u64().unwrap() > 0, "{stats}");
    assert!(stats["wall_ms"].as_f64().unwrap() > 0.0, "{stats}");
    assert!(stats["memory_peak_bytes"].as_u64().unwrap() > 0, "{stats}");

    let back: EvalOutcome = serde_json::from_value(value).unwrap();
    assert_eq!(back, outcome, "the JSON round-trips");
}

#[tokio::test]
async fn failure_shape() {
    let outcome = eval_with(
        "console.log(1);\n\n  throw new RangeError('out');",
        &opts(),
        &basic_tools(),
    )
    .await;
    let value = serde_json::to_value(&outcome).unwrap();
    assert_eq!(keys(&value), set(TOP), "{}", show(&outcome));
    assert_eq!(value["ok"], json!(false));
    assert_eq!(value["result"], Value::Null);
    assert_eq!(keys(&value["error"]), set(ERROR), "{}", show(&outcome));
    let error = &value["error"];
    assert_eq!(
        (error["kind"].as_str(), error["message"].as_str()),
        (Some("exception"), Some("RangeError: out"))
    );
    assert_eq!(
        (error["line"].as_u64(), error["column"].as_u64()),
        (Some(3), Some(13)),
        "{}",
        show(&outcome)
    );
    assert!(
        error["stack"].as_str().unwrap().contains("script.js:3:13"),
        "{}",
        show(&outcome)
    );
    for log in value["logs"].as_array().unwrap() {
        assert_eq!(keys(log), set(LOG));
    }
    assert_eq!(value["tool_calls"], json!([]));
    assert_eq!(keys(&value["stats"]), set(STATS));

    // An error with no position still has every key, as null.
    let outcome = eval_with(
        "while (true) {}",
        opts().fuel(Some(1_000_000)),
        &basic_tools(),
    )
    .await;
    let value = serde_json::to_value(&outcome).unwrap();
    assert_eq!(keys(&value["error"]), set(ERROR), "{}", show(&outcome));
    assert_eq!(value["error"]["kind"], json!("out_of_fuel"));
    assert_eq!(value["error"]["line"], Value::Null);
}

/// A tool that answers `{}` and warns through its call context.
struct WarningTool;

impl codemode_runtime::ToolHost for WarningTool {
    fn call<'a>(
        &'a self,
        name: &'a str,
        _args: Value,
        cx: &'a codemode_runtime::CallContext,
    ) -> codemode_runtime::BoxFuture<'a, Result<Value, codemode_runtime::ToolError>> {
        Box::pin(async move {
            cx.warn(format!("{name} (call {}) looks odd", cx.call_id));
            Ok(json!({}))
        })
    }
    fn tool_names(&self) -> Vec<String> {
        vec!["odd".into()]
    }
}

#[tokio::test]
async fn warnings_from_tool_calls_are_in_the_outcome_in_order() {
    let outcome = eval_with(
        "await codemode.odd(); await codemode.odd(); return 1",
        &opts(),
        &WarningTool,
    )
    .await;
    assert!(outcome.ok, "{}", show(&outcome));
    let messages: Vec<&str> = outcome
        .warnings
        .iter()
        .map(|w| w.message.as_str())
        .collect();
    assert_eq!(
        messages,
        ["odd (call 1) looks odd", "odd (call 2) looks odd"]
    );
    let json = serde_json::to_value(&outcome).unwrap();
    assert_eq!(
        keys(&json["warnings"][0]),
        set(&["message", "line", "column"])
    );

    let quiet = eval_with("return 1", &opts(), &WarningTool).await;
    assert_eq!(serde_json::to_value(&quiet).unwrap()["warnings"], json!([]));
}
