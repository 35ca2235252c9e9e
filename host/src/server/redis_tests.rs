//! The durable store against a real `redis-server` (Debian's package, installed when missing;
//! each test starts its own on a free loopback port with no persistence): records with TTLs,
//! exactly-once takes and claims across two store handles ("nodes"), cluster-wide listing,
//! tampering, connection errors and reconnection, legacy MCP sessions across nodes.

use std::sync::Arc;
use std::time::Duration;

use super::sessions::SealedSessionStore;
use codemode_config::{DurableConfig, RedisUrl, StoreLocation};
use codemode_store::{REDIS_KEY_PREFIX, RecordStore, RedisStore, StateKey, Store, StoreErrorKind};
use codemode_test_support::scratch_dir;
use codemode_test_support::services::{RedisServer, free_port};

mod failover_attacks;

const MINUTE: Duration = Duration::from_secs(60);

fn key(byte: u8) -> StateKey {
    StateKey::from_bytes([byte; 32])
}

async fn node(redis: &RedisServer, key_byte: u8) -> Store {
    let url = RedisUrl::parse(&redis.url(0)).unwrap();
    let backend = RedisStore::connect(&url).await.unwrap();
    Store::new(Arc::new(backend), &key(key_byte))
}

/// Polls `f` until it is true, at most `tries` times 10 ms apart.
async fn eventually(tries: usize, mut f: impl AsyncFnMut() -> bool) -> bool {
    for _ in 0..tries {
        if f().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test]
async fn records_round_trip_and_expire_by_redis_ttl() {
    let redis = RedisServer::start(&scratch_dir("store-redis", "ttl"));
    let store = node(&redis, 1).await;
    assert_eq!(
        store.describe(),
        format!("redis://127.0.0.1:{}/0", redis.port())
    );
    assert!(!store.exists("eval:1").await.unwrap());
    store.put("eval:1", b"saved state", MINUTE).await.unwrap();
    assert!(store.exists("eval:1").await.unwrap());
    let record = store.get("eval:1").await.unwrap().unwrap();
    assert_eq!(record.value, b"saved state");
    assert!(record.remaining() <= MINUTE);
    // Redis holds the record under the prefix, with its TTL, sealed.
    let ttl: u64 = String::from_utf8(redis.cli(&["PTTL", "codemode:eval:1"]))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(ttl > 0 && ttl <= 60_000, "{ttl}");
    let raw = redis.cli(&["GET", "codemode:eval:1"]);
    assert!(!raw.windows(11).any(|w| w == b"saved state"));

    store
        .put("eval:short", b"x", Duration::from_millis(50))
        .await
        .unwrap();
    assert!(
        eventually(500, async || redis.cli(&["EXISTS", "codemode:eval:short"])
            == b"0\n")
        .await
    );
    assert_eq!(store.get("eval:short").await.unwrap(), None);
    assert!(!store.exists("eval:short").await.unwrap());

    assert_eq!(
        store.take("eval:1").await.unwrap().unwrap().value,
        b"saved state"
    );
    assert_eq!(store.take("eval:1").await.unwrap(), None);
    assert!(!store.exists("eval:1").await.unwrap());
    store.put("eval:2", b"y", MINUTE).await.unwrap();
    assert!(store.delete("eval:2").await.unwrap());
    assert!(!store.delete("eval:2").await.unwrap());
    assert_eq!(
        store.put("bad key", b"x", MINUTE).await.unwrap_err().kind(),
        StoreErrorKind::InvalidArgument
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_take_or_a_claim_has_exactly_one_winner_across_nodes() {
    let redis = RedisServer::start(&scratch_dir("store-redis", "race"));
    let nodes = [node(&redis, 1).await, node(&redis, 1).await];
    for round in 0..20 {
        let key = format!("eval:{round}");
        nodes[0].put(&key, b"saved", MINUTE).await.unwrap();
        let takers: Vec<_> = (0..16)
            .map(|i| {
                let store = nodes[i % 2].clone();
                let key = key.clone();
                tokio::spawn(async move { store.take(&key).await.unwrap() })
            })
            .collect();
        let mut winners = 0;
        for t in takers {
            winners += usize::from(t.await.unwrap().is_some());
        }
        assert_eq!(winners, 1, "round {round}");

        let claim = format!("claim:{round}");
        let claimers: Vec<_> = (0..16)
            .map(|i| {
                let store = nodes[i % 2].clone();
                let claim = claim.clone();
                tokio::spawn(async move {
                    store
                        .put_if_absent(&claim, format!("node {i}").as_bytes(), MINUTE)
                        .await
                        .unwrap()
                })
            })
            .collect();
        let mut won = 0;
        for c in claimers {
            won += usize::from(c.await.unwrap());
        }
        assert_eq!(won, 1, "round {round}");
    }
}

#[tokio::test]
async fn list_sees_every_nodes_records() {
    let redis = RedisServer::start(&scratch_dir("store-redis", "list"));
    let (a, b) = (node(&redis, 1).await, node(&redis, 1).await);
    // More than one SCAN page and one MGET batch.
    for i in 0..300 {
        let store = if i % 2 == 0 { &a } else { &b };
        store
            .put(
                &format!("approval:{i:03}"),
                format!("ask {i}").as_bytes(),
                MINUTE,
            )
            .await
            .unwrap();
    }
    a.put("eval:x", b"not an approval", MINUTE).await.unwrap();
    // Something else's key under the prefix, and a record sealed under another key.
    redis.cli(&["SET", "codemode:approval:zzz", "garbage"]);
    let other = node(&redis, 2).await;
    other.put("approval:other", b"x", MINUTE).await.unwrap();

    let listing = b.list("approval:").await.unwrap();
    let keys: Vec<String> = listing.records.iter().map(|r| r.key.clone()).collect();
    let expected: Vec<String> = (0..300).map(|i| format!("approval:{i:03}")).collect();
    assert_eq!(keys, expected);
    assert_eq!(listing.records[7].value, b"ask 7");
    let mut bad: Vec<String> = listing
        .unreadable
        .iter()
        .map(|e| e.message().to_string())
        .collect();
    bad.sort();
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(bad[0].starts_with("record `approval:other`"), "{}", bad[0]);
    assert!(bad[0].contains("sealed under another key"), "{}", bad[0]);
    assert_eq!(
        bad[1],
        format!(
            "record `approval:zzz` in redis://127.0.0.1:{}/0 cannot be opened: it is 7 bytes, \
             shorter than any sealed record (57): truncated, or not a codemode record",
            redis.port()
        )
    );
    assert_eq!(a.list("eval:").await.unwrap().records.len(), 1);
    assert!(a.list("nothing:").await.unwrap().records.is_empty());
}

#[tokio::test]
async fn tampered_records_are_clear_errors() {
    let redis = RedisServer::start(&scratch_dir("store-redis", "tamper"));
    let store = node(&redis, 1).await;
    store
        .put("eval:a", b"the saved eval", MINUTE)
        .await
        .unwrap();
    // A record moved to another key: DUMP/RESTORE copies the exact bytes.
    let backend = RedisStore::connect(&RedisUrl::parse(&redis.url(0)).unwrap())
        .await
        .unwrap();
    let sealed = backend.get("eval:a").await.unwrap().unwrap();
    backend.put("eval:b", sealed.clone(), MINUTE).await.unwrap();
    let e = store.get("eval:b").await.unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::Unreadable);
    let failed = "it failed authentication: it was altered or truncated, or it belongs under \
                  another key name";
    assert_eq!(
        e.message(),
        format!(
            "record `eval:b` in redis://127.0.0.1:{}/0 cannot be opened: {failed}",
            redis.port()
        )
    );
    // A flipped byte, and a truncation.
    let mut flipped = sealed.clone();
    flipped[40] ^= 0x80;
    backend.put("eval:a", flipped, MINUTE).await.unwrap();
    assert!(
        store
            .get("eval:a")
            .await
            .unwrap_err()
            .message()
            .ends_with(failed)
    );
    backend
        .put("eval:a", sealed[..sealed.len() - 1].to_vec(), MINUTE)
        .await
        .unwrap();
    assert!(
        store
            .take("eval:a")
            .await
            .unwrap_err()
            .message()
            .ends_with(failed)
    );
    // The wrong key.
    store.put("eval:c", b"x", MINUTE).await.unwrap();
    let e = node(&redis, 9).await.get("eval:c").await.unwrap_err();
    assert!(e.message().contains("sealed under another key"), "{e}");
}

#[tokio::test]
async fn connection_errors_name_the_server_not_the_password_and_it_reconnects() {
    let dir = scratch_dir("store-redis", "reconnect");
    // Nothing listens: a clear error at once.
    let port = free_port();
    let url = RedisUrl::parse(&format!("redis://:hunter2@127.0.0.1:{port}/0")).unwrap();
    let e = RedisStore::connect(&url).await.unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::Unavailable);
    assert!(
        e.message().starts_with(&format!(
            "redis://:***@127.0.0.1:{port}/0: cannot connect: "
        )),
        "{e}"
    );
    assert!(!format!("{e:?}{e}").contains("hunter2"));

    // A wrong password.
    let mut redis = RedisServer::start_with_password(&dir, "s3cret-pw");
    let wrong =
        RedisUrl::parse(&format!("redis://:wrong-pw@127.0.0.1:{}/0", redis.port())).unwrap();
    let e = RedisStore::connect(&wrong).await.unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::Unavailable);
    assert!(!e.to_string().contains("wrong-pw"), "{e}");

    // Redis goes away and comes back: the failing call says so, later ones work again.
    let store = node(&redis, 1).await;
    store.put("k", b"v", MINUTE).await.unwrap();
    redis.stop();
    let e = store.get("k").await.unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::Unavailable);
    assert!(
        e.message().starts_with(&format!(
            "redis://:***@127.0.0.1:{}/0: GET failed: ",
            redis.port()
        )),
        "{e}"
    );
    assert!(!e.to_string().contains("s3cret-pw"));
    redis.restart();
    assert!(
        eventually(500, async || store.put("k", b"again", MINUTE).await.is_ok()).await,
        "the store did not reconnect"
    );
    assert_eq!(store.get("k").await.unwrap().unwrap().value, b"again");
}

