//! The moment a 2026-07-28 eval is saved to the store, over a real server on loopback: the
//! store's write of the `eval:` record is held until the test lets it through, so that a retry
//! lands exactly in the window where the eval has left memory (its questions withdrawn) but its
//! entry does not say so yet.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{Notify, Semaphore};

use crate::server::durable::Durable;
use crate::server::{HttpOptions, ServerState, serve_http};
use codemode_store::{LocalStore, RecordStore, StateKey, Store, StoreError, StoreErrorKind};

/// A local store whose writes of `eval:` records wait, each, until the test releases one.
#[derive(Debug)]
struct HeldSaves {
    local: LocalStore,
    /// Told when a write of an `eval:` record starts waiting.
    reached: Notify,
    release: Semaphore,
    /// Whether a released write fails (the eval is not saved: it spills).
    refuse: AtomicBool,
}

#[async_trait::async_trait]
impl RecordStore for HeldSaves {
    fn describe(&self) -> &str {
        self.local.describe()
    }

    async fn put(&self, key: &str, value: Vec<u8>, ttl: Duration) -> Result<(), StoreError> {
        if key.starts_with("eval:") {
            self.reached.notify_one();
            self.release.acquire().await.expect("never closed").forget();
            if self.refuse.load(Ordering::SeqCst) {
                return Err(StoreError::new(
                    StoreErrorKind::Unavailable,
                    "the test refuses this save",
                ));
            }
        }
        self.local.put(key, value, ttl).await
    }

    async fn put_if_absent(
        &self,
        key: &str,
        value: Vec<u8>,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        self.local.put_if_absent(key, value, ttl).await
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.local.get(key).await
    }

    async fn exists(&self, key: &str) -> Result<bool, StoreError> {
        self.local.exists(key).await
    }

    async fn take(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.local.take(key).await
    }

    async fn delete(&self, key: &str) -> Result<bool, StoreError> {
        self.local.delete(key).await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        self.local.list(prefix).await
    }
}

/// A server saving every eval that waits for a human at once, into a [`HeldSaves`] store; its
/// `/mcp` URL.
async fn server(name: &str) -> (Arc<ServerState>, Arc<HeldSaves>, String) {
    let dir = codemode_test_support::scratch_dir("server-eval", name);
    let held = Arc::new(HeldSaves {
        local: LocalStore::open(&dir, false).expect("a local store"),
        reached: Notify::new(),
        release: Semaphore::new(0),
        refuse: AtomicBool::new(false),
    });
    let store = Store::new(held.clone(), &StateKey::from_bytes([7; 32]));
    let runtime = codemode_runtime::Runtime::new(&Default::default()).expect("a runtime");
    let state = ServerState::new(runtime, codemode_policies::Config::default()).await;
    crate::server::enable_durable(&state, Arc::new(Durable::new(store, Duration::ZERO)));
    let (bound, addr) = tokio::sync::oneshot::channel();
    tokio::spawn(serve_http(
        state.clone(),
        "127.0.0.1:0".parse().expect("an address"),
        HttpOptions::default(),
        tokio_util::sync::CancellationToken::new(),
        Some(bound),
    ));
    let url = format!("http://{}/mcp", addr.await.expect("the server listens"));
    (state, held, url)
}

/// `tools/call` of `eval` with `code`, as a 2026-07-28 client that can elicit; with `retry`,
/// the retry `(requestState, inputResponses)`. The JSON-RPC result.
async fn call(url: &str, code: &str, retry: Option<(&str, Value)>) -> Value {
    result_of(send(url, code, retry).await)
}

/// The result of a JSON-RPC response.
fn result_of(message: Value) -> Value {
    message
        .get("result")
        .cloned()
        .unwrap_or_else(|| panic!("no result: {message}"))
}

/// [`call`]'s JSON-RPC response, an error or a result.
async fn send(url: &str, code: &str, retry: Option<(&str, Value)>) -> Value {
    let mut params = json!({
        "name": "eval",
        "arguments": {"code": code},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "held-save", "version": "1"}
        }
    });
    if let Some((state, responses)) = retry {
        params["requestState"] = json!(state);
        params["inputResponses"] = responses;
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let text = codemode_upstream::crypto::http_client()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "eval")
        .body(body.to_string())
        .send()
        .await
        .expect("tools/call")
        .text()
        .await
        .expect("its body");
    // The response is JSON, or an SSE stream whose last `data:` line holds it.
    let message: Value = match text.trim_start().starts_with('{') {
        true => serde_json::from_str(&text),
        false => text
            .lines()
            .rev()
            .find_map(|line| line.strip_prefix("data:"))
            .map(|data| serde_json::from_str(data.trim()))
            .expect("an SSE data line"),
    }
    .unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    message
}

