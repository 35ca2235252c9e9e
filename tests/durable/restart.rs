//! One node with the local store (the default kind: no Redis, a key generated in the state
//! directory), restarted while its eval waits for a human: `SIGTERM` saves the eval before the
//! process exits, and the client's retry to the new process completes it.

use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use crate::client::{self, approve_all, block_on, input_keys, request_state};
use crate::flow::{GATE, assert_same_as_uninterrupted, complete_outcome, prepare, script};
use crate::harness::{Node, audit_records, await_local_parked, node_config, write_json};

#[test]
fn a_restarted_node_resumes_its_waiting_eval() {
    let dir = codemode_test_support::scratch_dir("durable", "restart");
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    prepare(&files);
    let state = dir.join("state");
    let config = dir.join("codemode.json");
    // An hour before spilling: only the shutdown saves the eval.
    let durable = json!({"store": "local", "dir": state, "suspendToStoreAfterSeconds": 3600});
    write_json(&config, &node_config(&files, &dir.join("audit"), durable));

    let node = Node::start("before", &config, &[]);
    let args = json!({"code": script(&files)});
    let asked = block_on(client::call_tool(&node.mcp_url(), GATE, &args, None)).unwrap();
    assert_eq!(input_keys(&asked.result).len(), 1, "{}", asked.result);
    let records = state.join("records");
    // An hour before spilling: nothing is saved while the node runs.
    await_local_parked(&records, 0, &node.log());
    let (status, log) = node.terminate();
    assert!(status.success(), "{status}\n{log}");
    await_local_parked(&records, 1, &log);
    let key = std::fs::metadata(state.join("state.key")).expect("a generated key file");
    assert_eq!(key.permissions().mode() & 0o777, 0o600);

    let node = Node::start("after", &config, &[]);
    let retry = block_on(client::call_tool(
        &node.mcp_url(),
        GATE,
        &args,
        Some((&request_state(&asked.result), approve_all(&asked.result))),
    ))
    .unwrap();
    let outcome = complete_outcome(&retry.result, &node.log());
    let audit = crate::harness::await_some("the eval record", || {
        let records = audit_records(&dir.join("audit"));
        records
            .iter()
            .any(|r| r["event"] == "eval")
            .then_some(records)
    });
    assert_same_as_uninterrupted(&outcome, &files, &audit);
    // The saved state is gone once resumed.
    await_local_parked(&records, 0, &node.log());
}
