//! Identical asks joined (clients/joined.py): a `Promise.all` of three identical calls puts one
//! request to the human on the HTTP approval API, and its one answer approves each.

use serde_json::json;

use crate::approvals::config;
use crate::harness::{Mode, Setup, Transport, assert_json, eval_summary};

#[test]
fn three_identical_calls_share_one_request_and_one_answer_approves_each() {
    let setup = Setup::new("joined", Transport::Http, config);
    let mut obs = setup.python("joined.py", Mode::Auto, &[]);
    let result = obs
        .as_object_mut()
        .and_then(|o| o.remove("result"))
        .expect("the eval's result");
    let want = json!({
        "joined_metric": 2,
        "pending": [["everything__echo", {"message": "same"}]],
        "approve": 200,
        // [decision, status, names the request, has joined_ask]
        "audit": [
            ["approved", "ok", false, false],
            ["approved", "ok", true, true],
            ["approved", "ok", true, true],
        ],
    });
    assert_json("joined: observations", &obs, &want);
    assert_json(
        "joined: eval",
        &eval_summary(&result),
        &json!({"is_error": false, "ok": true, "result": ["Echo: same", "Echo: same", "Echo: same"],
        "calls": [
            ["everything__echo", "ok", null],
            ["everything__echo", "ok", null],
            ["everything__echo", "ok", null]
        ]}),
    );
}
