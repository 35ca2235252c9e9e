//! `tools/list_changed` and upstream elicitation.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use codemode_runtime::{BoxFuture, ToolHost};
use codemode_upstream::{CallScope, UpstreamElicitation, UpstreamPool};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::json;

use crate::{cx, everything, pool, wait_until};

#[tokio::test(flavor = "multi_thread")]
async fn follows_tools_list_changed() {
    // server-everything adds its elicitation tools after `initialized` when the client declares
    // elicitation, then sends notifications/tools/list_changed.
    let pool = pool(vec![("everything", everything())]).await;
    let mut changes = pool.subscribe();
    let has = |pool: &UpstreamPool| {
        pool.tool_names()
            .iter()
            .any(|n| n == "everything__trigger-elicitation-request")
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !has(&pool) {
        let left = deadline.saturating_duration_since(Instant::now());
        tokio::time::timeout(left, changes.changed())
            .await
            .expect("trigger-elicitation-request never appeared")
            .unwrap();
    }
    // It sends no sampling capability, so the sampling tool must not appear.
    assert!(
        !pool
            .tool_names()
            .iter()
            .any(|n| n == "everything__trigger-sampling-request")
    );
}

/// Accepts every elicitation after `delay`, counting them.
struct Accept {
    delay: Duration,
    seen: AtomicUsize,
}

impl UpstreamElicitation for Accept {
    fn elicit<'a>(
        &'a self,
        server: &'a str,
        params: ElicitRequestParams,
    ) -> BoxFuture<'a, Result<ElicitResult, codemode_upstream::ElicitationFailed>> {
        Box::pin(async move {
            assert_eq!(server, "everything");
            assert!(matches!(
                params,
                ElicitRequestParams::FormElicitationParams { .. }
            ));
            self.seen.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(self.delay).await;
            Ok(ElicitResult::new(ElicitationAction::Accept)
                .with_content(json!({"name": "Ada Lovelace", "check": true})))
        })
    }
}

/// server-everything with calls timing out after `timeout`, once it lists its elicitation tool.
async fn eliciting_everything(timeout: Duration) -> UpstreamPool {
    let pool = UpstreamPool::new();
    let spec = everything().call_timeout(timeout);
    pool.set_upstreams(HashMap::from([("everything".to_string(), spec)]))
        .await
        .unwrap();
    wait_until("the elicitation tool", Duration::from_secs(10), || {
        pool.tool_names()
            .iter()
            .any(|n| n == "everything__trigger-elicitation-request")
    })
    .await;
    pool
}

#[tokio::test(flavor = "multi_thread")]
async fn forwards_elicitation_and_pauses_the_call_timeout() {
    // The handler takes longer than the call timeout: that time must not count.
    let handler = Arc::new(Accept {
        delay: Duration::from_millis(3000),
        seen: AtomicUsize::new(0),
    });
    let pool = eliciting_everything(Duration::from_secs(2)).await;
    // The eval lends its human to its calls.
    let scope = CallScope::default().with_elicitor(Some(handler.clone()));
    let r = pool
        .call_in(
            "everything__trigger-elicitation-request",
            json!({}),
            &cx(),
            &scope,
        )
        .await;
    let text = r.expect("elicitation call succeeds").to_string();
    assert!(text.contains("Ada Lovelace"), "{text}");
    assert_eq!(handler.seen.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread")]
/// A call of an eval that lends no human (`call`'s own scope): the server's question is declined.
async fn declines_elicitation_by_default() {
    let pool = pool(vec![("everything", everything())]).await;
    wait_until("the elicitation tool", Duration::from_secs(10), || {
        pool.tool_names()
            .iter()
            .any(|n| n == "everything__trigger-elicitation-request")
    })
    .await;
    let r = pool
        .call("everything__trigger-elicitation-request", json!({}), &cx())
        .await;
    let text = r
        .expect("a declined elicitation is still a result")
        .to_string();
    assert!(text.to_lowercase().contains("decline"), "{text}");
}

/// Holds every elicitation open until released, saying when one arrived.
struct Deliberating {
    asked: tokio::sync::Notify,
    released: tokio::sync::Notify,
}

impl UpstreamElicitation for Deliberating {
    fn elicit<'a>(
        &'a self,
        _: &'a str,
        _: ElicitRequestParams,
    ) -> BoxFuture<'a, Result<ElicitResult, codemode_upstream::ElicitationFailed>> {
        Box::pin(async move {
            let released = self.released.notified();
            self.asked.notify_one();
            released.await;
            Ok(ElicitResult::new(ElicitationAction::Decline))
        })
    }
}

/// Red team (rt11): while one eval's human was answering a server's question, every call on
/// that server — other evals' included — had its timeout (and its eval's) paused: another
/// eval's call to a server that never answered waited as long as that human took. Only the
/// asked eval's own calls pause now.
#[tokio::test(flavor = "multi_thread")]
async fn another_evals_question_does_not_pause_a_calls_timeout() {
    let pool = eliciting_everything(Duration::from_secs(2)).await;
    let human = Arc::new(Deliberating {
        asked: tokio::sync::Notify::new(),
        released: tokio::sync::Notify::new(),
    });
    let asked_eval = CallScope::default().with_elicitor(Some(human.clone()));
    let asking = tokio::spawn({
        let (pool, scope) = (pool.clone(), asked_eval.clone());
        async move {
            pool.call_in(
                "everything__trigger-elicitation-request",
                json!({}),
                &cx(),
                &scope,
            )
            .await
        }
    });
    human.asked.notified().await;
    // Another eval's call that the server answers only after 30 s: it times out at 2 s.
    let other = pool
        .call_in(
            "everything__trigger-long-running-operation",
            json!({"duration": 30, "steps": 1}),
            &cx(),
            &CallScope::default(),
        )
        .await;
    human.released.notify_one();
    assert_eq!(
        crate::failed_message(other),
        "upstream server `everything` did not answer `trigger-long-running-operation` within 2s"
    );
    let declined = asking
        .await
        .unwrap()
        .expect("a declined question is a result");
    assert!(
        declined.to_string().to_lowercase().contains("decline"),
        "{declined}"
    );
}
