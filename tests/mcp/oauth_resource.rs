//! codemode as an OAuth 2.1 protected resource (`server.auth.oauth`), with a real authorization
//! server on loopback (tests/support/oauth_server.py issuing RS256 JWTs) and the Python SDK's
//! OAuthClientProvider: the client finds codemode's metadata from its `401`, logs in and runs an
//! eval; then tokens that must not pass are each refused with `401` and the right challenge,
//! nothing run and nothing audited; rotated keys are fetched once, a made-up key id not again.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use crate::auth::{Served, header};
use crate::harness::{Mode, Setup, Transport, assert_json, base_config};
use codemode_test_support::services::{OAuthUpstream, free_port};

pub(crate) fn key(name: &str) -> EncodingKey {
    let pem = std::fs::read(OAuthUpstream::key_file(name)).expect("a test key");
    EncodingKey::from_rsa_pem(&pem).expect("an RSA key")
}

pub(crate) fn jwks(names: &[&str]) -> String {
    let keys: Vec<Jwk> = names
        .iter()
        .map(|name| {
            let mut jwk = Jwk::from_encoding_key(&key(name), Algorithm::RS256).expect("a JWK");
            jwk.common.key_id = Some((*name).to_string());
            jwk
        })
        .collect();
    json!({ "keys": keys }).to_string()
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

pub(crate) fn rs256(kid: &str, signer: &str, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.to_string());
    jsonwebtoken::encode(&header, claims, &key(signer)).expect("sign")
}

/// `GET path` on `addr`: status and body.
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    let (head, body) = response.split_once("\r\n\r\n").expect("a response");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    (status, body.to_string())
}

#[test]
fn an_oauth_client_logs_in_and_bad_tokens_get_the_challenge() {
    let mut auth_server = None;
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let setup = Setup::new("oauth_resource", Transport::Stdio, |scratch| {
        let jwks_file = scratch.path("jwks.json");
        std::fs::write(&jwks_file, jwks(&["as1"])).expect("write the JWKS");
        let server = OAuthUpstream::start_jwt(&scratch.path("events.txt"), "as1", &jwks_file);
        let mut config = base_config(scratch);
        config["server"] = json!({"auth": {"oauth": {
            "authorizationServers": [format!("http://127.0.0.1:{}", server.port())],
            "resource": resource,
            "scopePermissions": {"tools": ["approve"]},
        }}});
        auth_server = Some(server);
        config
    });
    let auth_server = auth_server.expect("the authorization server started");
    let issuer = format!("http://127.0.0.1:{}", auth_server.port());
    let served = Served::start_on(&format!("127.0.0.1:{port}"), &setup.config, &[], &[]);
    let addr = format!("127.0.0.1:{port}");
    let metadata_url = format!("http://{addr}/.well-known/oauth-protected-resource/mcp");

    // The metadata, at the path-based and the root well-known URL; no credential needed.
    let metadata = json!({"resource": resource, "authorization_servers": [issuer],
        "bearer_methods_supported": ["header"], "scopes_supported": ["tools"]});
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let (status, body) = get(&addr, path);
        assert_eq!(status, 200, "{path}: {body}");
        assert_eq!(
            serde_json::from_str::<Value>(&body).unwrap(),
            metadata,
            "{path}"
        );
    }
    let (status, headers, _) = served.post(&[]);
    assert_eq!(status, 401);
    assert_eq!(
        header(&headers, "www-authenticate"),
        Some(format!("Bearer resource_metadata=\"{metadata_url}\"").as_str())
    );

    // The SDK's OAuth client: discovery, registration, authorization code + PKCE, an eval.
    let obs = setup.python(
        "oauth_resource.py",
        Mode::Auto,
        &[("CODEMODE_AUTH_URL", Path::new(&served.url()))],
    );
    assert_json(
        "a client that logged in",
        &json!({"tools": obs["tools"], "ok": obs["eval"]["structured"]["ok"],
            "result": obs["eval"]["structured"]["result"], "logins": obs["logins"]}),
        &json!({"tools": ["eval", "codemode_eval_lenient", "codemode_eval_sup", "search_tools", "get_tools"],
            "ok": true, "result": 42, "logins": 1}),
    );
    let client = auth_server
        .events()
        .iter()
        .find_map(|e| e.strip_prefix("issued ").map(str::to_string))
        .expect("a token was issued");
    let token = obs["token"].as_str().expect("the access token");
    let claims: Value = jsonwebtoken::dangerous::insecure_decode_claims(token).unwrap();
    assert_eq!(
        (
            &claims["aud"],
            &claims["iss"],
            &claims["sub"],
            &claims["scope"]
        ),
        (
            &json!(resource),
            &json!(issuer),
            &json!(client),
            &json!("tools")
        )
    );
    let audited = setup.audit_once(&[("eval", 1)]);
    assert!(!audited.is_empty());
    assert!(
        audited.iter().all(|r| r["caller"] == json!(client)),
        "{audited:?}"
    );
    assert_eq!(fetches(&auth_server), 1);

    refusals(&served, &issuer, &resource, &metadata_url);
    rotation(
        &served,
        &setup,
        &issuer,
        &resource,
        &metadata_url,
        &auth_server,
    );

    // Nothing refused was run or audited.
    assert_eq!(setup.audit_once(&[("eval", 1)]), audited);
}

