//! Legacy (2025-11-25) sessions through HAProxy: their requests, standalone stream and answers
//! to `elicitation/create` stay on the node that holds the session (`stick` on the
//! `Mcp-Session-Id` header), so an asked call is answered as on a single node; when that node
//! dies, the request in flight fails with codemode's node-lost error (the node the client
//! reconnects to finds the request in the store), and the session continues on another node
//! (its `initialize` state is in the store). An eval waiting for a human is saved to the store
//! while its request stays open: the client's own answer still returns its result on the same
//! call, and after its node died the approval API of another node completes it.
//! The client is the real Python SDK (`legacy_client.py`).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use codemode_test_support::peers;
use serde_json::{Value, json};

use crate::client::{self, block_on};
use crate::flow::{assert_same_as_uninterrupted, audit_trail, expected_trail, prepare, script};
use crate::harness::{Cluster, await_some};

/// The client's own deadline is 60 s per step; this bounds the whole run.
const CLIENT_DEADLINE: Duration = Duration::from_secs(180);

/// `legacy_client.py` with `flow`, started (not waited for).
fn start_client(cluster: &Cluster, flow: &str, markers: &Path) -> std::process::Child {
    start_client_with(cluster, flow, markers, &script_code(cluster))
}

/// [`start_client`] running `code`.
fn start_client_with(
    cluster: &Cluster,
    flow: &str,
    markers: &Path,
    code: &str,
) -> std::process::Child {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/durable/legacy_client.py");
    Command::new(peers::python())
        .arg(script)
        .env("DURABLE_URL", cluster.front_url())
        .env("DURABLE_CODE", code)
        .env("DURABLE_DIR", markers)
        .env("DURABLE_FLOW", flow)
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("could not start the Python client: {e}"))
}

fn script_code(cluster: &Cluster) -> String {
    script(&cluster.files)
}

/// Waits for the client to exit; returns its observations (the last line of its stdout).
fn finish_client(mut child: std::process::Child, cluster: &Cluster) -> Value {
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll the client") {
            break Some(status);
        }
        if started.elapsed() > CLIENT_DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (stdout, stderr) = (out.join().unwrap(), err.join().unwrap());
    let diagnostics = || {
        format!(
            "stdout:\n{stdout}\nstderr:\n{stderr}\nhaproxy:\n{}\n{}",
            cluster.proxy.log(),
            cluster.logs()
        )
    };
    assert!(
        status.is_some_and(|s| s.success()),
        "the client failed ({status:?})\n{}",
        diagnostics()
    );
    let line = stdout.lines().rev().find(|l| !l.trim().is_empty());
    serde_json::from_str(line.unwrap_or_default())
        .unwrap_or_else(|e| panic!("no observations ({e})\n{}", diagnostics()))
}

/// One HAProxy log line: which node served a request of which session.
#[derive(Debug, Clone, PartialEq)]
struct Routed {
    served_by: String,
    method: String,
    /// The request's `Mcp-Session-Id`, else the response's (an `initialize`).
    session: String,
}

fn routed(log: &str) -> Vec<Routed> {
    log.lines()
        .filter_map(|line| {
            let field = |name: &str| {
                line.split_whitespace()
                    .find_map(|f| f.strip_prefix(name))
                    .map(String::from)
            };
            let (req, res) = field("session=")?
                .split_once('/')
                .map(|(a, b)| (a.to_string(), b.to_string()))?;
            let session = if req.is_empty() || req == "-" {
                res
            } else {
                req
            };
            Some(Routed {
                served_by: field("served_by=")?,
                method: field("method=")?,
                session,
            })
        })
        .filter(|r| !r.session.is_empty() && r.session != "-")
        .collect()
}

/// The one session of the log, and the node(s) that served its requests.
fn session_routes(log: &str) -> (String, Vec<Routed>) {
    let routes = routed(log);
    let sessions: std::collections::BTreeSet<&str> =
        routes.iter().map(|r| r.session.as_str()).collect();
    assert_eq!(sessions.len(), 1, "one session: {log}");
    let session = sessions.into_iter().next().unwrap().to_string();
    (session, routes)
}

