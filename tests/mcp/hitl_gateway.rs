//! `hitl_request` as the approval-gateway design has it (clients/hitl_gateway.py): the
//! `human_intervention_request` alias, `metadata` echoed back, and on timeout the
//! `defaultOption` reported as nobody's choice.

use serde_json::json;

use crate::harness::{Mode, Setup, Transport, assert_json, base_config, eval_summary};

#[test]
fn alias_metadata_and_timeout_default() {
    let setup = Setup::new("hitl_gateway", Transport::Stdio, base_config);
    let obs = setup.python("hitl_gateway.py", Mode::Legacy, &[]);
    let mut alias = eval_summary(&obs["alias"]);
    let mut timeout = eval_summary(&obs["timeout"]);
    // The request ids are checked elsewhere (core.rs); here only that they are there.
    for summary in [&mut alias, &mut timeout] {
        let id = summary["result"]["requestId"].take();
        assert!(id.as_str().is_some_and(|s| s.starts_with("hitl-")), "{id}");
    }
    assert_json(
        "hitl_gateway",
        &json!({"alias": alias, "timeout": timeout, "asked": obs["asked"]}),
        &json!({
            "alias": {"is_error": false, "ok": true, "calls": [["human_intervention_request", "ok", null]],
                "result": {"ok": true, "status": "confirmed", "confirmed": true, "selectedOption": "yes",
                    "source": "user", "requestId": null, "metadata": {"ticket": 42, "tags": ["a", null]}}},
            "timeout": {"is_error": false, "ok": true, "calls": [["hitl_request", "ok", null]],
                "result": {"ok": true, "status": "timeout", "confirmed": false, "selectedOption": "no",
                    "source": "timeout", "requestId": null, "message": "nobody answered in time",
                    "metadata": "m"}},
            "asked": ["Ship it?", "Roll back?"],
        }),
    );
}
