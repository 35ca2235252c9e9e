//! MCP cancellation of a long-running eval (clients/cancel.py).

use serde_json::json;

use crate::harness::{Mode, Setup, Transport, assert_json, base_config, eval_summary};

fn cancel(transport: Transport, mode: Mode) {
    let name = format!("cancel_{transport:?}_{mode:?}").to_lowercase();
    // `while (true) {}` with unlimited fuel (the default 2e10 runs out in about a second here)
    // and a 300 s timeout, far beyond the client's 60 s wait for the server to go idle: only
    // the cancellation can stop the loop in time.
    let setup = Setup::new(&name, transport, |scratch| {
        let mut config = base_config(scratch);
        config["limits"] = json!({ "fuel": 0, "timeout": "300s" });
        config
    });
    let obs = setup.python("cancel.py", mode, &[]);
    assert_eq!(
        obs["cancelled"], true,
        "the client gave up on the call: {obs}"
    );
    assert_eq!(obs["finished_anyway"], json!(null), "{obs}");
    // The client cancelled on the first progress report (sent after 1 s of running).
    assert_eq!(obs["progress"][0], "script running for 1 s", "{obs}");
    assert_eq!(
        obs["went_idle"], true,
        "the cancelled sandbox keeps running: codemode never went idle"
    );
    assert_json(
        &format!("{name}: the next eval"),
        &eval_summary(&obs["next"]),
        &json!({"is_error": false, "ok": true, "result": 3, "calls": []}),
    );
}

#[test]
fn cancel_stdio_auto() {
    cancel(Transport::Stdio, Mode::Auto);
}

#[test]
fn cancel_stdio_legacy() {
    cancel(Transport::Stdio, Mode::Legacy);
}

#[test]
fn cancel_http_auto() {
    cancel(Transport::Http, Mode::Auto);
}