fn fetches(server: &OAuthUpstream) -> usize {
    server.events().iter().filter(|e| *e == "jwks").count()
}

fn challenge(metadata_url: &str, why: &str) -> String {
    format!(
        "Bearer resource_metadata=\"{metadata_url}\", error=\"invalid_token\", error_description=\"{why}\""
    )
}

fn assert_refused(served: &Served, token: &str, metadata_url: &str, why: &str) {
    let (status, headers, body) = served.post(&[("Authorization", &format!("Bearer {token}"))]);
    assert_eq!(status, 401, "{why}: {body}");
    assert_eq!(
        header(&headers, "www-authenticate"),
        Some(challenge(metadata_url, why).as_str()),
        "{why}"
    );
    assert_eq!(header(&headers, "mcp-session-id"), None, "{why}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"error": format!("invalid token: {why}")})
    );
}

fn refusals(served: &Served, issuer: &str, resource: &str, metadata_url: &str) {
    let claims = |changes: Value| {
        let mut c = json!({"iss": issuer, "aud": resource, "sub": "mallory",
            "exp": now() + 600, "scope": "tools"});
        for (k, v) in changes.as_object().unwrap() {
            c[k] = v.clone();
        }
        c
    };
    let cases = [
        (
            rs256(
                "as1",
                "as1",
                &claims(json!({"aud": "https://other.example/mcp"})),
            ),
            "wrong audience",
        ),
        (
            rs256("as1", "as1", &claims(json!({"exp": now() - 3600}))),
            "the token has expired",
        ),
        (
            rs256("as1", "as1", &claims(json!({"nbf": now() + 3600}))),
            "the token is not valid yet",
        ),
        // Another issuer's token, and one claiming to be ours signed with another key.
        (
            rs256(
                "as1",
                "other",
                &claims(json!({"iss": "https://other.example"})),
            ),
            "wrong issuer",
        ),
        (rs256("as1", "other", &claims(json!({}))), "bad signature"),
        (
            "an-opaque-token".to_string(),
            "not a JWT: only JWT access tokens are accepted",
        ),
    ];
    for (token, why) in &cases {
        assert_refused(served, token, metadata_url, why);
    }
    // HS256 keyed with the public key (HS/RS confusion).
    let public = Jwk::from_encoding_key(&key("as1"), Algorithm::RS256).unwrap();
    let mut hmac = Header::new(Algorithm::HS256);
    hmac.kid = Some("as1".into());
    let secret = serde_json::to_vec(&public).unwrap();
    let forged = jsonwebtoken::encode(
        &hmac,
        &claims(json!({})),
        &EncodingKey::from_secret(&secret),
    )
    .unwrap();
    assert_refused(served, &forged, metadata_url, "algorithm not allowed");
    // `alg: none`, unsigned.
    let unsigned = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": "JWT", "kid": "as1"})),
        b64(&claims(json!({})))
    );
    let (status, headers, _) = served.post(&[("Authorization", &format!("Bearer {unsigned}"))]);
    assert_eq!(status, 401);
    let got = header(&headers, "www-authenticate").unwrap();
    assert!(
        got.starts_with(&format!(
            "Bearer resource_metadata=\"{metadata_url}\", error=\"invalid_token\", error_description=\"malformed token ("
        )),
        "{got}"
    );
}

