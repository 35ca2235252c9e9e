//! The challenges of `server.auth.oauth` beyond `/mcp`'s `401`: the approval API refuses as
//! `/mcp` does, `resource_metadata` included, on the MCP listener and on a listener of its own;
//! a call to an eval tool whose permissions the token's scopes do not grant gets `403` with an
//! `insufficient_scope` challenge naming the scopes that would (MCP authorization's scope
//! challenge, RFC 6750 §3.1), and nothing runs; without such scopes the call gets the answer of
//! a tool the caller cannot see. Tokens are minted here and checked against a real
//! authorization server's published keys (tests/support/oauth_server.py).

use codemode_test_support::services::{OAuthUpstream, free_port};
use serde_json::{Value, json};

use crate::auth::{Served, exchange, header};
use crate::harness::{Setup, Transport};
use crate::oauth_resource::{jwks, now, rs256};

/// A raw HTTP request to `addr`: status, headers (names lowercased) and body.
fn request(
    addr: &str,
    (method, path): (&str, &str),
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    let mut text = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        text.push_str(&format!("{k}: {v}\r\n"));
    }
    text.push_str("\r\n");
    text.push_str(body);
    exchange(addr, &text)
}

/// A 2026-07-28 `tools/call` of `tool` running `return 6 * 7`, with `token`.
fn call_tool(addr: &str, tool: &str, token: &str) -> (u16, Vec<(String, String)>, String) {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
    "name": tool, "arguments": {"code": "return 6 * 7"},
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "scopes", "version": "1"}
    }}});
    let bearer = format!("Bearer {token}");
    request(
        addr,
        ("POST", "/mcp"),
        &[
            ("Authorization", &bearer),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Mcp-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", tool),
        ],
        &body.to_string(),
    )
}

/// The JSON-RPC message of a response body: JSON, or the last `data:` line of an SSE stream.
fn message(body: &str) -> Value {
    if let Ok(value) = serde_json::from_str(body) {
        return value;
    }
    body.lines()
        .rev()
        .find_map(|l| l.strip_prefix("data:"))
        .and_then(|data| serde_json::from_str(data.trim()).ok())
        .unwrap_or_else(|| panic!("no JSON-RPC message in {body:?}"))
}

#[test]
fn the_approval_api_and_missing_scopes_get_the_oauth_challenges() {
    let mut auth_server = None;
    let (port, approvals_port) = (free_port(), free_port());
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let setup = Setup::new("oauth_challenges", Transport::Stdio, |scratch| {
        let jwks_file = scratch.path("jwks.json");
        std::fs::write(&jwks_file, jwks(&["as1"])).expect("write the JWKS");
        let server = OAuthUpstream::start_jwt(&scratch.path("events.txt"), "as1", &jwks_file);
        let config = json!({
            "server": {"auth": {"oauth": {
                "authorizationServers": [format!("http://127.0.0.1:{}", server.port())],
                "resource": resource,
                "scopePermissions": {"tools": [], "ops": ["ops"], "admin": ["ops", "approve"]},
            }}},
            "evaluation": {"profiles": {
                "ops": {"requirePermissions": ["ops"]},
                "vault": {"requirePermissions": ["vault"]}
            }},
            "approvals": {"http": true},
            "audit": {"dir": scratch.path("audit")}
        });
        auth_server = Some(server);
        config
    });
    let auth_server = auth_server.expect("the authorization server started");
    let approvals_addr = format!("127.0.0.1:{approvals_port}");
    let _served = Served::start_on(
        &format!("127.0.0.1:{port}"),
        &setup.config,
        &["--approvals-http", &approvals_addr],
        &[],
    );
    let addr = format!("127.0.0.1:{port}");
    let metadata_url = format!("http://{addr}/.well-known/oauth-protected-resource/mcp");
    let issuer = format!("http://127.0.0.1:{}", auth_server.port());
    let token = |scope: &str, exp: u64| {
        let claims = json!({"iss": issuer, "aud": resource, "sub": "carol", "exp": exp,
            "scope": scope});
        rs256("as1", "as1", &claims)
    };

    // The approval API, on the MCP listener and on its own: `/mcp`'s challenges.
    let expired = format!("Bearer {}", token("admin", now() - 3600));
    for at in [&addr, &approvals_addr] {
        let (status, headers, body) = request(at, ("GET", "/approvals"), &[], "");
        assert_eq!(status, 401, "{at}: {body}");
        assert_eq!(
            header(&headers, "www-authenticate"),
            Some(format!("Bearer resource_metadata=\"{metadata_url}\"").as_str()),
            "{at}"
        );
        assert_eq!(
            serde_json::from_str::<Value>(&body).unwrap(),
            json!({"error": "a bearer token is required"})
        );
        let (status, headers, body) = request(
            at,
            ("POST", "/approvals/a1"),
            &[
                ("Authorization", &expired),
                ("Content-Type", "application/json"),
            ],
            r#"{"decision": "approve_once"}"#,
        );
        assert_eq!(status, 401, "{at}: {body}");
        assert_eq!(
            header(&headers, "www-authenticate"),
            Some(format!("Bearer resource_metadata=\"{metadata_url}\", error=\"invalid_token\", error_description=\"the token has expired\"").as_str()),
            "{at}"
        );
        // A good token passes the same gate (the permission check is the API's own).
        let good = format!("Bearer {}", token("admin", now() + 600));
        let (status, _, body) = request(at, ("GET", "/approvals"), &[("Authorization", &good)], "");
        assert_eq!(
            (status, serde_json::from_str::<Value>(&body).unwrap()),
            (200, json!({"approvals": []})),
            "{at}"
        );
    }

    // A token without the scope the `ops` profile's permission comes from: the challenge
    // names the one scope granting it (not `admin`, which grants more), and nothing runs.
    let narrow = token("tools", now() + 600);
    let (status, headers, body) = call_tool(&addr, "codemode_eval_ops", &narrow);
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        header(&headers, "www-authenticate"),
        Some(format!("Bearer resource_metadata=\"{metadata_url}\", error=\"insufficient_scope\", scope=\"ops\"").as_str())
    );
    assert_eq!(
        message(&body),
        json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32000,
            "message": "the token's scopes do not grant what `codemode_eval_ops` needs; a token with the scopes `ops` would"}})
    );
    // A permission no scope grants, and a tool that does not exist: no challenge could help,
    // so both get the answer of a tool the caller cannot see.
    for tool in ["codemode_eval_vault", "codemode_eval_nothing"] {
        let (status, headers, body) = call_tool(&addr, tool, &narrow);
        assert_eq!(status, 200, "{tool}: {body}");
        assert_eq!(header(&headers, "www-authenticate"), None, "{tool}");
        assert_eq!(
            message(&body)["error"]["message"],
            json!(format!("unknown tool `{tool}`")),
            "{tool}"
        );
    }
    // With the scope, the same call runs.
    let (status, _, body) = call_tool(&addr, "codemode_eval_ops", &token("ops", now() + 600));
    assert_eq!(status, 200, "{body}");
    let result = &message(&body)["result"]["structuredContent"];
    assert_eq!(
        (&result["ok"], &result["result"]),
        (&json!(true), &json!(42)),
        "{body}"
    );
    // Only that call was run: one eval record.
    assert_eq!(eval_records(&setup)[0]["caller"], "carol");
}

