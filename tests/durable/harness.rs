//! The cluster under test: one Redis, N `codemode serve --http` nodes (each its own config file
//! and audit directory, all sharing the store, the sealing key and a files directory served by
//! a real `server-filesystem`), and HAProxy in front.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use codemode_test_support::services::{HaProxy, RedisServer, free_port};
use codemode_test_support::{peers, scratch_dir};
use serde_json::{Value, json};

pub use crate::node::Node;

/// The codemode binary under test.
pub const CODEMODE: &str = env!("CARGO_BIN_EXE_codemode");

/// The 32-byte sealing key every node of a cluster shares (64 hex digits), in the environment
/// variable [`KEY_ENV`].
pub const KEY: &str = "6d9b1f0c3a7e52d48c0b9e1f27a4d6c35e8f0a1b2c3d4e5f60718293a4b5c6d7";
/// The environment variable the nodes read the key from (`durable.keyEnv`).
pub const KEY_ENV: &str = "CODEMODE_TEST_STATE_KEY";

/// Longest a test waits for something a node does by itself (start, park, audit).
pub const PATIENCE: Duration = Duration::from_secs(60);

/// The tool the `gate` profile asks a human about; everything else of the upstream is allowed.
pub const ASKED_TOOL: &str = "fs__write_file";

/// What every node's config has: the `fs` upstream (server-filesystem on `files`), the `gate`
/// profile asking about [`ASKED_TOOL`], the command tool `nap` (`sleep 30`: a call that is
/// still running when a test kills its node), the HTTP approval API, `durable` as given, and
/// the node's own audit directory.
pub fn node_config(files: &Path, audit: &Path, durable: Value) -> Value {
    let (command, args) = peers::filesystem_server_cmd(files);
    json!({
        "mcpServers": {"fs": {"command": command, "args": args}},
        "commands": {"nap": {"command": "sleep", "args": ["30"], "timeoutSeconds": 60}},
        "evaluation": {"profiles": {"gate": {
            "asklist": [ASKED_TOOL],
            "approvalTimeoutSeconds": 600
        }}},
        "approvals": {"http": true},
        "durable": durable,
        "audit": {"dir": audit}
    })
}

