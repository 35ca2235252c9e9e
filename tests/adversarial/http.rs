//! HTTP abuse against a real `codemode serve --http` on loopback: hosts, origins, tokens, bodies
//! that are too big, malformed, nested or cut short, batches, forged and replayed
//! `requestState`s. Each case is one raw request and the status (and body) it must get; after
//! each, the server still answers an eval.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

const CODEMODE: &str = env!("CARGO_BIN_EXE_codemode");
const TOKEN: &str = "adversarial-token-0123456789";

/// `codemode serve --http 127.0.0.1:0` with a token and an allowed origin; killed on drop.
struct Server {
    child: Child,
    addr: String,
    stderr: Arc<Mutex<String>>,
    dir: std::path::PathBuf,
}

impl Server {
    fn start(name: &str) -> Server {
        Server::start_with(name, |_| Value::Null)
    }

    /// The server, with `mcpServers` from `servers(scratch dir)` when that is not null.
    fn start_with(name: &str, servers: impl Fn(&std::path::Path) -> Value) -> Server {
        Server::start_edited(name, |dir, config| {
            let servers = servers(dir);
            if !servers.is_null() {
                config["mcpServers"] = servers;
            }
        })
    }

    /// The server, with its config changed by `edit(scratch dir, config)`.
    fn start_edited(name: &str, edit: impl Fn(&std::path::Path, &mut Value)) -> Server {
        let dir = codemode_test_support::scratch_dir("adversarial-http", name);
        let token_sha = {
            use sha2::Digest;
            let digest = sha2::Sha256::digest(TOKEN.as_bytes());
            digest
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        };
        let config = json!({
            "evaluation": { "profiles": { "p": { "asklist": ["hitl_request"] } } },
            "server": {
                "http": {
                    "allowedOrigins": ["https://ok.example"],
                    "headerReadTimeout": "1s",
                    "bodyReadTimeout": "1s",
                    "maxSessionsPerClient": 8
                },
                "auth": { "tokens": [ { "name": "adv", "sha256": token_sha } ] }
            },
            "audit": { "dir": dir.join("audit") },
            "limits": { "fuel": 0, "timeout": "60s" }
        });
        let mut config = config;
        edit(&dir, &mut config);
        let path = dir.join("config.json");
        std::fs::write(&path, config.to_string()).unwrap();
        let mut child = Command::new(CODEMODE)
            .args(["serve", "--config"])
            .arg(&path)
            .args(["--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start codemode serve --http");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let pipe = child.stderr.take().unwrap();
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("listening on http://") {
                    let _ = tx.send(rest.trim_end_matches("/mcp").to_string());
                }
                sink.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no `listening on` line:\n{}", stderr.lock().unwrap()));
        Server {
            child,
            addr,
            stderr,
            dir,
        }
    }

    /// Sends `request` (bytes as written) on a new connection and reads until the server closes
    /// it or 20 s pass: `(status, body)`; status 0 when the server closed without answering, 1
    /// when it kept the connection open that long without answering.
    fn send(&self, request: &[u8]) -> (u16, String) {
        send_to(&self.addr, request, Duration::from_secs(20))
    }
}

/// [`Server::send`] to `addr`, waiting at most `wait` for the server to answer or close.
fn send_to(addr: &str, request: &[u8], wait: Duration) -> (u16, String) {
    {
        let mut stream = TcpStream::connect(addr).expect("connect");
        stream.set_read_timeout(Some(wait)).unwrap();
        // A server may answer and close before reading everything (a body too big).
        let _ = stream.write_all(request);
        let mut response = Vec::new();
        if let Err(e) = stream.read_to_end(&mut response)
            && matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            )
        {
            // Still open after `wait`: the server would wait forever.
            return (1, String::from_utf8_lossy(&response).into_owned());
        }
        let response = String::from_utf8_lossy(&response).into_owned();
        let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
        let status = head
            .lines()
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        (status, body.to_string())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("server stderr:\n{}", self.stderr.lock().unwrap());
        }
    }
}