/// The single question of an input-required result, and its `requestState`.
fn asked(result: &Value) -> (String, String) {
    assert_eq!(result["resultType"], "input_required", "{result}");
    let keys: Vec<&String> = result["inputRequests"]
        .as_object()
        .expect("inputRequests")
        .keys()
        .collect();
    assert_eq!(keys.len(), 1, "{result}");
    let token = result["requestState"].as_str().expect("requestState");
    (keys[0].clone(), token.to_string())
}

const SHIP: &str =
    "return await codemode.hitl_request({question: 'Ship?', options: ['ship', 'hold']});";

fn choose(key: &str, option: &str) -> Value {
    json!({key: {"action": "accept", "content": {"answer": option}}})
}

/// Starts an eval asking [`SHIP`], and retries it with `answers(key)` while its save is held
/// (the eval has left memory, its asks and owner are in the store, its `eval:` record waits)
/// and lets the save through once the retry waits on the eval's entry. The question's key, the
/// `requestState` and the retry's JSON-RPC response.
async fn retry_while_saving(
    (state, held, url): &(Arc<ServerState>, Arc<HeldSaves>, String),
    answers: impl FnOnce(&str) -> Value,
) -> (String, String, Value) {
    let first = call(url, SHIP, None).await;
    let (key, token) = asked(&first);
    held.reached.notified().await;
    let entry = state.suspensions.get(&token).expect("the eval's entry");
    assert!(!entry.is_parked());
    assert!(!entry.is_awaited());
    let retry = tokio::spawn({
        let (url, token, answers) = (url.clone(), token.clone(), answers(&key));
        async move { send(&url, SHIP, Some((&token, answers))).await }
    });
    while !entry.is_awaited() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    held.release.add_permits(1);
    let result = retry.await.expect("the retry");
    (key, token, result)
}

/// `hitl_request`'s result for the option `ship`, chosen by the client.
fn shipped(result: &Value) {
    let chosen = &result["structuredContent"]["result"];
    assert_eq!(chosen["selectedOption"], "ship", "{result}");
    assert_eq!(chosen["status"], "confirmed", "{result}");
    assert_eq!(chosen["source"], "user", "{result}");
}

/// Race found in the durable suite (1 run in 16): a retry answering an eval just as it was saved
/// reached its entry in memory after the eval had left it and before the entry was marked
/// parked; the answer was refused there, and the client was asked the same question again.
/// Now the retry waits there for the save, and its answer then goes to the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_arrives_while_its_eval_is_being_saved_is_not_refused() {
    let server = server("saving").await;
    let (_, _, response) = retry_while_saving(&server, |key| choose(key, "ship")).await;
    shipped(&result_of(response));
}

/// Race found in the durable suite (1 CI run in 4): in the same window, the save fails and the
/// eval goes on in memory (it spills), asking its question again under the same key; the
/// retry's answer, which had reached no question, was dropped and the client asked again. Now
/// the answer is given to the question asked again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_arrives_while_its_save_fails_is_given_to_the_question_asked_again() {
    let server = server("spilling").await;
    server.1.refuse.store(true, Ordering::SeqCst);
    let (_, token, response) = retry_while_saving(&server, |key| choose(key, "ship")).await;
    shipped(&result_of(response));
    let durable = server.0.durable().expect("a store");
    assert_eq!(durable.is_parked(&token).await.ok(), Some(false));
}

/// In that window, a late answer that does not fit the question asked again (no such option)
/// is refused as it would be on arrival, naming the question, which stays open: the client's
/// next retry with one of the options gets the result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_answer_that_does_not_fit_the_question_asked_again_is_refused() {
    let server = server("spilling-unfit").await;
    server.1.refuse.store(true, Ordering::SeqCst);
    let (key, token, response) = retry_while_saving(&server, |key| choose(key, "sink")).await;
    let message = response["error"]["message"].as_str().unwrap_or_default();
    assert_eq!(response["error"]["code"], -32602, "{response}");
    assert!(
        message.starts_with(&format!("the answer to `{key}` was refused: ")),
        "{response}"
    );
    let result = call(&server.2, SHIP, Some((&token, choose(&key, "ship")))).await;
    shipped(&result);
}

