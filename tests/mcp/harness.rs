//! The harness: a scratch directory and config per test, an optional `codemode serve --http`
//! child, and the real MCP clients (Python SDK, TypeScript SDK) run as child processes that
//! print one JSON object of observations.

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::peers;

/// The codemode binary under test.
pub const CODEMODE: &str = env!("CARGO_BIN_EXE_codemode");
/// Longest a client script may run before it is killed and the test fails.
const CLIENT_DEADLINE: Duration = Duration::from_secs(90);
/// Longest `codemode serve --http` may take to accept connections.
const SERVER_DEADLINE: Duration = Duration::from_secs(60);
/// Longest the audit log may take to hold the records a test expects.
const AUDIT_DEADLINE: Duration = Duration::from_secs(30);

/// How the client reaches codemode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// The client starts `codemode serve --config FILE` and talks over its stdin/stdout.
    Stdio,
    /// The test starts `codemode serve --config FILE --http 127.0.0.1:PORT`; the client POSTs.
    Http,
}

/// The Python SDK's connection mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `server/discover` first: protocol 2026-07-28 (elicitation = input-required results).
    Auto,
    /// `initialize`: protocol 2025-11-25 (elicitation = `elicitation/create` requests).
    Legacy,
}

impl Mode {
    /// The mode's name, as the Python clients read it from `CODEMODE_MODE`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::Legacy => "legacy",
        }
    }

    /// The protocol version codemode must negotiate with a client in this mode.
    pub fn protocol(self) -> &'static str {
        match self {
            Mode::Auto => "2026-07-28",
            Mode::Legacy => "2025-11-25",
        }
    }
}

/// `target/tmp/mcp/<name>-<pid>`, fresh; removed at the end unless the test failed (then it
/// keeps the config, the audit log and the server log for a look).
pub struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    /// A fresh scratch directory for the test `name`.
    pub fn new(name: &str) -> Self {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("mcp")
            .join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("files")).expect("create the scratch dir");
        std::fs::write(dir.join("files/hello.txt"), "hello\n").expect("write a sample file");
        Scratch { dir }
    }

    /// A path inside the scratch directory.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// `{"command": …, "args": […]}` of a stdio upstream.
pub fn stdio_server((command, args): (PathBuf, Vec<String>)) -> Value {
    json!({ "command": command, "args": args })
}

/// The config most tests use: upstreams `time` and `everything`; profiles `sup` (get-sum
/// denied, echo asked, 2 s to answer, no elicitation → deny) and `lenient` (echo asked, no
/// elicitation → allow); an audit log in `<scratch>/audit`.
pub fn base_config(scratch: &Scratch) -> Value {
    json!({
        "mcpServers": {
            "time": stdio_server(peers::time_server_cmd()),
            "everything": stdio_server(peers::everything_server_cmd()),
        },
        "evaluation": {
            "profiles": {
                "sup": {
                    "denylist": ["everything__get-sum"],
                    "asklist": ["everything__echo"],
                    "approvalTimeoutSeconds": 2
                },
                "lenient": { "asklist": ["everything__echo"], "elicitationFallback": "allow" }
            }
        },
        "audit": { "dir": scratch.path("audit") }
    })
}

/// Writes `value` as JSON to `path` (through a temp file and a rename, like an editor).
pub fn write_json(path: &Path, value: &Value) {
    let tmp = path.with_extension("json.writing");
    std::fs::write(&tmp, serde_json::to_vec_pretty(value).expect("serialise"))
        .expect("write the config");
    std::fs::rename(&tmp, path).expect("rename the config into place");
}

/// One test's world: scratch dir, config file, and for HTTP the running server.
pub struct Setup {
    // Dropped first: the server is killed before its scratch dir goes.
    server: Option<HttpServer>,
    /// The scratch directory.
    pub scratch: Scratch,
    /// The config file codemode serves.
    pub config: PathBuf,
}

impl Setup {
    /// Writes `config` (built from the scratch dir) and, for HTTP, starts the server.
    pub fn new(name: &str, transport: Transport, config: impl FnOnce(&Scratch) -> Value) -> Self {
        peers::ensure_installed();
        let scratch = Scratch::new(name);
        let path = scratch.path("codemode.json");
        write_json(&path, &config(&scratch));
        let server = match transport {
            Transport::Stdio => None,
            Transport::Http => Some(HttpServer::start(&path, &scratch.path("server.log"))),
        };
        Setup {
            server,
            scratch,
            config: path,
        }
    }

    /// The HTTP server's `http://127.0.0.1:PORT/mcp`, for HTTP setups.
    pub fn url(&self) -> Option<&str> {
        self.server.as_ref().map(|s| s.url.as_str())
    }

    /// Writes another config version into the scratch dir (for hot reload) and returns its path.
    pub fn config_version(&self, name: &str, value: &Value) -> PathBuf {
        let path = self.scratch.path(name);
        write_json(&path, value);
        path
    }

