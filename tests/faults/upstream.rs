//! Misbehaving upstreams: killed in the middle of a call, or never answering. The eval fails
//! with a classified error, the ledger says what happened to the call, the audit has the eval,
//! and another client's eval at the same time is unaffected.

use codemode_bench::http::Protocol;
use serde_json::{Value, json};

use crate::harness::{World, eval, eval_records, ledger, slow_server};

fn world(name: &str, limits: Value) -> World {
    World::start(name, |dir| {
        json!({
            "mcpServers": {"slow": slow_server(dir)},
            "limits": limits,
            "audit": {"dir": dir.join("audit")}
        })
    })
}

/// The eval whose call is in flight on the upstream, run on a tokio runtime of its own, and a
/// `return 1 + 1` by another client while it waits.
fn in_flight_and_another(
    world: &World,
    tag: &str,
    fault: impl FnOnce(&World),
) -> (Result<Value, String>, Value) {
    let tokio = tokio::runtime::Runtime::new().unwrap();
    let url = world.server.url.clone();
    let code = format!("return await codemode.slow__hang({{tag: \"{tag}\"}})");
    let waiting = tokio.spawn(async move { eval(&url, Protocol::Stateless, &code).await });
    world.await_marker(&format!("hang-{tag}"), 1);
    let other = tokio
        .block_on(eval(&world.server.url, Protocol::Legacy, "return 1 + 1"))
        .unwrap();
    fault(world);
    let outcome = tokio.block_on(waiting).unwrap();
    (outcome, other)
}

#[test]
fn an_upstream_killed_mid_call() {
    let world = world("upstream_killed", json!({}));
    let (outcome, other) = in_flight_and_another(&world, "k", |world| {
        let pid = world.await_marker("hang-k", 1)[0].clone();
        let killed = std::process::Command::new("kill")
            .args(["-KILL", &pid])
            .status()
            .unwrap();
        assert!(killed.success());
    });
    assert_eq!((&other["ok"], &other["result"]), (&json!(true), &json!(2)));
    let outcome = outcome.unwrap();
    let closed = "upstream server `slow` closed the connection during `hang`";
    assert_eq!(outcome["ok"], false, "{outcome}");
    // The script did not catch the call's ToolError: the eval ends with it.
    assert_eq!(
        (&outcome["error"]["kind"], &outcome["error"]["message"]),
        (&json!("exception"), &json!(format!("ToolError: {closed}"))),
        "{outcome}"
    );
    assert_eq!(ledger(&outcome), json!([["slow__hang", "error", closed]]));
    let records = world.audit_with_evals(2);
    let evals = eval_records(&records);
    assert_eq!(evals.len(), 2, "{records:#?}");
    let calls: Vec<&Value> = records
        .iter()
        .filter(|r| r["event"] == "tool_call")
        .collect();
    assert_eq!(calls.len(), 1, "{records:#?}");
    assert_eq!(
        (&calls[0]["tool"], &calls[0]["status"], &calls[0]["reason"]),
        (&json!("slow__hang"), &json!("error"), &Value::Null)
    );
}

#[test]
fn an_upstream_that_never_answers() {
    let world = world("upstream_hangs", json!({"timeout": "3s"}));
    let (outcome, other) = in_flight_and_another(&world, "n", |_| {});
    assert_eq!((&other["ok"], &other["result"]), (&json!(true), &json!(2)));
    let outcome = outcome.unwrap();
    assert_eq!(outcome["ok"], false, "{outcome}");
    assert_eq!(outcome["error"]["kind"], "timeout", "{outcome}");
    let entries = ledger(&outcome);
    assert_eq!(entries[0][0], "slow__hang", "{outcome}");
    assert_ne!(
        entries[0][1], "ok",
        "the ledger must not claim success: {outcome}"
    );
    let records = world.audit_with_evals(2);
    let evals = eval_records(&records);
    assert_eq!(evals.len(), 2, "{records:#?}");
    let mut kinds: Vec<&Value> = evals.iter().map(|r| &r["error_kind"]).collect();
    kinds.sort_by_key(|k| k.to_string());
    assert_eq!(kinds, [&json!("timeout"), &Value::Null]);
    // The server is still serving.
    let tokio = tokio::runtime::Runtime::new().unwrap();
    let after = tokio
        .block_on(eval(&world.server.url, Protocol::Stateless, "return 3"))
        .unwrap();
    assert_eq!(after["result"], 3);
}
