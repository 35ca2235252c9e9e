//! Red-team findings on the failover layer (`host/src/server/failover.rs`), each a test of
//! what holds since its fix (each failed before it).

use super::*;

/// A legacy session on node A with a call in flight that waits for its human (an elicitation):
/// `(session, priming event id, node A's id, the call's number, the call's response)`.
async fn call_in_flight(
    client: &reqwest::Client,
    url: &str,
    id: serde_json::Value,
) -> (String, String, String, String, reqwest::Response) {
    let session = open_session(client, url, serde_json::json!({"elicitation": {}})).await;
    let call = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "eval",
        "arguments": {"code": "return await codemode.hitl_request({question: 'Go?', options: ['yes', 'no']})"}}});
    let mut in_flight = post_mcp(client, url, Some(&session), call)
        .send()
        .await
        .unwrap();
    assert_eq!(in_flight.status(), 200);
    let primed = read_until(&mut in_flight, "id: ").await;
    let priming = event_ids(&primed).remove(0);
    let mark: Vec<String> = priming.split('~').map(String::from).collect();
    (
        session,
        priming.clone(),
        mark[1].clone(),
        mark[2].clone(),
        in_flight,
    )
}

/// Any client that reaches node A (no session of its own needed: a made-up session id did)
/// could make A forget another session's request in flight: a `Last-Event-ID` naming A and
/// the victim's request number (A's id is in every event id it sends; request numbers count up
/// from 1) is passed to rmcp, and `Failover::mark` forgot `mcp-request:<A>:<number>` with no
/// check that the request was this session's, so when A died the victim's reconnection got
/// 410 instead of the node-lost error. A reconnection now forgets only its session's record.
#[tokio::test]
async fn a_stranger_naming_another_sessions_request_on_its_node_does_not_forget_it() {
    let redis = RedisServer::start(&scratch_dir("store-redis", "rt-forget"));
    let shutdown = tokio_util::sync::CancellationToken::new();
    let urls = serve_routers(&redis, &[true, true], &shutdown).await;
    let client = codemode_upstream::crypto::http_client();
    let (session, priming, node_a, number, _in_flight) =
        call_in_flight(&client, &urls[0], serde_json::json!(7)).await;
    let record = format!("{REDIS_KEY_PREFIX}mcp-request:{node_a}:{number}");
    assert!(eventually(500, async || redis.cli(&["EXISTS", &record]) == b"1\n").await);

    let forged = reconnect(
        &client,
        &urls[0],
        "no-such-session",
        &format!("0/0~{node_a}~{number}"),
    )
    .send()
    .await
    .unwrap();
    let status = forged.status();
    let _ = forged.text().await;
    assert!(
        !eventually(200, async || redis.cli(&["EXISTS", &record]) == b"0\n").await,
        "a stranger's GET (answered {status}) made node A forget another session's request in flight"
    );
    // A is gone for the victim: B must still end the call with the node-lost error.
    let on_b = reconnect(&client, &urls[1], &session, &priming)
        .send()
        .await
        .unwrap();
    assert_eq!(on_b.status(), 200);
    shutdown.cancel();
}

/// The same with the attacker's own, real session on node A.
#[tokio::test]
async fn another_session_naming_a_request_on_its_node_does_not_forget_it() {
    let redis = RedisServer::start(&scratch_dir("store-redis", "rt-forget-own"));
    let shutdown = tokio_util::sync::CancellationToken::new();
    let urls = serve_routers(&redis, &[true, true], &shutdown).await;
    let client = codemode_upstream::crypto::http_client();
    let (_session, _priming, node_a, number, _in_flight) =
        call_in_flight(&client, &urls[0], serde_json::json!(7)).await;
    let record = format!("{REDIS_KEY_PREFIX}mcp-request:{node_a}:{number}");
    assert!(eventually(500, async || redis.cli(&["EXISTS", &record]) == b"1\n").await);
    let attacker = open_session(&client, &urls[0], serde_json::json!({})).await;
    let forged = reconnect(
        &client,
        &urls[0],
        &attacker,
        &format!("0/0~{node_a}~{number}"),
    )
    .send()
    .await
    .unwrap();
    let status = forged.status();
    let _ = tokio::time::timeout(Duration::from_secs(2), forged.text()).await;
    assert!(
        !eventually(200, async || redis.cli(&["EXISTS", &record]) == b"0\n").await,
        "another session's GET (answered {status}) made node A forget this session's request"
    );
    shutdown.cancel();
}

