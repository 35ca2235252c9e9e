//! Identical asks joined while the leading call's eval parks: a `Promise.all` of two identical
//! asked calls, on a 2026-07-28 client, in an eval saved to the store as soon as it waits
//! (`suspendToStoreAfterSeconds: 0`). The joined call waits for a human like the call it
//! joined, so the eval parks; made again on resume, each call asks (or finds its answer) on its
//! own. Answered on another node: both run, each approved by a human's answer, none twice.

use std::path::Path;

use serde_json::{Value, json};

use crate::client::{self, block_on};
use crate::harness::{
    Node, audit_records, await_local_parked, await_some, node_config, write_json,
};

const GATE: &str = "codemode_eval_gate";

/// `eval` through `node`'s `gate` profile, answering `retry` when given.
fn call(node: &Node, args: &Value, retry: Option<&Value>) -> Value {
    let retry = retry.map(|r| (client::request_state(r), client::approve_all(r)));
    let retry = retry.as_ref().map(|(s, a)| (s.as_str(), a.clone()));
    block_on(client::call_tool(&node.mcp_url(), GATE, args, retry))
        .unwrap_or_else(|e| panic!("{e}\n{}", node.log()))
        .result
}

/// The tool-call audit records under `dir` once the record of an eval that succeeded is in: the
/// audit writer thread writes a finished eval's calls before its record (a parked run's record
/// says it did not succeed).
fn calls_audited(dir: &Path) -> Vec<Value> {
    await_some("the record of an eval that succeeded", || {
        let records = audit_records(dir);
        let succeeded = |r: &Value| r["event"] == "eval" && r["ok"] == true;
        records.iter().any(succeeded).then(|| {
            records
                .into_iter()
                .filter(|r| r["event"] == "tool_call")
                .collect()
        })
    })
}

#[test]
fn a_joined_call_lets_its_eval_park_and_each_call_is_answered_once_after_the_resume() {
    let dir = codemode_test_support::scratch_dir("durable", "joined_parked");
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let durable =
        json!({"store": "local", "dir": dir.join("state"), "suspendToStoreAfterSeconds": 0});
    let nodes: Vec<Node> = ["a", "b"]
        .iter()
        .map(|name| {
            let audit = dir.join(format!("audit-{name}"));
            let config = dir.join(format!("{name}.json"));
            write_json(&config, &node_config(&files, &audit, durable.clone()));
            Node::start(name, &config, &[])
        })
        .collect();
    let logs = || format!("{}\n{}", nodes[0].log(), nodes[1].log());
    let file = files.join("twin.txt");
    let code = format!(
        "const w = () => codemode.fs__write_file({{path: {}, content: 'x'}});\n\
         await Promise.all([w(), w()]); return 'written';",
        json!(file.display().to_string())
    );
    let args = json!({"code": code});

    // One question (the second call joined the first's), and the eval saved to the store.
    let first = call(&nodes[0], &args, None);
    assert_eq!(client::input_keys(&first).len(), 1, "{first}");
    await_local_parked(&dir.join("state/records"), 1, &logs());
    // Answered on b: the leading call takes the answer; the other, made again, asks on its own.
    let second = call(&nodes[1], &args, Some(&first));
    let keys = client::input_keys(&second);
    assert_eq!(keys.len(), 1, "{second}\n{}", logs());
    assert_ne!(keys, client::input_keys(&first), "{second}");
    let done = call(&nodes[1], &args, Some(&second));
    assert_eq!(
        (&done["isError"], &done["structuredContent"]["result"]),
        (&json!(false), &json!("written")),
        "{done}\n{}",
        logs()
    );

    // Two calls ran, each once, each approved by a human (none by a rule or a joined answer
    // kept past the park); a's audit has no call (it parked before either ran).
    let ran: Vec<Value> = calls_audited(&dir.join("audit-b"))
        .iter()
        .map(|r| {
            json!([
                r["decision"],
                r["status"],
                r["channel"],
                r.get("joined_ask")
            ])
        })
        .collect();
    let approved = json!(["approved", "ok", "elicitation", null]);
    assert_eq!(ran, [approved.clone(), approved], "{}", logs());
    let parked_on_a: Vec<Value> = audit_records(&dir.join("audit-a"))
        .into_iter()
        .filter(|r| r["event"] == "tool_call")
        .collect();
    assert_eq!(parked_on_a, Vec::<Value>::new());
}

/// The red team's form of the case (local store, a 2025-11-25-style single retry answering the
/// one question): the eval parks with its joined ask, and one approval given to the saved eval
/// lets both identical writes run.
#[test]
fn an_eval_with_a_joined_ask_parks_and_its_answer_decides_every_joined_call() {
    use crate::client::{approve_all, input_keys, request_state};
    let dir = codemode_test_support::scratch_dir("durable", "joined_park");
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let state = dir.join("state");
    let config = dir.join("codemode.json");
    let durable = json!({"store": "local", "dir": state, "suspendToStoreAfterSeconds": 0});
    write_json(&config, &node_config(&files, &dir.join("audit"), durable));
    let node = Node::start("joined_park", &config, &[]);
    let path = json!(files.join("twice.txt").display().to_string());
    let code = format!(
        "const w = () => codemode.fs__write_file({{path: {path}, content: 'same'}});\n\
         await Promise.all([w(), w()]);\n\
         return 'written';"
    );
    let args = json!({"code": code});
    let gate = GATE;
    let asked = block_on(client::call_tool(&node.mcp_url(), gate, &args, None))
        .unwrap()
        .result;
    assert_eq!(input_keys(&asked).len(), 1, "one question: {asked}");
    await_local_parked(&state.join("records"), 1, &node.log());
    let mut reply = block_on(client::call_tool(
        &node.mcp_url(),
        gate,
        &args,
        Some((&request_state(&asked), approve_all(&asked))),
    ))
    .unwrap()
    .result;
    // Made again on resume, the second call may ask on its own: answered the same way.
    for _ in 0..3 {
        if reply["structuredContent"]["result"] == "written" || input_keys(&reply).is_empty() {
            break;
        }
        reply = block_on(client::call_tool(
            &node.mcp_url(),
            gate,
            &args,
            Some((&request_state(&reply), approve_all(&reply))),
        ))
        .unwrap()
        .result;
    }
    assert_eq!(
        reply["structuredContent"]["result"],
        "written",
        "{reply}\n{}",
        node.log()
    );
    let writes: Vec<_> = calls_audited(&dir.join("audit"))
        .into_iter()
        .filter(|r| r["tool"] == "fs__write_file")
        .filter(|r| r["status"] == "ok")
        .collect();
    assert_eq!(writes.len(), 2, "{writes:?}");
}
