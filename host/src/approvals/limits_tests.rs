//! The approval API's listener under hostile connections: nothing of a request is read before
//! its caller is known, and no connection is held past the listener limits of `server.http`
//! (the attack round's high finding: 100 tokenless connections trickling a body a byte a second
//! held their memory and descriptors as long as they liked).

use std::sync::Arc;
use std::time::Duration;

use codemode_config::ListenerLimits;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::broker::ApprovalBroker;
use super::tests::start_with;

/// Long enough for any honest answer on a slow machine: reaching it means the server held the
/// connection, which is the failure these tests look for.
const HANG: Duration = Duration::from_secs(60);

fn limits(header: Duration, body: Duration, max_body: u64) -> ListenerLimits {
    ListenerLimits {
        header_read_timeout: header,
        body_read_timeout: body,
        max_request_body: max_body,
        ..ListenerLimits::default()
    }
}

/// Sends `head` and the first bytes of a body, then reads whatever the server answers until it
/// closes the connection.
async fn exchange(base: &str, head: &str, body_start: &[u8]) -> String {
    let addr = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body_start).await.unwrap();
    read_to_close(&mut stream).await
}

/// Limits no test here reaches, unless it sets its own.
fn generous() -> ListenerLimits {
    limits(HANG * 2, HANG * 2, 4 << 20)
}

/// The API on its own listener, under [`generous`] limits.
async fn start_generous() -> String {
    start_with(Arc::new(ApprovalBroker::default()), generous()).await
}

