//! Embedding the sandbox: a runtime, one tool, one eval that calls it twice concurrently.

use codemode_runtime::{EvalOptions, FnTools, Runtime, RuntimeConfig};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // One runtime per process: cheap to clone, Send + Sync.
    let runtime = Runtime::new(&RuntimeConfig::default())?;
    // What `codemode.<name>(args)` reaches.
    let tools = FnTools::new().sync_tool("double", |args| {
        Ok(json!(args["n"].as_i64().unwrap_or(0) * 2))
    });
    let mut options = EvalOptions::default();
    options.fuel(Some(1_000_000_000));

    let code = "const [a, b] = await Promise.all([codemode.double({n: 1}), codemode.double({n: 2})]);\n\
                a + b";
    let outcome = runtime.eval(code, &options, &tools).await;

    assert!(outcome.ok, "{:?}", outcome.error);
    assert_eq!(outcome.result, json!(6));
    assert_eq!(outcome.tool_calls.len(), 2);
    Ok(())
}
