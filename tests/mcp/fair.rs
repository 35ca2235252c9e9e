//! Fair sharing and the HTTP listener's limits (issue 17), against `codemode serve --http`:
//! per-client eval caps with real Python SDK clients (clients/fair.py); session caps, read
//! timeouts, body sizes, JSON-RPC 400s and duplicate in-flight ids with raw sockets, which can
//! misbehave as no SDK does. Every assertion is on statuses, bodies and EOFs, never on time.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Mode, Setup, Transport, base_config, eval_summary};

/// The listener limits most tests here use: small caps, one-second read timeouts.
fn tight_listener(scratch: &crate::harness::Scratch) -> Value {
    let mut config = base_config(scratch);
    config["server"] = json!({"http": {"maxSessions": 3, "maxSessionsPerClient": 2,
        "headerReadTimeout": "1s", "bodyReadTimeout": "1s", "maxRequestBody": "64KiB"}});
    config
}

fn addr(setup: &Setup) -> String {
    let url = setup.url().expect("an HTTP setup");
    url.trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string()
}

/// A connection with a read deadline: a server that never closes fails the test, not hangs it.
fn connect(addr: &str) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("read timeout");
    stream
}

/// Everything the server sends until it closes the connection.
fn read_to_eof(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    stream
        .read_to_end(&mut out)
        .expect("the server closes the connection (read deadline passed first)");
    String::from_utf8_lossy(&out).into_owned()
}

/// `(status, lowercased headers, body)` of one response.
fn parse(response: &str) -> (u16, Vec<(String, String)>, String) {
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((response, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {response:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
        .collect();
    (status, headers, body.to_string())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// POSTs `body` to /mcp on a fresh connection (`Connection: close`), with `extra` headers.
fn post(addr: &str, body: &str, extra: &[(&str, &str)]) -> (u16, Vec<(String, String)>, String) {
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in extra {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    let mut stream = connect(addr);
    stream.write_all(request.as_bytes()).expect("send");
    parse(&read_to_eof(&mut stream))
}

fn initialize(addr: &str) -> (u16, Vec<(String, String)>, String) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}});
    post(addr, &body.to_string(), &[])
}

fn json_body(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body:?}"))
}

/// Red team (issue 17): malformed JSON and JSON-RPC batches got `415` with plain text. Now `400`
/// with a JSON-RPC error body: `-32700` for a parse error, `-32600` for a batch (MCP 2025-06-18
/// and later have none) or a non-message.
#[test]
fn malformed_json_and_batches_get_400_with_a_json_rpc_error() {
    let setup = Setup::new("fair_json_errors", Transport::Http, tight_listener);
    let addr = addr(&setup);
    let cases: [(&str, i64, &str); 4] = [
        ("{bad", -32700, "Parse error: the body is not JSON"),
        (
            r#"[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]"#,
            -32600,
            "Invalid Request: JSON-RPC batches are not supported",
        ),
        (
            "42",
            -32600,
            "Invalid Request: the body must be one JSON-RPC 2.0 message object",
        ),
        (
            r#"{"jsonrpc": "1.0", "id": 5, "method": "ping"}"#,
            -32600,
            "Invalid Request: `jsonrpc` must be \"2.0\"",
        ),
    ];
    for (body, code, message) in cases {
        let (status, headers, text) = post(&addr, body, &[]);
        assert_eq!(status, 400, "{body}: {text}");
        assert_eq!(header(&headers, "content-type"), Some("application/json"));
        let error = json_body(&text);
        assert_eq!(error["jsonrpc"], "2.0", "{text}");
        assert_eq!(error["error"]["code"], code, "{body}: {text}");
        let got = error["error"]["message"].as_str().unwrap_or_default();
        assert!(got.starts_with(message), "{body}: {got}");
    }
    // The id is echoed when there is one.
    let (_, _, text) = post(
        &addr,
        r#"{"jsonrpc": "1.0", "id": 5, "method": "ping"}"#,
        &[],
    );
    assert_eq!(json_body(&text)["id"], 5);
}

