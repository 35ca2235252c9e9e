//! MCP cancellation of a long-running eval (clients/cancel.py).

use serde_json::json;

use crate::harness::{Mode, Setup, Transport, assert_json, base_config, eval_summary, number};

fn cancel(transport: Transport, mode: Mode) {
    let name = format!("cancel_{transport:?}_{mode:?}").to_lowercase();
    // `while (true) {}` under the default 30 s timeout. Fuel is unlimited: the default 2e10
    // runs out in about a second here, which would end the loop before the cancellation does.
    let setup = Setup::new(&name, transport, |scratch| {
        let mut config = base_config(scratch);
        config["limits"] = json!({ "fuel": 0 });
        config
    });
    let obs = setup.python("cancel.py", mode, &[]);
    assert_eq!(
        obs["cancelled"], true,
        "the client gave up on the call: {obs}"
    );
    assert!(obs["finished_anyway"].is_null(), "{obs}");
    let cpu = number(&obs["cpu_seconds_in_1s_after"]);
    assert!(
        cpu < 0.3,
        "the cancelled sandbox keeps running: codemode used {cpu} s of CPU in the second after"
    );
    assert_json(
        &format!("{name}: the next eval"),
        &eval_summary(&obs["next"]),
        &json!({"is_error": false, "ok": true, "result": 3, "calls": []}),
    );
    let next = number(&obs["next"]["seconds"]);
    assert!(next < 2.0, "the next eval took {next} s");
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
