//! Authenticated HTTP serving (`server.auth`, `server.http`, the `serve --http` flags): real
//! sockets, the Python SDK with static tokens and JWTs, and raw HTTP requests for what an SDK
//! cannot show (the `401` and its `WWW-Authenticate`, a refused `Host`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::harness::{CODEMODE, Mode, Setup, Transport, assert_json, base_config};

const SECRET: &str = "an HS256 secret shared with the issuer, long enough";

/// `codemode serve --http 127.0.0.1:0 …` with `env`; its stderr is collected, and the address
/// comes from its `listening on http://ADDR/mcp` line. Killed on drop.
pub(crate) struct Served {
    child: Child,
    stderr: Arc<Mutex<String>>,
    addr: String,
}

impl Served {
    pub(crate) fn start(config: &Path, extra: &[&str], env: &[(&str, &str)]) -> Served {
        Served::start_on("127.0.0.1:0", config, extra, env)
    }

    pub(crate) fn start_on(
        listen: &str,
        config: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Served {
        let mut cmd = Command::new(CODEMODE);
        cmd.args(["serve", "--config"])
            .arg(config)
            .args(["--http", listen])
            .args(extra)
            // Its store (parked evals, logins, remembered rules) beside its config, not in $HOME.
            .env(
                "CODEMODE_STATE_DIR",
                config
                    .parent()
                    .expect("a config in a directory")
                    .join("state"),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start codemode serve --http");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let pipe = child.stderr.take().expect("piped stderr");
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
        Served {
            child,
            stderr,
            addr,
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Its stderr so far.
    pub(crate) fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// A raw `POST /mcp` (an `initialize` request) with `headers`: status line and headers, and
    /// the body.
    pub(crate) fn post(&self, headers: &[(&str, &str)]) -> (u16, Vec<(String, String)>, String) {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}})
        .to_string();
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nConnection: close\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            body.len()
        );
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            request.push_str(&format!("Host: {}\r\n", self.addr));
        }
        for (k, v) in headers {
            request.push_str(&format!("{k}: {v}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(&body);
        exchange(&self.addr, &request)
    }
}

/// Sends the raw HTTP `request` to `addr` on a connection of its own: the status, the headers
/// (names lowercased) and the body.
pub(crate) fn exchange(addr: &str, request: &str) -> (u16, Vec<(String, String)>, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.write_all(request.as_bytes()).expect("send");
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .expect("read the response");
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
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

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("server stderr:\n{}", self.stderr.lock().unwrap());
        }
    }
}

