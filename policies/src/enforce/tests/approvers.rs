//! Who may decide an ask (`riskPolicies.<level>.approvers`) and every call of a level asked
//! (`riskPolicies.<level>.requireApproval`), as the enforcement layer applies them whatever the
//! channel.

use super::*;
use crate::Caller;

/// Answers every request with `answer`; `elsewhere` says whether an approver other than the
/// eval's caller could answer (the approval API).
struct OneAnswer {
    answer: ApprovalAnswer,
    elsewhere: bool,
    requests: Mutex<Vec<ApprovalRequest>>,
}

impl OneAnswer {
    fn new(answer: ApprovalAnswer, elsewhere: bool) -> Arc<Self> {
        Arc::new(OneAnswer {
            answer,
            elsewhere,
            requests: Mutex::new(Vec::new()),
        })
    }
    fn asked(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

impl Asker for OneAnswer {
    fn supports(&self) -> bool {
        true
    }
    fn channel(&self) -> Channel {
        self.answer.channel
    }
    fn approvers_elsewhere(&self) -> bool {
        self.elsewhere
    }
    fn ask(&self, ask: Ask) -> codemode_runtime::BoxFuture<'_, Reply> {
        Box::pin(async move {
            self.requests.lock().unwrap().push(approval_request(ask));
            self.answer.to_reply()
        })
    }
}

/// Everything allowed; `fs__delete` is critical, and critical calls need an approver holding
/// `approve:critical` and are always asked.
fn guarded(fallback: &str) -> Arc<Profile> {
    profile(json!({
        "risk": {"fs__delete": "critical"},
        "elicitationFallback": fallback,
        "riskPolicies": {"critical": {"approvers": ["approve:critical", "oncall"], "requireApproval": true}}
    }))
}

fn host(p: Arc<Profile>, caller: Caller, asker: Arc<dyn Asker>) -> Setup {
    let (calls, inner) = inner();
    let audit = Arc::new(MemoryAuditSink::new());
    let host = PolicyToolHost::builder(inner)
        .profile(Some(p))
        .asker(asker)
        .caller(caller)
        .audit(audit.clone(), false)
        .build();
    Setup { host, calls, audit }
}

fn message_of(r: &Result<Value, ToolError>) -> &str {
    match r {
        Err(ToolError::Denied { message, .. }) => message,
        other => panic!("not denied: {other:?}"),
    }
}

#[tokio::test]
async fn require_approval_asks_about_a_call_the_profile_allows() {
    let p = guarded("deny");
    let d = p.disposition("fs__delete", &json!({}));
    assert_eq!(
        (d.kind, &d.matched),
        (
            DispositionKind::Ask,
            &MatchedBy::RequireApproval(crate::Risk::Critical)
        )
    );
    assert_eq!(
        d.matched.to_string(),
        "riskPolicies.critical.requireApproval"
    );
    // Other levels are as the profile says.
    assert_eq!(
        p.disposition("fs__read", &json!({})).kind,
        DispositionKind::Allow
    );

    let lead = Caller::new("lead", ["approve:critical"]);
    let asker = OneAnswer::new(
        ApprovalAnswer::new(ApprovalDecision::ApproveOnce, Channel::Elicitation),
        false,
    );
    let s = host(p.clone(), lead, asker.clone());
    assert!(call(&s.host, "fs__delete", 1).await.is_ok());
    assert!(call(&s.host, "fs__read", 2).await.is_ok());
    assert_eq!((asker.asked(), s.calls.load(Ordering::SeqCst)), (1, 2));
    let recs = s.audit.tool_calls();
    assert_eq!(
        (
            recs[0].disposition,
            recs[0].decision,
            recs[0].approver_right.as_deref()
        ),
        (
            DispositionKind::Ask,
            Decision::Approved,
            Some("approve:critical")
        )
    );
    assert_eq!(
        (recs[1].disposition, recs[1].approver_right.as_deref()),
        (DispositionKind::Allow, None)
    );
}

#[tokio::test]
async fn a_level_that_requires_approval_is_never_let_through_unasked() {
    // `elicitationFallback: "allow"` lets other asks through when nobody can be asked; not these.
    let s = setup(
        Some(guarded("allow")),
        FakeApprover::unsupported(),
        SessionApprovals::new(),
    );
    let r = call(&s.host, "fs__delete", 1).await;
    assert_eq!(reason_of(&r), Some("elicitation_unsupported"));
    assert_eq!(s.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn without_another_approver_a_caller_lacking_the_right_is_denied_at_once() {
    let asker = OneAnswer::new(
        ApprovalAnswer::new(ApprovalDecision::ApproveOnce, Channel::Elicitation),
        false,
    );
    let s = host(
        guarded("allow"),
        Caller::new("agent", ["approve"]),
        asker.clone(),
    );
    let r = call(&s.host, "fs__delete", 1).await;
    assert_eq!(reason_of(&r), Some("permission"));
    assert_eq!(
        message_of(&r),
        "`fs__delete` needs approval by an approver: `agent` cannot decide a critical-risk ask: it needs one of the permissions `approve:critical`, `oncall` (riskPolicies.critical.approvers), and no other approver can be asked here (the HTTP approval API is not served); ask an approver to run it"
    );
    assert_eq!((asker.asked(), s.calls.load(Ordering::SeqCst)), (0, 0));
    let rec = &s.audit.tool_calls()[0];
    assert_eq!(
        (rec.decision, rec.channel),
        (Decision::Denied, Some(Channel::Fallback))
    );
}

#[tokio::test]
async fn an_approval_from_a_caller_without_the_right_never_takes_effect() {
    // A client that answers "approve" anyway (the form it was shown offered only to withdraw).
    let asker = OneAnswer::new(
        ApprovalAnswer::new(ApprovalDecision::ApproveOnce, Channel::Elicitation),
        true,
    );
    let s = host(
        guarded("deny"),
        Caller::new("agent", ["approve"]),
        asker.clone(),
    );
    let r = call(&s.host, "fs__delete", 1).await;
    assert_eq!(reason_of(&r), Some("elicitation_declined"));
    assert_eq!(
        message_of(&r),
        "`fs__delete` was not approved: `agent` cannot decide a critical-risk ask: it needs one of the permissions `approve:critical`, `oncall` (riskPolicies.critical.approvers), so the answer counts as a decline"
    );
    assert_eq!(s.calls.load(Ordering::SeqCst), 0);
    // The caller's prompt said so, and offered only to withdraw the call.
    let req = asker.requests.lock().unwrap()[0].clone();
    let q = req.question();
    assert!(
        q.message.contains(&format!(
            "You cannot approve it here: `agent` cannot decide a critical-risk ask: it needs one of the permissions `approve:critical`, `oncall` (riskPolicies.critical.approvers). It waits for such an approver on the HTTP approval API (request {}). Decline withdraws the call; Cancel only closes this prompt.",
            req.id
        )),
        "{}",
        q.message
    );
    let offered: Vec<&str> = q.schema["properties"]["decision"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["const"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["decline", "cancel"]);
    let rec = &s.audit.tool_calls()[0];
    assert_eq!(
        (rec.decision, rec.approver_right.as_deref()),
        (Decision::Declined, None)
    );

    // Withdrawing one's own call needs no right.
    let withdraw = OneAnswer::new(
        ApprovalAnswer::new(ApprovalDecision::Decline, Channel::Elicitation),
        true,
    );
    let s = host(guarded("deny"), Caller::new("agent", ["approve"]), withdraw);
    let r = call(&s.host, "fs__delete", 1).await;
    assert!(
        message_of(&r).starts_with("`fs__delete` was declined by"),
        "{r:?}"
    );
}

#[tokio::test]
async fn an_api_approval_counts_only_with_the_right_the_api_checked() {
    let by_api = |with: Option<&str>| {
        let mut answer =
            ApprovalAnswer::new(ApprovalDecision::ApproveOnce, Channel::Http).decided_by("lead");
        answer.decided_with = with.map(str::to_string);
        OneAnswer::new(answer, true)
    };
    let agent = || Caller::new("agent", ["approve"]);
    let s = host(guarded("deny"), agent(), by_api(Some("oncall")));
    assert!(call(&s.host, "fs__delete", 1).await.is_ok());
    let rec = &s.audit.tool_calls()[0];
    assert_eq!(
        (
            rec.channel,
            rec.decided_by.as_deref(),
            rec.approver_right.as_deref()
        ),
        (Some(Channel::Http), Some("lead"), Some("oncall"))
    );
    // An HTTP answer without a checked right (no channel sends one; defence in depth).
    let s = host(guarded("deny"), agent(), by_api(None));
    let r = call(&s.host, "fs__delete", 1).await;
    assert_eq!(reason_of(&r), Some("elicitation_declined"));
    assert!(
        message_of(&r).contains("`lead` cannot decide a critical-risk ask"),
        "{r:?}"
    );
}
