//! The core scenario on each transport and protocol generation (clients/core.py).

use serde_json::{Value, json};

use crate::harness::{
    Mode, Setup, Transport, assert_json, audit_calls, base_config, eval_summary, number, sorted,
};

const TOOLS: [&str; 5] = [
    "codemode_eval_lenient",
    "codemode_eval_sup",
    "eval",
    "get_tools",
    "search_tools",
];

fn core(transport: Transport, mode: Mode) {
    let name = format!("core_{transport:?}_{mode:?}").to_lowercase();
    let setup = Setup::new(&name, transport, base_config);
    let obs = setup.python("core.py", mode, &[]);

    assert_eq!(obs["protocol"], mode.protocol());
    assert_eq!(obs["tools"], json!(TOOLS));
    let description = obs["eval_description"].as_str().unwrap_or_default();
    assert!(
        description.contains("time (2 tools)") && description.contains("everything ("),
        "the eval tool's description should list the upstream namespaces: {description}"
    );

    let denied_error = |reason: &str| json!({"name": "ToolCallDeniedError", "reason": reason});
    let got = json!({
        "parallel": eval_summary(&obs["parallel"]),
        "failing": eval_summary(&obs["failing"]),
        "search_in_script": eval_summary(&obs["search_in_script"]),
        "denied": eval_summary(&obs["denied"]),
        "accepted": eval_summary(&obs["accepted"]),
        "declined": eval_summary(&obs["declined"]),
        "timed_out": eval_summary(&obs["timed_out"]),
        "hitl": without_request_id(eval_summary(&obs["hitl"])),
    });
    let want = json!({
        "parallel": {"is_error": false, "ok": true, "result": {"timezone": "UTC", "echo": "Echo: hi"},
            "calls": [["time__get_current_time", "ok", null], ["everything__echo", "ok", null]]},
        "failing": {"is_error": true, "ok": false, "error": ["exception", "Error: boom"], "calls": []},
        "search_in_script": {"is_error": false, "ok": true,
            "result": {"first": "time__get_current_time", "declares": true},
            "calls": [["search_tools", "ok", null], ["get_tools", "ok", null]]},
        "denied": {"is_error": false, "ok": true,
            "result": {"name": "ToolCallDeniedError", "toolName": "everything__get-sum", "reason": "denied", "isDenied": true},
            "calls": [["everything__get-sum", "denied", "denied"]]},
        "accepted": {"is_error": false, "ok": true, "result": "Echo: accepted",
            "calls": [["everything__echo", "ok", null]]},
        "declined": {"is_error": false, "ok": true, "result": denied_error("elicitation_declined"),
            "calls": [["everything__echo", "denied", "elicitation_declined"]]},
        "timed_out": {"is_error": false, "ok": true, "result": denied_error("elicitation_timeout"),
            "calls": [["everything__echo", "denied", "elicitation_timeout"]]},
        "hitl": {"is_error": false, "ok": true,
            "result": {"ok": true, "status": "confirmed", "confirmed": true, "selectedOption": "blue", "source": "user"},
            "calls": [["hitl_request", "ok", null]]},
    });
    assert_json(&format!("{name}: eval results"), &got, &want);
    assert_eq!(obs["failing"]["structured"]["error"]["line"], 2);

    // The timed-out approval was answered (approve) only after the server had decided it
    // (clients/core.py): the `elicitation_timeout` above is the server's own timeout. A legacy
    // client gets the result while its answer is still pending; a 2026-07-28 client gets it
    // with the retry that carries the answer.
    let order = match mode {
        Mode::Legacy => json!(["result", "answered"]),
        Mode::Auto => json!(["answered", "result"]),
    };
    assert_eq!(obs["timed_out_events"], order);
    // Lower bound only, and it is the behaviour itself: the approval must not time out before
    // the profile's `approvalTimeoutSeconds` (2 s). The ledger's duration spans the whole
    // wait, so it is at least that long; how much longer depends on the machine.
    let waited_ms = number(&obs["timed_out"]["structured"]["tool_calls"][0]["duration_ms"]);
    assert!(
        waited_ms >= 2000.0,
        "the approval timed out after {waited_ms} ms, before the 2 s timeout"
    );

    // search_tools / get_tools as MCP tools.
    let search = &obs["search"];
    assert_eq!(search["is_error"], false);
    assert_eq!(
        search["structured"]["results"][0]["name"], "everything__echo",
        "{search}"
    );
    assert!(
        search["text"]
            .as_str()
            .unwrap_or_default()
            .contains("everything__echo")
    );
    let get = &obs["get"];
    let declarations = get["structured"]["declarations"]
        .as_str()
        .unwrap_or_default();
    assert!(
        declarations.contains("everything__echo(args: {")
            && declarations.contains("message: string;"),
        "{declarations}"
    );
    assert_eq!(get["structured"]["missing"][0]["name"], "nope__nothing");
    // An unknown name is told in the text too (not only in the structured content).
    assert_eq!(
        get["text"],
        format!(
            "{declarations}\n// unknown tool `nope__nothing`; search_tools({{query}}) finds tools by keywords"
        )
    );

    // What the human was asked, in order, and by whom.
    let asked = obs["asked"].as_array().expect("asked");
    let fields: Vec<&Value> = asked.iter().map(|q| &q["fields"]).collect();
    assert_eq!(
        json!(fields),
        json!([
            ["decision"],
            ["decision"],
            ["decision"],
            ["answer"],
            ["confirm"]
        ])
    );
    for (q, arg) in asked.iter().zip(["accepted", "declined", "timed out"]) {
        let message = q["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("`everything__echo` (profile `sup`")
                && message.contains(&format!("\"message\": \"{arg}\"")),
            "approval prompt: {message}"
        );
    }
    assert_eq!(asked[3]["message"], "Pick a colour");
    assert_eq!(asked[4]["message"], "Confirm: blue?");

    // The audit log: one tool_call record per attempt (allowed, denied, approved, declined,
    // timed out), one eval record per eval.
    let records = setup.audit_once(&[("eval", 8)]);
    let ledger_len: usize = [
        "parallel",
        "failing",
        "search_in_script",
        "denied",
        "accepted",
        "declined",
        "timed_out",
        "hitl",
    ]
    .iter()
    .map(|k| {
        obs[k]["structured"]["tool_calls"]
            .as_array()
            .map_or(0, Vec::len)
    })
    .sum();
    let calls = audit_calls(&records);
    assert_eq!(
        calls.len(),
        ledger_len,
        "one record per attempt: {calls:#?}"
    );
    assert_json(
        &format!("{name}: audit tool_call records"),
        &json!(calls),
        &sorted(json!([
            ["everything__echo", null, "allowed", "ok", null],
            ["everything__echo", "sup", "approved", "ok", null],
            [
                "everything__echo",
                "sup",
                "declined",
                "denied",
                "elicitation_declined"
            ],
            [
                "everything__echo",
                "sup",
                "timeout",
                "denied",
                "elicitation_timeout"
            ],
            ["everything__get-sum", "sup", "denied", "denied", "denied"],
            ["get_tools", null, "allowed", "ok", null],
            ["hitl_request", null, "allowed", "ok", null],
            ["search_tools", null, "allowed", "ok", null],
            ["time__get_current_time", null, "allowed", "ok", null],
        ])),
    );
    let evals: Vec<&Value> = records.iter().filter(|r| r["event"] == "eval").collect();
    assert_eq!(evals.len(), 8, "one eval record per eval: {evals:?}");
    let failed: Vec<&Value> = evals.iter().filter(|r| r["ok"] == false).copied().collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["error_kind"], "exception");
    let counted: u64 = evals.iter().filter_map(|r| r["tool_calls"].as_u64()).sum();
    assert_eq!(counted as usize, ledger_len);
    assert!(
        records
            .iter()
            .all(|r| r["session_id"].as_str().is_some_and(|s| !s.is_empty())),
        "every record names its session"
    );
}

fn without_request_id(mut summary: Value) -> Value {
    let id = summary["result"]
        .as_object_mut()
        .and_then(|r| r.remove("requestId"));
    assert!(
        id.as_ref()
            .and_then(Value::as_str)
            .is_some_and(|s| s.starts_with("hitl-")),
        "hitl_request's requestId: {id:?}"
    );
    summary
}

#[test]
fn core_stdio_auto() {
    core(Transport::Stdio, Mode::Auto);
}

#[test]
fn core_stdio_legacy() {
    core(Transport::Stdio, Mode::Legacy);
}

#[test]
fn core_http_auto() {
    core(Transport::Http, Mode::Auto);
}

#[test]
fn core_http_legacy() {
    core(Transport::Http, Mode::Legacy);
}
