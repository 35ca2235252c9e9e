//! An upstream's own elicitation reaches only the human of the eval whose call triggered it,
//! never another session's (clients/upstream_elicitation.py).

use serde_json::json;

use crate::harness::{Mode, Setup, Transport, assert_json, base_config, eval_summary};

#[test]
fn upstream_elicitation_goes_to_the_triggering_session_only() {
    let setup = Setup::new(
        "upstream_elicitation_sessions",
        Transport::Http,
        base_config,
    );
    let obs = setup.python("upstream_elicitation.py", Mode::Legacy, &[]);
    assert_eq!(obs["protocol"], Mode::Legacy.protocol());
    let trigger = "everything__trigger-elicitation-request";
    assert_json(
        "upstream elicitation across sessions",
        &json!({
            "alone": eval_summary(&obs["alone"]),
            "together": eval_summary(&obs["together"]),
            "slow": eval_summary(&obs["slow"]),
            "asked_a": obs["asked_a"].as_array().map(|a| a.len()),
            "asked_b": obs["asked_b"],
        }),
        &json!({
            "alone": {"is_error": false, "ok": true, "result": "declined", "calls": [[trigger, "ok", null]]},
            "together": {"is_error": false, "ok": true, "result": "declined", "calls": [[trigger, "ok", null]]},
            "slow": {"is_error": false, "ok": true, "result": "slow done",
                "calls": [["everything__trigger-long-running-operation", "ok", null]]},
            "asked_a": 1,
            "asked_b": [],
        }),
    );
    let asked = obs["asked_a"][0].as_str().unwrap_or_default();
    assert!(
        asked.starts_with("[upstream server `everything` asks]"),
        "{asked}"
    );
}
