//! An upstream server killed in the middle of a call (clients/upstream_killed.py).

use serde_json::json;

use crate::harness::{Mode, Setup, Transport, assert_json, base_config, eval_summary};
use crate::peers;

/// The base config with server-everything as the upstream `victim`, behind the tap
/// (tests/support/tap.py): the server's pid in victim.pid, each request it is sent in
/// victim.requests.
pub(crate) fn with_victim(scratch: &crate::harness::Scratch) -> serde_json::Value {
    let mut config = base_config(scratch);
    let (program, args) = peers::tapped(
        peers::everything_server_cmd(),
        &scratch.path("victim.requests"),
        &scratch.path("victim.pid"),
    );
    config["mcpServers"]["victim"] = json!({ "command": program, "args": args });
    config
}

fn upstream_killed(mode: Mode) {
    let name = format!("upstream_killed_{mode:?}").to_lowercase();
    let setup = Setup::new(&name, Transport::Stdio, with_victim);
    let obs = setup.python("upstream_killed.py", mode, &[]);

    let closed =
        "upstream server `victim` closed the connection during `trigger-long-running-operation`";
    assert_json(
        &format!("{name}: the eval whose upstream died"),
        &eval_summary(&obs["mid_call"]),
        &json!({"is_error": false, "ok": true,
            "result": {"time": "UTC", "slow": {"name": "ToolError", "message": closed}},
            "calls": [["victim__trigger-long-running-operation", "error", closed],
                      ["time__get_current_time", "ok", null]]}),
    );
    // The message says the connection closed during the call: the call ended with the kill,
    // not with the 10 s operation's result nor with the 60 s call timeout's error.
    // Restarted (new process) and usable again.
    assert_eq!(obs["restarted_with_new_pid"], true);
    assert_json(
        &format!("{name}: after the restart"),
        &eval_summary(&obs["after"]),
        &json!({"is_error": false, "ok": true, "result": "Echo: back", "calls": [["victim__echo", "ok", null]]}),
    );
}

#[test]
fn upstream_killed_mid_call_auto() {
    upstream_killed(Mode::Auto);
}

#[test]
fn upstream_killed_mid_call_legacy() {
    upstream_killed(Mode::Legacy);
}
