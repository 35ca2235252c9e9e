//! `hitl_request` questions park like approvals: an eval waiting on a question is saved to the
//! store (spilled, or on `SIGTERM`), its question listed by `GET /approvals` on any node, answered
//! there or by the client's input-required retry (the answer checked to be one of the options,
//! single use, by the eval's caller only), and the eval completes as an uninterrupted run does,
//! the call audited once.

use std::path::Path;

use serde_json::{Value, json};

use crate::client::{self, block_on, input_keys, request_state};
use crate::flow::complete_outcome;
use crate::harness::{Cluster, Node, audit_records, await_local_parked, await_some, write_json};

/// The script: state the saved sandbox must carry, a log line on each side of the question, and
/// what the question resolved to (`requestId` checked for its form: it names the eval's id).
pub fn script(confirm: bool, timeout_ms: u64) -> String {
    format!(
        r#"const squares = Array.from({{length: 10000}}, (_, i) => i * i);
console.log('asking');
const r = await codemode.hitl_request({{question: 'Ship release 7?\u001b[2K', options: ['ship', 'hold'],
  requireConfirmation: {confirm}, defaultOption: 'hold', timeoutMs: {timeout_ms}, metadata: {{release: 7}}}});
console.log(`answered ${{r.status}}`);
return {{status: r.status, confirmed: r.confirmed, selectedOption: r.selectedOption, source: r.source,
  message: r.message ?? null, metadata: r.metadata, requestId: /^hitl-\d+-1$/.test(r.requestId),
  last: squares[9999]}};"#
    )
}

/// What the script returns when the human chose `option` (and confirmed it).
pub fn confirmed(option: &str) -> Value {
    json!({"status": "confirmed", "confirmed": true, "selectedOption": option, "source": "user",
        "message": null, "metadata": {"release": 7}, "requestId": true, "last": 99980001})
}

/// The question as the approval API lists it.
fn assert_listed(view: &Value, id: &str, options: &[&str], text: &str) {
    assert_eq!(
        (
            &view["id"],
            &view["kind"],
            &view["tool"],
            &view["options"],
            &view["args_summary"],
            &view["allowed_decisions"]
        ),
        (
            &json!(id),
            &json!("question"),
            &json!("hitl_request"),
            &json!(options),
            &json!(text),
            &json!(["answer", "decline"])
        ),
        "{view:#}"
    );
}

fn answer(option: &str) -> Value {
    json!({"decision": "answer", "answer": option})
}

/// The `hitl_request` tool calls and eval records of an audit trail.
fn hitl_trail(records: &[Value]) -> (Vec<(Value, Value)>, usize) {
    let calls = records
        .iter()
        .filter(|r| r["event"] == "tool_call")
        .map(|r| (r["tool"].clone(), r["status"].clone()))
        .collect();
    let evals = records.iter().filter(|r| r["event"] == "eval").count();
    (calls, evals)
}

