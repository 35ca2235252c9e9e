//! A client that goes away while its eval waits for a human's approval, on both protocol
//! generations: the eval ends at the approval timeout (it is not left holding a pool slot), the
//! asked tool never runs, and the audit has its records exactly once.

use codemode_bench::http::{Protocol, client::Client};
use serde_json::{Value, json};

use crate::harness::{World, eval, eval_records, slow_server};

fn world(name: &str) -> World {
    World::start(name, |dir| {
        json!({
            "mcpServers": {"slow": slow_server(dir)},
            "evaluation": {"profiles": {"ask": {
                "asklist": ["slow__sleep"],
                "approvalTimeoutSeconds": 2
            }}},
            "audit": {"dir": dir.join("audit")}
        })
    })
}

const ASKING: &str = "return await codemode.slow__sleep({seconds: 0, tag: \"asked\"})";

/// After the eval of the client that left: another eval, whose record comes after its own in
/// the audit chain; then exactly one eval record of the first, and one tool_call record.
fn audited_once(world: &World) -> (Value, Value) {
    let tokio = tokio::runtime::Runtime::new().unwrap();
    // The first eval has ended when its record is written: wait for it, then for a later one.
    let records = world.audit_with_evals(1);
    assert_eq!(eval_records(&records).len(), 1, "{records:#?}");
    let later = tokio
        .block_on(eval(&world.server.url, Protocol::Stateless, "return 1"))
        .unwrap();
    assert_eq!(later["ok"], true);
    let records = world.audit_with_evals(2);
    let evals = eval_records(&records);
    assert_eq!(evals.len(), 2, "{records:#?}");
    let calls: Vec<&Value> = records
        .iter()
        .filter(|r| r["event"] == "tool_call")
        .collect();
    assert_eq!(calls.len(), 1, "one tool_call record: {records:#?}");
    // Nothing ran: the sleep was never approved.
    assert!(!world.dir.join("started").exists(), "the asked tool ran");
    (evals[0].clone(), calls[0].clone())
}

#[test]
fn legacy_client_gone_during_elicitation() {
    let world = world("disconnect_legacy");
    let tokio = tokio::runtime::Runtime::new().unwrap();
    let url = world.server.url.clone();
    let asked = tokio
        .block_on(async {
            let client =
                Client::connect_with(&url, Protocol::Legacy, json!({"elicitation": {}})).await?;
            let session = client.session().expect("a legacy session").to_string();
            // The call's response stream never ends while the question waits; the question
            // itself comes on the session's standalone stream.
            let call = tokio::spawn(client.call_tool_then_disconnect(
                "codemode_eval_ask",
                json!({"code": ASKING}),
                |_| false,
            ));
            let asked = Client::listen_then_disconnect(&url, &session, |m| {
                m["method"] == "elicitation/create"
            })
            .await;
            // Both connections go: the client has left without answering.
            call.abort();
            asked
        })
        .unwrap();
    assert!(
        asked["params"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("slow__sleep")),
        "{asked}"
    );
    // The server does not see the client leave (rmcp does not cancel a legacy request when
    // its connection drops): the approval times out (2 s), the call is denied, and the script
    // ends with the denial — bounded by the approval timeout, audited once.
    let (eval, call) = audited_once(&world);
    assert_denied_by_timeout(&eval, &call);
}

#[test]
fn stateless_client_gone_during_input_required() {
    let world = world("disconnect_stateless");
    let tokio = tokio::runtime::Runtime::new().unwrap();
    let result = tokio
        .block_on(async {
            let mut client = Client::connect_with(
                &world.server.url,
                Protocol::Stateless,
                json!({"elicitation": {}}),
            )
            .await?;
            // The client never answers, never comes back, and closes its connection.
            client
                .call_tool_outcome("codemode_eval_ask", json!({"code": ASKING}))
                .await
        })
        .unwrap();
    assert_eq!(result["resultType"], "input_required", "{result}");
    let (eval, call) = audited_once(&world);
    assert_denied_by_timeout(&eval, &call);
}

/// The records of an eval whose only call was asked, never answered, and denied at the
/// approval timeout; the script did not catch the denial.
fn assert_denied_by_timeout(eval: &Value, call: &Value) {
    assert_eq!(
        (&eval["ok"], &eval["error_kind"], &eval["tool_calls"]),
        (&json!(false), &json!("exception"), &json!(1)),
        "{eval}"
    );
    assert_eq!(
        [
            &call["tool"],
            &call["decision"],
            &call["status"],
            &call["reason"]
        ],
        [
            &json!("slow__sleep"),
            &json!("timeout"),
            &json!("denied"),
            &json!("elicitation_timeout")
        ],
        "{call}"
    );
}
