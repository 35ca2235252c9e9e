//! Red-team findings on durable evals, each a test of what holds since its fix (each failed
//! before it).

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
/// `result:` deleted) makes the next retry with the same `requestState` resume it again. The
/// `decision:` record, kept until the ask's deadline, was taken again and approved the asked
/// call a second time; a decision is now marked used when a resumed eval takes it, so the
/// replayed eval asks its human again and `fs__write_file` runs once. (Replaying the decision
/// as it was before its use too is beyond what sealing can stop: SECURITY.md.)
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

/// A node that runs a resumed eval and stalls for longer than `RUNNING_LEASE` (6 s: a VM
/// pause, a stop-the-world stall, CPU starvation, or its Redis writes held up) was called dead
/// by a retry elsewhere ("… the result is lost"). It was not dead: once it goes on, the script
/// runs to its end and its result is delivered (and kept in the store). A lapsed lease
/// (host/src/server/durable/lease.rs `Running::Abandoned`) cannot tell the two apart, so the
/// retry's message (host/src/server/eval.rs `retry_from_store`) now says either may be so, and
/// the same retry later gets the result.
#[test]
fn a_stalled_node_is_not_reported_as_having_lost_the_eval() {
    use crate::flow::{FILE, FIRST_LINE, prepare};
    use crate::harness::{ASKED_TOOL, Cluster};

    let cluster = Cluster::start("redteam_stalled", 2, 0);
    prepare(&cluster.files);
    let path = cluster.files.join(FILE);
    let written = format!("{FIRST_LINE}napping\n");
    let code = format!(
        "await codemode.{ASKED_TOOL}({{path: {path}, content: {written}}});\n\
         await codemode.nap({{}});\n\
         return 'woke';",
        path = json!(path.display().to_string()),
        written = json!(written),
    );
    let args = json!({"code": code});
    let node0 = cluster.node(0).mcp_url();
    let asked = block_on(client::call_tool(&node0, GATE, &args, None))
        .unwrap()
        .result;
    cluster.await_parked(1);
    let state = request_state(&asked);
    let answering = std::thread::spawn({
        let (node0, args, state, answers) = (
            node0.clone(),
            args.clone(),
            state.clone(),
            approve_all(&asked),
        );
        move || {
            block_on(client::call_tool(
                &node0,
                GATE,
                &args,
                Some((&state, answers)),
            ))
        }
    });
    await_some("the resumed eval's write", || {
        (std::fs::read_to_string(&path).ok()? == written).then_some(())
    });
    // Node 0 stalls (it is not dead); the client's retry reaches node 1 meanwhile.
    cluster.node(0).signal("STOP");
    let retry = block_on(client::call_tool(
        &cluster.node(1).mcp_url(),
        GATE,
        &args,
        Some((&state, approve_all(&asked))),
    ))
    .unwrap()
    .result;
    cluster.node(0).signal("CONT");
    let finished = answering.join().unwrap().unwrap().result;
    // (The nap is `sleep 30`, so the eval ends with its 30 s wall-clock timeout: an outcome all
    // the same, delivered to the request on node 0, and kept in the store.)
    assert_eq!(finished["resultType"], "complete", "{finished}");
    let later = block_on(client::call_tool(
        &cluster.node(1).mcp_url(),
        GATE,
        &args,
        Some((&state, approve_all(&asked))),
    ))
    .unwrap()
    .result;
    assert_eq!(later["structuredContent"], finished["structuredContent"]);
    let told = retry["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        !told.contains("the result is lost"),
        "the retry on node 1 was told {told:?}, yet node 0 finished the eval and the same retry now gets its result: {}",
        later["content"][0]["text"]
    );
}

