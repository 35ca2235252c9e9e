//! A parked eval's trace goes on where it resumes (`telemetry.otlpEndpoint`, a real OTLP/HTTP
//! receiver decoding with the official definitions): the eval starts under a client's
//! `traceparent`, parks in the store waiting for approval, and is resumed from the store by the
//! client's retry, which carries a `traceparent` of its own. Every span of the eval, before and
//! after the park, is in the first request's trace, under the one `eval` span, itself under the
//! client's span; nothing joins the retry's trace.

use codemode_test_support::helpers::OtlpReceiver;
use serde_json::{Value, json};

use crate::client::{self, approve_all, block_on, input_keys, request_state};
use crate::flow::{GATE, complete_outcome, expected_result, prepare, script};
use crate::harness::{Node, await_local_parked, await_some, node_config, write_json};

const FIRST_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const FIRST_SPAN: &str = "00f067aa0ba902b7";
const RETRY_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const RETRY_SPAN: &str = "b7ad6b7169203331";

#[test]
fn a_resumed_eval_goes_on_in_the_trace_it_started_in() {
    let dir = codemode_test_support::scratch_dir("durable", "traces");
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    prepare(&files);
    let receiver = OtlpReceiver::start(&dir.join("spans.jsonl"));
    let state = dir.join("state");
    let durable = json!({"store": "local", "dir": state, "suspendToStoreAfterSeconds": 0});
    let mut config = node_config(&files, &dir.join("audit"), durable);
    config["telemetry"] = json!({"otlpEndpoint": receiver.endpoint()});
    write_json(&dir.join("config.json"), &config);
    let node = Node::start("a", &dir.join("config.json"), &[]);

    let args = json!({"code": script(&files)});
    let first = format!("00-{FIRST_TRACE}-{FIRST_SPAN}-01");
    let asked = block_on(client::call_tool_with(
        &node.mcp_url(),
        (GATE, &args),
        None,
        &[("traceparent", &first)],
    ))
    .unwrap();
    assert_eq!(input_keys(&asked.result).len(), 1, "{}", asked.result);
    await_local_parked(&state.join("records"), 1, &node.log());

    let retry = format!("00-{RETRY_TRACE}-{RETRY_SPAN}-01");
    let answers = approve_all(&asked.result);
    let done = block_on(client::call_tool_with(
        &node.mcp_url(),
        (GATE, &args),
        Some((&request_state(&asked.result), answers)),
        &[("traceparent", &retry)],
    ))
    .unwrap();
    let outcome = complete_outcome(&done.result, &node.log());
    assert_eq!(outcome["result"], expected_result());

    // The `eval` span is the eval's last: once it is in, every span of the eval is.
    let spans = await_some("the eval span", || {
        let spans = receiver.received();
        spans.iter().any(|s| s["name"] == "eval").then_some(spans)
    });
    assert_span_tree(&spans);
}

/// Every span in the first request's trace: `eval` under the client's span, each call's
/// `tool_call` under `eval` (the asked write among them, made after the resume), each
/// `upstream_request` under its `tool_call`.
fn assert_span_tree(spans: &[Value]) {
    assert!(
        spans.iter().all(|s| s["trace_id"] == FIRST_TRACE),
        "{spans:#?}"
    );
    let eval: Vec<&Value> = spans.iter().filter(|s| s["name"] == "eval").collect();
    assert_eq!(eval.len(), 1, "{spans:#?}");
    assert_eq!(eval[0]["parent_span_id"], FIRST_SPAN);
    assert_eq!(
        eval[0]["attributes"],
        json!({"codemode.profile": "gate", "codemode.outcome": "ok"})
    );
    let eval_id = eval[0]["span_id"].as_str().unwrap();
    let name_of = |id: &str| {
        spans
            .iter()
            .find(|s| s["span_id"] == id)
            .map(|s| format!("{} {}", s["name"].as_str().unwrap(), tool_of(s)))
            .unwrap_or_else(|| format!("outside the trace: {id}"))
    };
    let mut tree: Vec<String> = spans
        .iter()
        .filter(|s| s["span_id"] != eval_id)
        .map(|s| {
            let parent = s["parent_span_id"].as_str().unwrap();
            format!(
                "{} {} <- {}",
                s["name"].as_str().unwrap(),
                tool_of(s),
                name_of(parent)
            )
        })
        .collect();
    tree.sort();
    let want = [
        "tool_call fs__read_text_file <- eval ",
        "tool_call fs__read_text_file <- eval ",
        "tool_call fs__write_file <- eval ",
        "upstream_request fs__read_text_file <- tool_call fs__read_text_file",
        "upstream_request fs__read_text_file <- tool_call fs__read_text_file",
        "upstream_request fs__write_file <- tool_call fs__write_file",
    ];
    assert_eq!(tree, want, "{spans:#?}");
}

fn tool_of(span: &Value) -> &str {
    span["attributes"]["codemode.tool"].as_str().unwrap_or("")
}
