//! The TypeScript SDK (1.32.2) as the client (clients/ts_client.cjs): it speaks 2025-11-25 and
//! validates eval results against the tools' output schema.

use serde_json::json;

use crate::harness::{
    Setup, Transport, assert_json, audit_calls, base_config, eval_summary, sorted,
};

fn typescript(transport: Transport) {
    let name = format!("typescript_{transport:?}").to_lowercase();
    let setup = Setup::new(&name, transport, base_config);
    let obs = setup.node("ts_client.cjs");
    assert_eq!(obs["protocol"], "2025-11-25");
    assert_eq!(
        obs["tools"],
        json!([
            "codemode_eval_lenient",
            "codemode_eval_sup",
            "eval",
            "get_tools",
            "search_tools"
        ])
    );
    let mut hitl = eval_summary(&obs["hitl"]);
    hitl["result"]
        .as_object_mut()
        .expect("hitl result")
        .remove("requestId");
    let got = json!({
        "parallel": eval_summary(&obs["parallel"]),
        "denied": eval_summary(&obs["denied"]),
        "accepted": eval_summary(&obs["accepted"]),
        "declined": eval_summary(&obs["declined"]),
        "hitl": hitl,
        "failing": eval_summary(&obs["failing"]),
    });
    let want = json!({
        "parallel": {"is_error": false, "ok": true, "result": {"timezone": "UTC", "echo": "Echo: hi"},
            "calls": [["time__get_current_time", "ok", null], ["everything__echo", "ok", null]]},
        "denied": {"is_error": false, "ok": true,
            "result": {"name": "ToolCallDeniedError", "toolName": "everything__get-sum", "reason": "denied"},
            "calls": [["everything__get-sum", "denied", "denied"]]},
        "accepted": {"is_error": false, "ok": true, "result": "Echo: accepted",
            "calls": [["everything__echo", "ok", null]]},
        "declined": {"is_error": false, "ok": true,
            "result": {"name": "ToolCallDeniedError", "reason": "elicitation_declined"},
            "calls": [["everything__echo", "denied", "elicitation_declined"]]},
        "hitl": {"is_error": false, "ok": true,
            "result": {"ok": true, "status": "confirmed", "confirmed": true, "selectedOption": "no", "source": "user"},
            "calls": [["hitl_request", "ok", null]]},
        "failing": {"is_error": true, "ok": false,
            "error": ["exception", "TypeError: cannot read property 'x' of null"], "calls": []},
    });
    assert_json(&format!("{name}: eval results"), &got, &want);
    assert_eq!(
        obs["search"]["results"][0]["name"],
        "time__get_current_time"
    );
    let fields: Vec<&serde_json::Value> = obs["asked"]
        .as_array()
        .expect("asked")
        .iter()
        .map(|q| &q["fields"])
        .collect();
    assert_eq!(
        json!(fields),
        json!([["decision"], ["decision"], ["answer"]])
    );
    assert_json(
        &format!("{name}: audit"),
        &json!(audit_calls(&setup.audit_once(&[("eval", 6)]))),
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
            ["everything__get-sum", "sup", "denied", "denied", "denied"],
            ["hitl_request", null, "allowed", "ok", null],
            ["time__get_current_time", null, "allowed", "ok", null],
        ])),
    );
}

#[test]
fn typescript_sdk_stdio() {
    typescript(Transport::Stdio);
}

#[test]
fn typescript_sdk_http() {
    typescript(Transport::Http);
}
