//! A scratch directory and config per test, the server under test, and an MCP client.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use codemode_bench::http::{Protocol, Server, client::Client};
use codemode_test_support::peers;
use serde_json::{Value, json};

/// The codemode binary under test.
pub const CODEMODE: &str = env!("CARGO_BIN_EXE_codemode");
/// Longest a test waits for something the server does by itself (a marker, a log line).
const PATIENCE: Duration = Duration::from_secs(60);

/// One test's world: a scratch directory with its config, and the server.
pub struct World {
    // Dropped first: the server is killed before its directory goes.
    pub server: Server,
    pub dir: PathBuf,
    pub config: PathBuf,
}

impl World {
    /// Writes `config(dir)` to `<dir>/codemode.json` and starts `codemode serve --http` on it.
    pub fn start(name: &str, config: impl FnOnce(&Path) -> Value) -> Self {
        peers::ensure_installed();
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("faults")
            .join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the scratch dir");
        let path = dir.join("codemode.json");
        write_json(&path, &config(&dir));
        let server = Server::codemode(Path::new(CODEMODE), Some(&path))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        World {
            server,
            dir,
            config: path,
        }
    }

    /// Every record of the audit log (`<dir>/audit/*.jsonl`).
    pub fn audit(&self) -> Vec<Value> {
        audit_records(&self.dir.join("audit"))
    }

    /// The audit log once it has at least `evals` eval records (the writer writes on a thread
    /// of its own, a moment after the eval answered).
    pub fn audit_with_evals(&self, evals: usize) -> Vec<Value> {
        let started = Instant::now();
        loop {
            let records = self.audit();
            if eval_records(&records).len() >= evals || started.elapsed() > PATIENCE {
                return records;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits until `<dir>/<file>` exists and has at least `lines` lines; returns them.
    pub fn await_marker(&self, file: &str, lines: usize) -> Vec<String> {
        let path = self.dir.join(file);
        let started = Instant::now();
        loop {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let found: Vec<String> = text.lines().map(String::from).collect();
            if found.len() >= lines {
                return found;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "{} has {} of {lines} lines; server log:\n{}",
                path.display(),
                found.len(),
                self.server.log_tail()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits until the server's stderr has `count` lines containing `text`.
    pub fn await_log(&self, text: &str, count: usize) {
        let started = Instant::now();
        while self.server.log_lines_containing(text) < count {
            assert!(
                started.elapsed() < PATIENCE,
                "the server never logged `{text}`:\n{}",
                self.server.log_tail()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Writes `value` as JSON to `path` (through a temp file and a rename, like an editor).
pub fn write_json(path: &Path, value: &Value) {
    let tmp = path.with_extension("json.writing");
    std::fs::write(&tmp, serde_json::to_vec_pretty(value).expect("serialise")).expect("write");
    std::fs::rename(&tmp, path).expect("rename into place");
}

pub use codemode_test_support::audit_records;

/// The audit log's `eval` records.
pub fn eval_records(records: &[Value]) -> Vec<&Value> {
    records.iter().filter(|r| r["event"] == "eval").collect()
}

/// `{"command": python, "args": [slow_server.py], "env": {"FAULTS_DIR": dir}}`.
pub fn slow_server(dir: &Path) -> Value {
    json!({
        "command": peers::python(),
        "args": [Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/faults/slow_server.py")],
        "env": {"FAULTS_DIR": dir, "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    })
}

/// Runs `code` with the `eval` tool as a new client of `url`; returns the result's
/// `structuredContent` (the outcome: ok, result or error, ledger) whether the eval failed or
/// not, or the transport/protocol error in words.
pub async fn eval(url: &str, protocol: Protocol, code: &str) -> Result<Value, String> {
    let mut client = Client::connect(url, protocol).await?;
    let outcome = client
        .call_tool_outcome("eval", json!({ "code": code }))
        .await;
    client.close().await;
    outcome
        .map(|result| result["structuredContent"].clone())
        .map_err(String::from)
}

/// `[tool, status, reason]` of each ledger entry of an outcome.
pub fn ledger(outcome: &Value) -> Value {
    outcome["tool_calls"]
        .as_array()
        .unwrap_or_else(|| panic!("no ledger in {outcome}"))
        .iter()
        .map(|c| json!([c["tool"], c["status"], c["reason"]]))
        .collect()
}
