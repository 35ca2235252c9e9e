//! `serve --log-format json`: one JSON object per line (bar the `listening on` lines
//! supervisors wait for), with `ts`, `level`, `target`, `message`, and the eval's `eval_id` and
//! `caller` on the line an eval ends with; a caller's name is neutralised as in text lines.

use codemode_test_support::scratch_dir;
use serde_json::{Value, json};

use crate::client::{block_on, call_tool_as};
use crate::harness::{KEY, KEY_ENV, Node, await_some, write_json};

/// A caller whose name carries a right-to-left override, which must not reach a log raw.
const CALLER: &str = "ops\u{202e}team";
const TOKEN: &str = "json-logs-token";

#[test]
fn json_logs_are_one_object_per_line_with_the_eval_and_caller() {
    let dir = scratch_dir("durable", "json_logs");
    let config = dir.join("codemode.json");
    write_json(
        &config,
        &json!({
            "server": {"auth": {"tokens": [{"name": CALLER, "env": "JSON_LOGS_TOKEN"}]}},
            "durable": {"dir": dir.join("state"), "keyEnv": KEY_ENV}
        }),
    );
    let node = Node::start_with_args(
        "json-logs",
        &[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--log-format",
            "json",
            "--config",
            config.to_str().expect("utf-8"),
        ],
        &[
            (KEY_ENV, KEY),
            ("JSON_LOGS_TOKEN", TOKEN),
            ("RUST_LOG", "info"),
        ],
    );
    let args = json!({"code": "return 6 * 7"});
    let reply = block_on(call_tool_as(
        &node.mcp_url(),
        "eval",
        &args,
        None,
        Some(TOKEN),
    ))
    .expect("an eval");
    assert_eq!(
        reply.result["structuredContent"]["result"], 42,
        "{}",
        reply.result
    );

    let finished = await_some("the eval's log line", || {
        node.log()
            .lines()
            .find(|l| l.contains("eval finished"))
            .map(str::to_string)
    });
    let line: Value = serde_json::from_str(&finished).expect("a JSON line");
    let mut keys: Vec<&str> = line
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "caller",
            "eval_id",
            "level",
            "message",
            "outcome",
            "target",
            "tool_calls",
            "ts"
        ]
    );
    assert_eq!(
        (
            &line["level"],
            &line["message"],
            &line["outcome"],
            &line["tool_calls"]
        ),
        (
            &json!("info"),
            &json!("eval finished"),
            &json!("ok"),
            &json!(0)
        )
    );
    assert_eq!(line["caller"], "ops\\u202eteam", "neutralised");
    assert_eq!(line["target"], "codemode_host::server::eval::task");
    let eval_id = line["eval_id"].as_str().expect("an eval id");
    assert!(eval_id.contains('-') && !eval_id.is_empty(), "{eval_id}");
    let ts = line["ts"].as_str().expect("a timestamp");
    assert!(ts.ends_with('Z') && ts.len() >= 20, "{ts}");

    for raw in node.log().lines() {
        if raw.starts_with("listening on ") || raw.starts_with("admin listening on ") {
            continue;
        }
        let parsed: Value = serde_json::from_str(raw).unwrap_or_else(|e| panic!("{e}: {raw}"));
        for key in ["ts", "level", "target", "message"] {
            assert!(parsed.get(key).is_some(), "no {key}: {raw}");
        }
        assert!(!raw.contains('\u{202e}'), "a raw override: {raw}");
    }
}
