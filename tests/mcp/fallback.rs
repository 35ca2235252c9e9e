//! A client without elicitation (clients/no_elicitation.py): the profile's
//! `elicitationFallback` decides asked calls, and `hitl_request` never answers for the human.

use serde_json::json;

use crate::harness::{
    Mode, Setup, Transport, assert_json, audit_calls, base_config, eval_summary, sorted,
};

fn no_elicitation(mode: Mode) {
    let name = format!("no_elicitation_{mode:?}").to_lowercase();
    let setup = Setup::new(&name, Transport::Stdio, base_config);
    let obs = setup.python("no_elicitation.py", mode, &[]);
    assert_eq!(obs["protocol"], mode.protocol());
    let mut hitl = eval_summary(&obs["hitl"]);
    hitl["result"]
        .as_object_mut()
        .expect("hitl result")
        .remove("requestId");
    let got = json!({
        "fallback_deny": eval_summary(&obs["fallback_deny"]),
        "fallback_allow": eval_summary(&obs["fallback_allow"]),
        "hitl": hitl,
    });
    let want = json!({
        "fallback_deny": {"is_error": false, "ok": true,
            "result": {"name": "ToolCallDeniedError", "toolName": "everything__echo", "reason": "elicitation_unsupported"},
            "calls": [["everything__echo", "denied", "elicitation_unsupported"]]},
        "fallback_allow": {"is_error": false, "ok": true, "result": "Echo: no human",
            "calls": [["everything__echo", "ok", null]]},
        "hitl": {"is_error": false, "ok": true,
            "result": {"ok": true, "status": "canceled", "confirmed": false, "selectedOption": null, "source": "system",
                "message": "no interactive human is available to answer (the client does not support elicitation)"},
            "calls": [["hitl_request", "ok", null]]},
    });
    assert_json(&format!("{name}: eval results"), &got, &want);
    assert_json(
        &format!("{name}: audit"),
        &json!(audit_calls(&setup.audit_once(&[("eval", 3)]))),
        &sorted(json!([
            ["everything__echo", "lenient", "unsupported", "ok", null],
            [
                "everything__echo",
                "sup",
                "unsupported",
                "denied",
                "elicitation_unsupported"
            ],
            ["hitl_request", null, "allowed", "ok", null],
        ])),
    );
}

#[test]
fn no_elicitation_auto() {
    no_elicitation(Mode::Auto);
}

#[test]
fn no_elicitation_legacy() {
    no_elicitation(Mode::Legacy);
}
