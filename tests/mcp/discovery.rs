//! `search_tools` and `get_tools` as MCP tools list only what a profile may call: denied tools
//! are not shown (no description, no schema), asked ones are marked (clients/discovery.py).

use serde_json::json;

use crate::harness::{Mode, Setup, Transport, assert_json, base_config};

#[test]
fn discovery_is_filtered_by_profile() {
    let setup = Setup::new("discovery_profile", Transport::Stdio, base_config);
    let obs = setup.python("discovery.py", Mode::Auto, &[]);
    assert_json(
        "discovery by profile",
        &obs,
        &json!({
            // No profile named and no defaultProfile: everything, nothing asked.
            "search_none": [["everything__echo", false], ["everything__get-sum", false]],
            "get_none": {"declares_sum": true, "declares_echo": true, "missing": [], "needsApproval": []},
            // `sup` denies get-sum (not shown at all) and asks about echo.
            "search_sup": [["everything__echo", true]],
            "get_sup": {"declares_sum": false, "declares_echo": true, "missing": ["everything__get-sum"],
                "needsApproval": ["everything__echo"]},
            "unknown_profile": [-32602, "unknown profile `nope`; profiles you may use: `lenient`, `sup`"],
        }),
    );
}
