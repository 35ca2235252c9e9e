//! Approvals "for the rest of the script" and "for the rest of the session" across a park. A
//! 2026-07-28 request is a session of its own, so both last for the rest of that one eval: in
//! memory, and the same when the eval is parked and resumed between its asks.

use serde_json::{Value, json};

use crate::client::{self, block_on, input_keys, request_state};
use crate::flow::GATE;
use crate::harness::{Node, audit_records, await_some, node_config, write_json};

/// `inputResponses` giving `decision` to every question of an input-required result.
fn answer_all(result: &Value, decision: &str) -> Value {
    Value::Object(
        input_keys(result)
            .into_iter()
            .map(|k| {
                (
                    k,
                    json!({"action": "accept", "content": {"decision": decision}}),
                )
            })
            .collect(),
    )
}

/// Runs a script that writes, creates a directory, and writes again (writes and directories
/// asked about) on a fresh node saving evals after `spill_after` seconds, answering every
/// question with `decision`. Returns how many questions rounds it took, the result, and the
/// `(tool, decision, channel)` of each audited call.
fn run(name: &str, spill_after: u64, decision: &str) -> (usize, Value, Vec<Value>) {
    let dir = codemode_test_support::scratch_dir("durable", name);
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let config = dir.join("codemode.json");
    let durable = json!({"store": "local", "dir": dir.join("state"),
                         "suspendToStoreAfterSeconds": spill_after});
    let mut value = node_config(&files, &dir.join("audit"), durable);
    value["evaluation"]["profiles"]["gate"]["asklist"] =
        json!(["fs__write_file", "fs__create_directory"]);
    write_json(&config, &value);
    let node = Node::start(name, &config, &[]);
    let path = |p: &str| json!(files.join(p).display().to_string());
    let code = format!(
        "await codemode.fs__write_file({{path: {one}, content: 'one'}});\n\
         await codemode.fs__create_directory({{path: {made}}});\n\
         await codemode.fs__write_file({{path: {two}, content: 'two'}});\n\
         return 'done';",
        one = path("one.txt"),
        made = path("made"),
        two = path("two.txt"),
    );
    let args = json!({"code": code});
    let mut result = block_on(client::call_tool(&node.mcp_url(), GATE, &args, None))
        .unwrap()
        .result;
    let mut rounds = 0;
    while result["resultType"] == "input_required" {
        rounds += 1;
        assert!(rounds < 10, "{result}\n{}", node.log());
        if spill_after == 0 {
            // Parked before the answer arrives.
            let records = dir.join("state/records");
            crate::harness::await_local_parked(&records, 1, &node.log());
        }
        result = block_on(client::call_tool(
            &node.mcp_url(),
            GATE,
            &args,
            Some((&request_state(&result), answer_all(&result, decision))),
        ))
        .unwrap()
        .result;
    }
    assert_eq!(
        result["structuredContent"]["result"],
        "done",
        "{result}\n{}",
        node.log()
    );
    let audit = await_some("the eval record", || {
        let records = audit_records(&dir.join("audit"));
        records
            .iter()
            .any(|r| r["event"] == "eval")
            .then_some(records)
    });
    let calls = audit
        .iter()
        .filter(|r| r["event"] == "tool_call")
        .map(|r| json!([r["tool"], r["decision"], r["channel"]]))
        .collect();
    (rounds, result, calls)
}

#[test]
fn approvals_for_the_script_and_the_session_last_the_eval_across_a_park() {
    for (decision, tag) in [
        ("approve_tool_for_eval", "eval"),
        ("approve_tool_for_session", "session"),
    ] {
        let (rounds, _, in_memory) = run(&format!("scope_{tag}_memory"), 3600, decision);
        // The second write is covered: two asks, not three.
        assert_eq!(rounds, 2, "{decision} in memory: {in_memory:?}");
        let (rounds, _, parked) = run(&format!("scope_{tag}_parked"), 0, decision);
        assert_eq!(rounds, 2, "{decision} across parks: {parked:?}");
        assert_eq!(parked, in_memory, "{decision}");
    }
}
