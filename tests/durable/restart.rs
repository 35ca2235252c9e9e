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

/// An approval whose time runs out while its eval is parked: the node's sweep resumes the eval
/// at the deadline, the asked call ends as timed out (the script catches the denial, the file
/// is not written), the audit records the call once as `timeout` and the eval once, and the
/// client's retry gets the result.
#[test]
fn an_approval_that_times_out_while_parked_ends_the_call_and_is_audited() {
    let dir = codemode_test_support::scratch_dir("durable", "parked_timeout");
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    prepare(&files);
    let state = dir.join("state");
    let config = dir.join("codemode.json");
    let durable = json!({"store": "local", "dir": state, "suspendToStoreAfterSeconds": 0});
    let mut value = node_config(&files, &dir.join("audit"), durable);
    value["evaluation"]["profiles"]["gate"]["approvalTimeoutSeconds"] = json!(2);
    write_json(&config, &value);

    let node = Node::start("timeout", &config, &[]);
    let path = files.join(crate::flow::FILE);
    let code = format!(
        "try {{ await codemode.fs__write_file({{path: {path:?}, content: 'x'}}); return 'written'; }}\n\
         catch (e) {{ return [e.name, e.reason]; }}",
        path = path.display().to_string()
    );
    let args = json!({"code": code});
    let asked = block_on(client::call_tool(&node.mcp_url(), GATE, &args, None)).unwrap();
    assert_eq!(input_keys(&asked.result).len(), 1, "{}", asked.result);
    await_local_parked(&state.join("records"), 1, &node.log());
    // The retry without an answer, after the deadline: the sweep has resumed the eval.
    let outcome = crate::harness::await_some("the timed-out eval's result", || {
        std::thread::sleep(std::time::Duration::from_millis(500));
        let retry = block_on(client::call_tool(
            &node.mcp_url(),
            GATE,
            &args,
            Some((&request_state(&asked.result), json!({}))),
        ))
        .ok()?;
        let result = retry.result;
        (result["structuredContent"]["ok"] == true).then_some(result)
    });
    assert_eq!(
        outcome["structuredContent"]["result"],
        json!(["ToolCallDeniedError", "elicitation_timeout"]),
        "{outcome}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        crate::flow::FIRST_LINE
    );
    let audit = crate::harness::await_some("the eval record", || {
        let records = audit_records(&dir.join("audit"));
        records
            .iter()
            .any(|r| r["event"] == "eval")
            .then_some(records)
    });
    let calls: Vec<(&str, &str)> = audit
        .iter()
        .filter(|r| r["event"] == "tool_call")
        .map(|r| {
            (
                r["tool"].as_str().unwrap_or_default(),
                r["decision"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(calls, [("fs__write_file", "timeout")], "{audit:?}");
    assert_eq!(audit.iter().filter(|r| r["event"] == "eval").count(), 1);
}