/// In the same window, a retry whose answers name none of the questions the eval was saved
/// with is refused as anywhere else: it is asked the saved question again, which its next retry
/// answers through the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_to_no_saved_question_gets_the_saved_question_again() {
    let server = server("saving-unasked").await;
    let unasked = "codemode-00000000000000000000000000000001";
    let (key, token, again) = retry_while_saving(&server, |_| choose(unasked, "ship")).await;
    assert_eq!(asked(&result_of(again)), (key.clone(), token.clone()));
    // Still parked: nothing took the eval from the store for an answer it does not wait for.
    let durable = server.0.durable().expect("a store");
    assert_eq!(durable.is_parked(&token).await.ok(), Some(true));
    let result = call(&server.2, SHIP, Some((&token, choose(&key, "ship")))).await;
    shipped(&result);
}

/// Red team: in the spill window, an answer to a key the eval never showed (a guessed one) is
/// kept only for that key: the question asked again after the failed save is not given it, and
/// the client is asked that question, under its own key, once more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_answer_to_a_guessed_key_is_not_given_to_the_question_asked_again() {
    let server = server("spilling-guessed").await;
    server.1.refuse.store(true, Ordering::SeqCst);
    let guessed = "codemode-00000000000000000000000000000001";
    let (key, token, again) = retry_while_saving(&server, |_| choose(guessed, "ship")).await;
    assert_ne!(key, guessed);
    assert_eq!(asked(&result_of(again)), (key.clone(), token.clone()));
    let durable = server.0.durable().expect("a store");
    assert_eq!(durable.is_parked(&token).await.ok(), Some(false));
    let result = call(&server.2, SHIP, Some((&token, choose(&key, "ship")))).await;
    shipped(&result);
}

/// Red team: in the spill window, a late answer that is not an elicitation result (a bare
/// string, not an object) is refused when the question is asked again, as on arrival, and the
/// question stays open for the client's next retry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_answer_that_is_not_an_object_is_refused() {
    let server = server("spilling-string").await;
    server.1.refuse.store(true, Ordering::SeqCst);
    let (key, token, response) = retry_while_saving(&server, |key| json!({key: "ship"})).await;
    assert_eq!(response["error"]["code"], -32602, "{response}");
    let message = response["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(&format!("the answer to `{key}` was refused: ")),
        "{response}"
    );
    let result = call(&server.2, SHIP, Some((&token, choose(&key, "ship")))).await;
    shipped(&result);
}

/// Red team: in the spill window, a late `decline` is given as a decline (as on arrival:
/// `hitl_request` reports it `canceled` by the user), never as a choice of an option.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_decline_is_given_as_a_decline() {
    let server = server("spilling-decline").await;
    server.1.refuse.store(true, Ordering::SeqCst);
    let (_, _, response) =
        retry_while_saving(&server, |key| json!({key: {"action": "decline"}})).await;
    let result = result_of(response);
    let chosen = &result["structuredContent"]["result"];
    assert_eq!(chosen["status"], "canceled", "{result}");
    assert_eq!(chosen["confirmed"], false, "{result}");
    assert_eq!(chosen["selectedOption"], Value::Null, "{result}");
    assert_eq!(chosen["source"], "user", "{result}");
}