fn b64(value: &Value) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes = value.to_string().into_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

fn rotation(
    served: &Served,
    setup: &Setup,
    issuer: &str,
    resource: &str,
    metadata_url: &str,
    auth_server: &OAuthUpstream,
) {
    let claims = json!({"iss": issuer, "aud": resource, "sub": "rotated",
        "exp": now() + 600, "scope": "tools"});
    // The authorization server rotates to `as2`: a token under the new key makes codemode fetch
    // the key set again, once, and is accepted.
    std::fs::write(setup.scratch.path("jwks.json"), jwks(&["as1", "as2"])).unwrap();
    let token = rs256("as2", "as2", &claims);
    let (status, _, body) = served.post(&[("Authorization", &format!("Bearer {token}"))]);
    assert_eq!(status, 200, "{body}");
    assert_eq!(fetches(auth_server), 2);
    // A key id the server has never published: refused, and not fetched for again within the
    // minute.
    let token = rs256("nobody", "other", &claims);
    assert_refused(served, &token, metadata_url, "unknown key id");
    assert_refused(served, &token, metadata_url, "unknown key id");
    assert_eq!(fetches(auth_server), 2);
}

/// An authorization server that does not answer: a token is answered `503` (not `401`: the
/// token may be good), with the reason in the log, and nothing is run.
#[test]
fn an_unreachable_authorization_server_gives_503_and_a_log_line() {
    let issuer = format!("http://127.0.0.1:{}", free_port());
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let setup = Setup::new("oauth_resource_down", Transport::Stdio, |scratch| {
        let mut config = base_config(scratch);
        config["server"] = json!({"auth": {"oauth": {
            "authorizationServers": [issuer], "resource": resource}}});
        config
    });
    let served = Served::start_on(&format!("127.0.0.1:{port}"), &setup.config, &[], &[]);
    let claims = json!({"iss": issuer, "aud": resource, "sub": "alice", "exp": now() + 600});
    let token = rs256("as1", "as1", &claims);
    let (status, headers, body) = served.post(&[("Authorization", &format!("Bearer {token}"))]);
    assert_eq!(status, 503, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"error": "cannot check the token now: the authorization server's signing keys cannot be fetched now"})
    );
    assert_eq!(
        header(&headers, "www-authenticate"),
        Some(format!("Bearer resource_metadata=\"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp\"").as_str())
    );
    assert_eq!(header(&headers, "mcp-session-id"), None);
    // The log line is written before the answer; stderr is read by another thread.
    let wanted = "cannot fetch the authorization server's signing keys";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !served.stderr().contains(wanted) {
        assert!(
            std::time::Instant::now() < deadline,
            "no log line:\n{}",
            served.stderr()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let line = served
        .stderr()
        .lines()
        .find(|l| l.contains(wanted))
        .unwrap()
        .to_string();
    assert!(line.contains(&issuer), "{line}");
    // Nothing was run: no audit record at all.
    let audit = setup.scratch.path("audit");
    let records = std::fs::read_dir(&audit).map(|d| d.count()).unwrap_or(0);
    assert_eq!(records, 0, "{}", audit.display());
}
