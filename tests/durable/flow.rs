//! The script every flow runs, what it must return, and the checks every flow makes: the
//! outcome equals an uninterrupted run's, the file got its line once, the audit has each record
//! once across all nodes.

use std::path::Path;
use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::client::{self, approve_all, block_on, request_state};
use crate::harness::{ASKED_TOOL, Node, audit_records, node_config, write_json};

/// The eval tool of the `gate` profile.
pub const GATE: &str = "codemode_eval_gate";

/// The file the script appends to, in the shared files directory, and what it holds first.
pub const FILE: &str = "ledger.txt";
pub const FIRST_LINE: &str = "opened\n";

/// Builds 10,000 squares (state the saved sandbox must carry), reads the file, writes it back
/// with their sum appended (the asked call), reads it again.
pub fn script(files: &Path) -> String {
    let path = files.join(FILE);
    format!(
        r#"const path = {path};
const squares = Array.from({{length: 10000}}, (_, i) => i * i);
const total = squares.reduce((a, b) => a + b, 0);
const before = await codemode.fs__read_text_file({{path}});
console.log(`read ${{before.content.length}} chars`);
await codemode.fs__write_file({{path, content: before.content + `total=${{total}}\n`}});
const after = await codemode.fs__read_text_file({{path}});
return {{after: after.content, count: squares.length, last: squares[9999]}};"#,
        path = json!(path.display().to_string())
    )
}

/// What the script returns (sum of i² for i < 10,000 = 333,283,335,000).
pub fn expected_result() -> Value {
    json!({
        "after": format!("{FIRST_LINE}total=333283335000\n"),
        "count": 10000,
        "last": 99980001
    })
}

/// Creates the file the script reads.
pub fn prepare(files: &Path) {
    std::fs::write(files.join(FILE), FIRST_LINE).expect("write the ledger file");
}

/// The parts of an outcome (`structuredContent`) that do not depend on where or when it ran:
/// `ok`, `result`, `error`, `logs`, `warnings`, and `[tool, status, reason]` of each call.
pub fn essentials(outcome: &Value) -> Value {
    let ledger: Vec<Value> = outcome["tool_calls"]
        .as_array()
        .unwrap_or_else(|| panic!("no ledger in {outcome}"))
        .iter()
        .map(|c| json!([c["tool"], c["status"], c["reason"]]))
        .collect();
    json!({
        "ok": outcome["ok"],
        "result": outcome["result"],
        "error": outcome["error"],
        "logs": outcome["logs"],
        "warnings": outcome["warnings"],
        "ledger": ledger
    })
}

/// The audit trail in a form that does not depend on where or when it ran: the eval records
/// (`ok`, `error_kind`, `tool_calls`), `[call_id, tool, decision, status]` of each `tool_call`
/// record, ordered by call id, and how many distinct `eval_id`s the records name (one eval:
/// one id, whichever nodes it ran on).
pub fn audit_trail(records: &[Value]) -> Value {
    let evals: Vec<Value> = records
        .iter()
        .filter(|r| r["event"] == "eval")
        .map(|r| json!([r["ok"], r["error_kind"], r["tool_calls"]]))
        .collect();
    let mut calls: Vec<&Value> = records
        .iter()
        .filter(|r| r["event"] == "tool_call")
        .collect();
    calls.sort_by_key(|r| r["call_id"].as_u64());
    let ids: std::collections::BTreeSet<String> =
        records.iter().map(|r| r["eval_id"].to_string()).collect();
    json!({
        "eval_ids": ids.len(),
        "evals": evals,
        "calls": calls
            .iter()
            .map(|r| json!([r["call_id"], r["tool"], r["decision"], r["status"]]))
            .collect::<Vec<_>>()
    })
}

/// The audit trail every flow must leave: one eval record, one record per call.
pub fn expected_trail() -> Value {
    json!({
        "eval_ids": 1,
        "evals": [[true, null, 3]],
        "calls": [
            [1, "fs__read_text_file", "allowed", "ok"],
            [2, ASKED_TOOL, "approved", "ok"],
            [3, "fs__read_text_file", "allowed", "ok"]
        ]
    })
}

/// What an uninterrupted run gives: one node, a local store that would spill only after an
/// hour, the approval answered by the client's retry to the same node while the eval is in
/// memory. Run once per test process: `(essentials of the outcome, audit trail)`.
pub fn uninterrupted() -> &'static (Value, Value) {
    static RUN: OnceLock<(Value, Value)> = OnceLock::new();
    RUN.get_or_init(|| {
        let dir = codemode_test_support::scratch_dir("durable", "uninterrupted");
        let files = dir.join("files");
        std::fs::create_dir_all(&files).expect("create the files dir");
        prepare(&files);
        let config = dir.join("codemode.json");
        let durable = json!({"store": "local", "dir": dir.join("state"),
                             "suspendToStoreAfterSeconds": 3600});
        write_json(&config, &node_config(&files, &dir.join("audit"), durable));
        let node = Node::start("uninterrupted", &config, &[]);
        let args = json!({"code": script(&files)});
        let outcome = block_on(async {
            let asked = client::call_tool(&node.mcp_url(), GATE, &args, None)
                .await
                .unwrap();
            let state = request_state(&asked.result);
            let answers = approve_all(&asked.result);
            client::call_tool(&node.mcp_url(), GATE, &args, Some((&state, answers)))
                .await
                .unwrap()
        });
        let outcome = complete_outcome(&outcome.result, &node.log());
        let records = crate::harness::await_some("the uninterrupted run's eval record", || {
            let records = audit_records(&dir.join("audit"));
            records
                .iter()
                .any(|r| r["event"] == "eval")
                .then_some(records)
        });
        drop(node);
        let file = std::fs::read_to_string(files.join(FILE)).unwrap();
        assert_eq!(
            file,
            expected_result()["after"],
            "the uninterrupted run's file"
        );
        (essentials(&outcome), audit_trail(&records))
    })
}

/// The `structuredContent` of a complete, successful result (panics with `log` otherwise).
pub fn complete_outcome(result: &Value, log: &str) -> Value {
    assert_eq!(
        result
            .get("resultType")
            .and_then(Value::as_str)
            .unwrap_or("complete"),
        "complete",
        "not a complete result: {result}\nlog:\n{log}"
    );
    assert_eq!(result["isError"], false, "{result}\nlog:\n{log}");
    result["structuredContent"].clone()
}

/// The checks of every flow: the outcome equals an uninterrupted run's (and what the script
/// must return), the file got one line, and `records` (every node's audit) the expected trail.
pub fn assert_same_as_uninterrupted(outcome: &Value, files: &Path, records: &[Value]) {
    let (reference, reference_trail) = uninterrupted();
    assert_eq!(reference["result"], expected_result());
    assert_eq!(reference_trail, &expected_trail());
    assert_eq!(&essentials(outcome), reference, "{outcome:#}");
    let file = std::fs::read_to_string(files.join(FILE)).unwrap();
    assert_eq!(
        file,
        expected_result()["after"],
        "the line was written once"
    );
    assert_eq!(audit_trail(records), expected_trail(), "{records:#?}");
}