/// The audit's eval records once one is written, asserting there is exactly one.
fn eval_records(setup: &Setup) -> Vec<Value> {
    let evals: Vec<Value> = setup
        .audit_once(&[("eval", 1)])
        .into_iter()
        .filter(|r| r["event"] == "eval")
        .collect();
    assert_eq!(evals.len(), 1, "{evals:?}");
    evals
}

/// The scope challenge with a real OAuth client: the Python SDK's `OAuthClientProvider` logs
/// in for the scopes codemode's metadata lists, but the person leaves `ops` unticked (the
/// authorization server grants `tools` only); the eval tool of the `ops` profile is then not
/// listed, and calling it gets `403 insufficient_scope` naming `ops`. The client logs in again
/// for `ops tools` (a step-up), retries the same call, and it runs — once.
#[test]
fn an_sdk_client_steps_up_when_a_tool_needs_another_scope() {
    let mut auth_server = None;
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let setup = Setup::new("oauth_step_up", Transport::Stdio, |scratch| {
        let jwks_file = scratch.path("jwks.json");
        std::fs::write(&jwks_file, jwks(&["as1"])).expect("write the JWKS");
        let server = OAuthUpstream::start_jwt_with(
            &scratch.path("events.txt"),
            "as1",
            &jwks_file,
            &[("SCOPES", "tools ops"), ("WITHHOLD_ONCE", "ops")],
        );
        let config = json!({
            "server": {"auth": {"oauth": {
                "authorizationServers": [format!("http://127.0.0.1:{}", server.port())],
                "resource": resource,
                "scopePermissions": {"tools": [], "ops": ["ops"]},
            }}},
            "evaluation": {"profiles": {"ops": {"requirePermissions": ["ops"]}}},
            "audit": {"dir": scratch.path("audit")}
        });
        auth_server = Some(server);
        config
    });
    let auth_server = auth_server.expect("the authorization server started");
    let served = Served::start_on(&format!("127.0.0.1:{port}"), &setup.config, &[], &[]);
    let obs = setup.python(
        "oauth_resource.py",
        crate::harness::Mode::Auto,
        &[
            ("CODEMODE_AUTH_URL", std::path::Path::new(&served.url())),
            ("EVAL_TOOL", std::path::Path::new("codemode_eval_ops")),
        ],
    );
    let token = obs["token"].as_str().expect("the access token");
    let claims: Value = jsonwebtoken::dangerous::insecure_decode_claims(token).unwrap();
    let grants: Vec<String> = auth_server
        .events()
        .into_iter()
        .filter(|e| e.starts_with("granted "))
        .collect();
    crate::harness::assert_json(
        "a step-up by the SDK's OAuth client",
        &json!({"tools": obs["tools"], "ok": obs["eval"]["structured"]["ok"],
            "result": obs["eval"]["structured"]["result"], "logins": obs["logins"],
            "grants": grants, "scope": claims["scope"]}),
        &json!({"tools": ["eval", "search_tools", "get_tools"], "ok": true, "result": 42,
            "logins": 2, "grants": ["granted tools", "granted ops tools"], "scope": "ops tools"}),
    );
    assert_eq!(eval_records(&setup)[0]["profile"], "ops");
}
