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

/// An `accept` that leaves fields out is completed from the form's defaults before it goes
/// upstream (SEP-1034): the human gives only the required `name`.
#[test]
fn an_accepted_upstream_form_is_completed_from_its_defaults() {
    let setup = Setup::new(
        "upstream_elicitation_defaults",
        Transport::Stdio,
        base_config,
    );
    let obs = setup.python("upstream_defaults.py", Mode::Legacy, &[]);
    assert_json(
        "an upstream form accepted with fields left out",
        &obs,
        &json!({
            "protocol": Mode::Legacy.protocol(),
            "asked": 1,
            "result": {"action": "accept", "content": {
                "name": "Ada",
                "firstLine": "It was a dark and stormy night.",
                "integer": 42,
                "number": 314.0 / 100.0, // the form's default, 3.14
                "untitledSingleSelectEnum": "Monica",
                "untitledMultipleSelectEnum": ["Guitar"],
                "titledSingleSelectEnum": "hero-1",
                "titledMultipleSelectEnum": ["fish-1"],
                "legacyTitledEnum": "pet-1",
            }},
        }),
    );
}