fn decision_head(token: Option<&str>, length: u64) -> String {
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    format!(
        "POST /approvals/some-id HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    )
}

#[tokio::test]
async fn a_decision_without_a_valid_token_is_refused_before_its_body_is_read() {
    // Generous limits: the refusal must come from authentication, not from a limit.
    let base = start_generous().await;
    for token in [None, Some("forged")] {
        let answer = exchange(&base, &decision_head(token, 1_000_000), b"{").await;
        assert!(answer.starts_with("http/1.1 401 "), "{token:?}: {answer}");
        assert!(answer.contains("connection: close"), "{token:?}: {answer}");
        assert!(
            answer.contains("www-authenticate: bearer"),
            "{token:?}: {answer}"
        );
    }
}

#[tokio::test]
async fn a_decision_body_that_trickles_is_refused_at_the_body_read_timeout() {
    let base = start_with(
        Arc::new(ApprovalBroker::default()),
        limits(HANG * 2, Duration::from_millis(200), 4 << 20),
    )
    .await;
    let answer = exchange(&base, &decision_head(Some("op"), 100), b"{").await;
    assert!(answer.starts_with("http/1.1 408 "), "{answer}");
    assert!(answer.contains("connection: close"), "{answer}");
    assert!(answer.contains("server.http.bodyreadtimeout"), "{answer}");
}

#[tokio::test]
async fn a_decision_body_over_the_size_limit_is_refused_unread() {
    let base = start_with(
        Arc::new(ApprovalBroker::default()),
        limits(HANG * 2, HANG * 2, 64),
    )
    .await;
    let answer = exchange(&base, &decision_head(Some("op"), 65), b"").await;
    assert!(answer.starts_with("http/1.1 413 "), "{answer}");
    assert!(answer.contains("connection: close"), "{answer}");
    assert!(answer.contains("larger than 64 bytes"), "{answer}");
    // Undeclared (chunked), the same limit holds as the bytes arrive.
    let addr = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head = "POST /approvals/some-id HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer op\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    stream.write_all(head.as_bytes()).await.unwrap();
    let chunk = format!("{:x}\r\n{}\r\n", 100, "x".repeat(100));
    stream.write_all(chunk.as_bytes()).await.unwrap();
    let answer = read_to_close(&mut stream).await;
    assert!(answer.starts_with("http/1.1 413 "), "{answer}");
}

#[tokio::test]
async fn a_request_head_that_never_ends_is_closed_at_the_header_read_timeout() {
    let base = start_with(
        Arc::new(ApprovalBroker::default()),
        limits(Duration::from_millis(200), HANG * 2, 4 << 20),
    )
    .await;
    let answer = exchange(&base, "GET /approvals HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"").await;
    // hyper closes the connection, answering `408` or nothing at all; never a served request.
    assert!(
        answer.is_empty() || answer.starts_with("http/1.1 408 "),
        "{answer}"
    );
}

/// Connects to `base` from the loopback address `from` (Linux answers on all of 127/8).
#[cfg(target_os = "linux")]
async fn connect_from(base: &str, from: &str) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    let addr = base.trim_start_matches("http://").parse().unwrap();
    socket.connect(addr).await.unwrap()
}

/// Reads until the server closes `stream`: what it sent.
async fn read_to_close(stream: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    tokio::time::timeout(HANG, stream.read_to_end(&mut answer))
        .await
        .expect("the server held the connection open")
        .unwrap();
    String::from_utf8_lossy(&answer).to_ascii_lowercase()
}

/// Sends a tokenless request that closes its connection; the answer.
async fn served(stream: &mut TcpStream) -> String {
    stream
        .write_all(b"GET /approvals HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    read_to_close(stream).await
}

/// F1 of the red team of the A.1 fix: tokenless connections that send nothing, reopened every
/// `headerReadTimeout`, held every descriptor; now each listener caps its connections in all
/// and per client address, and closes one over a cap unread, at once.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn connections_past_the_caps_are_closed_unread_and_the_others_are_served() {
    let base = start_with(
        Arc::new(ApprovalBroker::default()),
        ListenerLimits {
            max_connections: Some(3),
            max_connections_per_ip: 2,
            ..generous()
        },
    )
    .await;
    let mut a = connect_from(&base, "127.0.0.1").await;
    let mut b = connect_from(&base, "127.0.0.1").await;
    // A third from the same address: closed before anything is read or answered.
    let mut refused = connect_from(&base, "127.0.0.1").await;
    assert_eq!(read_to_close(&mut refused).await, "");
    let mut c = connect_from(&base, "127.0.0.2").await;
    // A fourth in all, from yet another address: over `maxConnections`.
    let mut refused = connect_from(&base, "127.0.0.3").await;
    assert_eq!(read_to_close(&mut refused).await, "");
    // Those admitted are served (a tokenless request: 401), and a connection's place is free
    // again once the server has closed it.
    let answer = served(&mut a).await;
    assert!(answer.starts_with("http/1.1 401 "), "{answer}");
    let mut again = connect_from(&base, "127.0.0.1").await;
    for held in [&mut again, &mut b, &mut c] {
        let answer = served(held).await;
        assert!(answer.starts_with("http/1.1 401 "), "{answer}");
    }
}

/// F3: a request head was buffered up to hyper's ~400 KiB before authentication; a head that
/// fills 64 KiB now gets `431` at once, and a large real head (a big JWT) still fits.
#[tokio::test]
async fn a_request_head_filling_64_kib_gets_431_before_authentication() {
    let base = start_generous().await;
    let start = "GET /approvals HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ";
    // Exactly the buffer: the server reads every byte sent, so its close is clean.
    let head = format!(
        "{start}{}",
        "p".repeat(crate::server::listener::MAX_HEAD_BUFFER - start.len())
    );
    let answer = exchange(&base, &head, b"").await;
    assert!(answer.starts_with("http/1.1 431 "), "{answer}");
    let head = format!(
        "{start}{}\r\nAuthorization: Bearer op\r\nConnection: close\r\n\r\n",
        "p".repeat(40 << 10)
    );
    let answer = exchange(&base, &head, b"").await;
    assert!(answer.starts_with("http/1.1 200 "), "{answer}");
}

/// F4: the approval API's own listener had Rust's listen backlog (128), so a burst of
/// connections waited on SYN retransmissions; it now has `/mcp`'s (1024). Nothing accepts here:
/// the kernel completes a handshake only while the backlog has room.
#[tokio::test]
async fn the_approval_listener_queues_as_many_connections_as_the_mcp_listener() {
    const BURST: usize = 300;
    let somaxconn = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok());
    // Not a skip: below the burst, every backlog is capped alike and the test could not fail.
    assert!(
        somaxconn.is_none_or(|n| n >= BURST),
        "net.core.somaxconn {somaxconn:?} caps every backlog below {BURST}: this test needs at least {BURST}"
    );
    let auth: Arc<dyn crate::auth::Authenticate> = Arc::new(super::tests::Tokens);
    let listener = super::http::bind("127.0.0.1:0".parse().unwrap(), auth.as_ref())
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let connects = (0..BURST).map(|_| tokio::time::timeout(HANG, TcpStream::connect(addr)));
    let connected = futures::future::join_all(connects).await;
    let established = connected.iter().filter(|c| matches!(c, Ok(Ok(_)))).count();
    assert_eq!(established, BURST);
}