/// Three nodes on Redis, spilling at once. The question parks on node A; node B's approval API
/// refuses an answer that is not an option and a decision meant for approvals, takes `ship`,
/// refuses a second answer, and resumes the eval, which parks again at the confirmation (a new
/// ask, the choice kept). B is SIGKILLed after that save; node C's API confirms; the client's
/// retry gets the result an uninterrupted run gives; the call is audited once across the nodes.
#[test]
fn a_question_spilled_to_redis_is_answered_on_other_nodes_across_a_sigkill() {
    let mut cluster = Cluster::start("question_cluster", 3, 0);
    let args = json!({"code": script(true, 600_000)});
    let asked = block_on(client::call_tool(&cluster.front_url(), "eval", &args, None))
        .unwrap_or_else(|e| panic!("{e}\n{}", cluster.logs()));
    let keys = input_keys(&asked.result);
    assert_eq!(keys.len(), 1, "{}", asked.result);
    let id = keys[0].strip_prefix("codemode-").unwrap().to_string();
    let form = &asked.result["inputRequests"][&keys[0]];
    assert_eq!(
        form["params"]["message"], "Ship release 7?\\u001b[2K",
        "{form}"
    );
    cluster.await_parked(1);
    let a = cluster.index_of(&asked.served_by);
    let b = (a + 1) % 3;
    let base_b = cluster.node(b).base_url();

    let pending = block_on(client::pending_approvals(&base_b)).unwrap();
    assert_eq!(pending.len(), 1, "{pending:#?}");
    assert_listed(
        &pending[0],
        &id,
        &["ship", "hold"],
        "Ship release 7?\\u001b[2K",
    );
    let post =
        |base: &str, body: Value| block_on(client::post_decision(base, &id, &body, None)).unwrap();
    assert_eq!(
        post(&base_b, answer("maybe")),
        (422, json!({"error": "`maybe` is not one of the options"}))
    );
    assert_eq!(
        post(&base_b, json!({"decision": "approve_once"})),
        (
            422,
            json!({"error": "a question takes `answer` with one of its options, or `decline`"})
        )
    );
    assert_eq!(
        post(&base_b, answer("ship")),
        (200, json!({"status": "decided"}))
    );
    assert_eq!(
        post(&base_b, answer("hold")),
        (
            409,
            json!({"error": format!("approval request `{id}` was already decided")})
        )
    );

    // Resumed on B, the eval asks the confirmation and is saved again.
    let confirm = await_some("the confirmation step saved", || {
        let keys = cluster.store_keys();
        let pending = block_on(client::pending_approvals(&base_b)).ok()?;
        let step = pending.into_iter().find(|v| v["id"] != json!(id))?;
        let saved = keys.contains(&format!("ask:{}", step["id"].as_str()?))
            && keys.iter().any(|k| k.starts_with("eval:"));
        saved.then_some(step)
    });
    let confirm_id = confirm["id"].as_str().unwrap().to_string();
    assert_listed(
        &confirm,
        &confirm_id,
        &["confirm", "cancel"],
        "Confirm: ship?",
    );
    cluster.take(b).kill();

    let c = (b + 1) % 3;
    let decided = block_on(client::post_decision(
        &cluster.node(c).base_url(),
        &confirm_id,
        &answer("confirm"),
        None,
    ))
    .unwrap();
    assert_eq!(decided, (200, json!({"status": "decided"})));
    let state = request_state(&asked.result);
    let outcome = await_some("the eval's result", || {
        let retry = block_on(client::call_tool(
            &cluster.front_url(),
            "eval",
            &args,
            Some((&state, json!({}))),
        ))
        .ok()?;
        (retry.result["structuredContent"]["ok"] == true).then_some(retry.result)
    });
    let outcome = complete_outcome(&outcome, &cluster.logs());
    assert_eq!(outcome["result"], confirmed("ship"), "{outcome:#}");
    assert_eq!(outcome["logs"].as_array().unwrap().len(), 2, "{outcome:#}");
    let (calls, evals) = hitl_trail(&cluster.audit_with_evals(1));
    assert_eq!(calls, [(json!("hitl_request"), json!("ok"))]);
    assert_eq!(evals, 1);
}

/// One node with a local store and `config` edited by `edit`.
fn local_node(
    name: &str,
    spill_after: u64,
    edit: impl Fn(&mut Value),
) -> (std::path::PathBuf, Node) {
    let dir = codemode_test_support::scratch_dir("durable", name);
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let durable = json!({"store": "local", "dir": dir.join("state"),
                         "suspendToStoreAfterSeconds": spill_after});
    let mut config = crate::harness::node_config(&files, &dir.join("audit"), durable);
    edit(&mut config);
    write_json(&dir.join("codemode.json"), &config);
    let node = Node::start(name, &dir.join("codemode.json"), &[]);
    (dir, node)
}

fn choose(key: &str, option: &str) -> Value {
    json!({key: {"action": "accept", "content": {"answer": option}}})
}

fn audit_once(dir: &Path, evals: usize) -> Vec<Value> {
    await_some("the eval records", || {
        let records = audit_records(&dir.join("audit"));
        (records.iter().filter(|r| r["event"] == "eval").count() >= evals).then_some(records)
    })
}