    fn client_env(&self, cmd: &mut Command) {
        cmd.env("CODEMODE_BIN", CODEMODE)
            .env("CODEMODE_CONFIG", &self.config)
            .env("CODEMODE_DIR", &self.scratch.dir)
            .env("PYTHONUNBUFFERED", "1")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            // A stdio server the client starts keeps its parked evals and logins here, not in
            // the machine's state dir that every test (and run) would share.
            .env("CODEMODE_STATE_DIR", self.scratch.path("state"))
            .env_remove("CODEMODE_URL");
        if let Some(server) = &self.server {
            cmd.env("CODEMODE_URL", &server.url);
        }
    }

    /// Runs `tests/mcp/clients/<script>` with the venv's Python in `mode`, plus `env`; returns
    /// its observations.
    pub fn python(&self, script: &str, mode: Mode, env: &[(&str, &Path)]) -> Value {
        let mut cmd = Command::new(peers::python());
        cmd.arg(clients_dir().join(script))
            .current_dir(clients_dir())
            .env("CODEMODE_MODE", mode.as_str());
        for (key, value) in env {
            cmd.env(key, value);
        }
        self.client_env(&mut cmd);
        self.run_client(&format!("{script} ({})", mode.as_str()), cmd)
    }

    /// Runs `tests/mcp/clients/<script>` with Node (the TypeScript SDK on `NODE_PATH`).
    pub fn node(&self, script: &str) -> Value {
        let mut cmd = Command::new("node");
        cmd.arg(clients_dir().join(script))
            .current_dir(clients_dir())
            .env("NODE_PATH", peers::node_modules());
        self.client_env(&mut cmd);
        self.run_client(script, cmd)
    }

    fn run_client(&self, what: &str, mut cmd: Command) -> Value {
        let started = Instant::now();
        let (status, stdout, stderr) = run_with_deadline(&mut cmd, CLIENT_DEADLINE);
        // Shown by the test harness only when the test fails.
        eprintln!(
            "---- {what}: {status:?} after {:.1} s; its stderr:\n{stderr}",
            started.elapsed().as_secs_f64()
        );
        let diagnostics = || {
            // Both transports' server stderr (clients/harness.py sends a stdio server's there).
            let log = std::fs::read_to_string(self.scratch.path("server.log")).unwrap_or_default();
            format!("stdout:\n{stdout}\nstderr:\n{stderr}\nserver log:\n{log}")
        };
        let Some(status) = status else {
            panic!(
                "client {what} did not finish within {CLIENT_DEADLINE:?}\n{}",
                diagnostics()
            );
        };
        assert!(
            status.success(),
            "client {what} failed ({status})\n{}",
            diagnostics()
        );
        let line = stdout
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or_default();
        serde_json::from_str(line).unwrap_or_else(|e| {
            panic!(
                "client {what} printed no JSON observations ({e})\n{}",
                diagnostics()
            )
        })
    }

    /// Every record of the audit log (all `*.jsonl` files of `<scratch>/audit`) once it holds
    /// at least `count` records of each `(event, count)` of `expected`: the evals and accesses
    /// the test made. A client has its answer before the server's audit writer thread has
    /// written the records (over HTTP the server runs on; an eval's record is written after its
    /// calls'), so the log is read when they are in, within [`AUDIT_DEADLINE`].
    pub fn audit_once(&self, expected: &[(&str, usize)]) -> Vec<Value> {
        let started = Instant::now();
        loop {
            let records = self.read_audit();
            let short = expected.iter().find(|(event, count)| {
                records.iter().filter(|r| r["event"] == *event).count() < *count
            });
            let Some((event, count)) = short else {
                return records;
            };
            assert!(
                started.elapsed() < AUDIT_DEADLINE,
                "the audit log has fewer than {count} `{event}` records: {records:#?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn read_audit(&self) -> Vec<Value> {
        let dir = self.scratch.path("audit");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("no audit dir {}: {e}", dir.display()))
            .map(|e| e.expect("read the audit dir").path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        files
            .iter()
            .flat_map(|f| {
                std::fs::read_to_string(f)
                    .expect("read an audit file")
                    .lines()
                    .map(|l| serde_json::from_str(l).expect("an audit line is JSON"))
                    .collect::<Vec<Value>>()
            })
            .collect()
    }
}

fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/clients")
}

/// Runs `cmd` with piped output; kills it after `deadline`. `None` status = killed.
pub fn run_with_deadline(
    cmd: &mut Command,
    deadline: Duration,
) -> (Option<ExitStatus>, String, String) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("could not start {cmd:?}: {e}"));
    let read = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = read(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = read(Box::new(child.stderr.take().expect("piped stderr")));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the client") {
            break Some(status);
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (
        status,
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default(),
    )
}

/// `codemode serve --http` on a free loopback port; killed on drop.
pub struct HttpServer {
    child: Child,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
}

