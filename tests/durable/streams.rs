//! The approval stream (`GET /approvals/stream`, read by the approval page and `codemode
//! approve`) carries the asks of parked evals, whichever node parked them, and their decisions,
//! whichever node took them: a terminal approver on one node decides the asks parked on either
//! node one after the other.

use std::process::Command;
use std::sync::mpsc;
use std::time::Instant;

use codemode_test_support::peers;
use futures::StreamExt;
use serde_json::{Value, json};

use crate::client::{self, block_on, input_keys};
use crate::harness::{CODEMODE, Cluster, PATIENCE};

/// Writes `name` in the shared files directory (the asked call); returns what happened.
fn script(cluster: &Cluster, name: &str) -> String {
    let path = json!(cluster.files.join(name).display().to_string());
    format!(
        "try {{ await codemode.fs__write_file({{path: {path}, content: 'x'}}); return 'written'; }} \
         catch (e) {{ return e.reason; }}"
    )
}

/// Reads `base`'s approval stream on a thread of its own: each event as `(name, data)`.
fn open_stream(base: &str) -> mpsc::Receiver<(String, Value)> {
    let (tx, rx) = mpsc::channel();
    let url = format!("{base}/approvals/stream");
    std::thread::spawn(move || {
        block_on(async move {
            codemode_upstream::crypto::install();
            let Ok(response) = reqwest::Client::new().get(&url).send().await else {
                return;
            };
            let mut body = response.bytes_stream();
            let mut buffer = String::new();
            while let Some(Ok(chunk)) = body.next().await {
                buffer.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = buffer.find("\n\n") {
                    let block: String = buffer.drain(..end + 2).collect();
                    let name = block.lines().find_map(|l| l.strip_prefix("event:"));
                    let data = block.lines().find_map(|l| l.strip_prefix("data:"));
                    if let (Some(name), Some(data)) = (name, data)
                        && let Ok(data) = serde_json::from_str(data.trim())
                        && tx.send((name.trim().to_string(), data)).is_err()
                    {
                        return;
                    }
                }
            }
        });
    });
    rx
}

/// Waits for the stream's event `name` about ask `id`; returns its data and when it came.
fn await_event(
    events: &mpsc::Receiver<(String, Value)>,
    name: &str,
    id: &str,
    logs: impl Fn() -> String,
) -> (Value, Instant) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match events.recv_timeout(left) {
            Ok((got, data)) if got == name && data["id"] == id => return (data, Instant::now()),
            Ok(_) => {}
            Err(e) => panic!("no `{name}` event for {id} ({e}); node logs:\n{}", logs()),
        }
    }
}

/// Two nodes on Redis, parking at once. Each node's stream, open before the eval, shows the ask
/// the eval parked (whichever node served it) with the fields a prompt needs; deciding it
/// through the other node's API sends `decided`, with the decision, on both streams.
#[test]
fn parked_asks_and_their_decisions_reach_every_nodes_stream() {
    let cluster = Cluster::start("parked_streams", 2, 0);
    let streams = [
        open_stream(&cluster.node(0).base_url()),
        open_stream(&cluster.node(1).base_url()),
    ];
    let args = json!({"code": script(&cluster, "one.txt")});
    let asked = block_on(client::call_tool(&cluster.front_url(), "eval", &args, None))
        .unwrap_or_else(|e| panic!("{e}\n{}", cluster.logs()));
    let keys = input_keys(&asked.result);
    let id = keys[0].strip_prefix("codemode-").unwrap().to_string();
    cluster.await_parked(1);
    let listed = Instant::now();
    for events in &streams {
        let (view, came) = await_event(events, "requested", &id, || cluster.logs());
        assert_eq!(
            (
                &view["tool"],
                &view["kind"],
                &view["caller"],
                &view["profile"]
            ),
            (
                &json!("fs__write_file"),
                &json!("approval"),
                &json!("local"),
                &json!("gate")
            ),
            "{view:#}"
        );
        eprintln!(
            "requested on a stream {} ms after the store listed it",
            came.saturating_duration_since(listed).as_millis()
        );
    }
    let other = 1 - cluster.index_of(&asked.served_by);
    assert_eq!(
        block_on(client::decide(
            &cluster.node(other).base_url(),
            &id,
            "approve_once"
        ))
        .unwrap(),
        (200, json!({"status": "decided"}))
    );
    for events in &streams {
        let (view, _) = await_event(events, "decided", &id, || cluster.logs());
        assert_eq!(
            (&view["decision"], &view["channel"]),
            (&json!("approve_once"), &json!("http")),
            "{view:#}"
        );
    }
}

/// `codemode approve` on one node shows the asks two evals parked (one on each node, round
/// robin), and after each decision moves on to the next: the first approved, the second
/// declined; each eval ends as decided.
#[test]
fn codemode_approve_moves_from_one_parked_ask_to_the_next() {
    let cluster = Cluster::start("parked_approve", 2, 0);
    let asked: Vec<_> = ["a.txt", "b.txt"]
        .iter()
        .map(|name| {
            let args = json!({"code": script(&cluster, name)});
            let reply = block_on(client::call_tool(&cluster.front_url(), "eval", &args, None))
                .unwrap_or_else(|e| panic!("{e}\n{}", cluster.logs()));
            (args, reply)
        })
        .collect();
    let served: Vec<&str> = asked.iter().map(|(_, r)| r.served_by.as_str()).collect();
    assert_ne!(served[0], served[1], "round robin");
    cluster.await_parked(2);
    let here = env!("CARGO_MANIFEST_DIR");
    let screen = Command::new(peers::python())
        .arg(format!("{here}/tests/cli/approve_driver.py"))
        .args(["wants approval", "a"])
        .args(["wants approval", "d"])
        .args(["decline by local via http", "^D"])
        .arg("--")
        .arg(CODEMODE)
        .args(["approve", "--url"])
        .arg(cluster.node(1).base_url())
        .output()
        .expect("run the pty driver");
    let shown = String::from_utf8_lossy(&screen.stdout);
    assert_eq!(
        screen.status.code(),
        Some(0),
        "{shown}\nnode logs:\n{}",
        cluster.logs()
    );
    let mut results: Vec<Value> = asked
        .iter()
        .map(|(args, reply)| {
            let state = client::request_state(&reply.result);
            crate::harness::await_some("the eval's result", || {
                let retry = block_on(client::call_tool(
                    &cluster.front_url(),
                    "eval",
                    args,
                    Some((&state, json!({}))),
                ))
                .ok()?;
                let outcome = &retry.result["structuredContent"];
                (outcome["ok"] == true).then(|| outcome["result"].clone())
            })
        })
        .collect();
    results.sort_by_key(Value::to_string);
    assert_eq!(results, [json!("elicitation_declined"), json!("written")]);
}
