//! An upstream server killed in the middle of a call (clients/upstream_killed.py).

use serde_json::json;

use crate::harness::{
    Mode, Setup, Transport, assert_json, base_config, eval_summary, everything_js, number,
};

fn upstream_killed(mode: Mode) {
    let name = format!("upstream_killed_{mode:?}").to_lowercase();
    let setup = Setup::new(&name, Transport::Stdio, |scratch| {
        let mut config = base_config(scratch);
        // `exec` keeps the pid, so the pid file names the node process codemode talks to.
        let script = format!(
            "echo $$ > '{}'; exec node '{}' stdio",
            scratch.path("victim.pid").display(),
            everything_js().display()
        );
        config["mcpServers"]["victim"] = json!({ "command": "sh", "args": ["-c", script] });
        config
    });
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
    // At once: not after the 10 s operation, nor the 60 s call timeout.
    let after_kill = number(&obs["seconds_after_kill"]);
    assert!(
        after_kill < 3.0,
        "the call failed {after_kill} s after the kill"
    );
    // Restarted (new process) and usable again.
    assert_eq!(obs["restarted_with_new_pid"], true);
    assert_json(
        &format!("{name}: after the restart"),
        &eval_summary(&obs["after"]),
        &json!({"is_error": false, "ok": true, "result": "Echo: back", "calls": [["victim__echo", "ok", null]]}),
    );
    let restart = number(&obs["restart_seconds"]);
    assert!(restart < 10.0, "the restart took {restart} s");
}

#[test]
fn upstream_killed_mid_call_auto() {
    upstream_killed(Mode::Auto);
}

#[test]
fn upstream_killed_mid_call_legacy() {
    upstream_killed(Mode::Legacy);
}
