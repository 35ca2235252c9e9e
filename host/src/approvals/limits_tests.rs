//! The approval API's listener under hostile connections: nothing of a request is read before
//! its caller is known, and no connection is held past the listener limits of `server.http`
//! (the attack round's high finding: 100 tokenless connections trickling a body a byte a second
//! held their memory and descriptors as long as they liked).

use std::sync::Arc;
use std::time::Duration;

use codemode_policies::ListenerLimits;
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
    let mut answer = Vec::new();
    tokio::time::timeout(HANG, stream.read_to_end(&mut answer))
        .await
        .expect("the server held the connection open")
        .unwrap();
    String::from_utf8_lossy(&answer).to_ascii_lowercase()
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
    let base = start_with(
        Arc::new(ApprovalBroker::default()),
        limits(HANG * 2, HANG * 2, 4 << 20),
    )
    .await;
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
    let mut answer = Vec::new();
    tokio::time::timeout(HANG, stream.read_to_end(&mut answer))
        .await
        .expect("the server held the connection open")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer).to_ascii_lowercase();
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
