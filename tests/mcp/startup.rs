//! `serve` answers `initialize` before its upstreams are up; a slow upstream's tools arrive with
//! `notifications/tools/list_changed`, a call to it waits for it, and a failing upstream is
//! shown as down with its error (clients/startup.py).

use serde_json::{Value, json};

use crate::harness::{Mode, Scratch, Setup, Transport, assert_json, stdio_server};
use crate::peers;

fn config(scratch: &Scratch) -> Value {
    let (time, args) = peers::time_server_cmd();
    let gate = scratch.path("gate");
    // Waits for the gate file, then becomes the real server (same pid, same pipes).
    let script = format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done; exec \"$0\" \"$@\"",
        gate.display()
    );
    let mut slow_args = vec![json!("-c"), json!(script), json!(time)];
    slow_args.extend(args.iter().map(|a| json!(a)));
    json!({
        "mcpServers": {
            "slow": {"command": "sh", "args": slow_args, "startTimeoutSeconds": 90},
            "broken": {"command": "sh", "args": ["-c", "printf 'no API key configured\\033[2K (set KEY)\\n' >&2; exit 1"]},
            "time": stdio_server(peers::time_server_cmd()),
        },
        "evaluation": {"profiles": {
            "asks": {"asklist": ["slow__*"], "elicitationFallback": "deny"},
            // Denies every tool of `broken`: its callers do not learn it exists, down or not.
            "nobroken": {"denylist": ["broken__*"]}
        }}
    })
}

#[test]
fn serve_answers_first_and_upstreams_arrive_later() {
    let setup = Setup::new("startup_stdio", Transport::Stdio, config);
    let obs = setup.python("startup.py", Mode::Legacy, &[]);
    let start = obs["servers_at_start"].as_str().unwrap_or_default();
    assert!(
        start.contains("slow (starting)") && start.contains("time ("),
        "{start}"
    );
    assert_json(
        "order of events",
        &obs["events"],
        &json!(["initialized", "gate_opened", "list_changed", "tool_listed"]),
    );
    assert_json(
        "the call made while slow was starting",
        &json!({"is_error": obs["slow_call"]["is_error"], "ok": obs["slow_call"]["structured"]["ok"],
                "result": obs["slow_call"]["structured"]["result"]}),
        &json!({"is_error": false, "ok": true, "result": "UTC"}),
    );
    // Decided by the profile once slow's tools were known: asked (and, with no human, denied).
    assert_json(
        "the asked call made while slow was starting",
        &obs["asked_call"],
        &json!({"name": "ToolCallDeniedError", "reason": "elicitation_unsupported"}),
    );
    // The middle (how the handshake failed) is rmcp's and depends on the race between the
    // child exiting and the request being written; the start and the child's own line are ours.
    let head = "`sh` started but the MCP handshake failed: ";
    let tail = "; its last stderr line: no API key configured\\u001b[2K (set KEY)";
    let listed = obs["servers_before_gate"].as_str().unwrap_or_default();
    assert!(
        listed.contains(&format!("broken (down: {head}"))
            && listed.contains(&format!("{tail})"))
            && listed.contains("slow (starting)"),
        "{listed}"
    );
    let broken = obs["get_broken"].as_str().unwrap_or_default();
    let note = broken.lines().last().unwrap_or_default();
    assert!(
        note.starts_with(&format!(
            "// `broken__run` is not listed: the server `broken` is down: {head}"
        )) && note.ends_with(tail),
        "{broken}"
    );
    let slow = obs["get_slow"].as_str().unwrap_or_default();
    assert!(
        slow.contains("  slow__get_current_time(args: {") && !slow.contains("// `slow__"),
        "{slow}"
    );
    for what in ["search_unavailable", "search_in_script"] {
        let unavailable = &obs[what];
        let error = unavailable[0]["error"].as_str().unwrap_or_default();
        assert_json(
            what,
            &json!({"entries": unavailable.as_array().map(Vec::len), "server": unavailable[0]["server"],
                    "state": unavailable[0]["state"], "head": error.starts_with(head), "tail": error.ends_with(tail)}),
            &json!({"entries": 1, "server": "broken", "state": "down", "head": true, "tail": true}),
        );
    }
    // A profile that denies every tool of `broken` is not told it is down (nor that it exists).
    assert_eq!(obs["search_unavailable_nobroken"], Value::Null);
    assert!(
        obs["search_hits"]
            .as_array()
            .is_some_and(|hits| hits.iter().any(|h| h == "slow__get_current_time")),
        "{}",
        obs["search_hits"]
    );
}