#[tokio::test]
async fn store_open_needs_the_shared_key_for_redis() {
    let redis = RedisServer::start(&scratch_dir("store-redis", "open"));
    let mut config = DurableConfig::default();
    config.store = StoreLocation::Redis(RedisUrl::parse(&redis.url(0)).unwrap());
    // A variable no test sets: without a shared key a cluster cannot work.
    config.key_env = "CODEMODE_TEST_UNSET_REDIS_KEY".to_string();
    let e = Store::open(&config).await.unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::SealingKey);
    assert!(
        e.message().starts_with(
            "the environment variable `CODEMODE_TEST_UNSET_REDIS_KEY` is not set: the nodes \
             sharing a Redis store must share one sealing key"
        ),
        "{e}"
    );
    // PATH is always set and is no key: the message names the variable, not its value.
    config.key_env = "PATH".to_string();
    let e = Store::open(&config).await.unwrap_err();
    assert!(
        e.message()
            .starts_with("the environment variable `PATH` (the sealing key) is")
    );
    assert!(!e.message().contains("/usr"), "{e}");
}

#[tokio::test]
async fn a_legacy_session_continues_on_another_node() {
    use rmcp::model::{ClientCapabilities, Implementation, InitializeRequestParams};
    use rmcp::transport::streamable_http_server::session::SessionState;

    let redis = RedisServer::start(&scratch_dir("store-redis", "sessions"));
    let a = SealedSessionStore::new(node(&redis, 1).await).into_rmcp();
    let b = SealedSessionStore::new(node(&redis, 1).await)
        .with_ttl(Duration::from_secs(90))
        .into_rmcp();
    let params = InitializeRequestParams::new(
        ClientCapabilities::default(),
        Implementation::new("client", "1"),
    );
    a.store("session-1", &SessionState::new(params.clone()))
        .await
        .unwrap();
    let key = format!(
        "{REDIS_KEY_PREFIX}{}",
        SealedSessionStore::record_key("session-1")
    );
    assert_eq!(redis.cli(&["EXISTS", &key]), b"1\n");
    let restored = b.load("session-1").await.unwrap().unwrap();
    assert_eq!(restored.initialize_params.client_info.name, "client");
    // Restoring renewed its life to node b's TTL.
    let ttl: u64 = String::from_utf8(redis.cli(&["PTTL", &key]))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(ttl > 60_000 && ttl <= 90_000, "{ttl}");
    b.delete("session-1").await.unwrap();
    assert!(a.load("session-1").await.unwrap().is_none());
}