pub(crate) fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// A request refused before any MCP handling: `401`, the challenge, our JSON body, no session.
fn assert_refused(served: &Served, headers: &[(&str, &str)], challenge: &str, error: &str) {
    let (status, got, body) = served.post(headers);
    assert_eq!(status, 401, "{headers:?}: {body}");
    assert_eq!(
        header(&got, "www-authenticate"),
        Some(challenge),
        "{headers:?}"
    );
    assert_eq!(header(&got, "mcp-session-id"), None, "{headers:?}");
    // The body was never read, so the connection is not reused for another request.
    assert_eq!(header(&got, "connection"), Some("close"), "{headers:?}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("a JSON body"),
        json!({ "error": error }),
        "{headers:?}"
    );
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

fn jwt(claims: Value, secret: &str) -> String {
    jsonwebtoken::encode(
        &Header::default(),
        &claims,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
    .expect("sign")
}

pub(crate) fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What the Python SDK sees with `token`: the tools and one eval's result.
fn sdk(setup: &Setup, served: &Served, token: &str, mode: Mode) {
    let url = served.url();
    let obs = setup.python(
        "auth.py",
        mode,
        &[
            ("CODEMODE_AUTH_URL", Path::new(&url)),
            ("CODEMODE_TOKEN", Path::new(token)),
        ],
    );
    assert_eq!(obs["protocol"], mode.protocol());
    assert_json(
        "an authenticated client",
        &json!({"tools": obs["tools"], "ok": obs["eval"]["structured"]["ok"],
            "result": obs["eval"]["structured"]["result"]}),
        &json!({"tools": ["eval", "codemode_eval_lenient", "codemode_eval_sup", "search_tools", "get_tools"],
            "ok": true, "result": 42}),
    );
}

#[test]
fn static_tokens_by_hash_and_by_environment() {
    let setup = Setup::new("auth_tokens", Transport::Stdio, |s| {
        let mut c = base_config(s);
        c["server"] = json!({"auth": {"tokens": [
            {"name": "ci", "sha256": sha256_hex("ci-token"), "permissions": ["payments"]},
            {"name": "dev", "env": "CODEMODE_TEST_DEV_TOKEN"},
        ]}});
        c
    });
    let served = Served::start(
        &setup.config,
        &[],
        &[("CODEMODE_TEST_DEV_TOKEN", "dev-token")],
    );
    sdk(&setup, &served, "ci-token", Mode::Auto);
    sdk(&setup, &served, "dev-token", Mode::Legacy);
    assert_refused(&served, &[], "Bearer", "a bearer token is required");
    assert_refused(
        &served,
        &[("Authorization", "Bearer ci-token-not")],
        "Bearer error=\"invalid_token\", error_description=\"unknown token\"",
        "invalid token: unknown token",
    );
    assert_refused(
        &served,
        &[("Authorization", "Basic Y2k6Y2k=")],
        "Bearer error=\"invalid_token\", error_description=\"expected `Authorization: Bearer <token>`\"",
        "invalid token: expected `Authorization: Bearer <token>`",
    );
    // A valid token gets MCP handling (the session of a legacy `initialize`).
    let (status, headers, body) = served.post(&[("Authorization", "Bearer ci-token")]);
    assert_eq!(status, 200, "{body}");
    assert!(header(&headers, "mcp-session-id").is_some(), "{headers:?}");
}

#[test]
fn jwts_valid_expired_wrong_audience_missing() {
    let setup = Setup::new("auth_jwt", Transport::Stdio, |s| {
        let mut c = base_config(s);
        c["server"] = json!({"auth": {"jwt": {"issuer": "https://issuer.test", "audience": "codemode",
            "hs256SecretEnv": "CODEMODE_TEST_JWT_SECRET"}}});
        c
    });
    let served = Served::start(&setup.config, &[], &[("CODEMODE_TEST_JWT_SECRET", SECRET)]);
    let claims = |exp: u64, aud: &str| {
        json!({"sub": "alice", "iss": "https://issuer.test", "aud": aud, "exp": exp,
            "permissions": ["payments"]})
    };
    let valid = jwt(claims(now() + 600, "codemode"), SECRET);
    sdk(&setup, &served, &valid, Mode::Auto);
    sdk(&setup, &served, &valid, Mode::Legacy);
    let cases = [
        (
            jwt(claims(now() - 3600, "codemode"), SECRET),
            "the token has expired",
        ),
        (
            jwt(claims(now() + 600, "someone-else"), SECRET),
            "wrong audience",
        ),
        (
            jwt(
                claims(now() + 600, "codemode"),
                "another secret, not the issuer's one",
            ),
            "bad signature",
        ),
        (
            jwt(
                json!({"sub": "alice", "iss": "https://other.test", "aud": "codemode", "exp": now() + 600}),
                SECRET,
            ),
            "wrong issuer",
        ),
    ];
    for (token, why) in cases {
        assert_refused(
            &served,
            &[("Authorization", &format!("Bearer {token}"))],
            &format!("Bearer error=\"invalid_token\", error_description=\"{why}\""),
            &format!("invalid token: {why}"),
        );
    }
    // `alg: none` (an unsigned token) is refused too.
    let unsigned = format!(
        "{}.{}.",
        b64(br#"{"alg":"none","typ":"JWT"}"#),
        b64(claims(now() + 600, "codemode").to_string().as_bytes())
    );
    let (status, headers, _) = served.post(&[("Authorization", &format!("Bearer {unsigned}"))]);
    assert_eq!(status, 401);
    assert!(
        header(&headers, "www-authenticate")
            .is_some_and(|h| h.starts_with("Bearer error=\"invalid_token\"")),
        "{headers:?}"
    );
    assert_refused(&served, &[], "Bearer", "a bearer token is required");
}

/// The issuer's P-256 key for the JWKS tests, and another one (both made for these tests only,
/// `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256`).
const ISSUER_EC_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg4Y0eP9tyX+UJAF0j
xl+G3/yPhJBARdZjQ0Dx/lKwKTShRANCAATQhcQOQkDPzYSuXxzQuqknUpPPIgB4
6zZAD+62xxcnMBEWgQJaeMsNOW4UeOuhB+teXAKi5Oowt1QZySH/gZkh
-----END PRIVATE KEY-----
";
const OTHER_EC_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgsEL597ZjjNyxfxFU
Po+9iM8uZBgUZy4XHmlBEd6vpeChRANCAAQB/ahZgRoaLNUkypcTeBbOlagAg+9L
Ut7nlxVVmUMfe4UUnvn3Dn0EPTcH3GLilGpxWF0eena1WN66weE4HtMr
-----END PRIVATE KEY-----
";

/// JWT login with the issuer's public keys in a JWKS file (ES256): the real server checks the
/// signature with the build's one JWT crypto provider.
#[test]
fn jwts_verified_with_a_jwks_file() {
    let key = |pem: &str| EncodingKey::from_ec_pem(pem.as_bytes()).expect("a P-256 key");
    let setup = Setup::new("auth_jwks", Transport::Stdio, |s| {
        let mut jwk = Jwk::from_encoding_key(&key(ISSUER_EC_KEY), Algorithm::ES256).expect("jwk");
        jwk.common.key_id = Some("k1".into());
        let jwks = s.path("jwks.json");
        std::fs::write(&jwks, json!({"keys": [jwk]}).to_string()).expect("write the JWKS");
        let mut c = base_config(s);
        c["server"] = json!({"auth": {"jwt": {"issuer": "https://issuer.test", "audience": "codemode",
            "jwksFile": jwks}}});
        c
    });
    let served = Served::start(&setup.config, &[], &[]);
    let token = |pem: &str| {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some("k1".into());
        let claims = json!({"sub": "alice", "iss": "https://issuer.test", "aud": "codemode",
            "exp": now() + 600, "permissions": ["payments"]});
        jsonwebtoken::encode(&header, &claims, &key(pem)).expect("sign")
    };
    sdk(&setup, &served, &token(ISSUER_EC_KEY), Mode::Auto);
    // Signed by another key under the issuer's key id.
    let why = "bad signature";
    assert_refused(
        &served,
        &[("Authorization", &format!("Bearer {}", token(OTHER_EC_KEY)))],
        &format!("Bearer error=\"invalid_token\", error_description=\"{why}\""),
        &format!("invalid token: {why}"),
    );
}

/// Base64url without padding (for the hand-made unsigned token).
fn b64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n =
            chunk.iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b)) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

#[test]
fn allowed_hosts_from_config_and_flags() {
    let setup = Setup::new("auth_hosts", Transport::Stdio, |s| {
        let mut c = base_config(s);
        c["server"] = json!({"http": {"allowedHosts": ["mcp.example.com"]}});
        c
    });
    let served = Served::start(
        &setup.config,
        &["--allowed-host", "gateway.internal:8443"],
        &[],
    );
    let status = |host: &str| served.post(&[("Host", host)]).0;
    assert_eq!(status("mcp.example.com"), 200);
    assert_eq!(status("gateway.internal:8443"), 200);
    assert_eq!(status(&served.addr.clone()), 200);
    // A spoofed name (DNS rebinding) is refused by the Host check.
    assert_eq!(status("evil.example.net"), 403);
    assert_eq!(status("gateway.internal:9999"), 403);
}

#[test]
fn allowed_origins_turn_on_origin_validation() {
    let setup = Setup::new("auth_origins", Transport::Stdio, base_config);
    let served = Served::start(
        &setup.config,
        &["--allowed-origin", "https://app.example.com"],
        &[],
    );
    assert_eq!(served.post(&[("Origin", "https://app.example.com")]).0, 200);
    assert_eq!(
        served.post(&[("Origin", "https://evil.example.net")]).0,
        403
    );
    // Without an Origin (not a browser), the request passes.
    assert_eq!(served.post(&[]).0, 200);
}

#[test]
fn non_loopback_without_auth_refuses_to_start() {
    let setup = Setup::new("auth_refuse", Transport::Stdio, base_config);
    let out = Command::new(CODEMODE)
        .args(["serve", "--config"])
        .arg(&setup.config)
        .args(["--http", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .output()
        .expect("run codemode serve");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "codemode: refusing to serve HTTP on 0.0.0.0:0 without authentication: anyone who can reach it \
         could run scripts with every upstream tool. Configure `server.auth` (tokens or jwt), listen on a \
         loopback address (127.0.0.1), or pass --allow-unauthenticated\n"
    );
    // A missing token variable refuses to start too, naming the config path.
    let mut with_env = base_config(&setup.scratch);
    with_env["server"] =
        json!({"auth": {"tokens": [{"name": "dev", "env": "CODEMODE_TEST_UNSET_VAR"}]}});
    let path = setup.config_version("env.json", &with_env);
    let out = Command::new(CODEMODE)
        .args(["serve", "--config"])
        .arg(&path)
        .args(["--http", "127.0.0.1:0"])
        .env_remove("CODEMODE_TEST_UNSET_VAR")
        .stdin(Stdio::null())
        .output()
        .expect("run codemode serve");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "codemode: server.auth.tokens[0].env: the environment variable `CODEMODE_TEST_UNSET_VAR` is not set (or empty)\n"
    );
    // With --allow-unauthenticated it starts, with a warning first.
    let served = Served::start_on(
        "0.0.0.0:0",
        &setup.config,
        &["--allow-unauthenticated"],
        &[],
    );
    let log = served.stderr.lock().unwrap().clone();
    assert_eq!(
        log.lines().next(),
        Some(
            "codemode: warning: serving HTTP on 0.0.0.0:0 WITHOUT authentication (--allow-unauthenticated): \
             anyone who can reach it runs scripts with every upstream tool"
        ),
        "{log}"
    );
    assert!(served.addr.starts_with("0.0.0.0:"), "{}", served.addr);
}

/// The approval API on the `/mcp` listener, behind the same tokens: an ask of the agent's eval
/// waits there; nobody without a token, and not the agent itself (permission `approve` without
/// `approve_self`), can decide it; the operator can, and the eval goes on.
fn approvals_behind_tokens(mode: Mode) {
    let name = format!("auth_approvals_{mode:?}").to_lowercase();
    let setup = Setup::new(&name, Transport::Stdio, |s| {
        let mut c = base_config(s);
        c["evaluation"]["profiles"]["gate"] = json!({
            "asklist": ["everything__echo"],
            "approvalTimeoutSeconds": 300,
            "elicitationFallback": "deny"
        });
        c["approvals"] = json!({"http": true});
        c["server"] = json!({"auth": {"tokens": [
            {"name": "agent", "sha256": sha256_hex("agent-token"), "permissions": ["approve"]},
            {"name": "ops", "sha256": sha256_hex("ops-token"), "permissions": ["approve"]},
        ]}});
        c
    });
    let served = Served::start(&setup.config, &[], &[]);
    let url = served.url();
    let obs = setup.python(
        "approvals_auth.py",
        mode,
        &[
            ("CODEMODE_AUTH_URL", Path::new(&url)),
            ("AGENT_TOKEN", Path::new("agent-token")),
            ("OPS_TOKEN", Path::new("ops-token")),
        ],
    );
    assert_json(
        &name,
        &obs,
        &json!({
            "list_without_token": 401,
            "pending": {"caller": "agent", "profile": "gate", "tool": "everything__echo", "risk": "medium"},
            "statuses": {"no_token": 401, "own_ask": 403, "operator": 200, "again": 409},
            "result": {"ok": true, "result": "Echo: deploy"},
            "decided": {"caller": "agent", "decision": "approve_once", "decided_by": "ops",
                "reason": "reviewed", "channel": "http"},
        }),
    );
}

#[test]
fn approvals_behind_tokens_auto() {
    approvals_behind_tokens(Mode::Auto);
}

#[test]
fn approvals_behind_tokens_legacy() {
    approvals_behind_tokens(Mode::Legacy);
}
