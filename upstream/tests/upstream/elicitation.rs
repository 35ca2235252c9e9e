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
    ) -> BoxFuture<'a, Result<ElicitResult, String>> {
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

#[tokio::test(flavor = "multi_thread")]
async fn forwards_elicitation_and_pauses_the_call_timeout() {
    // The handler takes longer than the call timeout: that time must not count.
    let handler = Arc::new(Accept {
        delay: Duration::from_millis(3000),
        seen: AtomicUsize::new(0),
    });
    let pool = UpstreamPool::new();
    let spec = everything().call_timeout(Duration::from_secs(2));
    pool.set_upstreams(HashMap::from([("everything".to_string(), spec)]))
        .await
        .unwrap();
    wait_until("the elicitation tool", Duration::from_secs(10), || {
        pool.tool_names()
            .iter()
            .any(|n| n == "everything__trigger-elicitation-request")
    })
    .await;
    // The eval lends its human to its calls.
    let scope = CallScope {
        elicitor: Some(handler.clone()),
        ..CallScope::default()
    };
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
