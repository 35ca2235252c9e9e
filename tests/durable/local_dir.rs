//! Two processes on one machine sharing one local store directory (no Redis): started at the
//! same moment, they race to generate the sealing key and both end up with the one key file;
//! an eval saved by one is resumed exactly once when retries reach both at the same time.

use serde_json::json;

use crate::client::{self, approve_all, block_on, input_keys, request_state};
use crate::flow::{GATE, assert_same_as_uninterrupted, complete_outcome, prepare, script};
use crate::harness::{Node, audit_records, await_local_parked, node_config, write_json};

#[test]
fn two_processes_share_one_local_store_and_resume_an_eval_once() {
    let dir = codemode_test_support::scratch_dir("durable", "local_dir");
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    prepare(&files);
    let state = dir.join("state");
    let durable = json!({"store": "local", "dir": state, "suspendToStoreAfterSeconds": 0});
    let configs: Vec<_> = ["a", "b"]
        .iter()
        .map(|name| {
            let config = dir.join(format!("{name}.json"));
            let audit = dir.join(format!("audit-{name}"));
            write_json(&config, &node_config(&files, &audit, durable.clone()));
            config
        })
        .collect();
    // Both start at once: neither finds a key file, both generate one, one link wins.
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| Node::start("a", &configs[0], &[]));
        let b = s.spawn(|| Node::start("b", &configs[1], &[]));
        (a.join().unwrap(), b.join().unwrap())
    });
    let key_files: Vec<_> = std::fs::read_dir(&state)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("key"))
        .collect();
    assert_eq!(key_files, ["state.key"], "one key file, no temporary left");

    let args = json!({"code": script(&files)});
    let asked = block_on(client::call_tool(&a.mcp_url(), GATE, &args, None)).unwrap();
    assert_eq!(input_keys(&asked.result).len(), 1, "{}", asked.result);
    await_local_parked(&state.join("records"), 1, &a.log());

    // The same retry at both processes at once: one takes the saved eval and resumes it, the
    // other waits for its result.
    let token = request_state(&asked.result);
    let answers = approve_all(&asked.result);
    let (url_a, url_b) = (a.mcp_url(), b.mcp_url());
    let (at_a, at_b) = block_on(async {
        tokio::join!(
            client::call_tool(&url_a, GATE, &args, Some((&token, answers.clone()))),
            client::call_tool(&url_b, GATE, &args, Some((&token, answers.clone()))),
        )
    });
    let logs = format!("{}\n{}", a.log(), b.log());
    let at_a = complete_outcome(&at_a.unwrap().result, &logs);
    let at_b = complete_outcome(&at_b.unwrap().result, &logs);
    assert_eq!(at_a, at_b, "both retries get the one result");

    let audit = crate::harness::await_some("the eval record", || {
        let mut records = audit_records(&dir.join("audit-a"));
        records.extend(audit_records(&dir.join("audit-b")));
        records
            .iter()
            .any(|r| r["event"] == "eval")
            .then_some(records)
    });
    assert_same_as_uninterrupted(&at_a, &files, &audit);
    await_local_parked(&state.join("records"), 0, &logs);
}
