//! The ledger: every tool call the script attempted, in order of start.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codemode_runtime::{
    BoxFuture, CallContext, CallStatus, ErrorKind, EvalId, ToolError, ToolHost,
};
use serde_json::{Value, json};

use crate::{RUNTIME, basic_tools, eval_with, failed, ok, opts, show};

#[tokio::test]
async fn every_call_in_order_of_start_with_status_and_reason() {
    let tools = basic_tools().tool("slow", |_| async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        Ok(json!("slow"))
    });
    let code = r#"
await codemode.echo({});
try { await codemode.fail({}); } catch (e) {}
try { await codemode.deny({}); } catch (e) {}
try { await codemode.nope({}); } catch (e) {}
// Started first, finishes last: the ledger follows the start.
const slow = codemode.slow({});
await codemode.add({a: 1, b: 2});
await slow;
"done""#;
    let outcome = eval_with(code, &opts(), &tools).await;
    assert_eq!(ok(&outcome), "done", "{}", show(&outcome));
    let got: Vec<_> = outcome
        .tool_calls
        .iter()
        .map(|r| (r.id, r.tool.as_str(), r.status, r.reason.as_deref()))
        .collect();
    let want = [
        (1, "echo", CallStatus::Ok, None),
        (2, "fail", CallStatus::Error, Some("disk on fire")),
        (3, "deny", CallStatus::Denied, Some("policy_denied")),
        (4, "nope", CallStatus::Error, got[3].3),
        (5, "slow", CallStatus::Ok, None),
        (6, "add", CallStatus::Ok, None),
    ];
    assert_eq!(got, want, "{}", show(&outcome));
    assert!(
        got[3].3.unwrap_or_default().contains("unknown tool `nope`"),
        "{}",
        show(&outcome)
    );
    assert!(
        outcome
            .tool_calls
            .iter()
            .all(|r| r.duration_ms >= 0.0 && r.duration_ms.is_finite())
    );
}

#[tokio::test]
async fn a_call_in_flight_when_the_eval_fails_is_unfinished() {
    let tools = basic_tools().tool("forever", |_| async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok(Value::Null)
    });
    let code = "await codemode.echo({});\nawait codemode.forever({});";
    let outcome = eval_with(
        code,
        opts().timeout(Some(Duration::from_millis(300))),
        &tools,
    )
    .await;
    failed(&outcome, ErrorKind::Timeout);
    let got: Vec<_> = outcome
        .tool_calls
        .iter()
        .map(|r| (r.id, r.tool.as_str(), r.status))
        .collect();
    assert_eq!(
        got,
        [
            (1, "echo", CallStatus::Ok),
            (2, "forever", CallStatus::Error)
        ],
        "{}",
        show(&outcome)
    );
    let reason = outcome.tool_calls[1].reason.as_deref().unwrap_or_default();
    assert!(reason.starts_with("unfinished"), "{}", show(&outcome));

    // The script throws while a call it started is still pending: recorded, as an error.
    let outcome = eval_with(
        "codemode.forever({});\nthrow new Error('bail');",
        &opts(),
        &tools,
    )
    .await;
    failed(&outcome, ErrorKind::Exception);
    assert_eq!(outcome.tool_calls.len(), 1, "{}", show(&outcome));
    assert_eq!(
        outcome.tool_calls[0].status,
        CallStatus::Error,
        "{}",
        show(&outcome)
    );
    assert_eq!(
        outcome.tool_calls[0].reason.as_deref(),
        Some("not started: the eval ended first"),
        "{}",
        show(&outcome)
    );
}

#[tokio::test]
async fn unawaited_calls_are_awaited_and_recorded() {
    let finished = Arc::new(AtomicBool::new(false));
    let flag = finished.clone();
    let tools = basic_tools().tool("background", move |_| {
        let flag = flag.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            flag.store(true, Ordering::SeqCst);
            Ok(json!("written"))
        }
    });
    let code = "codemode.background({});\ncodemode.fail({});\nreturn 'returned early';";
    let outcome = eval_with(code, &opts(), &tools).await;
    assert_eq!(ok(&outcome), "returned early", "{}", show(&outcome));
    assert!(
        finished.load(Ordering::SeqCst),
        "the un-awaited call ran to its end before the eval returned"
    );
    let got: Vec<_> = outcome
        .tool_calls
        .iter()
        .map(|r| (r.id, r.tool.as_str(), r.status))
        .collect();
    assert_eq!(
        got,
        [
            (1, "background", CallStatus::Ok),
            (2, "fail", CallStatus::Error)
        ],
        "{}",
        show(&outcome)
    );
}

/// Records the context of every call.
#[derive(Default)]
struct Recorder(Mutex<Vec<(EvalId, u64, String)>>);

impl ToolHost for Recorder {
    fn call<'a>(
        &'a self,
        name: &'a str,
        _args: Value,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        self.0
            .lock()
            .unwrap()
            .push((cx.eval_id, cx.call_id, name.to_string()));
        Box::pin(async move { Ok(json!(cx.call_id)) })
    }
    fn tool_names(&self) -> Vec<String> {
        vec!["t".into()]
    }
}

#[tokio::test]
async fn call_context_ids_match_the_ledger() {
    let recorder = Recorder::default();
    let code = "const a = await codemode.t();\nconst [b, c] = await Promise.all([codemode.t(), codemode.u()]);\n[a, b, c]";
    let first = RUNTIME.eval(code, &opts(), &recorder).await;
    assert_eq!(ok(&first), &json!([1, 2, 3]), "{}", show(&first));
    let id = RUNTIME.allocate_eval_id();
    let second = RUNTIME
        .eval_with_id(id, "await codemode.t()", &opts(), &recorder)
        .await;
    assert_eq!(ok(&second), &json!(1), "{}", show(&second));

    let seen = recorder.0.lock().unwrap().clone();
    let ledger: Vec<_> = first
        .tool_calls
        .iter()
        .map(|r| (r.id, r.tool.clone()))
        .collect();
    assert_eq!(
        seen[..3]
            .iter()
            .map(|(_, call, name)| (*call, name.clone()))
            .collect::<Vec<_>>(),
        ledger
    );
    assert!(
        seen[..3].iter().all(|(eval, ..)| *eval == seen[0].0),
        "one eval id per eval: {seen:?}"
    );
    assert_eq!(
        seen[3],
        (id, 1, "t".to_string()),
        "eval_with_id passes its id: {seen:?}"
    );
    assert_ne!(seen[0].0, id);
}

#[tokio::test]
async fn a_call_queued_behind_the_concurrency_limit_when_the_eval_fails_is_not_started() {
    let tools = basic_tools().tool("forever", |_| async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok(Value::Null)
    });
    // One call at a time: the second waits for the first, which never ends.
    let outcome = eval_with(
        "await Promise.all([codemode.forever({}), codemode.forever({})]);",
        opts()
            .max_concurrent_tool_calls(1)
            .timeout(Some(Duration::from_millis(300))),
        &tools,
    )
    .await;
    failed(&outcome, ErrorKind::Timeout);
    let reasons: Vec<_> = outcome
        .tool_calls
        .iter()
        .map(|r| {
            let reason = r.reason.as_deref().unwrap_or_default();
            (r.status, reason.split(':').next().unwrap_or_default())
        })
        .collect();
    assert_eq!(
        reasons,
        [
            (CallStatus::Error, "unfinished"),
            (CallStatus::Error, "not started")
        ],
        "{}",
        show(&outcome)
    );
}