/// A request with these extra header lines (each `Name: value`) and this body.
fn request(addr: &str, headers: &[&str], body: &[u8]) -> Vec<u8> {
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

const JSON: &str = "Content-Type: application/json";
const ACCEPT: &str = "Accept: application/json, text/event-stream";
const AUTH: &str = "Authorization: Bearer adversarial-token-0123456789";
const V2026: &str = "MCP-Protocol-Version: 2026-07-28";
const CALL: &str = "Mcp-Method: tools/call";
const EVAL: &str = "Mcp-Name: eval";

/// A stateless (2026-07-28) `tools/call` of `eval` with `params` merged in.
fn eval_body(code: &str, extra: Value) -> Vec<u8> {
    let mut params = json!({
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "form": {} } }
        },
        "name": "eval",
        "arguments": { "code": code }
    });
    if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            p.insert(k.clone(), v.clone());
        }
    }
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
        .to_string()
        .into_bytes()
}

fn eval_request(addr: &str, code: &str, extra: Value) -> Vec<u8> {
    request(
        addr,
        &[JSON, ACCEPT, AUTH, V2026, CALL, EVAL],
        &eval_body(code, extra),
    )
}

/// The JSON-RPC message in a response body: plain JSON or the first SSE `data:` line.
fn message(body: &str) -> Value {
    let text = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        // An SSE stream may begin with a priming event of empty data.
        .find(|data| !data.trim().is_empty())
        .unwrap_or(body);
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// What a case's response must be.
enum Want {
    /// This status.
    Status(u16),
    /// This status and a JSON-RPC error with this code.
    RpcError(u16, i64),
    /// The server closes the connection without a response, or answers with a 4xx.
    Refused,
    /// A 200 whose tool result `isError` is true and whose text contains this.
    ToolError(&'static str),
    /// The server closes the connection without answering (it does not wait forever).
    Closed,
}

struct HttpCase {
    name: &'static str,
    request: fn(&str) -> Vec<u8>,
    want: Want,
}

fn cases() -> Vec<HttpCase> {
    let c = |name, request, want| HttpCase {
        name,
        request,
        want,
    };
    vec![
        c(
            "a well-formed eval",
            |a| eval_request(a, "return 1 + 1", json!({})),
            Want::Status(200),
        ),
        c(
            "a foreign Host (DNS rebinding)",
            |a| {
                let mut r = eval_request(a, "return 1", json!({}));
                let text = String::from_utf8(r.clone()).unwrap().replacen(
                    &format!("Host: {a}"),
                    "Host: evil.example",
                    1,
                );
                r = text.into_bytes();
                r
            },
            Want::Status(403),
        ),
        c(
            "a foreign Origin",
            |a| {
                request(
                    a,
                    &[
                        JSON,
                        ACCEPT,
                        AUTH,
                        V2026,
                        CALL,
                        EVAL,
                        "Origin: https://evil.example",
                    ],
                    &eval_body("return 1", json!({})),
                )
            },
            Want::Status(403),
        ),
        c(
            "an allowed Origin",
            |a| {
                request(
                    a,
                    &[
                        JSON,
                        ACCEPT,
                        AUTH,
                        V2026,
                        CALL,
                        EVAL,
                        "Origin: https://ok.example",
                    ],
                    &eval_body("return 1", json!({})),
                )
            },
            Want::Status(200),
        ),
        c(
            "an Origin differing only by port",
            |a| {
                request(
                    a,
                    &[
                        JSON,
                        ACCEPT,
                        AUTH,
                        V2026,
                        CALL,
                        EVAL,
                        "Origin: https://ok.example:8443",
                    ],
                    &eval_body("return 1", json!({})),
                )
            },
            Want::Status(403),
        ),
        c(
            "no token",
            |a| {
                request(
                    a,
                    &[JSON, ACCEPT, V2026, CALL, EVAL],
                    &eval_body("return 1", json!({})),
                )
            },
            Want::Status(401),
        ),
        c(
            "a wrong token",
            |a| {
                request(
                    a,
                    &[
                        JSON,
                        ACCEPT,
                        "Authorization: Bearer nope",
                        V2026,
                        CALL,
                        EVAL,
                    ],
                    &eval_body("return 1", json!({})),
                )
            },
            Want::Status(401),
        ),
        c(
            "the token's hash as the token",
            |a| {
                use sha2::Digest;
                let h: String = sha2::Sha256::digest(TOKEN.as_bytes())
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                let auth = format!("Authorization: Bearer {h}");
                request(
                    a,
                    &[JSON, ACCEPT, &auth, V2026, CALL, EVAL],
                    &eval_body("return 1", json!({})),
                )
            },
            Want::Status(401),
        ),
        c(
            "Basic instead of Bearer",
            |a| {
                request(
                    a,
                    &[
                        JSON,
                        ACCEPT,
                        "Authorization: Basic YWR2OmFkdg==",
                        V2026,
                        CALL,
                        EVAL,
                    ],
                    &eval_body("return 1", json!({})),
                )
            },
            Want::Status(401),
        ),
        c(
            "malformed JSON",
            |a| {
                request(
                    a,
                    &[JSON, ACCEPT, AUTH, V2026, CALL, EVAL],
                    b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ",
                )
            },
            Want::RpcError(400, -32700),
        ),
        c(
            "a JSON-RPC batch",
            |a| {
                let one = String::from_utf8(eval_body("return 1", json!({}))).unwrap();
                request(
                    a,
                    &[JSON, ACCEPT, AUTH, V2026, CALL, EVAL],
                    format!("[{one},{one}]").as_bytes(),
                )
            },
            Want::RpcError(400, -32600),
        ),
        c(
            "invalid UTF-8 in the body",
            |a| {
                request(a, &[JSON, ACCEPT, AUTH, V2026, CALL, EVAL], b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\xfe\"}}")
            },
            Want::Refused,
        ),
        c(
            "a million-deep JSON body",
            |a| {
                let body = format!("{}{}", "[".repeat(1_000_000), "]".repeat(1_000_000));
                request(a, &[JSON, ACCEPT, AUTH, V2026, CALL, EVAL], body.as_bytes())
            },
            Want::Refused,
        ),
        c(
            "a 100 MB body announced",
            |a| {
                let mut r =
                    String::from_utf8(request(a, &[JSON, ACCEPT, AUTH, V2026, CALL, EVAL], b""))
                        .unwrap();
                r = r.replacen("Content-Length: 0", "Content-Length: 104857600", 1);
                let mut bytes = r.into_bytes();
                bytes.extend_from_slice(&vec![b' '; 1 << 20]);
                bytes
            },
            Want::Status(413),
        ),
        c(
            "a body that never finishes (shorter than its Content-Length)",
            |a| {
                let mut r =
                    String::from_utf8(request(a, &[JSON, ACCEPT, AUTH, V2026, CALL, EVAL], b"{}"))
                        .unwrap();
                r = r.replacen("Content-Length: 2", "Content-Length: 200", 1);
                r.into_bytes()
            },
            Want::Status(408),
        ),
        c(
            "two Content-Length headers",
            |a| {
                request(
                    a,
                    &[JSON, ACCEPT, AUTH, V2026, CALL, EVAL, "Content-Length: 5"],
                    &eval_body("return 1", json!({})),
                )
            },
            Want::Refused,
        ),
        c(
            "a 1 MB header",
            |a| {
                let big = format!("X-Big: {}", "a".repeat(1 << 20));
                request(
                    a,
                    &[JSON, ACCEPT, AUTH, V2026, CALL, EVAL, &big],
                    &eval_body("return 1", json!({})),
                )
            },
            Want::Refused,
        ),
        c(
            "an unknown path",
            |a| {
                String::from_utf8(eval_request(a, "return 1", json!({})))
                    .unwrap()
                    .replacen("POST /mcp", "POST /admin", 1)
                    .into_bytes()
            },
            Want::Status(404),
        ),
        c(
            "the approval API when it is off",
            |a| {
                format!(
                    "GET /approvals HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\n{AUTH}\r\n\r\n"
                )
                .into_bytes()
            },
            Want::Status(404),
        ),
        c(
            "a head that never finishes",
            |a| {
                format!("POST /mcp HTTP/1.1\r\nHost: {a}\r\nContent-Type: application/json\r\n")
                    .into_bytes()
            },
            Want::Closed,
        ),
        c(
            "a forged requestState",
            |a| {
                eval_request(
                    a,
                    "return 1",
                    json!({"requestState": "0123456789abcdef0123456789abcdef", "inputResponses": {}}),
                )
            },
            Want::ToolError("no longer waiting"),
        ),
        c(
            "a requestState of another shape",
            |a| {
                eval_request(
                    a,
                    "return 1",
                    json!({"requestState": {"eval": 1}, "inputResponses": {}}),
                )
            },
            Want::Refused,
        ),
        c(
            "a huge requestState",
            |a| {
                eval_request(
                    a,
                    "return 1",
                    json!({"requestState": "a".repeat(1 << 20), "inputResponses": {}}),
                )
            },
            Want::ToolError("no longer waiting"),
        ),
        c(
            "a method header that lies",
            |a| {
                request(
                    a,
                    &[JSON, ACCEPT, AUTH, V2026, "Mcp-Method: tools/list", EVAL],
                    &eval_body("return 1", json!({})),
                )
            },
            Want::Refused,
        ),
        c(
            "a script that is not a string",
            |a| {
                let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}},
                "name": "eval", "arguments": {"code": {"toString": "return 1"}}}}).to_string();
                request(a, &[JSON, ACCEPT, AUTH, V2026, CALL, EVAL], body.as_bytes())
            },
            Want::Refused,
        ),
    ]
}

