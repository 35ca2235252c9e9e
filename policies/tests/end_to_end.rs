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

/// Answers by tool: approve `fs__write` for the session (which a critical risk forbids),
/// decline anything else with a reason; remembers each request's tool and risk.
struct ByTool(std::sync::Mutex<Vec<(String, codemode_policies::Risk)>>);

impl Approver for ByTool {
    fn supports(&self) -> bool {
        true
    }
    fn approve(&self, req: ApprovalRequest) -> BoxFuture<'_, ApprovalAnswer> {
        self.0.lock().unwrap().push((req.tool.clone(), req.risk));
        let answer = if req.tool == "fs__write" {
            ApprovalAnswer::new(ApprovalDecision::ApproveToolForSession, Channel::Http)
                .with_reason(Some("fine".into()))
        } else {
            ApprovalAnswer::new(ApprovalDecision::Decline, Channel::Http)
                .with_reason(Some("not on a Friday".into()))
                .decided_by("alice")
        };
        Box::pin(async move { answer })
    }
}

/// The gateway's decisions as a script sees them: a rule's missing permission, an answer the
/// risk policy forbids, a decline's reason, the absolute denylist and `defaultDisposition`.
#[tokio::test]
async fn permissions_risk_policies_and_decline_reasons_reach_the_script() {
    use codemode_policies::{Caller, Risk};
    let runtime = Runtime::new(&RuntimeConfig::default()).expect("runtime");
    let inner: Arc<dyn ToolHost> = Arc::new(
        FnTools::new()
            .sync_tool("fs__read", |_| Ok(json!("contents")))
            .sync_tool("fs__write", |_| Ok(json!("written")))
            .sync_tool("fs__delete", |_| Ok(json!("deleted")))
            .sync_tool("pay__refund", |_| Ok(json!("refunded")))
            .sync_tool("web__get", |_| Ok(json!("page"))),
    );
    let profile = Profile::from_json(
        "gateway",
        &json!({
            "denylist": ["fs__delete"],
            "asklist": ["fs__write"],
            "defaultDisposition": "ask",
            "risk": {"fs__write": "critical", "fs__read": "low"},
            "riskPolicies": {"critical": {"allowSessionApproval": false}},
            "rules": [
                {"tools": ["fs__delete"], "disposition": "allow"},
                {"tools": ["fs__read"], "disposition": "allow"},
                {"tools": ["pay__*"], "disposition": "ask", "requirePermissions": ["payments"]}
            ]
        }),
    )
    .expect("profile");
    let code = r#"
        const out = {};
        for (const [name, tool] of [["delete", "fs__delete"], ["write", "fs__write"],
                                    ["refund", "pay__refund"], ["web", "web__get"],
                                    ["read", "fs__read"]]) {
          try {
            out[name] = await codemode[tool]({});
          } catch (e) {
            out[name] = [e.name, e.reason, e.message];
          }
        }
        return out;
    "#;
    let approver = Arc::new(ByTool(std::sync::Mutex::new(Vec::new())));
    let audit = Arc::new(MemoryAuditSink::new());
    let host = PolicyToolHost::builder(inner)
        .profile(Some(Arc::new(profile)))
        .approver(approver.clone())
        .caller(Caller::new("ci", ["deploy"]))
        .preview(Arc::new(extract_tool_calls(code)))
        .audit(audit.clone(), false)
        .build();
    let outcome = runtime.eval(code, &EvalOptions::default(), &host).await;
    assert!(outcome.ok, "{outcome:?}");
    let denied = "ToolCallDeniedError";
    assert_eq!(
        outcome.result,
        json!({
            "delete": [denied, "denied", "`fs__delete` (denylist glob `fs__delete` of profile `gateway`): denied"],
            "write": [denied, "elicitation_declined", "`fs__write` (asklist glob `fs__write` of profile `gateway`) was not approved: the answer \"approve for this session\" was refused (approving for the rest of the session is not allowed at this risk level; risk critical), so it counts as a decline"],
            "refund": [denied, "permission", "`pay__refund` (rules[2] of profile `gateway`): denied: caller `ci` lacks the permission `payments`"],
            "web": [denied, "elicitation_declined", "`web__get` (no list or rule matched of profile `gateway`) was declined by `alice`: not on a Friday"],
            "read": "contents"
        })
    );
    assert_eq!(
        *approver.0.lock().unwrap(),
        [
            ("fs__write".to_string(), Risk::Critical),
            ("web__get".to_string(), Risk::High)
        ]
    );
    let recs = audit.tool_calls();
    type Row<'a> = (
        &'a str,
        &'a str,
        Risk,
        Option<Channel>,
        Option<&'a str>,
        Option<&'a str>,
    );
    let rows: Vec<Row<'_>> = recs
        .iter()
        .map(|r| {
            (
                r.tool.as_str(),
                r.caller.as_str(),
                r.risk,
                r.channel,
                r.decided_by.as_deref(),
                r.reason.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("fs__delete", "ci", Risk::Medium, None, None, Some("denied")),
            (
                "fs__write",
                "ci",
                Risk::Critical,
                Some(Channel::Http),
                None,
                Some("elicitation_declined")
            ),
            (
                "pay__refund",
                "ci",
                Risk::Medium,
                None,
                None,
                Some("permission")
            ),
            (
                "web__get",
                "ci",
                Risk::High,
                Some(Channel::Http),
                Some("alice"),
                Some("elicitation_declined")
            ),
            ("fs__read", "ci", Risk::Low, None, None, None),
        ]
    );
    assert_eq!(recs[3].decision_reason.as_deref(), Some("not on a Friday"));
}