fn stream_limits(max_streams: usize, lifetime: Duration) -> ListenerLimits {
    ListenerLimits {
        max_streams_per_caller: max_streams,
        max_stream_lifetime: lifetime,
        ..generous()
    }
}

async fn open_stream(base: &str, token: &str) -> reqwest::Response {
    codemode_upstream::crypto::http_client()
        .get(format!("{base}/approvals/stream"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

/// The whole body of a stream that the server ends.
async fn until_end(response: reqwest::Response) -> String {
    assert_eq!(response.status(), 200);
    tokio::time::timeout(HANG, response.text())
        .await
        .expect("the stream was not ended")
        .unwrap()
}

/// F2: a stream opened with a JWT kept receiving every request, with its arguments, after the
/// token had expired. It now ends at the credential's expiry (`exp` plus the leeway the
/// authenticator allows), with a last event saying why.
#[tokio::test]
async fn an_event_stream_ends_when_the_jwt_that_opened_it_expires() {
    let jwt = crate::auth::jwt_settings(serde_json::json!({"hs256SecretEnv": "S"}));
    let auth = crate::auth::JwtAuth::new(&jwt, &|_| Some("secret".into())).unwrap();
    // Expired a moment less than the leeway ago: accepted, for a second at most.
    let exp = jsonwebtoken::get_current_timestamp() + 1 - crate::auth::LEEWAY_SECONDS;
    let claims = serde_json::json!({"sub": "approver", "iss": "iss", "aud": "aud", "exp": exp,
        "permissions": ["approve"]});
    let token = jsonwebtoken::encode(
        &jsonwebtoken::Header::default(),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(b"secret"),
    )
    .unwrap();
    let base = super::tests::start_with_auth(
        Arc::new(ApprovalBroker::default()),
        Arc::new(auth),
        stream_limits(16, HANG * 2),
    )
    .await;
    let body = until_end(open_stream(&base, &token).await).await;
    assert_eq!(
        body,
        "event: end\ndata: {\"reason\":\"credential_expired\"}\n\n"
    );
}

/// F2: streams had no bound in time nor in number. One lives `maxStreamLifetime` (then ends,
/// its place free before the client reads the end); a caller holds `maxStreamsPerCaller`.
#[tokio::test]
async fn event_streams_end_at_their_lifetime_and_are_capped_per_caller() {
    let base = start_with(
        Arc::new(ApprovalBroker::default()),
        stream_limits(2, HANG * 2),
    )
    .await;
    let _one = open_stream(&base, "op").await;
    let _two = open_stream(&base, "op").await;
    let third = open_stream(&base, "op").await;
    assert_eq!(third.status(), 429);
    assert_eq!(
        third.json::<serde_json::Value>().await.unwrap(),
        serde_json::json!({"error": "too many approval streams: `op` has 2 open on this listener (server.http.maxStreamsPerCaller = 2); close one or retry later"})
    );
    // Another caller has places of its own.
    let other = open_stream(&base, "agent").await;
    assert_eq!(other.status(), 200);

    let base = start_with(
        Arc::new(ApprovalBroker::default()),
        stream_limits(1, Duration::from_millis(200)),
    )
    .await;
    for _ in 0..2 {
        let body = until_end(open_stream(&base, "op").await).await;
        assert_eq!(
            body,
            "event: end\ndata: {\"reason\":\"max_stream_lifetime\"}\n\n"
        );
    }
}
