//! An upstream's own elicitation reaches only the human of the eval whose call triggered it,
//! never another session's (clients/upstream_elicitation.py, clients/routed_elicitation.py).

use codemode_test_support::helpers::PythonHelper;
use codemode_test_support::{peers, services};
use serde_json::{Value, json};

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

/// The upstream tests/mcp/asking_server.py, whose tools ask their client's human.
fn asking_server() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/asking_server.py")
}

/// codemode over HTTP in front of asking_server.py, itself served over streamable HTTP (the
/// helper is returned to be dropped once the test is done with it).
fn served_over_http(name: &str) -> (Setup, PythonHelper) {
    let port = services::free_port();
    let mut upstream = None;
    let setup = Setup::new(name, Transport::Http, |scratch| {
        upstream = Some(PythonHelper::start(
            &asking_server(),
            port,
            &scratch.path("unused"),
        ));
        let mut config = base_config(scratch);
        config["mcpServers"] = json!({"asking": {"url": format!("http://127.0.0.1:{port}/mcp")}});
        config
    });
    (
        setup,
        upstream.expect("the upstream started with the setup"),
    )
}

/// What clients/routed_elicitation.py saw, with `held` the outcome of the late question (the
/// upstream's tools answer `{"result": text}` as structured content).
fn routed(obs: &Value, held: &str) {
    let ask = |answer: &str| {
        json!({"is_error": false, "ok": true, "result": {"result": format!("accept: from {answer}")},
            "calls": [["asking__ask", "ok", null]]})
    };
    assert_json(
        "questions of two evals' calls in flight at once, and one asked after its call",
        &json!({
            "together": obs["together"].as_array().map(|a| a.iter().map(eval_summary).collect::<Vec<_>>()),
            "later": eval_summary(&obs["later"]),
            "held": eval_summary(&obs["held"]),
            "asked_a": obs["asked_a"],
            "asked_b": obs["asked_b"],
        }),
        &json!({
            "together": [ask("A"), ask("B")],
            "later": {"is_error": false, "ok": true, "result": {"result": "later"},
                "calls": [["asking__ask_later", "ok", null]]},
            "held": {"is_error": false, "ok": true, "result": {"result": held},
                "calls": [["asking__hold", "ok", null]]},
            "asked_a": ["[upstream server `asking` asks]\n    Question for A"],
            "asked_b": ["[upstream server `asking` asks]\n    Question for B"],
        }),
    );
}

/// Over streamable HTTP a question comes on the stream of the call it is about, so it reaches
/// that call's eval although another eval's call is in flight there too; a question sent on
/// the server's standalone stream (after its call returned) is about no call and is declined,
/// never put to the human of whichever eval has a call there now (issue 28 A.17).
#[test]
fn an_http_upstreams_questions_reach_the_eval_whose_call_asked() {
    let (setup, upstream) = served_over_http("routed_elicitation_http");
    let obs = setup.python("routed_elicitation.py", Mode::Legacy, &[]);
    routed(&obs, "decline: ");
    drop(upstream);
}

/// A stdio server's question carries nothing that ties it to a call; with `isolateSessions`
/// each eval has a server process of its own, so every question reaches the eval whose call
/// asked it. A's process went with its eval: B's `hold` reaches one that asked nothing later.
#[test]
fn an_isolated_stdio_upstreams_questions_reach_the_eval_whose_call_asked() {
    let setup = Setup::new("routed_elicitation_stdio", Transport::Http, |scratch| {
        let mut config = base_config(scratch);
        config["mcpServers"] = json!({"asking": {
            "command": peers::python(),
            "args": [asking_server()],
            "isolateSessions": true,
        }});
        config
    });
    let obs = setup.python("routed_elicitation.py", Mode::Legacy, &[]);
    routed(&obs, "nothing asked later");
}

/// A script's `read_resource` is sent as a call of its eval: an HTTP upstream's question on the
/// read's own stream reaches that eval's human (before, the read's request id was never
/// recorded, and the question was declined unclaimed).
#[test]
fn an_http_upstreams_question_during_a_resource_read_reaches_the_reading_eval() {
    let (setup, upstream) = served_over_http("resource_elicitation_http");
    let obs = setup.python("resource_elicitation.py", Mode::Legacy, &[]);
    assert_json(
        "an upstream's question during a script's resource read",
        &json!({"read": eval_summary(&obs["read"]), "asked": obs["asked"]}),
        &json!({
            "read": {"is_error": false, "ok": true, "calls": [["read_resource", "ok", null]],
                "result": {"contents": [{"mimeType": "text/plain", "text": "accept: from R",
                    "uri": "asking://question/R"}]}},
            "asked": ["[upstream server `asking` asks]\n    Question for R"],
        }),
    );
    drop(upstream);
}
