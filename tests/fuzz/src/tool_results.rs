//! JSON↔JS conversion of tool results through the real guest: whatever a tool returns, the
//! script sees it and hands it back as its result, or the eval fails with a classified kind —
//! never `internal`, never a panic.

use std::sync::LazyLock;

use codemode_runtime::{ErrorKind, EvalOptions, FnTools, Runtime, RuntimeConfig};
use serde_json::Value;

static RUNTIMES: LazyLock<(tokio::runtime::Runtime, Runtime)> = LazyLock::new(|| {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let mut config = RuntimeConfig::default();
    config.max_concurrent_evals(2);
    let runtime = tokio
        .block_on(async { Runtime::new(&config) })
        .expect("the runtime");
    (tokio, runtime)
});

/// Input: a tool's result — JSON when it parses, else the bytes as a (lossy) string.
pub fn tool_results(data: &[u8]) {
    let value: Value = serde_json::from_slice(data)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(data).into_owned()));
    let (tokio, runtime) = &*RUNTIMES;
    let returned = value.clone();
    let tools = FnTools::new().sync_tool("t", move |_| Ok(returned.clone()));
    let mut options = EvalOptions::default();
    options
        .timeout(Some(std::time::Duration::from_secs(5)))
        .memory(32 << 20);
    let outcome = tokio.block_on(runtime.eval(
        "const r = await codemode.t(); return JSON.parse(JSON.stringify(r))",
        &options,
        &tools,
    ));
    if let Some(error) = &outcome.error {
        assert_ne!(error.kind, ErrorKind::Internal, "{}", error.message);
        return;
    }
    // Integers beyond 2^53 and some floats cannot survive a JS number; everything else must.
    if !has_lossy_numbers(&value) {
        assert_eq!(outcome.result, value, "the script saw something else");
    }
}

fn has_lossy_numbers(value: &Value) -> bool {
    match value {
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.unsigned_abs() > (1 << 53),
            (_, Some(u), _) => u > (1 << 53),
            (_, _, Some(f)) => f.fract() == 0.0 || f.is_nan(),
            _ => true,
        },
        Value::Array(items) => items.iter().any(has_lossy_numbers),
        Value::Object(map) => map.values().any(has_lossy_numbers),
        _ => false,
    }
}