/// `serve --http` routers, one per entry of `stores` (`true`: with the session store on
/// `redis`), each on a loopback port of its own until `shutdown`; their `/mcp` URLs.
async fn serve_routers(
    redis: &RedisServer,
    stores: &[bool],
    shutdown: &tokio_util::sync::CancellationToken,
) -> Vec<String> {
    use super::serve::http_router;
    use super::{HttpOptions, ServerState};

    let mut runtime_config = codemode_runtime::RuntimeConfig::default();
    runtime_config.max_concurrent_evals(2);
    let runtime = codemode_runtime::Runtime::new(&runtime_config).unwrap();
    let mut urls = Vec::new();
    for &with_store in stores {
        let state = ServerState::new(runtime.clone(), codemode_policies::Config::default()).await;
        let session_store = match with_store {
            true => Some(SealedSessionStore::new(node(redis, 1).await)),
            false => None,
        };
        let options = HttpOptions {
            session_store,
            ..HttpOptions::default()
        };
        let router = http_router(state, options, shutdown);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        urls.push(format!("http://{}/mcp", listener.local_addr().unwrap()));
        let stop = shutdown.clone();
        tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async move { stop.cancelled().await })
                .await
        });
    }
    urls
}

/// A POST of `body` to `url`, in `session` when given (protocol 2025-11-25).
fn post_mcp(
    client: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: serde_json::Value,
) -> reqwest::RequestBuilder {
    let mut request = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .json(&body);
    if let Some(s) = session {
        request = request
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", "2025-11-25");
    }
    request
}

