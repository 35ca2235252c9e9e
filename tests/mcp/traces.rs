//! OpenTelemetry traces (`telemetry.otlpEndpoint`): one eval through `serve --http`, under a
//! client's `traceparent`, with two calls to an HTTP upstream (the first approved through
//! elicitation). A real OTLP/HTTP receiver (tests/support/otlp_receiver.py, the official
//! protobuf definitions) gets the span tree; the upstream records the `traceparent` headers
//! it was sent (tests/mcp/traced_server.py).

use std::collections::BTreeMap;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use codemode_test_support::{peers, services};
use serde_json::{Value, json};

use crate::harness::{Mode, Setup, Transport, assert_json};

/// The client's span: the eval must hang from it, in its trace.
const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";
/// How long the spans and the processes may take to show up.
const DEADLINE: Duration = Duration::from_secs(60);

/// A Python helper on a free port; killed on drop.
struct Helper(Child);

impl Helper {
    fn start(script: &Path, port: u16, out: &Path) -> Helper {
        let child = Command::new(peers::python())
            .arg(script)
            .arg(port.to_string())
            .arg(out)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", script.display()));
        let mut helper = Helper(child);
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = helper.0.try_wait().expect("poll the helper") {
                panic!("{} exited early ({status})", script.display());
            }
            assert!(
                started.elapsed() < DEADLINE,
                "{} did not listen",
                script.display()
            );
            std::thread::sleep(Duration::from_millis(25));
        }
        helper
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The JSON lines of `path` once it has at least `n` of them.
fn wait_for_lines(path: &Path, n: usize, what: &str) -> Vec<String> {
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        if lines.len() >= n {
            return lines;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "{what}: {} of {n} lines within {DEADLINE:?}:\n{text}",
            lines.len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

#[test]
fn an_eval_is_one_trace_from_the_client_to_the_upstream() {
    let (otlp_port, web_port) = (services::free_port(), services::free_port());
    let mut helpers = Vec::new();
    let setup = Setup::new("traces", Transport::Http, |scratch| {
        let receiver = repo_file("tests/support/otlp_receiver.py");
        helpers.push(Helper::start(
            &receiver,
            otlp_port,
            &scratch.path("spans.jsonl"),
        ));
        let web = repo_file("tests/mcp/traced_server.py");
        helpers.push(Helper::start(&web, web_port, &scratch.path("headers.txt")));
        json!({
            "mcpServers": {"web": {"url": format!("http://127.0.0.1:{web_port}/mcp")}},
            "evaluation": {"profiles": {"gate": {
                "asklist": ["web__echo"],
                "approvalTimeoutSeconds": 300
            }}},
            "telemetry": {"otlpEndpoint": format!("http://127.0.0.1:{otlp_port}/v1/traces")}
        })
    });
    let traceparent = PathBuf::from(format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"));
    let obs = setup.python("traces.py", Mode::Legacy, &[("TRACEPARENT", &traceparent)]);
    assert_json(
        "the eval",
        &obs,
        &json!({"asked": 1, "is_error": false, "result": {"ok": true, "result": [{"result": "secret argument"}, {"result": 5}]}}),
    );
    let spans: Vec<Value> = wait_for_lines(&setup.scratch.path("spans.jsonl"), 6, "spans")
        .iter()
        .map(|l| serde_json::from_str(l).expect("a span line"))
        .collect();
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