/// The store becomes unreachable while a retry on node 1 waits for an eval that node 0 runs
/// (resumed by the same retry sent to node 0): node 1 told the client "this eval is no longer
/// waiting for input (…); run it again" — advice that repeats the asked write — although
/// node 0 still ran the eval and answered its own request (a store error read as "not
/// running" and "no result"). Now `Running::Unknown` ends the wait with "the durable store
/// cannot be reached …: retry with the same requestState once the store is back". (A retry
/// that *starts* during the outage: outages::redis_stopped_mid_serve….)
#[test]
fn a_store_outage_while_a_retry_waits_is_not_reported_as_a_finished_eval() {
    use crate::flow::{FILE, FIRST_LINE, prepare};
    use crate::harness::{ASKED_TOOL, Cluster};

    let mut cluster = Cluster::start("redteam_outage_wait", 2, 0);
    prepare(&cluster.files);
    let path = cluster.files.join(FILE);
    let written = format!("{FIRST_LINE}napping\n");
    let code = format!(
        "await codemode.{ASKED_TOOL}({{path: {path}, content: {written}}});\n\
         await codemode.nap({{}});\n\
         return 'woke';",
        path = json!(path.display().to_string()),
        written = json!(written),
    );
    let args = json!({"code": code});
    let node0 = cluster.node(0).mcp_url();
    let asked = block_on(client::call_tool(&node0, GATE, &args, None))
        .unwrap()
        .result;
    cluster.await_parked(1);
    let state = request_state(&asked);
    let retry_on = |url: String| {
        let (args, state, answers) = (args.clone(), state.clone(), approve_all(&asked));
        std::thread::spawn(move || {
            block_on(client::call_tool(
                &url,
                GATE,
                &args,
                Some((&state, answers)),
            ))
        })
    };
    let answering = retry_on(node0);
    await_some("the resumed eval's write", || {
        (std::fs::read_to_string(&path).ok()? == written).then_some(())
    });
    let waiting = retry_on(cluster.node(1).mcp_url());
    // Let node 1 reach its wait for node 0's result (it answers nothing until then).
    std::thread::sleep(std::time::Duration::from_secs(1));
    cluster.redis.stop();
    let told = waiting.join().unwrap().unwrap().result;
    let finished = answering.join().unwrap().unwrap().result;
    assert_eq!(finished["resultType"], "complete", "{finished}");
    let text = told["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        !text.contains("run it again"),
        "node 1 told the client {text:?} while node 0 still ran the eval, which ended with: {}",
        finished["content"][0]["text"]
    );
}

/// With the store unreachable, `GET /approvals` answered `200 {"approvals": []}` (the asks of
/// every saved eval vanished with no error, as if nothing waited) and deciding a listed ask
/// answered `404`. Now the listing answers `503` with this node's own asks, `"incomplete":
/// true` and why, and the decision `503` saying the store cannot be reached.
#[test]
fn the_approval_listing_does_not_look_complete_while_the_store_is_down() {
    use crate::flow::{prepare, script};
    use crate::harness::Cluster;

    let mut cluster = Cluster::start("redteam_listing_outage", 1, 0);
    prepare(&cluster.files);
    let node0 = cluster.node(0).mcp_url();
    let args = json!({"code": script(&cluster.files)});
    let asked = block_on(client::call_tool(&node0, GATE, &args, None))
        .unwrap()
        .result;
    assert_eq!(client::input_keys(&asked).len(), 1, "{asked}");
    cluster.await_parked(1);
    let base = cluster.node(0).base_url();
    let listed = block_on(client::pending_approvals(&base)).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");

    cluster.redis.stop();
    let mut problems = Vec::new();
    let during = block_on(client::pending_approvals(&base));
    if during.is_ok() {
        problems.push(format!("GET /approvals answered as complete: {during:?}"));
    }
    // Deciding the listed ask: `Durable::decide` turns the store error into NotFound.
    let id = listed[0]["id"].as_str().unwrap();
    let (status, body) = block_on(client::decide(&base, id, "approve_once")).unwrap();
    if status == 404 {
        problems.push(format!(
            "POST /approvals/{id} answered 404 (no such ask): {body}"
        ));
    }
    assert!(problems.is_empty(), "with the store down: {problems:#?}");
}