/// A question saved on `SIGTERM` is listed by the restarted node and answered by the client's
/// retry: an answer that is not an option is refused with a JSON-RPC error naming the options
/// (the question stays open), a valid one completes the eval as an uninterrupted run does.
#[test]
fn a_question_saved_on_sigterm_is_answered_by_the_clients_retry_after_the_restart() {
    let (dir, node) = local_node("question_restart", 3600, |_| {});
    let args = json!({"code": script(false, 600_000)});
    // Uninterrupted: answered while the eval is in memory.
    let asked = block_on(client::call_tool(&node.mcp_url(), "eval", &args, None)).unwrap();
    let key = input_keys(&asked.result).remove(0);
    let in_memory = |responses: Value| {
        block_on(client::call_tool(
            &node.mcp_url(),
            "eval",
            &args,
            Some((&request_state(&asked.result), responses)),
        ))
        .unwrap()
    };
    // An answer that is not an option is refused in memory as in the store.
    let refused = in_memory(choose(&key, "maybe")).result;
    assert_eq!(
        refused["jsonrpc error"]["message"],
        json!(format!(
            "the answer to `{key}` was refused: `maybe` is not one of the options (ship, hold); the question is still open: retry with the same requestState and one of the options"
        )),
        "{refused}"
    );
    let reference = in_memory(choose(&key, "hold"));
    let reference = complete_outcome(&reference.result, &node.log());
    assert_eq!(reference["result"], confirmed("hold"), "{reference:#}");

    let asked = block_on(client::call_tool(&node.mcp_url(), "eval", &args, None)).unwrap();
    let key = input_keys(&asked.result).remove(0);
    let id = key.strip_prefix("codemode-").unwrap();
    let (status, log) = node.terminate();
    assert!(status.success(), "{status}\n{log}");
    await_local_parked(&dir.join("state/records"), 1, &log);

    let node = Node::start("question_restart_after", &dir.join("codemode.json"), &[]);
    let pending = block_on(client::pending_approvals(&node.base_url())).unwrap();
    assert_eq!(pending.len(), 1, "{pending:#?}");
    assert_listed(
        &pending[0],
        id,
        &["ship", "hold"],
        "Ship release 7?\\u001b[2K",
    );
    let state = request_state(&asked.result);
    let retry = |responses: Value| {
        block_on(client::call_tool(
            &node.mcp_url(),
            "eval",
            &args,
            Some((&state, responses)),
        ))
        .unwrap()
        .result
    };
    let refused = retry(choose(&key, "maybe"));
    assert_eq!(
        refused["jsonrpc error"]["message"],
        json!(format!(
            "the answer to `{key}` was refused: `maybe` is not one of the options (ship, hold); the question is still open: retry with the same requestState and one of the options"
        )),
        "{refused}"
    );
    assert_eq!(refused["jsonrpc error"]["code"], -32602);
    await_local_parked(&dir.join("state/records"), 1, &node.log());
    let done = retry(choose(&key, "hold"));
    let outcome = complete_outcome(&done, &node.log());
    assert_eq!(
        crate::flow::essentials(&outcome),
        crate::flow::essentials(&reference)
    );
    // Answered again after the eval resumed: the ask is closed.
    let again = block_on(client::post_decision(
        &node.base_url(),
        id,
        &answer("ship"),
        None,
    ))
    .unwrap();
    assert_eq!(
        again,
        (
            409,
            json!({"error": format!("approval request `{id}` was already decided")})
        )
    );
    let (calls, evals) = hitl_trail(&audit_once(&dir, 2));
    assert_eq!(calls, vec![(json!("hitl_request"), json!("ok")); 2]);
    assert_eq!(evals, 2);
}

/// `timeoutMs` is a deadline across the park: the node's sweep resumes the eval when it passes,
/// the question ends `timeout` with the default option flagged as nobody's choice, and the
/// client's retry gets that result; the call is audited once.
#[test]
fn a_question_whose_time_runs_out_while_parked_ends_as_timeout() {
    let (dir, node) = local_node("question_timeout", 0, |_| {});
    let args = json!({"code": script(true, 1500)});
    let asked = block_on(client::call_tool(&node.mcp_url(), "eval", &args, None)).unwrap();
    assert_eq!(input_keys(&asked.result).len(), 1);
    await_local_parked(&dir.join("state/records"), 1, &node.log());
    let state = request_state(&asked.result);
    let outcome = await_some("the timed-out eval's result", || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        let retry = block_on(client::call_tool(
            &node.mcp_url(),
            "eval",
            &args,
            Some((&state, json!({}))),
        ))
        .ok()?;
        (retry.result["structuredContent"]["ok"] == true).then_some(retry.result)
    });
    let outcome = complete_outcome(&outcome, &node.log());
    assert_eq!(
        outcome["result"],
        json!({"status": "timeout", "confirmed": false, "selectedOption": "hold",
            "source": "timeout", "message": "nobody answered in time", "metadata": {"release": 7},
            "requestId": true, "last": 99980001}),
        "{outcome:#}"
    );
    let (calls, evals) = hitl_trail(&audit_once(&dir, 1));
    assert_eq!(calls, [(json!("hitl_request"), json!("ok"))]);
    assert_eq!(evals, 1);
}