/// The response breaks no promise of `want`.
fn judge(want: &Want, status: u16, body: &str) -> Result<(), String> {
    match want {
        Want::Status(s) if status == *s => Ok(()),
        Want::RpcError(s, code) if status == *s && message(body)["error"]["code"] == *code => {
            Ok(())
        }
        Want::Refused if status == 0 || (400..500).contains(&status) => Ok(()),
        Want::Closed if status == 0 => Ok(()),
        Want::Refused
            if status == 200
                && (message(body)["error"].is_object()
                    || message(body)["result"]["isError"] == true) =>
        {
            Ok(())
        }
        Want::ToolError(text) if status == 200 => {
            let m = message(body);
            let shown = m["result"]["content"][0]["text"].as_str().unwrap_or("");
            if m["result"]["isError"] == true && shown.contains(text) {
                Ok(())
            } else {
                Err(format!("want a tool error containing {text:?}"))
            }
        }
        _ => Err("unexpected status".into()),
    }
    .map_err(|why| {
        format!(
            "{why}; got {status}: {}",
            body.chars().take(300).collect::<String>()
        )
    })
}

/// An `initialize` (protocol 2025-11-25: a legacy session).
fn initialize(addr: &str) -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "flood", "version": "0"}}})
    .to_string();
    request(addr, &[JSON, ACCEPT, AUTH], body.as_bytes())
}