/// A request whose client went away (its response stream dropped, never reconnected) is
/// forgotten (it used to stay for the session TTL, 24 h), and a request whose client-chosen
/// JSON-RPC id is too big to keep (here 1 MiB; the body limit is 4 MiB) is never recorded: no
/// client can grow the store by more than a small record per request in flight.
#[tokio::test]
async fn a_request_whose_client_went_away_is_forgotten_once_it_ended() {
    let redis = RedisServer::start(&scratch_dir("store-redis", "rt-leak"));
    let shutdown = tokio_util::sync::CancellationToken::new();
    let urls = serve_routers(&redis, &[true], &shutdown).await;
    let client = codemode_upstream::crypto::http_client();
    let session = open_session(&client, &urls[0], serde_json::json!({"elicitation": {}})).await;
    let mut standalone = client
        .get(&urls[0])
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    let call = serde_json::json!({"jsonrpc": "2.0", "id": "dropped", "method": "tools/call", "params": {
        "name": "eval",
        "arguments": {"code": "return await codemode.hitl_request({question: 'Go?', options: ['yes', 'no']})"}}});
    let mut in_flight = post_mcp(&client, &urls[0], Some(&session), call)
        .send()
        .await
        .unwrap();
    assert_eq!(in_flight.status(), 200);
    let primed = read_until(&mut in_flight, "id: ").await;
    let priming = event_ids(&primed).remove(0);
    let mark: Vec<&str> = priming.split('~').collect();
    let record = format!("{REDIS_KEY_PREFIX}mcp-request:{}:{}", mark[1], mark[2]);
    assert!(eventually(500, async || redis.cli(&["EXISTS", &record]) == b"1\n").await);
    // The client goes away; the human answers; the call ends on the node.
    drop(in_flight);
    let asked = read_until(&mut standalone, "elicitation/create").await;
    let question: serde_json::Value = asked
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .find(|d| d.contains("elicitation/create"))
        .map(|d| serde_json::from_str(d).unwrap())
        .unwrap();
    let answer = post_mcp(
        &client,
        &urls[0],
        Some(&session),
        serde_json::json!({"jsonrpc": "2.0", "id": question["id"],
            "result": {"action": "accept", "content": {"answer": "yes"}}}),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(answer.status(), 202);
    let ttl = String::from_utf8(redis.cli(&["PTTL", &record])).unwrap();
    assert!(
        eventually(1000, async || redis.cli(&["EXISTS", &record]) == b"0\n").await,
        "the ended request's record is still in the store, PTTL {} ms",
        ttl.trim()
    );
    // An id too big to keep: that request is never recorded, even while in flight.
    let big_id = "x".repeat(1 << 20);
    let big = serde_json::json!({"jsonrpc": "2.0", "id": big_id, "method": "tools/call", "params": {
        "name": "eval", "arguments": {"code": "return await codemode.hitl_request({question: 'Big?', options: ['yes']})"}}});
    let mut waiting = post_mcp(&client, &urls[0], Some(&session), big)
        .send()
        .await
        .unwrap();
    assert_eq!(waiting.status(), 200);
    let primed = read_until(&mut waiting, "id: ").await;
    let priming = event_ids(&primed).remove(0);
    assert_eq!(
        priming.split('~').count(),
        2,
        "its ids name this node but no recorded request: {priming}"
    );
    let requests = format!("{REDIS_KEY_PREFIX}mcp-request:*");
    assert!(
        !eventually(300, async || !redis
            .cli(&["--scan", "--pattern", &requests])
            .is_empty())
        .await,
        "a request in flight with a 1 MiB id was recorded"
    );
    shutdown.cancel();
}

/// Odd `Last-Event-ID` values on a real session: never a 5xx (a client cannot cause a
/// server error).
#[tokio::test]
async fn odd_last_event_ids_are_client_errors_or_streams_never_server_errors() {
    let redis = RedisServer::start(&scratch_dir("store-redis", "rt-odd"));
    let shutdown = tokio_util::sync::CancellationToken::new();
    let urls = serve_routers(&redis, &[true, true], &shutdown).await;
    let client = codemode_upstream::crypto::http_client();
    let (session, _priming, node_a, _number, _in_flight) =
        call_in_flight(&client, &urls[0], serde_json::json!(7)).await;
    let upper = node_a.to_uppercase();
    let ids = [
        format!("~{node_a}~1"),
        format!("~{node_a}"),
        format!("0/0~{node_a}~18446744073709551615"),
        format!("0/0~{node_a}~18446744073709551616"),
        format!("0/0~{node_a}~-1"),
        format!("0/0~{node_a}~+1"),
        format!("0/0~{upper}~1"),
        format!("0/0~{node_a}~1~1"),
        "0/0~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~".to_string(),
        "99999999999999999999/99999999999999999999".to_string(),
        "abc".to_string(),
        "0/0 ".to_string(),
        format!("{}~{node_a}~1", "9".repeat(4000)),
    ];
    let mut report = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let url = &urls[i % 2];
        let Ok(response) = reconnect(&client, url, &session, id).send().await else {
            report.push(format!("{id:.60}: the request could not be sent"));
            continue;
        };
        let status = response.status();
        let ct = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap_or("").to_string());
        let body = tokio::time::timeout(Duration::from_millis(300), response.text())
            .await
            .map(|b| b.unwrap_or_default())
            .unwrap_or_else(|_| "<open stream>".into());
        #[expect(
            clippy::print_stderr,
            reason = "each attempt's answer, for a failure's report"
        )]
        {
            eprintln!("{id:.60} on node {}: {status} {ct:?} {body:.200}", i % 2);
        }
        if status.is_server_error() {
            report.push(format!("{id:.60} on node {}: {status} {body:.200}", i % 2));
        }
    }
    assert!(report.is_empty(), "{report:#?}");
    shutdown.cancel();
}