impl HttpServer {
    fn start(config: &Path, log: &Path) -> Self {
        // The CLI binds the address it is given and does not report the port of `:0`: take a
        // free port from the kernel, release it, and hand it over.
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("find a free port")
            .port();
        let addr = format!("127.0.0.1:{port}");
        let log_file = std::fs::File::create(log).expect("create the server log");
        // Parked evals of this server only: a test's leftovers must not reach another's
        // approval page.
        let state = config.parent().expect("the config's dir").join("state");
        let child = Command::new(CODEMODE)
            .args(["serve", "--config"])
            .arg(config)
            .args(["--http", &addr])
            .env("CODEMODE_STATE_DIR", state)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .expect("start codemode serve --http");
        let mut server = HttpServer {
            child,
            url: format!("http://{addr}/mcp"),
        };
        let started = Instant::now();
        while TcpStream::connect(&addr).is_err() {
            if let Some(status) = server.child.try_wait().expect("poll the server") {
                panic!(
                    "codemode serve --http exited early ({status}):\n{}",
                    std::fs::read_to_string(log).unwrap_or_default()
                );
            }
            assert!(
                started.elapsed() < SERVER_DEADLINE,
                "codemode serve --http did not listen on {addr} within {SERVER_DEADLINE:?}:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(25));
        }
        server
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The deterministic part of an eval observation (`harness.call` in Python): `isError`, `ok`,
/// the result or the error's kind and message, and the ledger as `[tool, status, reason]`.
/// Also checks the text block: non-empty, and `Error (…)` first when the eval failed.
pub fn eval_summary(obs: &Value) -> Value {
    let outcome = &obs["structured"];
    let text = obs["text"].as_str().unwrap_or_default();
    assert!(
        !text.trim().is_empty(),
        "an eval result without text: {obs}"
    );
    assert_eq!(
        obs["is_error"].as_bool(),
        outcome["ok"].as_bool().map(|ok| !ok),
        "isError must be the negation of ok: {obs}"
    );
    if outcome["ok"] == false {
        let kind = outcome["error"]["kind"].as_str().unwrap_or_default();
        assert!(
            text.starts_with(&format!("Error ({kind})")),
            "the text of a failed eval should start with `Error ({kind})`: {text:?}"
        );
    }
    let calls: Vec<Value> = outcome["tool_calls"]
        .as_array()
        .unwrap_or_else(|| panic!("no ledger in {obs}"))
        .iter()
        .map(|c| json!([c["tool"], c["status"], c["reason"]]))
        .collect();
    let mut summary = json!({ "is_error": obs["is_error"], "ok": outcome["ok"], "calls": calls });
    if outcome["ok"] == true {
        summary["result"] = outcome["result"].clone();
    } else {
        summary["error"] = json!([outcome["error"]["kind"], outcome["error"]["message"]]);
    }
    summary
}

/// The `tool_call` records of an audit log as sorted `[tool, profile, decision, status,
/// reason]` rows.
pub fn audit_calls(records: &[Value]) -> Vec<Value> {
    let mut rows: Vec<Value> = records
        .iter()
        .filter(|r| r["event"] == "tool_call")
        .map(|r| {
            json!([
                r["tool"],
                r["profile"],
                r["decision"],
                r["status"],
                r["reason"]
            ])
        })
        .collect();
    rows.sort_by_key(|r| r.to_string());
    rows
}

/// An array with its items sorted as [`audit_calls`] sorts its rows.
pub fn sorted(rows: Value) -> Value {
    let mut rows = rows.as_array().cloned().unwrap_or_default();
    rows.sort_by_key(|r| r.to_string());
    Value::Array(rows)
}

/// A number from an observation (seconds, milliseconds).
pub fn number(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Asserts `got == want`, listing every difference by JSON path (and both documents) on failure.
pub fn assert_json(what: &str, got: &Value, want: &Value) {
    let mut diffs = Vec::new();
    diff("", got, want, &mut diffs);
    assert!(
        diffs.is_empty(),
        "{what}: {} difference(s):\n  {}\n\ngot:\n{}\n\nwant:\n{}",
        diffs.len(),
        diffs.join("\n  "),
        serde_json::to_string_pretty(got).unwrap_or_default(),
        serde_json::to_string_pretty(want).unwrap_or_default()
    );
}

fn diff(path: &str, got: &Value, want: &Value, out: &mut Vec<String>) {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            let mut keys: Vec<&String> = g.keys().chain(w.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let p = format!("{path}/{k}");
                match (g.get(k), w.get(k)) {
                    (Some(a), Some(b)) => diff(&p, a, b, out),
                    (Some(a), None) => out.push(format!("{p}: unexpected {a}")),
                    (None, Some(b)) => out.push(format!("{p}: missing (want {b})")),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(g), Value::Array(w)) if g.len() == w.len() => {
            for (i, (a, b)) in g.iter().zip(w).enumerate() {
                diff(&format!("{path}/{i}"), a, b, out);
            }
        }
        _ if got != want => out.push(format!("{path}: got {got}, want {want}")),
        _ => {}
    }
}
