//! Red-team findings on durable evals: each test states what should hold and fails while it
//! does not.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::json;

use crate::client::{self, approve_all, block_on, request_state};
use crate::flow::GATE;
use crate::harness::{
    Node, audit_records, await_local_parked, await_some, node_config, write_json,
};

/// The files of a local store's `records/` directory, by name.
fn snapshot(records: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(records)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

fn writes_audited(audit: &Path) -> usize {
    audit_records(audit)
        .iter()
        .filter(|r| r["event"] == "tool_call" && r["tool"] == "fs__write_file")
        .count()
}

/// A store writer can replay a record it saw (the seal binds the key and the deadline, not
/// a use): after a parked eval was resumed and finished, its `eval:` record put back (and its
/// `result:` deleted) makes the next retry with the same `requestState` resume it again, and
/// the `decision:` record, kept until the ask's deadline, approves the asked call again:
/// `fs__write_file` runs twice. `Durable::claim` (host/src/server/durable.rs) takes the record
/// with no mark that the eval was resumed already.
#[test]
fn a_replayed_saved_eval_does_not_run_its_approved_call_again() {
    let name = "redteam_replay";
    let dir = codemode_test_support::scratch_dir("durable", name);
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let config = dir.join("codemode.json");
    let durable = json!({"store": "local", "dir": dir.join("state"),
                         "suspendToStoreAfterSeconds": 0});
    write_json(&config, &node_config(&files, &dir.join("audit"), durable));
    let node = Node::start(name, &config, &[]);
    let target = files.join("once.txt");
    let code = format!(
        "const before = await codemode.fs__list_directory({{path: {dir}}});\n\
         await codemode.fs__write_file({{path: {target}, content: 'x'}});\n\
         return 'done';",
        dir = json!(files.display().to_string()),
        target = json!(target.display().to_string()),
    );
    let args = json!({"code": code});
    let first = block_on(client::call_tool(&node.mcp_url(), GATE, &args, None))
        .unwrap()
        .result;
    assert_eq!(first["resultType"], "input_required", "{first}");
    let records = dir.join("state/records");
    await_local_parked(&records, 1, &node.log());
    let saved = snapshot(&records);
    let token = request_state(&first);
    let answers = approve_all(&first);
    let done = block_on(client::call_tool(
        &node.mcp_url(),
        GATE,
        &args,
        Some((&token, answers.clone())),
    ))
    .unwrap()
    .result;
    assert_eq!(done["structuredContent"]["result"], "done", "{done}");
    let audit = dir.join("audit");
    await_some("the eval's audit record", || {
        audit_records(&audit)
            .iter()
            .any(|r| r["event"] == "eval")
            .then_some(())
    });
    assert_eq!(writes_audited(&audit), 1);

    // The store writer: the saved eval back, its result gone.
    for (name, bytes) in &saved {
        if name.starts_with("eval:") {
            std::fs::write(records.join(name), bytes).unwrap();
        }
    }
    for name in snapshot(&records).keys() {
        if name.starts_with("result:") {
            std::fs::remove_file(records.join(name)).unwrap();
        }
    }
    let again = block_on(client::call_tool(
        &node.mcp_url(),
        GATE,
        &args,
        Some((&token, answers)),
    ))
    .unwrap()
    .result;
    // The audit is written beside the answer: give a second eval's records a moment to land.
    let count_evals = || {
        audit_records(&audit)
            .iter()
            .filter(|r| r["event"] == "eval")
            .count()
    };
    for _ in 0..100 {
        if count_evals() > 1 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let evals = count_evals();
    assert_eq!(
        (writes_audited(&audit), evals),
        (1, 1),
        "the replayed eval ran its approved call again; the retry got {again}\n{}",
        node.log()
    );
}
