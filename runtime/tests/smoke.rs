//! scratch
use codemode_runtime::*;
use serde_json::json;

#[tokio::test]
async fn smoke() {
    let rt = Runtime::new(&RuntimeConfig::default()).unwrap();
    let tools = FnTools::new().sync_tool("double", |a| Ok(json!(a["n"].as_i64().unwrap() * 2)));
    for code in [
        "const a = 1;\nif (a) {\n  return undefinedThing.x;\n}",
        "const a = 1;\nif (a) {\n  undefinedThing.x;\n}",
        "const a = 1;\nif (a) {\n  return null.x;\n}",
        "const a = 1;\nif (a) {\n  throw new Error('e');\n}\nreturn 1",
        "async () => {\nconst a = 1;\nif (a) {\n  return undefinedThing.x;\n}}",
        "const a = 1;\n\n  return undefinedThing.x;\n",
    ] {
        let out = rt
            .eval(
                code,
                &EvalOptions::default().timeout(Some(std::time::Duration::from_secs(2))),
                &tools,
            )
            .await;
        println!(
            "{code:?} => {:?}",
            out.error.map(|e| (e.line, e.column, e.stack))
        );
    }
}