/// Opens a legacy session on `url` (`initialize` with `capabilities`, then `initialized`).
async fn open_session(
    client: &reqwest::Client,
    url: &str,
    capabilities: serde_json::Value,
) -> String {
    let init = post_mcp(
        client,
        url,
        None,
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "failover-test", "version": "1"}}}),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(init.status(), 200);
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let _ = init.text().await.unwrap();
    let initialized = post_mcp(
        client,
        url,
        Some(&session),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(initialized.status(), 202);
    session
}

/// Two `serve --http` routers sharing a session store: a legacy session opened on node A is
/// restored by node B on the client's next request (what a node's death looks like to the
/// client once the balancer sends it elsewhere); a node without the store does not know it.
#[tokio::test]
async fn a_legacy_session_opened_on_one_router_is_served_by_another() {
    let redis = RedisServer::start(&scratch_dir("store-redis", "failover"));
    let shutdown = tokio_util::sync::CancellationToken::new();
    let urls = serve_routers(&redis, &[true, true, false], &shutdown).await;
    let client = codemode_upstream::crypto::http_client();
    let session = open_session(&client, &urls[0], serde_json::json!({})).await;
    let list = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    // Node B has never seen the session: it restores it from the store and answers.
    let on_b = post_mcp(&client, &urls[1], Some(&session), list.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(on_b.status(), 200);
    let body = on_b.text().await.unwrap();
    assert!(
        body.contains("\"id\":2") && body.contains("\"tools\""),
        "{body}"
    );
    assert!(body.contains("\"name\":\"eval\""), "{body}");
    // Node C has no store: the session is unknown there.
    let on_c = post_mcp(&client, &urls[2], Some(&session), list)
        .send()
        .await
        .unwrap();
    assert_eq!(on_c.status(), 404, "{}", on_c.text().await.unwrap());
    shutdown.cancel();
}

/// Reads `response`'s SSE body until it holds `needle`; the text so far.
async fn read_until(response: &mut reqwest::Response, needle: &str) -> String {
    let mut text = String::new();
    while !text.contains(needle) {
        let chunk = tokio::time::timeout(MINUTE, response.chunk())
            .await
            .unwrap_or_else(|_| panic!("no `{needle}` within a minute: {text}"))
            .unwrap()
            .unwrap_or_else(|| panic!("the stream ended without `{needle}`: {text}"));
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    text
}

/// The `id:` fields of an SSE text.
fn event_ids(sse: &str) -> Vec<String> {
    sse.lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .map(String::from)
        .collect()
}

/// A GET reconnecting to a session's stream after `last_event_id`.
fn reconnect(
    client: &reqwest::Client,
    url: &str,
    session: &str,
    last_event_id: &str,
) -> reqwest::RequestBuilder {
    client
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
        .header("last-event-id", last_event_id)
}

/// A legacy session's call in flight on node A (an eval waiting for its human's answer to an
/// `elicitation/create`). Another session naming the call gets `410`. Its client reconnects the
/// call's stream to node B, as it does through a load balancer once A is gone: B takes the call
/// from the store and ends it with the node-lost JSON-RPC error, once. Reconnected to A, the
/// stream resumes there and carries the answer. A request whose response ended is forgotten.
#[tokio::test]
async fn a_call_whose_node_is_gone_ends_with_an_error_where_its_client_reconnects() {
    use super::failover::{NODE_LOST, node_lost_message};
    use super::sessions::InFlightRequest;

    let redis = RedisServer::start(&scratch_dir("store-redis", "node-lost"));
    let shutdown = tokio_util::sync::CancellationToken::new();
    let urls = serve_routers(&redis, &[true, true], &shutdown).await;
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
    assert_eq!(standalone.status(), 200);
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "eval",
        "arguments": {"code": "return await codemode.hitl_request({question: 'Go?', options: ['yes', 'no']})"}}});
    let mut in_flight = post_mcp(&client, &urls[0], Some(&session), call)
        .send()
        .await
        .unwrap();
    assert_eq!(in_flight.status(), 200);
    // The call's stream: its event ids name node A and the call, `<rmcp's id>~<node>~<number>`.
    let primed = read_until(&mut in_flight, "id: ").await;
    let priming = event_ids(&primed).remove(0);
    let mark: Vec<&str> = priming.split('~').collect();
    let (stream, node_a, number) = (mark[0], mark[1], mark[2]);
    assert!(stream.starts_with("0/"), "{priming}");
    assert_eq!(node_a.len(), 16, "{priming}");
    assert!(node_a.chars().all(|c| c.is_ascii_hexdigit()), "{priming}");
    // The question on the session's standalone stream, marked `<rmcp's id>~<node>`.
    let asked = read_until(&mut standalone, "elicitation/create").await;
    let question_ids = event_ids(&asked);
    assert!(!question_ids.is_empty(), "{asked}");
    for id in &question_ids {
        assert_eq!(id.split('~').collect::<Vec<_>>()[1..], [node_a], "{asked}");
    }
    let question: serde_json::Value = asked
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .find(|d| d.contains("elicitation/create"))
        .map(|d| serde_json::from_str(d).unwrap())
        .unwrap();
    // The call is in the store while it is in flight, sealed.
    let record = format!("{REDIS_KEY_PREFIX}mcp-request:{node_a}:{number}");
    assert!(
        eventually(500, async || redis.cli(&["EXISTS", &record]) == b"1\n").await,
        "the call is recorded (beside the request, not before it)"
    );
    assert!(
        !String::from_utf8_lossy(&redis.cli(&["GET", &record])).contains("tools/call"),
        "the record is sealed"
    );

    // Another session can neither end this session's call nor learn about it.
    let other = open_session(&client, &urls[0], serde_json::json!({})).await;
    let stranger = reconnect(&client, &urls[1], &other, &priming)
        .send()
        .await
        .unwrap();
    assert_eq!(stranger.status(), 410, "{}", stranger.text().await.unwrap());
    assert_eq!(redis.cli(&["EXISTS", &record]), b"1\n", "still in flight");
    // Node B: the stream is A's, so the call ends with the node-lost error, at once.
    let on_b = reconnect(&client, &urls[1], &session, &priming)
        .send()
        .await
        .unwrap();
    assert_eq!(on_b.status(), 200);
    assert_eq!(on_b.headers()["content-type"], "text/event-stream");
    let body = on_b.text().await.unwrap();
    let data = body
        .strip_prefix("data: ")
        .and_then(|b| b.strip_suffix("\n\n"))
        .unwrap_or_else(|| panic!("one SSE event without an id: {body:?}"));
    let lost = InFlightRequest {
        session: SealedSessionStore::record_key(&session),
        id: serde_json::json!(7),
        method: "tools/call".to_string(),
        tool: Some("eval".to_string()),
        eval: None,
    };
    // These nodes have no durable store: the eval was not saved.
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(data).unwrap(),
        serde_json::json!({"jsonrpc": "2.0", "id": 7, "error": {
            "code": NODE_LOST, "message": node_lost_message(&lost, false),
            "data": {"reason": "node-lost", "evalSaved": false}}})
    );
    // Ended once: B took the record, so the next reconnection (the TypeScript SDK makes one
    // after an error event) gets 410, and the client gives up.
    assert_eq!(redis.cli(&["EXISTS", &record]), b"0\n");
    let again = reconnect(&client, &urls[1], &session, &priming)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 410);
    // A's standalone stream, reconnected to B: a new one there (rmcp restores the session).
    let standalone_on_b = reconnect(&client, &urls[1], &session, question_ids.last().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(standalone_on_b.status(), 200);
    assert_eq!(
        standalone_on_b.headers()["content-type"],
        "text/event-stream"
    );
    drop(standalone_on_b);

    // Node A still holds the call: the reconnection resumes its stream (rmcp replays it from
    // the event named), which carries the result once the human answers.
    drop(in_flight);
    let mut on_a = reconnect(&client, &urls[0], &session, &priming)
        .send()
        .await
        .unwrap();
    assert_eq!(on_a.status(), 200);
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
    let resumed = read_until(&mut on_a, "\"id\":7").await;
    let index = stream.split('/').nth(1).unwrap();
    assert_eq!(
        event_ids(&resumed),
        [priming.clone(), format!("1/{index}~{node_a}~{number}")],
        "{resumed}"
    );
    assert!(resumed.contains("\"result\""), "{resumed}");
    let _ = on_a.text().await.unwrap();
    // A request whose response ends is forgotten by the store.
    let list = post_mcp(
        &client,
        &urls[0],
        Some(&session),
        serde_json::json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}),
    )
    .send()
    .await
    .unwrap();
    assert!(list.text().await.unwrap().contains("\"id\":8"));
    assert!(
        eventually(500, async || redis
            .cli(&["--scan", "--pattern", "codemode:mcp-request:*"])
            .is_empty())
        .await,
        "no request is recorded once every response ended"
    );
    shutdown.cancel();
}