/// Red team (issue 17): 2,000 connections with unfinished headers and 50 with partial bodies
/// were held for 40–100 s. With one-second read timeouts, the server closes every one of them:
/// a slow head gets EOF, a partial body `408` (with a JSON-RPC error) and then EOF; a body over
/// `maxRequestBody` gets `413` without being read.
#[test]
fn slow_headers_and_partial_bodies_are_closed_by_the_server() {
    let setup = Setup::new("fair_slow_clients", Transport::Http, tight_listener);
    let addr = addr(&setup);
    let mut slow_heads: Vec<TcpStream> = (0..40)
        .map(|_| {
            let mut s = connect(&addr);
            s.write_all(format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\n").as_bytes())
                .expect("send a partial head");
            s
        })
        .collect();
    let mut partial_bodies: Vec<TcpStream> = (0..10)
        .map(|_| {
            let mut s = connect(&addr);
            s.write_all(
                format!(
                    "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
                     Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{{\"jsonrpc\""
                )
                .as_bytes(),
            )
            .expect("send a partial body");
            s
        })
        .collect();
    let closed_heads = slow_heads
        .iter_mut()
        .map(read_to_eof)
        .filter(String::is_empty)
        .count();
    assert_eq!(
        closed_heads, 40,
        "every slow head is closed without a response"
    );
    for s in &mut partial_bodies {
        let (status, headers, body) = parse(&read_to_eof(s));
        assert_eq!(status, 408, "{body}");
        assert_eq!(header(&headers, "connection"), Some("close"));
        assert_eq!(json_body(&body)["error"]["code"], -32600, "{body}");
    }
    let big = format!(
        r#"{{"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "{}"}}"#,
        "x".repeat(70_000)
    );
    let (status, _, body) = post(&addr, &big, &[]);
    assert_eq!(status, 413, "{body}");
    assert!(
        json_body(&body)["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("larger than 65536 bytes (server.http.maxRequestBody)")),
        "{body}"
    );
    // The server still serves.
    assert_eq!(initialize(&addr).0, 200);
}

/// Red team (issue 17): 10,000 `initialize` requests added 477 MB of sessions, bounded only by
/// the 5-minute idle expiry. Beyond `maxSessionsPerClient` (here 2, all from 127.0.0.1) an
/// `initialize` gets `429` naming the cap; a closed session frees its place.
#[test]
fn session_floods_get_429_beyond_the_per_client_cap() {
    let setup = Setup::new("fair_session_caps", Transport::Http, tight_listener);
    let addr = addr(&setup);
    let mut sessions = Vec::new();
    let mut refused = Vec::new();
    for _ in 0..6 {
        let (status, headers, body) = initialize(&addr);
        match status {
            200 => sessions.push(
                header(&headers, "mcp-session-id")
                    .expect("a session id")
                    .to_string(),
            ),
            429 => refused.push(
                json_body(&body)["error"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            ),
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!(sessions.len(), 2);
    assert_eq!(
        refused,
        vec![
            "too many sessions: client `address:127.0.0.1` has 2 open (server.http.maxSessionsPerClient = 2); close one (HTTP DELETE) or retry later".to_string();
            4
        ]
    );
    // DELETE one session: the next initialize is admitted.
    let mut stream = connect(&addr);
    stream
        .write_all(
            format!(
                "DELETE /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nMcp-Session-Id: {}\r\n\r\n",
                sessions[0]
            )
            .as_bytes(),
        )
        .expect("send DELETE");
    let (status, _, _) = parse(&read_to_eof(&mut stream));
    assert!(status < 300, "DELETE: {status}");
    assert_eq!(initialize(&addr).0, 200);
    assert_eq!(initialize(&addr).0, 429);
}

/// The server-wide cap: with `maxSessions` 3 and a per-client cap above it, the fourth session
/// is refused naming `maxSessions`.
#[test]
fn session_floods_get_429_beyond_the_server_cap() {
    let setup = Setup::new("fair_session_total", Transport::Http, |scratch| {
        let mut config = tight_listener(scratch);
        config["server"]["http"]["maxSessionsPerClient"] = json!(100);
        config
    });
    let addr = addr(&setup);
    let statuses: Vec<u16> = (0..5).map(|_| initialize(&addr).0).collect();
    assert_eq!(statuses, [200, 200, 200, 429, 429]);
    let (_, _, body) = initialize(&addr);
    assert_eq!(
        json_body(&body)["error"]["message"],
        "too many sessions: the server has 3 open (server.http.maxSessions = 3); close one or retry later"
    );
}

/// Red team (issue 17): two requests with the same JSON-RPC id in flight on one legacy session:
/// one was answered, the other hung until the session expired (300 s). The second now gets
/// `409` with an invalid-request error at once, and the first still gets its result.
#[test]
fn a_duplicate_request_id_in_flight_on_one_session_is_refused_at_once() {
    let setup = Setup::new("fair_duplicate_id", Transport::Http, tight_listener);
    let addr = addr(&setup);
    let (_, headers, _) = initialize(&addr);
    let session = header(&headers, "mcp-session-id")
        .expect("a session")
        .to_string();
    let in_session = [
        ("Mcp-Session-Id", session.as_str()),
        ("Mcp-Protocol-Version", "2025-11-25"),
    ];
    let (status, _, _) = post(
        &addr,
        r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#,
        &in_session,
    );
    assert!(status < 300, "initialized: {status}");
    // The first call waits on a slow upstream tool: it stays in flight while the second is sent.
    let first_body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "eval", "arguments": {"code":
            "await codemode['everything__trigger-long-running-operation']({duration: 3, steps: 1}); return 'first'"}}})
    .to_string();
    let mut first = connect(&addr);
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        first_body.len()
    );
    for (k, v) in in_session {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&first_body);
    first
        .write_all(request.as_bytes())
        .expect("send the first call");
    // Its response head arrives once rmcp has taken the request: the id is in flight.
    let mut head = [0u8; 12];
    first
        .read_exact(&mut head)
        .expect("the first call's status line");
    assert_eq!(&head, b"HTTP/1.1 200");
    let second = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "eval", "arguments": {"code": "return 'second'"}}});
    let (status, _, body) = post(&addr, &second.to_string(), &in_session);
    assert_eq!(status, 409, "{body}");
    let error = json_body(&body);
    assert_eq!(error["id"], 7);
    assert_eq!(error["error"]["code"], -32600);
    assert_eq!(
        error["error"]["message"],
        "Invalid Request: a request with id 7 is already in flight on this session; use a new id"
    );
    let rest = read_to_eof(&mut first);
    assert!(rest.contains("first"), "the first call is answered: {rest}");
}

