//! OpenTelemetry traces (`telemetry.otlpEndpoint`): one eval through `serve --http`, under a
//! client's `traceparent` (in `_meta`), with two calls to an HTTP upstream (the first approved
//! through elicitation); then one from a client sending the W3C `traceparent` HTTP header and
//! another in `_meta` (the header wins). A real OTLP/HTTP receiver (the test support's
//! `OtlpReceiver`, the official protobuf definitions) gets the span tree; the upstream records
//! the `traceparent` headers it was sent (tests/mcp/traced_server.py).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use codemode_test_support::helpers::{OtlpReceiver, PythonHelper, wait_for_lines};
use codemode_test_support::services;
use serde_json::{Value, json};

use crate::harness::{Mode, Setup, Transport, assert_json};

/// The client's span: the eval must hang from it, in its trace.
const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";
/// The span of the second client's `traceparent` header.
const HEADER_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const HEADER_SPAN: &str = "b7ad6b7169203331";

fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

#[test]
fn an_eval_is_one_trace_from_the_client_to_the_upstream() {
    let web_port = services::free_port();
    let mut helpers = None;
    let setup = Setup::new("traces", Transport::Http, |scratch| {
        let receiver = OtlpReceiver::start(&scratch.path("spans.jsonl"));
        let web = repo_file("tests/mcp/traced_server.py");
        let web = PythonHelper::start(&web, web_port, &scratch.path("headers.txt"));
        let config = json!({
            "mcpServers": {"web": {"url": format!("http://127.0.0.1:{web_port}/mcp")}},
            "evaluation": {"profiles": {"gate": {
                "asklist": ["web__echo"],
                "approvalTimeoutSeconds": 300
            }}},
            "telemetry": {"otlpEndpoint": receiver.endpoint()}
        });
        helpers = Some((receiver, web));
        config
    });
    let (receiver, _web) = helpers.expect("the helpers started");
    let traceparent = PathBuf::from(format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"));
    let header = PathBuf::from(format!("00-{HEADER_TRACE}-{HEADER_SPAN}-01"));
    let obs = setup.python(
        "traces.py",
        Mode::Legacy,
        &[
            ("TRACEPARENT", &traceparent),
            ("HEADER_TRACEPARENT", &header),
        ],
    );
    assert_json(
        "the evals",
        &obs,
        &json!({"asked": 1, "is_error": false, "result": {"ok": true, "result": [{"result": "secret argument"}, {"result": 5}]},
            "headed": 1}),
    );
    let (headed, spans): (Vec<Value>, Vec<Value>) = receiver
        .spans(7)
        .into_iter()
        .partition(|s| s["trace_id"] == HEADER_TRACE);
    // The header's eval: in the header's trace, under its span, `_meta`'s ignored.
    let headed: Vec<Value> = headed
        .iter()
        .map(|s| json!([s["name"], s["parent_span_id"], s["attributes"]]))
        .collect();
    assert_json(
        "the eval under the traceparent header",
        &Value::Array(headed),
        &json!([["eval", HEADER_SPAN, {"codemode.profile": "gate", "codemode.outcome": "ok"}]]),
    );
    assert_span_tree(&spans);
    // Each upstream request carried its own span's context, in the client's trace.
    let headers = wait_for_lines(&setup.scratch.path("headers.txt"), 2, "traceparent headers");
    let mut sent: Vec<String> = headers.iter().filter(|h| !h.is_empty()).cloned().collect();
    sent.sort();
    let mut want: Vec<String> = spans
        .iter()
        .filter(|s| s["name"] == "upstream_request")
        .map(|s| format!("00-{CLIENT_TRACE}-{}-01", s["span_id"].as_str().unwrap()))
        .collect();
    want.sort();
    assert_eq!(sent, want, "the upstream's traceparent headers");
}

/// Six spans, one trace: `eval` under the client's span, a `tool_call` per call under it, the
/// echo's `approval_wait` and each call's `upstream_request` under their `tool_call`.
fn assert_span_tree(spans: &[Value]) {
    assert_eq!(spans.len(), 6, "{spans:#?}");
    let by_id: BTreeMap<&str, &Value> = spans
        .iter()
        .map(|s| (s["span_id"].as_str().unwrap(), s))
        .collect();
    assert_eq!(by_id.len(), 6, "distinct span ids: {spans:#?}");
    // Each span as (name, its parent's name or the client's span id, attributes).
    let mut tree: Vec<Value> = spans
        .iter()
        .map(|s| {
            assert_eq!(s["trace_id"], CLIENT_TRACE, "{s}");
            assert_eq!(s["ordered"], true, "{s}");
            assert_eq!(s["content_type"], "application/x-protobuf");
            assert_eq!(s["service"], "codemode");
            assert_eq!(s["path"], "/v1/traces");
            let parent = s["parent_span_id"].as_str().unwrap();
            let parent = match by_id.get(parent) {
                Some(p) => format!("{} {}", p["name"].as_str().unwrap(), tool_of(p)),
                None => parent.to_string(),
            };
            json!([
                s["name"],
                tool_of(s),
                parent.trim(),
                s["attributes"],
                s["status"]
            ])
        })
        .collect();
    tree.sort_by_key(|v| v.to_string());
    let (echo, add) = ("web__echo", "web__add");
    let call = |tool: &str, risk: &str| {
        json!({"codemode.profile": "gate", "codemode.tool": tool, "codemode.decision": "allowed",
               "codemode.risk": risk, "codemode.outcome": "ok"})
    };
    let mut echo_call = call(echo, "medium");
    echo_call["codemode.decision"] = json!("approved");
    let upstream = |tool: &str| json!({"codemode.profile": "gate", "codemode.tool": tool, "codemode.outcome": "ok"});
    let mut want = vec![
        json!(["approval_wait", echo, format!("tool_call {echo}"),
               {"codemode.profile": "gate", "codemode.tool": echo, "codemode.outcome": "answered",
                "codemode.channel": "elicitation"}, 0]),
        json!(["eval", "", CLIENT_SPAN, {"codemode.profile": "gate", "codemode.outcome": "ok"}, 0]),
        json!(["tool_call", add, "eval", call(add, "medium"), 0]),
        json!(["tool_call", echo, "eval", echo_call, 0]),
        json!([
            "upstream_request",
            add,
            format!("tool_call {add}"),
            upstream(add),
            0
        ]),
        json!([
            "upstream_request",
            echo,
            format!("tool_call {echo}"),
            upstream(echo),
            0
        ]),
    ];
    want.sort_by_key(|v| v.to_string());
    assert_json("the span tree", &Value::Array(tree), &Value::Array(want));
    // No argument value reaches a span.
    let text = serde_json::to_string(spans).unwrap();
    assert!(!text.contains("secret argument"), "{text}");
}

fn tool_of(span: &Value) -> String {
    span["attributes"]["codemode.tool"]
        .as_str()
        .unwrap_or("")
        .to_string()
}
