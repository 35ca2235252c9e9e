//! What a node does when the cluster around it is wrong: no shared key, no Redis.

use serde_json::json;

use codemode_test_support::services::{RedisServer, free_port};

use crate::harness::{KEY_ENV, Node, node_config, write_json};

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
    let (status, log) = Node::refused(&path, &[(KEY_ENV, crate::harness::KEY)]);
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