/// 10,000 `initialize` requests once added 477 MB: sessions are capped per client (8 here),
/// the rest get `429`, and the server still answers evals.
#[test]
fn a_session_flood_is_capped() {
    let server = Server::start("flood");
    let mut statuses = std::collections::BTreeMap::new();
    for _ in 0..40 {
        let (status, _) = server.send(&initialize(&server.addr));
        *statuses.entry(status).or_insert(0) += 1;
    }
    assert_eq!(statuses, [(200, 8), (429, 32)].into_iter().collect());
    let (status, body) = server.send(&eval_request(&server.addr, "return 1 + 1", json!({})));
    assert_eq!(status, 200, "{body}");
    assert_eq!(message(&body)["result"]["structuredContent"]["result"], 2);
}

#[test]
fn http_abuse() {
    let server = Server::start("abuse");
    let mut failures = Vec::new();
    let cases = cases();
    for case in &cases {
        let (status, body) = server.send(&(case.request)(&server.addr));
        if let Err(why) = judge(&case.want, status, &body) {
            failures.push(format!("{}: {why}", case.name));
        }
        // Alive: the next well-formed eval answers 2.
        let (status, body) = server.send(&eval_request(&server.addr, "return 1 + 1", json!({})));
        let m = message(&body);
        if status != 200 || m["result"]["structuredContent"]["result"] != 2 {
            failures.push(format!("{}: the next eval got {status}: {body}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} HTTP cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Found by the red team: guest code never yields to the async runtime, so as many busy scripts
/// as worker threads stalled every other request (a trivial eval waited ~7 s). Each busy script
/// first makes a marker directory through a real server-filesystem (so the test knows it is
/// running; `create_directory` is a write tool, which the test's token may call, unlike the
/// destructive `write_file`)
/// and then spins for 10 s; a trivial eval sent after every marker exists must be answered
/// before any busy one.
#[test]
fn busy_scripts_do_not_stall_other_requests() {
    codemode_test_support::peers::ensure_installed();
    let server = Server::start_with("busy", |dir| {
        let files = dir.join("files");
        std::fs::create_dir_all(&files).unwrap();
        let (command, args) = codemode_test_support::peers::filesystem_server_cmd(&files);
        json!({ "fs": { "command": command, "args": args } })
    });
    let files = server.dir.join("files");
    let busy = std::thread::available_parallelism().map_or(2, |n| n.get()) + 1;
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut threads = Vec::new();
    for i in 0..busy {
        let (addr, order) = (server.addr.clone(), order.clone());
        let marker = files.join(format!("busy-{i}"));
        let code = format!(
            "await codemode.fs__create_directory({{ path: {:?} }}); \
             const t = Date.now(); while (Date.now() - t < 10000) {{}} return 'busy'",
            marker.display().to_string()
        );
        threads.push(std::thread::spawn(move || {
            let request = eval_request(&addr, &code, json!({}));
            let (status, _) = send_to(&addr, &request, Duration::from_secs(120));
            order.lock().unwrap().push(format!("busy {status}"));
        }));
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while (0..busy).any(|i| !files.join(format!("busy-{i}")).exists()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the busy scripts never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (status, body) = server.send(&eval_request(&server.addr, "return 1 + 1", json!({})));
    order.lock().unwrap().push(format!("trivial {status}"));
    assert_eq!(
        message(&body)["result"]["structuredContent"]["result"],
        2,
        "{body}"
    );
    for t in threads {
        t.join().unwrap();
    }
    let order = order.lock().unwrap().clone();
    let mut want = vec!["trivial 200".to_string()];
    want.extend((0..busy).map(|_| "busy 200".to_string()));
    assert_eq!(order, want);
}

/// Found by red team 3: a retry (`requestState`) was served before the caller was checked (the
/// `requestState` branch of `call_eval` returned before `missing_permissions`), and neither the
/// in-memory suspension nor the store's copy recorded whose eval it was. Another caller holding
/// the `requestState` (a log line, a shared proxy, a replayed request) could answer the eval's
/// questions and read its result. Now a retry is refused like a fresh call when the caller lacks
/// the profile's permission, and refused when it is not the eval's caller — whether the eval
/// waits in memory or was saved to the store, and after it finished.
#[test]
fn a_retry_by_another_caller_is_refused_in_memory() {
    retry_by_another_caller("other-caller-memory", 3600);
}

/// [`a_retry_by_another_caller_is_refused_in_memory`] with the eval saved to the store at once.
#[test]
fn a_retry_by_another_caller_is_refused_when_saved() {
    retry_by_another_caller("other-caller-saved", 0);
}

fn retry_by_another_caller(name: &str, spill_after: u64) {
    use sha2::Digest;
    let sha = |t: &str| {
        sha2::Sha256::digest(t.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let server = Server::start_edited(name, |dir, config| {
        config["server"]["auth"] = json!({"tokens": [
            {"name": "alice", "sha256": sha("alice-token-0123456789"), "permissions": ["payments"]},
            {"name": "carol", "sha256": sha("carol-token-0123456789"), "permissions": ["payments"]},
            {"name": "bob", "sha256": sha("bob-token-0123456789")}
        ]});
        config["evaluation"]["profiles"]["pay"] =
            json!({"requirePermissions": ["payments"], "asklist": ["search_tools"]});
        config["durable"] = json!({"store": "local", "dir": dir.join("state"),
                                   "suspendToStoreAfterSeconds": spill_after});
    });
    let call = |token: &str, extra: Value| {
        let auth = format!("Authorization: Bearer {token}");
        let mut body = eval_body(
            "await codemode.search_tools({query: 'pay'}); return 'paid'",
            extra,
        );
        body = String::from_utf8(body)
            .unwrap()
            .replace("\"name\":\"eval\"", "\"name\":\"codemode_eval_pay\"")
            .into_bytes();
        let (status, body) = server.send(&request(
            &server.addr,
            &[
                JSON,
                ACCEPT,
                &auth,
                V2026,
                CALL,
                "Mcp-Name: codemode_eval_pay",
            ],
            &body,
        ));
        assert_eq!(status, 200, "{body}");
        message(&body)
    };
    // Bob may not run the profile's eval.
    let fresh = call("bob-token-0123456789", json!({}));
    assert_eq!(fresh["error"]["code"], -32602, "{fresh}");
    // Alice's eval asks her approval (an approval can be saved to the store).
    let asked = call("alice-token-0123456789", json!({}));
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let state = asked["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_string();
    let key = asked["result"]["inputRequests"]
        .as_object()
        .and_then(|m| m.keys().next().cloned())
        .unwrap();
    if spill_after == 0 {
        let records = server.dir.join("state/records");
        let saved = || {
            std::fs::read_dir(&records)
                .map(|d| {
                    d.filter_map(Result::ok)
                        .any(|e| e.file_name().to_string_lossy().starts_with("eval:"))
                })
                .unwrap_or(false)
        };
        for _ in 0..500 {
            if saved() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(saved(), "the eval was not saved to the store");
    }
    let answer = |token: &str, decision: &str| {
        call(
            token,
            json!({"requestState": state, "inputResponses": {
                key.clone(): {"action": "accept", "content": {"decision": decision}}}}),
        )
    };
    // Bob (no permission) and Carol (the permission, not her eval) approve it: both refused.
    let stolen = answer("bob-token-0123456789", "approve_once");
    assert_eq!(
        stolen["error"]["code"], -32602,
        "bob got alice's eval: {stolen}"
    );
    let stolen = answer("carol-token-0123456789", "approve_once");
    assert_eq!(
        (&stolen["error"]["code"], &stolen["error"]["message"]),
        (
            &json!(-32602),
            &json!("requestState belongs to another caller")
        ),
        "carol got alice's eval: {stolen}"
    );
    // Alice approves and gets her result; Carol's retry after it gets nothing of it.
    let done = answer("alice-token-0123456789", "approve_once");
    assert_eq!(
        done["result"]["structuredContent"]["result"], "paid",
        "{done}"
    );
    let after = answer("carol-token-0123456789", "approve_once");
    assert!(
        !after.to_string().contains("paid"),
        "carol read alice's result: {after}"
    );
}

/// Found by the red team: another authenticated caller holding a legacy session's id had the
/// owner's session (and human) serve its calls. A session belongs to the caller that opened it:
/// anyone else naming it gets exactly what a request naming no session gets (`404` on a request,
/// `202` on a `DELETE`, which closes nothing), and the owner's session goes on.
#[test]
fn a_legacy_session_belongs_to_the_caller_that_opened_it() {
    use sha2::Digest;
    let sha = |t: &str| {
        sha2::Sha256::digest(t.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let server = Server::start_edited("session-owner", |dir, config| {
        config["server"]["auth"] = json!({"tokens": [
            {"name": "alice", "sha256": sha("alice-token-0123456789")},
            {"name": "bob", "sha256": sha("bob-token-0123456789")}
        ]});
        config["durable"] = json!({"store": "local", "dir": dir.join("state")});
    });
    let alice = "Authorization: Bearer alice-token-0123456789";
    let bob = "Authorization: Bearer bob-token-0123456789";
    let legacy = "MCP-Protocol-Version: 2025-11-25";
    // Alice opens a session.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "owner", "version": "0"}}})
    .to_string();
    let head = send_head(
        &server.addr,
        &request(&server.addr, &[JSON, ACCEPT, alice], body.as_bytes()),
    );
    let session = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no session id in {head}"));
    let in_session = |auth: &str, id: &str, body: Value| {
        let session = format!("Mcp-Session-Id: {id}");
        server.send(&request(
            &server.addr,
            &[JSON, ACCEPT, auth, legacy, &session],
            body.to_string().as_bytes(),
        ))
    };
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(in_session(alice, &session, initialized).0, 202);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let unknown = in_session(bob, "no-such-session", list.clone());
    assert_eq!(unknown.0, 404, "{}", unknown.1);
    // Bob with Alice's session id: as if it did not exist.
    assert_eq!(in_session(bob, &session, list.clone()), unknown);
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": {"name": "eval", "arguments": {"code": "return 1"}}});
    assert_eq!(in_session(bob, &session, call), unknown);
    // A DELETE by Bob closes nothing, and answers as for a session that does not exist.
    let delete = |auth: &str, id: &str| {
        let raw = format!(
            "DELETE /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n{auth}\r\n{legacy}\r\nMcp-Session-Id: {id}\r\n\r\n",
            server.addr
        );
        server.send(raw.as_bytes())
    };
    assert_eq!(delete(bob, &session), delete(bob, "no-such-session"));
    // Alice's session goes on.
    let (status, body) = in_session(alice, &session, list);
    assert_eq!(status, 200, "{body}");
    assert!(
        message(&body)["result"]["tools"].is_array(),
        "alice's session: {body}"
    );
}

/// Sends `request` and returns the response's status line and headers.
fn send_head(addr: &str, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream.write_all(request).unwrap();
    let mut response = Vec::new();
    let mut chunk = [0u8; 4096];
    while !response.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => response.extend_from_slice(&chunk[..n]),
        }
    }
    let text = String::from_utf8_lossy(&response);
    text.split("\r\n\r\n")
        .next()
        .unwrap_or_default()
        .to_string()
}