fn markers(cluster: &Cluster) -> PathBuf {
    let dir = cluster.dir.join("markers");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_legacy_session_sticks_to_its_node_and_its_elicitation_is_answered() {
    let cluster = Cluster::start("legacy_sticky", 3, 0);
    prepare(&cluster.files);
    let obs = finish_client(
        start_client(&cluster, "complete", &markers(&cluster)),
        &cluster,
    );
    assert_eq!(obs["protocol"], "2025-11-25", "{obs:#}");
    assert_eq!(obs["asked"].as_array().map(Vec::len), Some(1), "{obs:#}");
    assert_eq!(obs["call"]["ok"]["is_error"], false, "{obs:#}");
    let outcome = obs["call"]["ok"]["structured"].clone();
    assert_same_as_uninterrupted(&outcome, &cluster.files, &cluster.audit_with_evals(1));
    // Every request of the session went to one node, and it wrote the whole audit trail.
    let (_, routes) = session_routes(&cluster.proxy.log());
    let nodes: std::collections::BTreeSet<&str> =
        routes.iter().map(|r| r.served_by.as_str()).collect();
    assert_eq!(nodes.len(), 1, "{routes:#?}");
    assert!(
        routes.iter().filter(|r| r.method == "POST").count() >= 4,
        "initialize, initialized, the call, the answer: {routes:#?}"
    );
    let node = cluster.index_of(nodes.into_iter().next().unwrap());
    let audited: Vec<i64> = cluster
        .audit()
        .iter()
        .map(|r| r["node"].as_i64().unwrap())
        .collect();
    assert_eq!(audited, vec![node as i64; 4], "all records on node{node}");
}

/// The store's records of requests in flight (`mcp-request:<node>:<number>`).
fn requests_in_flight(cluster: &Cluster) -> Vec<String> {
    cluster
        .store_keys()
        .into_iter()
        .filter(|k| k.starts_with("mcp-request:"))
        .collect()
}

#[test]
fn a_parked_legacy_eval_answered_by_its_client_returns_its_result_on_the_same_call() {
    let cluster = Cluster::start("legacy_parked", 3, 0);
    prepare(&cluster.files);
    let markers = markers(&cluster);
    let client = start_client(&cluster, "parked", &markers);
    await_some("the human is asked", || {
        markers.join("asked").exists().then_some(())
    });
    // The eval left memory while its request stays open (`suspendToStoreAfterSeconds` is 0);
    // its ask is listed on the approval API of every node.
    cluster.await_parked(1);
    let (_, routes) = session_routes(&cluster.proxy.log());
    let node = cluster.index_of(&routes[0].served_by);
    let other = (node + 1) % 3;
    let pending = await_some("the parked ask is listed on another node", || {
        block_on(client::pending_approvals(&cluster.node(other).base_url()))
            .ok()
            .filter(|p| p.len() == 1)
    });
    // Another node shows the ask as its own node would: the tool, its risk and its class
    // (server-filesystem annotates `write_file` as destructive).
    assert_eq!(
        json!([
            pending[0]["tool"],
            pending[0]["risk"],
            pending[0]["classification"]
        ]),
        json!([crate::harness::ASKED_TOOL, "medium", "destructive"]),
        "{pending:#?}"
    );
    std::fs::write(markers.join("go"), "").unwrap();
    let obs = finish_client(client, &cluster);
    // The client's answer to the still-open `elicitation/create` was recorded as the ask's
    // decision and resumed the eval, whose result came back on the same call.
    assert_eq!(obs["asked"].as_array().map(Vec::len), Some(1), "{obs:#}");
    assert_eq!(obs["call"]["ok"]["is_error"], false, "{obs:#}");
    let outcome = obs["call"]["ok"]["structured"].clone();
    let records = cluster.audit_with_evals(1);
    assert_same_as_uninterrupted(&outcome, &cluster.files, &records);
    assert!(
        records.iter().all(|r| r["node"] == json!(node)),
        "resumed where the answer came: {records:#?}"
    );
    let decided = block_on(client::decided_approvals(&cluster.node(other).base_url())).unwrap();
    assert_eq!(decided.len(), 1, "{decided:#?}");
    assert_eq!(
        (&decided[0]["decision"], &decided[0]["channel"]),
        (&json!("approve_once"), &json!("elicitation")),
        "{decided:#?}"
    );
    // Nothing of the eval is left in the store.
    await_some("the eval's records are gone", || {
        let keys = cluster.store_keys();
        (!keys
            .iter()
            .any(|k| k.starts_with("eval:") || k.starts_with("ask:") || k.starts_with("result:")))
        .then_some(())
    });
}

/// A legacy eval waiting on a `hitl_request` question parks as one waiting on an approval: its
/// question is listed on every node while the client's `elicitation/create` stays open; the
/// client's answer is recorded as the question's, resumes the eval, and the result comes back
/// on the same call; the call is audited once.
#[test]
fn a_parked_legacy_question_answered_by_its_client_returns_its_result_on_the_same_call() {
    let cluster = Cluster::start("legacy_question", 3, 0);
    let markers = markers(&cluster);
    let code = crate::questions::script(false, 600_000);
    let client = start_client_with(&cluster, "question", &markers, &code);
    await_some("the human is asked", || {
        markers.join("asked").exists().then_some(())
    });
    cluster.await_parked(1);
    let (_, routes) = session_routes(&cluster.proxy.log());
    let node = cluster.index_of(&routes[0].served_by);
    let other = (node + 1) % 3;
    let pending = await_some("the parked question is listed on another node", || {
        block_on(client::pending_approvals(&cluster.node(other).base_url()))
            .ok()
            .filter(|p| p.len() == 1)
    });
    assert_eq!(
        (&pending[0]["kind"], &pending[0]["options"]),
        (&json!("question"), &json!(["ship", "hold"])),
        "{pending:#?}"
    );
    std::fs::write(markers.join("go"), "").unwrap();
    let obs = finish_client(client, &cluster);
    assert_eq!(
        obs["asked"],
        json!(["Ship release 7?\\u001b[2K"]),
        "{obs:#}"
    );
    assert_eq!(obs["call"]["ok"]["is_error"], false, "{obs:#}");
    assert_eq!(
        obs["call"]["ok"]["structured"]["result"],
        crate::questions::confirmed("ship"),
        "{obs:#}"
    );
    let records = cluster.audit_with_evals(1);
    let calls: Vec<(&Value, &Value)> = records
        .iter()
        .filter(|r| r["event"] == "tool_call")
        .map(|r| (&r["tool"], &r["status"]))
        .collect();
    assert_eq!(
        calls,
        [(&json!("hitl_request"), &json!("ok"))],
        "{records:#?}"
    );
    assert_eq!(records.iter().filter(|r| r["event"] == "eval").count(), 1);
    let decided = block_on(client::decided_approvals(&cluster.node(other).base_url())).unwrap();
    assert_eq!(
        (
            &decided[0]["decision"],
            &decided[0]["answer"],
            &decided[0]["channel"]
        ),
        (&json!("answer"), &json!("ship"), &json!("elicitation")),
        "{decided:#?}"
    );
}

#[test]
fn a_legacy_session_whose_node_dies_fails_with_an_error() {
    let mut cluster = Cluster::start("legacy_node_dies", 3, 0);
    prepare(&cluster.files);
    let markers = markers(&cluster);
    let client = start_client(&cluster, "node_dies", &markers);
    await_some("the human is asked", || {
        markers.join("asked").exists().then_some(())
    });
    // The call is in flight, and the store knows it (the only request of the session open).
    let in_flight = await_some("the call is recorded in the store", || {
        Some(requests_in_flight(&cluster)).filter(|r| !r.is_empty())
    });
    assert_eq!(in_flight.len(), 1, "{in_flight:?}");
    // The eval waiting for the human is saved (`suspendToStoreAfterSeconds` is 0).
    cluster.await_parked(1);
    // The session's node: the one that answered its initialize.
    let (_, routes) = session_routes(&cluster.proxy.log());
    let node = cluster.index_of(&routes[0].served_by);
    cluster.take(node).kill();
    // A human decides the ask on another node's approval API: the eval completes there.
    let other = (node + 1) % 3;
    let base = cluster.node(other).base_url();
    let pending = await_some("the ask is listed on another node", || {
        block_on(client::pending_approvals(&base))
            .ok()
            .filter(|p| p.len() == 1)
    });
    let id = pending[0]["id"].as_str().unwrap().to_string();
    let decided = block_on(client::decide(&base, &id, "approve_once")).unwrap();
    assert_eq!(decided, (200, json!({"status": "decided"})));
    let records = cluster.audit_with_evals(1);
    std::fs::write(markers.join("go"), "").unwrap();
    let obs = finish_client(client, &cluster);
    eprintln!("observations: {obs:#}");
    // The SDK reconnected the call's stream through HAProxy to another node, which found the
    // call in the store and ended it with this error (before the fix, it waited there for ever:
    // the client's own deadline said "no answer within 60.0 s"); the eval was saved, so the
    // error says where it can still be decided.
    assert_eq!(
        obs["call"]["error"],
        "MCPError: the codemode node serving this request (`tools/call` of \
         `codemode_eval_gate`) is gone: it stopped, or the load balancer no longer sends this \
         session to it. The request ends here without its result. Its eval was saved to the \
         durable store while it waited for a human: the approval API of any node (`GET \
         /approvals`) can still decide it, and it then completes on that node (its result is \
         not returned here). Do not run the script again unless it is refused or times out. \
         The session goes on here.",
        "{obs:#}"
    );
    assert_eq!(obs["asked"].as_array().map(Vec::len), Some(1), "{obs:#}");
    // The session itself goes on, on another node (its state is in the store).
    assert_eq!(
        obs["after"],
        json!({"ok": ["codemode_eval_gate", "eval", "get_tools", "search_tools"]}),
        "{obs:#}"
    );
    // The approved write ran once, on the node whose approval API was given the answer, and
    // the eval has one audit record across the nodes (written there).
    assert_eq!(
        std::fs::read_to_string(cluster.files.join(crate::flow::FILE)).unwrap(),
        crate::flow::expected_result()["after"]
    );
    assert_eq!(audit_trail(&records), expected_trail(), "{records:#?}");
    let evals: Vec<&Value> = records.iter().filter(|r| r["event"] == "eval").collect();
    assert_eq!(evals.len(), 1, "{records:#?}");
    assert_eq!(evals[0]["node"], json!(other), "{records:#?}");
    // The node that ended the lost call took its record; the request made afterwards was
    // forgotten when it was answered.
    await_some("no request is recorded in flight", || {
        requests_in_flight(&cluster).is_empty().then_some(())
    });
}

#[test]
fn a_legacy_eval_saved_by_sigterm_is_completed_by_another_nodes_approval_api() {
    // An hour before spilling: only the shutdown saves the eval.
    let mut cluster = Cluster::start("legacy_sigterm", 3, 3600);
    prepare(&cluster.files);
    let markers = markers(&cluster);
    let client = start_client(&cluster, "node_dies", &markers);
    await_some("the human is asked", || {
        markers.join("asked").exists().then_some(())
    });
    await_some("the call is recorded in the store", || {
        Some(requests_in_flight(&cluster)).filter(|r| !r.is_empty())
    });
    assert!(
        !cluster.store_keys().iter().any(|k| k.starts_with("eval:")),
        "nothing is saved while the node runs"
    );
    let (_, routes) = session_routes(&cluster.proxy.log());
    let node = cluster.index_of(&routes[0].served_by);
    let (status, log) = cluster.take(node).terminate();
    assert!(status.success(), "{status}\n{log}");
    cluster.await_parked(1);
    let other = (node + 1) % 3;
    let base = cluster.node(other).base_url();
    let pending = block_on(client::pending_approvals(&base)).unwrap();
    assert_eq!(pending.len(), 1, "{pending:#?}");
    let id = pending[0]["id"].as_str().unwrap().to_string();
    let decided = block_on(client::decide(&base, &id, "approve_once")).unwrap();
    assert_eq!(decided, (200, json!({"status": "decided"})));
    let records = cluster.audit_with_evals(1);
    std::fs::write(markers.join("go"), "").unwrap();
    let obs = finish_client(client, &cluster);
    // The stopping node answered the open call before it exited: the eval is saved, and where
    // it can still be decided.
    assert_eq!(
        obs["call"]["ok"]["text"],
        "this codemode node is stopping: the eval waits for a human in the durable store, where \
         the approval API of any node (`GET /approvals`) can still decide it, and it then \
         completes on that node; its result does not come back to this request, so check what \
         it did before running the script again",
        "{obs:#}\n{log}"
    );
    assert_eq!(obs["call"]["ok"]["is_error"], true, "{obs:#}");
    assert_eq!(
        std::fs::read_to_string(cluster.files.join(crate::flow::FILE)).unwrap(),
        crate::flow::expected_result()["after"]
    );
    assert_eq!(audit_trail(&records), expected_trail(), "{records:#?}");
    let evals: Vec<&Value> = records.iter().filter(|r| r["event"] == "eval").collect();
    assert_eq!(evals[0]["node"], json!(other), "{records:#?}");
}

/// Found by red team 3: cancelling (`notifications/cancelled`) a legacy call whose eval waits
/// for a human in memory stops its sandbox (`await_legacy`), but once the eval was parked the
/// cancellation only ended the request: the abandoned eval stayed listed on every node's
/// approval API, and a human approving it there (or the sweep at the deadline) ran the rest of
/// a script its client gave up on (here the approved write). Now the node takes the parked eval
/// back and cancels it: its ask is withdrawn, the write never runs, and the eval is audited
/// once as cancelled.
#[test]
fn a_cancelled_legacy_call_does_not_leave_its_parked_eval_to_run_later() {
    let cluster = Cluster::start("legacy_cancel", 3, 0);
    prepare(&cluster.files);
    let markers = markers(&cluster);
    let client = start_client(&cluster, "cancel", &markers);
    await_some("the human is asked", || {
        markers.join("asked").exists().then_some(())
    });
    cluster.await_parked(1);
    let accepted = || cluster.proxy.log().matches("status=202").count();
    let before = accepted();
    std::fs::write(markers.join("cancel"), "").unwrap();
    await_some("the client cancelled its call", || {
        markers.join("cancelled").exists().then_some(())
    });
    // The cancellation reached a node: the one notification the client sends meanwhile (a
    // POST answered 202; the human has not answered).
    await_some("`notifications/cancelled` is accepted", || {
        (accepted() == before + 1).then_some(())
    });
    let (_, routes) = session_routes(&cluster.proxy.log());
    let other = (cluster.index_of(&routes[0].served_by) + 1) % 3;
    let base = cluster.node(other).base_url();
    // Today the ask stays listed (and `decide` answers 200 `decided`, then the write runs).
    let pending = await_some("the cancelled eval's ask is withdrawn", || {
        block_on(client::pending_approvals(&base))
            .ok()
            .filter(Vec::is_empty)
    });
    assert_eq!(pending, Vec::<Value>::new());
    assert!(
        !cluster.store_keys().iter().any(|k| k.starts_with("eval:")),
        "the cancelled eval is still saved: {:?}",
        cluster.store_keys()
    );
    std::fs::write(markers.join("done"), "").unwrap();
    let obs = finish_client(client, &cluster);
    assert_eq!(obs["call"], "cancelled", "{obs:#}");
    assert_eq!(
        std::fs::read_to_string(cluster.files.join(crate::flow::FILE)).unwrap(),
        crate::flow::FIRST_LINE,
        "the cancelled script's write ran"
    );
    let records = cluster.audit_with_evals(1);
    let evals: Vec<&Value> = records.iter().filter(|r| r["event"] == "eval").collect();
    assert_eq!(evals[0]["error_kind"], "cancelled", "{records:#?}");
}
