//! Two HTTP sessions whose approvals must each go to their own client (clients/two_sessions.py).

use serde_json::json;

use crate::harness::{Mode, Setup, Transport, assert_json, base_config, eval_summary};

fn two_sessions(mode: Mode) {
    let name = format!("two_sessions_{mode:?}").to_lowercase();
    let setup = Setup::new(&name, Transport::Http, base_config);
    let obs = setup.python("two_sessions.py", mode, &[]);
    assert_eq!(obs["protocol"], mode.protocol());
    let echo = |message: &str| {
        json!({"is_error": false, "ok": true, "result": format!("Echo: {message}"),
            "calls": [["everything__echo", "ok", null]]})
    };
    assert_json(
        &format!("{name}: results"),
        &json!({
            "first_a": eval_summary(&obs["first_a"]),
            "first_b": eval_summary(&obs["first_b"]),
            "second_a": eval_summary(&obs["second_a"]),
            "second_b": eval_summary(&obs["second_b"]),
        }),
        &json!({
            "first_a": echo("from A"),
            "first_b": {"is_error": false, "ok": true,
                "result": {"name": "ToolCallDeniedError", "reason": "elicitation_declined"},
                "calls": [["everything__echo", "denied", "elicitation_declined"]]},
            "second_a": echo("A again"),
            "second_b": echo("B again"),
        }),
    );
    // Each question reached the client whose script asked it, and only that one.
    let asked = |who: &str| -> Vec<String> {
        obs[format!("asked_{who}")]
            .as_array()
            .expect("asked")
            .iter()
            .map(|m| m.as_str().unwrap_or_default().to_string())
            .collect()
    };
    let mentions = |messages: &[String], args: &[&str]| {
        messages.len() == args.len()
            && messages
                .iter()
                .zip(args)
                .all(|(m, a)| m.contains(&format!("\"message\": \"{a}\"")))
    };
    let (a, b) = (asked("a"), asked("b"));
    assert!(mentions(&b, &["from B", "B again"]), "B was asked: {b:#?}");
    match mode {
        // A approved echo for its session: its second call is not asked again.
        Mode::Legacy => assert!(mentions(&a, &["from A"]), "A was asked: {a:#?}"),
        // Stateless 2026-07-28 HTTP has no session to remember the approval in: each request
        // is its own session, so A is asked again (approve_tool_for_session acts as once).
        Mode::Auto => assert!(mentions(&a, &["from A", "A again"]), "A was asked: {a:#?}"),
    }
}

#[test]
fn two_http_sessions_auto() {
    two_sessions(Mode::Auto);
}

#[test]
fn two_http_sessions_legacy() {
    two_sessions(Mode::Legacy);
}
