//! Integration tests of the sandbox (`codemode-runtime`), one binary with a module per concern
//! (like wasmtime's tests/all). Every test shares one [`Runtime`]: compiling the guest costs
//! seconds (the on-disk cache helps across processes), an instance costs microseconds.

mod abi;
mod concurrency;
mod console;
mod durable;
mod durable_guests;
mod forms;
mod guest_settle;
mod isolation;
mod ledger;
mod limits;
mod outcome_json;
mod positions;
mod snapshot;
mod surrogates;
mod tools;
mod warnings;
mod wasi;

use std::sync::LazyLock;
use std::time::Duration;

use codemode_runtime::{
    ErrorKind, EvalError, EvalOptions, EvalOutcome, FnTools, NoTools, Runtime, RuntimeConfig,
    ToolError, ToolHost,
};
use serde_json::{Value, json};

/// The runtime shared by every test of this binary.
pub static RUNTIME: LazyLock<Runtime> =
    LazyLock::new(|| Runtime::new(&RuntimeConfig::default()).expect("building the shared runtime"));

/// Default options with a timeout that only a hung test would reach.
pub fn opts() -> EvalOptions {
    let mut options = EvalOptions::default();
    options.timeout(Some(Duration::from_secs(20)));
    options
}

/// Evaluates `code` without tools.
pub async fn eval(code: &str) -> EvalOutcome {
    RUNTIME.eval(code, &opts(), &NoTools).await
}

/// Evaluates `code` with `tools` and `options`.
pub async fn eval_with<T: ToolHost + ?Sized>(
    code: &str,
    options: &EvalOptions,
    tools: &T,
) -> EvalOutcome {
    RUNTIME.eval(code, options, tools).await
}

/// The outcome as JSON, for assertion messages.
pub fn show(outcome: &EvalOutcome) -> String {
    serde_json::to_string_pretty(outcome).unwrap_or_else(|e| format!("{outcome:?} ({e})"))
}

/// Asserts the eval succeeded and returns its result.
#[track_caller]
pub fn ok(outcome: &EvalOutcome) -> &Value {
    assert!(outcome.ok, "expected success, got {}", show(outcome));
    assert!(
        outcome.error.is_none(),
        "ok with an error: {}",
        show(outcome)
    );
    &outcome.result
}

/// Asserts the eval failed with `kind` and returns the error.
#[track_caller]
pub fn failed(outcome: &EvalOutcome, kind: ErrorKind) -> &EvalError {
    failed_in("", outcome, kind)
}

/// [`failed`] for one case of a table, named `what` in the assertion messages.
#[track_caller]
pub fn failed_in<'a>(what: &str, outcome: &'a EvalOutcome, kind: ErrorKind) -> &'a EvalError {
    let shown = show(outcome);
    assert!(
        !outcome.ok,
        "{what}: expected a {kind} failure, got {shown}"
    );
    assert_eq!(
        outcome.result,
        Value::Null,
        "{what}: a failed eval has a null result"
    );
    let error = outcome
        .error
        .as_ref()
        .unwrap_or_else(|| panic!("{what}: no error: {shown}"));
    assert_eq!(error.kind, kind, "{what}: wrong kind: {shown}");
    assert!(!error.message.is_empty(), "{what}: empty message: {shown}");
    error
}

/// A simple set of tools: `echo` returns its arguments, `add` adds `a` and `b`, `fail` fails
/// with data, `deny` is refused by a "policy".
pub fn basic_tools() -> FnTools {
    FnTools::new()
        .sync_tool("echo", Ok)
        .sync_tool("add", |args| {
            let a = args["a"]
                .as_i64()
                .ok_or_else(|| ToolError::failed("a must be a number"))?;
            let b = args["b"]
                .as_i64()
                .ok_or_else(|| ToolError::failed("b must be a number"))?;
            Ok(json!(a + b))
        })
        .sync_tool("fail", |_| {
            Err(ToolError::Failed {
                message: "disk on fire".into(),
                data: Some(json!({"code": 42})),
            })
        })
        .sync_tool("deny", |_| {
            Err(ToolError::Denied {
                tool: "deny".into(),
                reason: "policy_denied".into(),
                message: "writes are not allowed".into(),
            })
        })
}

/// After a failure: the shared runtime still runs a normal eval with a tool call.
pub async fn assert_still_usable() {
    let outcome = eval_with(
        "const r = await codemode.add({a: 40, b: 2});\nr",
        &opts(),
        &basic_tools(),
    )
    .await;
    assert_eq!(
        ok(&outcome),
        &json!(42),
        "the runtime is not usable after a failure"
    );
}
