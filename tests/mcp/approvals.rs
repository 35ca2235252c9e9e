//! The HTTP approval API, driven by a second HTTP client (clients/approvals_http.py) while an
//! eval of a client that cannot elicit waits on it, on both protocol generations.

use serde_json::{Value, json};

use crate::harness::{Mode, Setup, Transport, assert_json, base_config, eval_summary};

/// Profile `gate` asks about `everything__echo` (300 s to answer); the HTTP approval API on.
pub(crate) fn config(scratch: &crate::harness::Scratch) -> Value {
    let mut config = base_config(scratch);
    config["evaluation"]["profiles"]["gate"] = json!({
        "asklist": ["everything__echo"],
        "approvalTimeoutSeconds": 300,
        "elicitationFallback": "deny"
    });
    config["approvals"] = json!({"http": true});
    config
}

fn approvals_http(mode: Mode) {
    let name = format!("approvals_http_{mode:?}").to_lowercase();
    let setup = Setup::new(&name, Transport::Http, config);
    let mut obs = setup.python("approvals_http.py", mode, &[]);
    let result = obs
        .as_object_mut()
        .and_then(|o| o.remove("result"))
        .expect("the eval's result");
    let request = json!({
        "caller": "local",
        "profile": "gate",
        "tool": "everything__echo",
        "risk": "medium",
        // server-everything annotates echo readOnlyHint.
        "classification": "read",
        "args": {"message": "hi\u{1b}[2K\nthere", "pad": "x".repeat(500)},
        "args_summary": format!(
            "{{\n  \"message\": (text: 2 lines, 12 characters)\n    │ hi\\u001b[2K\n    │ there\n  \"pad\": \"{} … (302 more characters) … {}\"\n}}",
            "x".repeat(132),
            "x".repeat(66)
        ),
        "call_sites": [
            {"tool": "time__get_current_time", "line": 2, "column": 20, "dynamic": false},
            {"tool": "everything__echo", "line": 3, "column": 14, "dynamic": false},
        ],
        "allowed_decisions": ["approve_once", "approve_eval", "approve_session", "decline"],
        "reason_required": false,
        "id_is_128_bit_hex": true,
        "times_utc": true,
        "timeout_ms": 300_000,
    });
    let mut decided = request.clone();
    decided["decision"] = json!("approve_once");
    decided["decided_by"] = json!("local");
    decided["reason"] = json!("looks fine");
    decided["channel"] = json!("http");
    let want = json!({
        "stream_status": 200,
        "stream_type": "text/event-stream",
        "requested": ["requested", request],
        "listed_same": true,
        "statuses": {
            "rebinding_host": 403,
            "foreign_origin": 403,
            "no_origin": 403,
            "not_json": 403,
            "unknown_id": 404,
            "unknown_decision": 422,
            "approve": 200,
            "again": 409,
        },
        "decided": ["decided", decided],
        "question": ["requested", {"kind": "question", "tool": "hitl_request", "options": ["yes", "no"],
            "args_summary": "Deploy\\u001b[2K\\nnow?", "risk": null}],
        "question_statuses": {"not_an_option": 422, "answer": 200},
        "answered": ["decided", "answer", "yes", "http"],
        "hitl_result": {"status": "confirmed", "selectedOption": "yes", "confirmed": true, "source": "user"},
        "pending_after": [],
        "last_kinds": ["question", "approval"],
        "last_decisions": [decided],
        "bad_state": 400,
        "page": [200, "text/html; charset=utf-8", true],
    });
    assert_json(&format!("{name}: observations"), &obs, &want);
    assert_json(
        &format!("{name}: eval"),
        &eval_summary(&result),
        &json!({"is_error": false, "ok": true, "result": "Echo: hi\u{1b}[2K\nthere",
            "calls": [["everything__echo", "ok", null]]}),
    );
}

#[test]
fn approvals_http_auto() {
    approvals_http(Mode::Auto);
}

#[test]
fn approvals_http_legacy() {
    approvals_http(Mode::Legacy);
}
