//! 2026-07-28 clients through HAProxy's round-robin: an eval waiting for a human is saved to
//! Redis at once (`suspendToStoreAfterSeconds: 0`) and resumes on whichever node the answer
//! reaches — by the client's retry, or on another node's HTTP approval API.

use serde_json::{Value, json};

use crate::client::{self, approve_all, block_on, input_keys, request_state};
use crate::flow::{GATE, assert_same_as_uninterrupted, complete_outcome, prepare, script};
use crate::harness::{ASKED_TOOL, Cluster, await_some};

/// Starts the eval through HAProxy; returns its arguments, the input-required result and the
/// node it suspended on, once the store holds it.
fn suspend(cluster: &Cluster) -> (Value, Value, usize) {
    prepare(&cluster.files);
    let args = json!({"code": script(&cluster.files)});
    let asked = block_on(client::call_tool(&cluster.front_url(), GATE, &args, None))
        .unwrap_or_else(|e| panic!("{e}\n{}", cluster.logs()));
    assert_eq!(input_keys(&asked.result).len(), 1, "{}", asked.result);
    let question = asked.result["inputRequests"]
        .as_object()
        .and_then(|m| m.values().next())
        .cloned()
        .unwrap();
    assert!(
        question.to_string().contains(ASKED_TOOL),
        "the question names the tool: {question}"
    );
    let node = cluster.index_of(&asked.served_by);
    cluster.await_parked(1);
    (args, asked.result, node)
}

#[test]
fn plain_evals_are_spread_round_robin() {
    let cluster = Cluster::start("round_robin", 3, 0);
    let served: Vec<(String, Value)> = block_on(async {
        let mut served = Vec::new();
        for i in 0..3 {
            let reply = client::call_tool(
                &cluster.front_url(),
                "eval",
                &json!({"code": format!("return {i} * 7")}),
                None,
            )
            .await
            .unwrap();
            served.push((
                reply.served_by,
                reply.result["structuredContent"]["result"].clone(),
            ));
        }
        served
    });
    assert_eq!(
        served,
        vec![
            ("node0".to_string(), json!(0)),
            ("node1".to_string(), json!(7)),
            ("node2".to_string(), json!(14)),
        ]
    );
    // Nothing waited for a human: no eval was saved (the nodes keep their one guest module
    // there, for the evals they may save).
    let keys = cluster.store_keys();
    assert_eq!(
        keys.iter()
            .map(|k| k.split(':').next().unwrap())
            .collect::<Vec<_>>(),
        vec!["guest"],
        "{keys:?}"
    );
}

#[test]
fn an_answer_by_retry_resumes_the_eval_on_another_node() {
    let cluster = Cluster::start("retry_elsewhere", 3, 0);
    let (args, asked, suspended_on) = suspend(&cluster);
    let retry = block_on(client::call_tool(
        &cluster.front_url(),
        GATE,
        &args,
        Some((&request_state(&asked), approve_all(&asked))),
    ))
    .unwrap();
    let resumed_on = cluster.index_of(&retry.served_by);
    assert_ne!(
        resumed_on, suspended_on,
        "round-robin sent the retry elsewhere"
    );
    let outcome = complete_outcome(&retry.result, &cluster.logs());
    assert_same_as_uninterrupted(&outcome, &cluster.files, &cluster.audit_with_evals(1));
    // The saved state is gone once resumed.
    await_some("the store empties of evals", || {
        let keys = cluster.store_keys();
        (!keys.iter().any(|k| crate::harness::is_parked_eval(k))).then_some(())
    });
}

