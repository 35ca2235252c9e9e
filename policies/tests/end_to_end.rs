//! The policy layer under real evals: what the script sees, and the eval's timeout not counting
//! human time.

use std::sync::Arc;
use std::time::Duration;

use codemode_policies::{
    ApprovalAnswer, ApprovalDecision, ApprovalRequest, Approver, Channel, Decision,
    MemoryAuditSink, PolicyToolHost, Profile, extract_tool_calls,
};
use codemode_runtime::{
    BoxFuture, CallStatus, ErrorKind, EvalOptions, FnTools, Runtime, RuntimeConfig, ToolHost,
};
use serde_json::json;

/// Says yes, after thinking for a while.
struct SlowYes(Duration);

impl Approver for SlowYes {
    fn supports(&self) -> bool {
        true
    }
    fn approve(&self, _req: ApprovalRequest) -> BoxFuture<'_, ApprovalAnswer> {
        Box::pin(async move {
            tokio::time::sleep(self.0).await;
            ApprovalAnswer::new(ApprovalDecision::ApproveOnce, Channel::Elicitation)
        })
    }
}

fn tools() -> Arc<dyn ToolHost> {
    Arc::new(
        FnTools::new()
            .sync_tool("fs__read", |_| Ok(json!("contents")))
            .sync_tool("fs__write", |_| Ok(json!("written")))
            .sync_tool("fs__delete", |_| Ok(json!("deleted"))),
    )
}

const CODE: &str = r#"
    let denied;
    try {
      await codemode.fs__delete({ path: "/x" });
    } catch (e) {
      denied = [e.name, e instanceof ToolCallDeniedError, e.toolName, e.reason];
    }
    const written = await codemode.fs__write({ path: "/tmp/x" });
    const again = await codemode.fs__write({ path: "/tmp/y" });
    return { denied, written, again, read: await codemode.fs__read({}) };
"#;

/// Runs `CODE` with a 1 s timeout and a human who takes `think` to approve each write.
async fn run_with_slow_human(
    think: Duration,
) -> (codemode_runtime::EvalOutcome, Arc<MemoryAuditSink>) {
    let runtime = Runtime::new(&RuntimeConfig::default()).expect("runtime");
    let profile = Profile::from_json(
        "supervised",
        &json!({"denylist": ["fs__delete"], "asklist": ["fs__write"], "approvalTimeoutSeconds": 30}),
    )
    .expect("profile");
    let audit = Arc::new(MemoryAuditSink::new());
    let host = PolicyToolHost::builder(tools())
        .profile(Some(Arc::new(profile)))
        .approver(Arc::new(SlowYes(think)))
        .preview(Arc::new(extract_tool_calls(CODE)))
        .audit(audit.clone(), false)
        .build();
    let mut options = EvalOptions::default();
    options.timeout(Some(Duration::from_millis(1000)));
    (runtime.eval(CODE, &options, &host).await, audit)
}

fn check(outcome: &codemode_runtime::EvalOutcome, audit: &MemoryAuditSink) {
    assert!(outcome.ok, "{outcome:?}");
    assert_eq!(
        outcome.result,
        json!({
            "denied": ["ToolCallDeniedError", true, "fs__delete", "denied"],
            "written": "written",
            "again": "written",
            "read": "contents"
        })
    );
    let statuses: Vec<CallStatus> = outcome.tool_calls.iter().map(|c| c.status).collect();
    assert_eq!(
        statuses,
        [
            CallStatus::Denied,
            CallStatus::Ok,
            CallStatus::Ok,
            CallStatus::Ok
        ]
    );
    let decisions: Vec<(u64, Decision)> = audit
        .tool_calls()
        .iter()
        .map(|r| (r.call_id, r.decision))
        .collect();
    assert_eq!(
        decisions,
        [
            (1, Decision::Denied),
            (2, Decision::Approved),
            (3, Decision::Approved),
            (4, Decision::Allowed)
        ]
    );
}

/// Two approvals of 700 ms each: 1.4 s of human time in an eval limited to 1 s.
#[tokio::test]
async fn denials_reach_the_script_and_human_time_does_not_count() {
    let (outcome, audit) = run_with_slow_human(Duration::from_millis(700)).await;
    check(&outcome, &audit);
    assert!(outcome.stats.wall_ms > 1400.0, "{}", outcome.stats.wall_ms);
}

/// One approval longer than the eval's whole timeout.
#[tokio::test]
async fn a_single_approval_longer_than_the_timeout() {
    let (outcome, audit) = run_with_slow_human(Duration::from_millis(1300)).await;
    check(&outcome, &audit);
}

/// However a script reaches a denied tool — an alias of `codemode`, a computed name,
/// destructuring, `Reflect` — the decision is made on the name actually called, at run time, and
/// the tool is never reached.
#[tokio::test]
async fn aliased_and_computed_calls_of_a_denied_tool_are_still_denied() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let runtime = Runtime::new(&RuntimeConfig::default()).expect("runtime");
    let deletes = Arc::new(AtomicUsize::new(0));
    let counter = deletes.clone();
    let inner: Arc<dyn ToolHost> = Arc::new(FnTools::new().sync_tool("fs__delete", move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
        Ok(json!("deleted"))
    }));
    let profile =
        Arc::new(Profile::from_json("p", &json!({"denylist": ["fs__del*"]})).expect("profile"));
    let scripts = [
        "const c = codemode; return await c.fs__delete({})",
        "const k = ['fs', 'delete'].join('__'); return await codemode[k]({})",
        "const { fs__delete: d } = codemode; return await d({})",
        "return await Reflect.get(codemode, 'fs__' + 'delete')({})",
        "const call = (o, n) => o[n]({}); return await call(codemode, `fs__${'delete'}`)",
        "return await [codemode].map((c) => c)[0]['fs__delete']()",
    ];
    for code in scripts {
        let host = PolicyToolHost::builder(inner.clone())
            .profile(Some(profile.clone()))
            .preview(Arc::new(extract_tool_calls(code)))
            .build();
        let outcome = runtime.eval(code, &EvalOptions::default(), &host).await;
        assert!(!outcome.ok, "{code}: {outcome:?}");
        let error = outcome.error.as_ref().expect("error");
        assert_eq!(error.kind, ErrorKind::Exception, "{code}");
        assert_eq!(
            error.message,
            "ToolCallDeniedError: `fs__delete` (denylist glob `fs__del*` of profile `p`): denied",
            "{code}"
        );
        assert_eq!(outcome.tool_calls.len(), 1, "{code}");
        assert_eq!(outcome.tool_calls[0].tool, "fs__delete", "{code}");
        assert_eq!(outcome.tool_calls[0].status, CallStatus::Denied, "{code}");
    }
    assert_eq!(
        deletes.load(Ordering::SeqCst),
        0,
        "a denied tool was reached"
    );
}