/// Red team: two retries land in the spill window with the same answer. The question asked
/// again is answered once (by whichever gives it first); the other retry's kept answer reaches
/// no question, and both retries get the eval's one result. Found: the eval's outcome was taken
/// by the first waiter (`Suspended::next_event`), and the other retry, which the kept answer now
/// keeps waiting where it used to be asked the question again, waited forever (its client's
/// connection held, no response); now every waiter gets the outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_late_answers_in_the_window_answer_the_question_once() {
    let (state, held, url) = server("spilling-twice").await;
    held.refuse.store(true, Ordering::SeqCst);
    let first = call(&url, SHIP, None).await;
    let (key, token) = asked(&first);
    held.reached.notified().await;
    let entry = state.suspensions.get(&token).expect("the eval's entry");
    let retry = || {
        let (url, token, answers) = (url.clone(), token.clone(), choose(&key, "ship"));
        tokio::spawn(async move { send(&url, SHIP, Some((&token, answers))).await })
    };
    let one = retry();
    while !entry.is_awaited() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let two = retry();
    // The second retry reaches the entry and waits on it too.
    while entry.waiting() < 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(!entry.is_parked());
    held.release.add_permits(1);
    let patience = Duration::from_secs(20);
    let one = tokio::time::timeout(patience, one)
        .await
        .expect("the first retry answers");
    let two = tokio::time::timeout(patience, two)
        .await
        .expect("the second retry answers");
    let (one, two) = (one.expect("one"), two.expect("two"));
    shipped(&result_of(one));
    shipped(&result_of(two));
    let durable = state.durable().expect("a store");
    assert_eq!(durable.is_parked(&token).await.ok(), Some(false));
}

/// Red team: a client that drops its retry in the spill window (its connection closes) leaves
/// no request waiting on the eval: the drop is the request's cancellation, which stops the eval
/// and forgets its entry, so the kept answer is never given, and the client's next retry is
/// told the eval no longer waits (the failed save left nothing parked in the store).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_dropped_in_the_window_leaves_no_wait_behind() {
    let (state, held, url) = server("spilling-dropped").await;
    held.refuse.store(true, Ordering::SeqCst);
    let first = call(&url, SHIP, None).await;
    let (key, token) = asked(&first);
    held.reached.notified().await;
    let entry = state.suspensions.get(&token).expect("the eval's entry");
    let retry = tokio::spawn({
        let (url, token, answers) = (url.clone(), token.clone(), choose(&key, "ship"));
        async move { send(&url, SHIP, Some((&token, answers))).await }
    });
    while !entry.is_awaited() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    retry.abort();
    let _ = retry.await;
    let patience = tokio::time::Instant::now() + Duration::from_secs(5);
    while entry.is_awaited() {
        assert!(
            tokio::time::Instant::now() < patience,
            "the dropped retry still waits"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(state.suspensions.get(&token).is_none());
    held.release.add_permits(1);
    let durable = state.durable().expect("a store");
    let patience = tokio::time::Instant::now() + Duration::from_secs(5);
    while durable.is_parked(&token).await.ok() != Some(false) {
        assert!(
            tokio::time::Instant::now() < patience,
            "the save still runs"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let again = call(&url, SHIP, Some((&token, choose(&key, "ship")))).await;
    assert_eq!(again["isError"], true, "{again}");
    assert_eq!(
        again["content"][0]["text"],
        "this eval is no longer waiting for input (it finished, timed out, or the server restarted); run it again",
        "{again}"
    );
}

/// Red team: in the spill window of eval B, a retry of B carries an answer to the question of
/// another eval A (its key, seen by the same or another client). B's question asked again is
/// not given it, and it never reaches A, which stays parked on its question: A's own retry
/// decides it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_answer_to_another_evals_key_answers_neither_eval() {
    let server = server("spilling-other").await;
    let (state, held, url) = &server;
    let other = call(url, SHIP, None).await;
    let (other_key, other_token) = asked(&other);
    held.reached.notified().await;
    held.release.add_permits(1);
    let durable = state.durable().expect("a store");
    let patience = tokio::time::Instant::now() + Duration::from_secs(5);
    while durable.is_parked(&other_token).await.ok() != Some(true) {
        assert!(tokio::time::Instant::now() < patience, "A is not saved");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    held.refuse.store(true, Ordering::SeqCst);
    let (key, token, again) = retry_while_saving(&server, |_| choose(&other_key, "ship")).await;
    assert_ne!(key, other_key);
    assert_eq!(asked(&result_of(again)), (key.clone(), token.clone()));
    assert_eq!(durable.is_parked(&token).await.ok(), Some(false));
    assert_eq!(durable.is_parked(&other_token).await.ok(), Some(true));
    let held_back = call(url, SHIP, Some((&other_token, choose(&other_key, "hold")))).await;
    let chosen = &held_back["structuredContent"]["result"];
    assert_eq!(chosen["selectedOption"], "hold", "{held_back}");
    assert_eq!(chosen["status"], "confirmed", "{held_back}");
    shipped(&call(url, SHIP, Some((&token, choose(&key, "ship")))).await);
}
