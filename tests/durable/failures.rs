//! What a node does when the cluster around it is wrong: no shared key, another key, no Redis.

use serde_json::json;

use codemode_test_support::services::{RedisServer, free_port};

use crate::client::{self, approve_all, block_on, request_state};
use crate::flow::{GATE, assert_same_as_uninterrupted, complete_outcome, prepare, script};
use crate::harness::{Cluster, KEY, KEY_ENV, Node, is_parked_eval, node_config, write_json};

/// A config with a Redis store at `url`, in a fresh scratch directory named `name`.
fn config(name: &str, url: &str) -> std::path::PathBuf {
    let dir = codemode_test_support::scratch_dir("durable", name);
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let path = dir.join("codemode.json");
    let durable = json!({"store": url, "keyEnv": KEY_ENV, "suspendToStoreAfterSeconds": 0});
    write_json(&path, &node_config(&files, &dir.join("audit"), durable));
    path
}

#[test]
fn a_node_without_the_shared_key_refuses_to_start() {
    let dir = codemode_test_support::scratch_dir("durable", "no_key_redis");
    let redis = RedisServer::start(&dir);
    let path = config("no_key", &redis.url(0));
    let (status, log) = Node::refused(&path, &[]);
    assert!(!status.success(), "{status}\n{log}");
    assert!(
        log.contains(&format!(
            "the environment variable `{KEY_ENV}` is not set: the nodes sharing a Redis store \
             must share one sealing key"
        )),
        "{log}"
    );
}

#[test]
fn a_node_refuses_to_start_when_redis_cannot_be_reached() {
    let port = free_port();
    let url = format!("redis://:hunter2@127.0.0.1:{port}/0");
    let path = config("no_redis", &url);
    let (status, log) = Node::refused(&path, &[(KEY_ENV, KEY)]);
    assert!(!status.success(), "{status}\n{log}");
    assert!(
        log.contains(&format!("redis://:***@127.0.0.1:{port}/0: cannot connect")),
        "{log}"
    );
    assert!(
        !log.contains("hunter2"),
        "the password is never shown: {log}"
    );
}

#[test]
fn a_node_with_another_key_cannot_resume_an_eval_and_loses_nothing() {
    let other = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    let cluster = Cluster::start_with_keys("wrong_key", &[KEY, other], 0);
    prepare(&cluster.files);
    let args = json!({"code": script(&cluster.files)});
    let asked = block_on(client::call_tool(
        &cluster.node(0).mcp_url(),
        GATE,
        &args,
        None,
    ))
    .unwrap()
    .result;
    cluster.await_parked(1);
    let answers = approve_all(&asked);
    let state = request_state(&asked);
    // The retry reaches the node with the wrong key: an error result naming the key, the
    // write not made.
    let wrong = block_on(client::call_tool(
        &cluster.node(1).mcp_url(),
        GATE,
        &args,
        Some((&state, answers.clone())),
    ))
    .unwrap()
    .result;
    assert_eq!(wrong["isError"], true, "{wrong}");
    // Saying what is wrong: not "run it again", which would make the write twice.
    let text = wrong["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("sealing key") && !text.contains("run it again"),
        "{wrong}"
    );
    assert_eq!(
        std::fs::read_to_string(cluster.files.join(crate::flow::FILE)).unwrap(),
        crate::flow::FIRST_LINE
    );
    // The saved eval is still there for a node with the right key.
    let retry = block_on(client::call_tool(
        &cluster.node(0).mcp_url(),
        GATE,
        &args,
        Some((&state, answers)),
    ))
    .unwrap();
    let outcome = complete_outcome(&retry.result, &cluster.logs());
    assert_same_as_uninterrupted(&outcome, &cluster.files, &cluster.audit_with_evals(1));
}

#[test]
fn a_node_killed_before_the_save_loses_its_eval_and_says_so() {
    // An hour before spilling: the eval is only in node0's memory when node0 dies.
    let mut cluster = Cluster::start("killed_before_save", 2, 3600);
    prepare(&cluster.files);
    let args = json!({"code": script(&cluster.files)});
    let asked = block_on(client::call_tool(
        &cluster.node(0).mcp_url(),
        GATE,
        &args,
        None,
    ))
    .unwrap()
    .result;
    assert_eq!(
        cluster
            .store_keys()
            .iter()
            .filter(|k| is_parked_eval(k))
            .count(),
        0
    );
    cluster.take(0).kill();
    let retry = block_on(client::call_tool(
        &cluster.node(1).mcp_url(),
        GATE,
        &args,
        Some((&request_state(&asked), approve_all(&asked))),
    ))
    .unwrap()
    .result;
    assert_eq!(
        retry,
        json!({"content": [{"type": "text", "text": "this eval is no longer waiting for input (it finished, timed out, or the server restarted); run it again"}],
               "isError": true, "resultType": "complete"})
    );
    assert_eq!(
        std::fs::read_to_string(cluster.files.join(crate::flow::FILE)).unwrap(),
        crate::flow::FIRST_LINE
    );
}