/// Red team (issue 17): one client opened 256 evals that each stopped at an approval question
/// and never answered; every pool slot was held and other sessions' `return 1+1` timed out.
/// With `limits.perClient.maxConcurrentEvals` 2, client A's third eval is refused at once with a
/// tool error naming the cap while its two wait on a human; client B (another session) runs at
/// once; after A's human answers, A runs again.
#[test]
fn one_client_over_its_eval_cap_is_refused_and_others_still_run() {
    let setup = Setup::new("fair_per_client", Transport::Http, |scratch| {
        let mut config = base_config(scratch);
        config["evaluation"]["profiles"]["slow"] =
            json!({"asklist": ["everything__echo"], "approvalTimeoutSeconds": 120});
        config["limits"] = json!({"perClient": {"maxConcurrentEvals": 2, "maxSuspendedEvals": 2}});
        config
    });
    let obs = setup.python("fair.py", Mode::Legacy, &[]);
    let summary = |key: &str| eval_summary(&obs[key]);
    assert_eq!(obs["a_refused"]["is_error"], true, "{obs}");
    let refused = obs["a_refused"]["text"].as_str().unwrap_or_default();
    let client = refused
        .strip_prefix("eval refused: client `session:s")
        .and_then(|rest| rest.split_once('`'));
    assert!(
        client.is_some_and(|(n, rest)| n.parse::<u64>().is_ok()
            && rest == " already has 2 evals running (limits.perClient.maxConcurrentEvals = 2); wait for one to finish"),
        "{refused}"
    );
    assert_eq!(summary("b_runs")["result"], 2, "{obs}");
    assert_eq!(summary("a_first")["result"], "Echo: held", "{obs}");
    assert_eq!(summary("a_second")["result"], "Echo: held again", "{obs}");
    assert_eq!(summary("a_again")["result"], 3, "{obs}");
    assert_eq!(obs["asked_a"], 2);
}