/// Only the eval's caller answers by retry, and only a decider with `approve` on the API: the
/// others are refused and the question stays open for the one who may answer it.
#[test]
fn another_caller_cannot_answer_a_parked_question() {
    use sha2::Digest;
    let sha = |t: &str| {
        sha2::Sha256::digest(t.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    const ALICE: &str = "alice-token-0123456789";
    const BOB: &str = "bob-token-0123456789";
    const CAROL: &str = "carol-token-0123456789";
    let (dir, node) = local_node("question_callers", 0, |config| {
        config["server"]["auth"] = json!({"tokens": [
            {"name": "alice", "sha256": sha(ALICE)},
            {"name": "bob", "sha256": sha(BOB)},
            {"name": "carol", "sha256": sha(CAROL), "permissions": ["approve"]}
        ]});
    });
    let args = json!({"code": script(false, 600_000)});
    let call = |bearer: &str, retry: Option<(&str, Value)>| {
        block_on(client::call_tool_as(
            &node.mcp_url(),
            "eval",
            &args,
            retry,
            Some(bearer),
        ))
        .unwrap()
        .result
    };
    let asked = call(ALICE, None);
    let key = input_keys(&asked).remove(0);
    let id = key.strip_prefix("codemode-").unwrap();
    let state = request_state(&asked);
    await_local_parked(&dir.join("state/records"), 1, &node.log());

    let stolen = call(BOB, Some((&state, choose(&key, "ship"))));
    assert_eq!(
        stolen["jsonrpc error"]["message"], "requestState belongs to another caller",
        "{stolen}"
    );
    let post = |bearer: &str| {
        block_on(client::post_decision(
            &node.base_url(),
            id,
            &answer("ship"),
            Some(bearer),
        ))
        .unwrap()
    };
    assert_eq!(
        post(BOB),
        (
            403,
            json!({"error": "`bob` lacks the permission `approve`"})
        )
    );
    let pending = block_on(client::pending_approvals_as(&node.base_url(), CAROL)).unwrap();
    assert_eq!(pending.len(), 1, "{pending:#?}");
    assert_eq!(pending[0]["caller"], "alice");
    assert_eq!(post(CAROL), (200, json!({"status": "decided"})));
    let outcome = await_some("the eval's result", || {
        let retry = call(ALICE, Some((&state, json!({}))));
        (retry["structuredContent"]["ok"] == true).then_some(retry)
    });
    let outcome = complete_outcome(&outcome, &node.log());
    assert_eq!(outcome["result"], confirmed("ship"), "{outcome:#}");
}

/// `limits.perClient.maxParkedEvals` counts evals parked in a question as it counts those parked
/// in an approval: the client's first eval parks, its second stays in memory (the log says why)
/// and is answered there by the retry; the parked one is answered by its retry from the store.
#[test]
fn questions_count_against_the_parked_cap() {
    let (dir, node) = local_node("question_parked_cap", 0, |config| {
        config["limits"] = json!({"perClient": {"maxSuspendedEvals": 2, "maxParkedEvals": 1}});
    });
    let records = dir.join("state/records");
    let args = json!({"code": script(false, 600_000)});
    let call = || block_on(client::call_tool(&node.mcp_url(), "eval", &args, None)).unwrap();
    let first = call().result;
    let first_key = input_keys(&first).remove(0);
    let parked = await_local_parked(&records, 1, &node.log());
    assert!(
        parked.contains(&format!("eval:{}", request_state(&first))),
        "{parked:?}"
    );
    let second = call().result;
    let second_key = input_keys(&second).remove(0);
    await_some("the log says the second eval stays in memory", || {
        node.log()
            .contains(
                "an eval of client `address:127.0.0.1` stays in memory instead of being parked: \
                 the client has 1 evals parked from this node (limits.perClient.maxParkedEvals = 1)",
            )
            .then_some(())
    });
    assert_eq!(await_local_parked(&records, 1, &node.log()), parked);
    let retry = |asked: &Value, key: &str, option: &str| {
        let done = block_on(client::call_tool(
            &node.mcp_url(),
            "eval",
            &args,
            Some((&request_state(asked), choose(key, option))),
        ))
        .unwrap()
        .result;
        complete_outcome(&done, &node.log())
    };
    assert_eq!(
        retry(&second, &second_key, "hold")["result"],
        confirmed("hold")
    );
    assert_eq!(
        retry(&first, &first_key, "ship")["result"],
        confirmed("ship")
    );
    let (calls, evals) = hitl_trail(&audit_once(&dir, 2));
    assert_eq!(calls, vec![(json!("hitl_request"), json!("ok")); 2]);
    assert_eq!(evals, 2);
}
