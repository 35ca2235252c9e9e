//! Tests of the enforcement layer, with tools that count their invocations and a scripted
//! approver.

mod approvers;
mod audit_fields;
mod classes;
mod concurrency;
mod decisions;
mod gated;
mod gateway;
mod joined;
mod queue;
mod remembered;
mod schemas;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codemode_runtime::{CallContext, CallStatus, EvalId, FnTools, ToolError, ToolHost};
use futures::future::join_all;
use serde_json::{Value, json};

use gated::GatedApprover;

use crate::audit::{Decision, MemoryAuditSink, ToolCallAuditRecord, args_sha256};
use crate::{
    ApprovalAnswer, ApprovalDecision, ApprovalRequest, Ask, AskKind, Asker, Channel,
    DispositionKind, MatchedBy, PolicyToolHost, Profile, Reply, SessionApprovals,
};
use codemode_script::{Preview, extract_tool_calls};

const TOOLS: &[&str] = &[
    "fs__read",
    "fs__write",
    "fs__delete",
    "time__now",
    "web__get",
    "a",
    "b",
    "c",
    "d",
    "e",
];

/// Tools that count their invocations; `fail` always fails.
fn inner() -> (Arc<AtomicUsize>, Arc<dyn ToolHost>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut tools = FnTools::new().sync_tool("fail", |_| Err(ToolError::failed("boom")));
    for name in TOOLS {
        let calls = calls.clone();
        tools = tools.sync_tool(*name, move |args| {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(json!({"echo": args}))
        });
    }
    (calls, Arc::new(tools))
}

fn profile(v: Value) -> Arc<Profile> {
    Arc::new(Profile::from_json("p", &v).unwrap_or_else(|e| panic!("{e}")))
}

/// Answers `answer` after `delay`, and remembers what it was asked.
struct FakeApprover {
    supports: bool,
    answer: ApprovalDecision,
    delay: Duration,
    requests: Mutex<Vec<ApprovalRequest>>,
}

impl FakeApprover {
    fn new(answer: ApprovalDecision, delay: Duration) -> Arc<Self> {
        Arc::new(FakeApprover {
            supports: true,
            answer,
            delay,
            requests: Mutex::new(Vec::new()),
        })
    }
    fn unsupported() -> Arc<Self> {
        Arc::new(FakeApprover {
            supports: false,
            answer: ApprovalDecision::ApproveOnce,
            delay: Duration::ZERO,
            requests: Mutex::new(Vec::new()),
        })
    }
    fn asked(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

impl Asker for FakeApprover {
    fn supports(&self) -> bool {
        self.supports
    }
    fn channel(&self) -> Channel {
        Channel::Elicitation
    }
    fn ask(&self, ask: Ask) -> codemode_runtime::BoxFuture<'_, Reply> {
        Box::pin(async move {
            self.requests.lock().unwrap().push(approval_request(ask));
            tokio::time::sleep(self.delay).await;
            ApprovalAnswer::new(self.answer, Channel::Elicitation).to_reply()
        })
    }
}

/// The approval request an ask is about (the enforcement layer asks nothing else).
fn approval_request(ask: Ask) -> ApprovalRequest {
    match ask.kind {
        AskKind::Approval(req) => *req,
        other => panic!("not an approval: {other:?}"),
    }
}

struct Setup {
    host: PolicyToolHost,
    calls: Arc<AtomicUsize>,
    audit: Arc<MemoryAuditSink>,
}

fn setup(p: Option<Arc<Profile>>, approver: Arc<dyn Asker>, session: SessionApprovals) -> Setup {
    let (calls, inner) = inner();
    let audit = Arc::new(MemoryAuditSink::new());
    let host = PolicyToolHost::builder(inner)
        .profile(p)
        .asker(approver)
        .session_approvals(session)
        .audit(audit.clone(), false)
        .build();
    Setup { host, calls, audit }
}

async fn call(h: &PolicyToolHost, tool: &str, call_id: u64) -> Result<Value, ToolError> {
    h.call(
        tool,
        json!({"path": "/x"}),
        &CallContext::detached(EvalId(1), call_id),
    )
    .await
}

fn reason_of(r: &Result<Value, ToolError>) -> Option<&str> {
    match r {
        Err(ToolError::Denied { reason, .. }) => Some(reason),
        _ => None,
    }
}

fn supervised() -> Value {
    json!({
        "allowlist": ["fs__*", "time__*", "a", "b", "c", "d", "e"],
        "denylist": ["fs__delete"],
        "asklist": ["fs__write", "a", "b", "c", "d", "e"],
        "approvalTimeoutSeconds": 0.2,
        "maxPendingApprovals": 2,
        "rules": [{"tools": ["time__*"], "when": {"/path": "^/x$"}, "disposition": "ask", "reason": "clock"}]
    })
}

const FAST: Duration = Duration::from_millis(1);
const SLOW: Duration = Duration::from_secs(30);
/// One record per call id, ids `1..=n`.
fn assert_exactly_once(recs: &[ToolCallAuditRecord], n: u64) {
    let mut ids: Vec<u64> = recs.iter().map(|r| r.call_id).collect();
    ids.sort_unstable();
    assert_eq!(ids, (1..=n).collect::<Vec<_>>());
}