/// Writes `value` as pretty JSON to `path`.
pub fn write_json(path: &Path, value: &Value) {
    std::fs::write(path, serde_json::to_vec_pretty(value).expect("serialise"))
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

pub use codemode_test_support::audit_records;

/// The HAProxy configuration in front of `servers` (`(name, port)`): round-robin, except that
/// a request carrying `Mcp-Session-Id` goes where the response that created that session came
/// from (legacy sessions); a dead server is skipped (TCP checks every 200 ms, and a request
/// whose connection fails is sent to another one). Every response says which server answered
/// (`X-Served-By`), and the log has one line per request:
/// `served_by=S status=N method=M session=REQ_ID/RESP_ID`.
pub fn haproxy_config(front: u16, servers: &[(String, u16)]) -> String {
    let mut cfg = format!(
        "global\n\
         \x20 log stdout format raw local0\n\
         defaults\n\
         \x20 mode http\n\
         \x20 log global\n\
         \x20 option redispatch\n\
         \x20 retries 3\n\
         \x20 retry-on conn-failure empty-response\n\
         \x20 timeout connect 2s\n\
         \x20 timeout client 300s\n\
         \x20 timeout server 300s\n\
         \x20 timeout http-request 30s\n\
         frontend mcp\n\
         \x20 bind 127.0.0.1:{front}\n\
         \x20 capture request header mcp-session-id len 64\n\
         \x20 capture response header mcp-session-id len 64\n\
         \x20 log-format \"served_by=%s status=%ST method=%HM session=%[capture.req.hdr(0)]/%[capture.res.hdr(0)]\"\n\
         \x20 default_backend codemode\n\
         backend codemode\n\
         \x20 balance roundrobin\n\
         \x20 stick-table type string len 64 size 100k expire 30m\n\
         \x20 stick match req.hdr(mcp-session-id)\n\
         \x20 stick store-response res.hdr(mcp-session-id)\n\
         \x20 http-response set-header X-Served-By %s\n"
    );
    for (name, port) in servers {
        cfg.push_str(&format!(
            "  server {name} 127.0.0.1:{port} check inter 200ms fall 1 rise 1\n"
        ));
    }
    cfg
}

/// A cluster: Redis, nodes, HAProxy. Dropped in field order: the proxy, the nodes, Redis.
pub struct Cluster {
    pub proxy: HaProxy,
    /// `None` once a test killed or stopped that node.
    pub nodes: Vec<Option<Node>>,
    pub redis: RedisServer,
    /// The scratch directory.
    pub dir: PathBuf,
    /// The directory the `fs` upstream serves (shared by every node).
    pub files: PathBuf,
    front: u16,
}

impl Cluster {
    /// Starts Redis, `nodes` nodes with `durable.store` on it (and
    /// `suspendToStoreAfterSeconds` = `spill_after`), and HAProxy in front.
    pub fn start(name: &str, nodes: usize, spill_after: u64) -> Cluster {
        Cluster::start_with_keys(name, &vec![KEY; nodes], spill_after)
    }

    /// [`Cluster::start`] with one node per key of `keys`, each given that sealing key.
    pub fn start_with_keys(name: &str, keys: &[&str], spill_after: u64) -> Cluster {
        peers::ensure_installed();
        let dir = scratch_dir("durable", name);
        let files = dir.join("files");
        std::fs::create_dir_all(&files).expect("create the files dir");
        let redis = RedisServer::start(&dir.join("redis"));
        let durable = json!({
            "store": redis.url(0),
            "dir": dir.join("state"),
            "keyEnv": KEY_ENV,
            "suspendToStoreAfterSeconds": spill_after
        });
        let started: Vec<Option<Node>> = keys
            .iter()
            .enumerate()
            .map(|(i, key)| {
                let home = dir.join(format!("node{i}"));
                std::fs::create_dir_all(&home).expect("create a node dir");
                let config = home.join("codemode.json");
                write_json(
                    &config,
                    &node_config(&files, &home.join("audit"), durable.clone()),
                );
                Some(Node::start(&format!("node{i}"), &config, &[(KEY_ENV, key)]))
            })
            .collect();
        let front = free_port();
        let servers: Vec<(String, u16)> = started
            .iter()
            .flatten()
            .map(|n| (n.name.clone(), n.port()))
            .collect();
        let proxy = HaProxy::start(
            &dir.join("haproxy"),
            &haproxy_config(front, &servers),
            SocketAddr::from((Ipv4Addr::LOCALHOST, front)),
        );
        Cluster {
            proxy,
            nodes: started,
            redis,
            dir,
            files,
            front,
        }
    }

    /// HAProxy's MCP endpoint: `http://127.0.0.1:FRONT/mcp`.
    pub fn front_url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.front)
    }

    /// Node `i` (panics when it was taken away).
    pub fn node(&self, i: usize) -> &Node {
        self.nodes[i]
            .as_ref()
            .unwrap_or_else(|| panic!("node{i} is gone"))
    }

    /// The index of the node named `name`.
    pub fn index_of(&self, name: &str) -> usize {
        name.strip_prefix("node")
            .and_then(|i| i.parse().ok())
            .unwrap_or_else(|| panic!("`{name}` is not a node name"))
    }

    /// Takes node `i` out (to kill or stop it).
    pub fn take(&mut self, i: usize) -> Node {
        self.nodes[i]
            .take()
            .unwrap_or_else(|| panic!("node{i} is gone already"))
    }

    /// The audit records of node `i`.
    pub fn audit_of(&self, i: usize) -> Vec<Value> {
        audit_records(&self.dir.join(format!("node{i}/audit")))
    }

    /// Every node's audit records, each with `"node": i` added.
    pub fn audit(&self) -> Vec<Value> {
        (0..self.nodes.len())
            .flat_map(|i| {
                self.audit_of(i).into_iter().map(move |mut r| {
                    r["node"] = json!(i);
                    r
                })
            })
            .collect()
    }

    /// The audit records across nodes once there are at least `evals` eval records (a node
    /// writes them on a thread of its own, a moment after the eval answered).
    pub fn audit_with_evals(&self, evals: usize) -> Vec<Value> {
        let started = Instant::now();
        loop {
            let records = self.audit();
            let found = records.iter().filter(|r| r["event"] == "eval").count();
            if found >= evals || started.elapsed() > PATIENCE {
                return records;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The keys the nodes have in Redis (without the `codemode:` prefix), sorted.
    pub fn store_keys(&self) -> Vec<String> {
        let out = self.redis.cli(&["--scan", "--pattern", "codemode:*"]);
        let mut keys: Vec<String> = String::from_utf8_lossy(&out)
            .lines()
            .filter_map(|l| l.strip_prefix("codemode:"))
            .map(String::from)
            .collect();
        keys.sort();
        keys
    }

    /// Waits until the store holds `count` saved evals ([`is_parked_eval`] keys); returns the
    /// store's keys.
    pub fn await_parked(&self, count: usize) -> Vec<String> {
        let started = Instant::now();
        loop {
            let keys = self.store_keys();
            if keys.iter().filter(|k| is_parked_eval(k)).count() == count {
                return keys;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "the store never held {count} saved evals; its keys: {keys:?}; node logs:\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Every live node's log, headed by its name.
    pub fn logs(&self) -> String {
        self.nodes
            .iter()
            .flatten()
            .map(|n| format!("---- {}:\n{}", n.name, n.log()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Whether a store key names a saved (parked) eval.
pub fn is_parked_eval(key: &str) -> bool {
    key.starts_with("eval:")
}

/// Waits until `dir` (a local store's `records/` directory) holds `count` files whose names
/// are saved evals; returns all its file names. `log` is shown when it never does.
pub fn await_local_parked(dir: &Path, count: usize, log: &str) -> Vec<String> {
    let started = Instant::now();
    loop {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        if names.iter().filter(|n| is_parked_eval(n)).count() == count {
            return names;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "{} never held {count} saved evals: {names:?}\n{log}",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `check` every 20 ms until it returns `Some`, for at most [`PATIENCE`].
pub fn await_some<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(found) = check() {
            return found;
        }
        assert!(started.elapsed() < PATIENCE, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