#[test]
fn an_answer_on_another_nodes_approval_api_resumes_it_and_a_third_node_returns_the_result() {
    let cluster = Cluster::start("approval_api", 3, 0);
    let (args, asked, a) = suspend(&cluster);
    let (b, c) = ((a + 1) % 3, (a + 2) % 3);
    let pending = block_on(client::pending_approvals(&cluster.node(b).base_url())).unwrap();
    assert_eq!(
        pending.iter().map(|p| &p["tool"]).collect::<Vec<_>>(),
        vec![&json!(ASKED_TOOL)],
        "node{b} lists the ask of the eval parked by node{a}: {pending:#?}"
    );
    let id = pending[0]["id"].as_str().unwrap().to_string();
    // Every node lists it.
    for i in [a, c] {
        let listed = block_on(client::pending_approvals(&cluster.node(i).base_url())).unwrap();
        assert_eq!(
            listed.iter().map(|p| &p["id"]).collect::<Vec<_>>(),
            vec![&json!(id)],
            "node{i}"
        );
    }
    let decided = block_on(client::decide(
        &cluster.node(b).base_url(),
        &id,
        "approve_once",
    ))
    .unwrap();
    assert_eq!(decided, (200, json!({"status": "decided"})));
    // Deciding it again anywhere: already decided.
    let again = block_on(client::decide(
        &cluster.node(c).base_url(),
        &id,
        "approve_once",
    ))
    .unwrap();
    assert_eq!(again.0, 409, "{again:?}");
    // Every node lists the decision, shaped as an in-memory decided entry: the ask's view with
    // the decision's fields added (and without `decidable`: only a pending ask is marked with
    // whether the reader may decide it).
    let mut expected = pending[0].as_object().unwrap().clone();
    assert_eq!(expected.remove("decidable"), Some(json!(true)));
    for i in 0..3 {
        let decided = block_on(client::decided_approvals(&cluster.node(i).base_url())).unwrap();
        assert_eq!(decided.len(), 1, "node{i}: {decided:#?}");
        let entry = decided[0].as_object().unwrap();
        let decided_at = entry["decided_at"].as_str().unwrap_or_default();
        assert!(
            decided_at.ends_with('Z') && decided_at >= pending[0]["requested_at"].as_str().unwrap(),
            "{entry:?}"
        );
        expected.insert("decision".into(), json!("approve_once"));
        expected.insert("decided_by".into(), json!("local"));
        expected.insert("channel".into(), json!("http"));
        expected.insert("decided_at".into(), json!(decided_at));
        assert_eq!(entry, &expected, "node{i}");
    }
    // The client comes back, without answers, to a third node.
    let retry = block_on(client::call_tool(
        &cluster.node(c).mcp_url(),
        GATE,
        &args,
        Some((&request_state(&asked), json!({}))),
    ))
    .unwrap();
    let outcome = complete_outcome(&retry.result, &cluster.logs());
    let records = cluster.audit_with_evals(1);
    assert_same_as_uninterrupted(&outcome, &cluster.files, &records);
    let write = records
        .iter()
        .find(|r| r["event"] == "tool_call" && r["tool"] == ASKED_TOOL)
        .unwrap();
    assert_eq!(
        (&write["channel"], &write["decided_by"]),
        (&json!("http"), &json!("local"))
    );
    // Nothing pending anywhere any more.
    for i in 0..3 {
        let listed = block_on(client::pending_approvals(&cluster.node(i).base_url())).unwrap();
        assert_eq!(listed, Vec::<Value>::new(), "node{i}");
    }
}

#[test]
fn a_node_killed_after_the_save_loses_nothing() {
    let mut cluster = Cluster::start("killed", 3, 0);
    let (args, asked, a) = suspend(&cluster);
    cluster.take(a).kill();
    let retry = block_on(client::call_tool(
        &cluster.front_url(),
        GATE,
        &args,
        Some((&request_state(&asked), approve_all(&asked))),
    ))
    .unwrap_or_else(|e| panic!("{e}\nhaproxy:\n{}", cluster.proxy.log()));
    assert_ne!(retry.served_by, format!("node{a}"));
    let outcome = complete_outcome(&retry.result, &cluster.logs());
    assert_same_as_uninterrupted(&outcome, &cluster.files, &cluster.audit_with_evals(1));
}
