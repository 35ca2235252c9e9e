//! Code as models write it, through the Python SDK and a real upstream (clients/codeforms.py):
//! fenced TypeScript with `export default`, the `get_tools` declarations pasted above a script,
//! and a TypeScript error on a known line of the text as sent.

use serde_json::json;

use crate::harness::{Mode, Setup, Transport, assert_json, base_config, eval_summary};

#[test]
fn typescript_scripts_call_a_real_upstream() {
    let setup = Setup::new("codeforms", Transport::Stdio, base_config);
    let obs = setup.python("codeforms.py", Mode::Auto, &[]);
    assert_json(
        "fenced TypeScript",
        &eval_summary(&obs["typed"]),
        &json!({"is_error": false, "ok": true, "result": "Echo: sum=The sum of 20 and 22 is 42.",
                "calls": [["everything__get-sum", "ok", null], ["everything__echo", "ok", null]]}),
    );
    assert_json(
        "get_tools declarations pasted above a script",
        &eval_summary(&obs["pasted"]),
        &json!({"is_error": false, "ok": true, "result": "Echo: pasted",
                "calls": [["everything__echo", "ok", null]]}),
    );
    let failing = &obs["failing"]["structured"]["error"];
    assert_eq!(failing["kind"], "exception");
    assert_eq!(failing["message"], "Error: got string");
    assert_eq!(failing["line"], 4, "{failing}");
}