/// A client's retry to a parked eval with two questions open answers both, one with an option
/// and one with something that is not an option. The retry is refused with `-32602` naming the
/// bad answer ("the question is still open: retry"), so the client corrects it, and may change
/// the other answer too. The store path recorded the answers it met before the bad one (keys in
/// order), so the first answer stuck: listed as decided, the corrected retry's answer to it
/// refused as "already answered", and the script got the answer the client took back. Answers
/// are now all checked before any is recorded, as in memory (`Suspended::check`).
#[test]
fn a_refused_retry_records_none_of_its_answers() {
    let name = "redteam_mixed_answers";
    let dir = codemode_test_support::scratch_dir("durable", name);
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let config = dir.join("codemode.json");
    let durable = json!({"store": "local", "dir": dir.join("state"),
                         "suspendToStoreAfterSeconds": 0});
    write_json(&config, &node_config(&files, &dir.join("audit"), durable));
    let node = Node::start(name, &config, &[]);
    let code = "const asks = ['first', 'second'].map((question) => codemode.hitl_request(\
                {question, options: ['x', 'y'], timeoutMs: 600000}));\n\
                const [a, b] = await Promise.all(asks);\n\
                return [a.selectedOption, b.selectedOption];";
    let args = json!({"code": code});
    let asked = block_on(client::call_tool(&node.mcp_url(), "eval", &args, None))
        .unwrap()
        .result;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    await_local_parked(&dir.join("state/records"), 1, &node.log());
    // Both questions, as the saved eval asks them (the first result may carry only one).
    let mut keys: Vec<String> = block_on(client::pending_approvals(&node.base_url()))
        .unwrap()
        .iter()
        .map(|v| format!("codemode-{}", v["id"].as_str().unwrap()))
        .collect();
    keys.sort();
    assert_eq!(keys.len(), 2, "{keys:?}");
    let state = request_state(&asked);
    let retry = |responses: serde_json::Value| {
        block_on(client::call_tool(
            &node.mcp_url(),
            "eval",
            &args,
            Some((&state, responses)),
        ))
        .unwrap()
        .result
    };
    let choose = |option: &str| json!({"action": "accept", "content": {"answer": option}});
    // `keys` is in the order the server reads them: the first gets a valid answer.
    let refused = retry(json!({&keys[0]: choose("x"), &keys[1]: choose("maybe")}));
    assert_eq!(
        (
            &refused["jsonrpc error"]["code"],
            &refused["jsonrpc error"]["message"]
        ),
        (
            &json!(-32602),
            &json!(format!(
                "the answer to `{}` was refused: `maybe` is not one of the options (x, y); the question is still open: retry with the same requestState and one of the options",
                keys[1]
            ))
        ),
        "{refused}"
    );
    let decided = block_on(client::decided_approvals(&node.base_url())).unwrap();
    assert_eq!(decided, Vec::<serde_json::Value>::new(), "{decided:#?}");
    assert_eq!(
        block_on(client::pending_approvals(&node.base_url()))
            .unwrap()
            .len(),
        2
    );
    // The corrected retry: both answers as now given.
    let done = retry(json!({&keys[0]: choose("y"), &keys[1]: choose("x")}));
    let outcome = crate::flow::complete_outcome(&done, &node.log());
    // Which call asked which key: the listing of the decisions names both.
    let decided = block_on(client::decided_approvals(&node.base_url())).unwrap();
    let mut answers: Vec<(String, String)> = decided
        .iter()
        .map(|d| {
            (
                d["args_summary"].as_str().unwrap().to_string(),
                d["answer"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    answers.sort();
    let by_question: Vec<&str> = answers.iter().map(|(_, a)| a.as_str()).collect();
    assert_eq!(outcome["result"], json!(by_question), "{outcome:#}");
    let mut given: Vec<&str> = by_question.clone();
    given.sort();
    assert_eq!(given, ["x", "y"]);
    let first_key_answer = decided
        .iter()
        .find(|d| keys[0].ends_with(d["id"].as_str().unwrap()))
        .map(|d| d["answer"].clone());
    assert_eq!(first_key_answer, Some(json!("y")), "{decided:#?}");
}
