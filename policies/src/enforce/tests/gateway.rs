//! Who calls and who decides: rules' permissions, risk policies, a decline's reason, approvals
//! bound to the caller and the profile, and the per-call audit fields.

use super::*;
use crate::{Caller, Risk, RiskPolicy};

/// Answers every request with `answer`, and remembers what it was asked.
struct Scripted {
    answer: ApprovalAnswer,
    requests: Mutex<Vec<ApprovalRequest>>,
}

impl Scripted {
    fn new(answer: ApprovalAnswer) -> Arc<Self> {
        Arc::new(Scripted {
            answer,
            requests: Mutex::new(Vec::new()),
        })
    }
    fn asked(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

impl Asker for Scripted {
    fn supports(&self) -> bool {
        true
    }
    fn channel(&self) -> Channel {
        self.answer.channel
    }
    fn ask(&self, ask: Ask) -> codemode_runtime::BoxFuture<'_, Reply> {
        Box::pin(async move {
            self.requests.lock().unwrap().push(approval_request(ask));
            self.answer.to_reply()
        })
    }
}

fn host(
    p: Value,
    name: &str,
    caller: Caller,
    approver: Arc<dyn Asker>,
    session: SessionApprovals,
) -> (PolicyToolHost, Arc<AtomicUsize>, Arc<MemoryAuditSink>) {
    let (calls, inner) = inner();
    let audit = Arc::new(MemoryAuditSink::new());
    let profile = Arc::new(Profile::from_json(name, &p).unwrap_or_else(|e| panic!("{e}")));
    let host = PolicyToolHost::builder(inner)
        .profile(Some(profile))
        .asker(approver)
        .session_approvals(session)
        .caller(caller)
        .audit(audit.clone(), false)
        .build();
    (host, calls, audit)
}

fn message_of(r: &Result<Value, ToolError>) -> &str {
    match r {
        Err(ToolError::Denied { message, .. }) => message,
        other => panic!("not denied: {other:?}"),
    }
}

fn gateway() -> Value {
    json!({
        "asklist": ["fs__*"],
        "risk": {"fs__delete": "critical", "fs__write": "high"},
        "riskPolicies": {
            "critical": {"approvalTimeoutSeconds": 300, "allowSessionApproval": false,
                         "allowEvalApproval": false, "requireReason": true}
        },
        "rules": [
            {"tools": ["fs__delete"], "disposition": "ask", "requirePermissions": ["destructive"]},
            {"tools": ["web__get"], "disposition": "allow", "requirePermissions": ["web", "net"], "risk": "low"}
        ]
    })
}

#[tokio::test]
async fn a_rule_denies_callers_without_its_permissions() {
    let approve = || {
        Scripted::new(
            ApprovalAnswer::new(ApprovalDecision::ApproveOnce, Channel::Http)
                .with_reason(Some("ok".into())),
        )
    };
    let cases: Vec<(Caller, &str, Option<&str>, Option<&str>)> = vec![
        // (caller, tool, denial reason, message)
        (
            Caller::local(),
            "fs__delete",
            Some("permission"),
            Some(
                "`fs__delete` needs the permission `destructive` under profile `gw`, which caller `local` lacks",
            ),
        ),
        (
            Caller::new("ci", ["web"]),
            "web__get",
            Some("permission"),
            Some(
                "`web__get` needs the permission `net` under profile `gw`, which caller `ci` lacks",
            ),
        ),
        (
            Caller::new("ci", ["x"]),
            "web__get",
            Some("permission"),
            Some(
                "`web__get` needs the permissions `web`, `net` under profile `gw`, which caller `ci` lacks",
            ),
        ),
        (
            Caller::new("ops", ["destructive"]),
            "fs__delete",
            None,
            None,
        ),
        (Caller::new("ci", ["web", "net"]), "web__get", None, None),
        // calls no permission-requiring rule matches
        (Caller::local(), "time__now", None, None),
    ];
    for (caller, tool, reason, message) in cases {
        let approver = approve();
        let (h, calls, audit) = host(
            gateway(),
            "gw",
            caller.clone(),
            approver.clone(),
            SessionApprovals::new(),
        );
        let r = call(&h, tool, 1).await;
        assert_eq!(reason_of(&r), reason, "{caller:?} {tool}: {r:?}");
        if let Some(expected) = message {
            assert_eq!(message_of(&r), expected);
            assert_eq!(calls.load(Ordering::SeqCst), 0);
            assert_eq!(
                approver.asked(),
                0,
                "nobody is asked for a caller without permission"
            );
        }
        let rec = &audit.tool_calls()[0];
        assert_eq!(rec.caller, caller.name);
        if reason.is_some() {
            assert_eq!(rec.reason.as_deref(), reason);
            assert_eq!(
                (rec.decision, rec.status, rec.channel),
                (Decision::Denied, CallStatus::Denied, None)
            );
        } else {
            assert_eq!(rec.status, CallStatus::Ok);
        }
    }
}

#[tokio::test]
async fn requests_carry_the_risk_and_its_policy() {
    let approver = Scripted::new(
        ApprovalAnswer::new(ApprovalDecision::ApproveOnce, Channel::Http)
            .with_reason(Some("checked".into()))
            .decided_by("ops"),
    );
    let (h, calls, audit) = host(
        gateway(),
        "gw",
        Caller::new("agent", ["destructive"]),
        approver.clone(),
        SessionApprovals::new(),
    );
    assert!(call(&h, "fs__delete", 1).await.is_ok());
    assert!(call(&h, "fs__write", 2).await.is_ok());
    assert!(call(&h, "fs__read", 3).await.is_ok());
    let reqs = approver.requests.lock().unwrap();
    let got: Vec<(Risk, Duration, bool)> = reqs
        .iter()
        .map(|r| (r.risk, r.timeout, r.risk_policy.allow_session_approval))
        .collect();
    assert_eq!(
        got,
        [
            (Risk::Critical, Duration::from_secs(300), false),
            (Risk::High, Duration::from_secs(60), true),
            (Risk::Medium, Duration::from_secs(60), true),
        ]
    );
    assert_eq!(
        reqs[0].risk_policy.allowed_decisions(),
        RiskPolicy {
            approval_timeout: Some(Duration::from_secs(300)),
            allow_eval_approval: false,
            allow_session_approval: false,
            require_reason: true,
            ..RiskPolicy::default()
        }
        .allowed_decisions()
    );
    assert_eq!(reqs[0].caller.name, "agent");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let recs = audit.tool_calls();
    type Row<'a> = (
        Risk,
        Option<Channel>,
        Option<&'a str>,
        Option<&'a str>,
        Decision,
    );
    let fields: Vec<Row<'_>> = recs
        .iter()
        .map(|r| {
            (
                r.risk,
                r.channel,
                r.decided_by.as_deref(),
                r.decision_reason.as_deref(),
                r.decision,
            )
        })
        .collect();
    assert_eq!(
        fields,
        [
            (
                Risk::Critical,
                Some(Channel::Http),
                Some("ops"),
                Some("checked"),
                Decision::Approved
            ),
            (
                Risk::High,
                Some(Channel::Http),
                Some("ops"),
                Some("checked"),
                Decision::Approved
            ),
            (
                Risk::Medium,
                Some(Channel::Http),
                Some("ops"),
                Some("checked"),
                Decision::Approved
            ),
        ]
    );
}

/// An answer the risk policy forbids never takes effect, whichever channel returned it.
#[tokio::test]
async fn answers_the_risk_policy_forbids_are_declines() {
    use ApprovalDecision::*;
    let cases: Vec<(ApprovalDecision, Option<&str>, &str)> = vec![
        (
            ApproveToolForSession,
            Some("fine"),
            "the answer \"approve for this session\" was refused (approving for the rest of the session is not allowed at this risk level; risk critical), so it counts as a decline",
        ),
        (
            ApproveToolForEval,
            Some("fine"),
            "the answer \"approve for this script\" was refused (approving for the rest of the script is not allowed at this risk level; risk critical), so it counts as a decline",
        ),
        (
            ApproveOnce,
            None,
            "the answer \"approve once\" was refused (a reason is required at this risk level; risk critical), so it counts as a decline",
        ),
        (
            ApproveOnce,
            Some("  "),
            "the answer \"approve once\" was refused (a reason is required at this risk level; risk critical), so it counts as a decline",
        ),
    ];
    for (decision, reason, want) in cases {
        let approver = Scripted::new(
            ApprovalAnswer::new(decision, Channel::Elicitation)
                .with_reason(reason.map(str::to_string)),
        );
        let session = SessionApprovals::new();
        let (h, calls, audit) = host(
            gateway(),
            "gw",
            Caller::new("ops", ["destructive"]),
            approver.clone(),
            session.clone(),
        );
        let r = call(&h, "fs__delete", 1).await;
        assert_eq!(reason_of(&r), Some("elicitation_declined"), "{decision:?}");
        let m = message_of(&r);
        assert!(m.ends_with(want), "{m}");
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        // Nothing was remembered: the next call asks again.
        assert!(session.is_empty());
        let _ = call(&h, "fs__delete", 2).await;
        assert_eq!(approver.asked(), 2, "{decision:?}");
        let rec = &audit.tool_calls()[0];
        assert_eq!(
            (rec.decision, rec.channel),
            (Decision::Declined, Some(Channel::Elicitation))
        );
        assert!(
            rec.decision_reason
                .as_deref()
                .unwrap()
                .starts_with("refused answer ("),
            "{:?}",
            rec.decision_reason
        );
    }
    // Declining needs a reason too at this risk; a dismissal never does.
    let approver = Scripted::new(ApprovalAnswer::new(Cancel, Channel::Terminal));
    let (h, _, _) = host(
        gateway(),
        "gw",
        Caller::new("ops", ["destructive"]),
        approver,
        SessionApprovals::new(),
    );
    let r = call(&h, "fs__delete", 1).await;
    assert_eq!(message_of(&r), "`fs__delete` was declined by the user");
}

#[tokio::test]
async fn a_decline_carries_its_reason_to_the_script_and_the_audit() {
    let cases: Vec<(ApprovalAnswer, &str)> = vec![
        (
            ApprovalAnswer::new(ApprovalDecision::Decline, Channel::Http)
                .with_reason(Some("use the staging bucket".into()))
                .decided_by("alice"),
            "`fs__write` was declined by `alice`: use the staging bucket",
        ),
        (
            ApprovalAnswer::new(ApprovalDecision::Decline, Channel::Elicitation)
                .with_reason(Some("no".into())),
            "`fs__write` was declined by the user: no",
        ),
        (
            ApprovalAnswer::new(ApprovalDecision::Decline, Channel::Terminal),
            "`fs__write` was declined by the user",
        ),
    ];
    for (answer, want) in cases {
        let (h, _, audit) = host(
            gateway(),
            "gw",
            Caller::local(),
            Scripted::new(answer.clone()),
            SessionApprovals::new(),
        );
        let r = call(&h, "fs__write", 1).await;
        assert_eq!(reason_of(&r), Some("elicitation_declined"));
        assert_eq!(message_of(&r), want);
        let rec = &audit.tool_calls()[0];
        assert_eq!(
            (
                rec.channel,
                rec.decided_by.clone(),
                rec.decision_reason.clone(),
                rec.risk
            ),
            (
                Some(answer.channel),
                // An elicitation that names nobody was answered by the eval's own caller.
                answer.decided_by.or_else(|| Some("local".into())),
                answer.reason,
                Risk::High
            )
        );
    }
}

/// A client that sends a decision the form did not offer (or none) approves nothing, and is not
/// reported as a human's decline: the script and the audit say what happened.
#[tokio::test]
async fn an_answer_the_form_did_not_offer_is_no_human_decline() {
    let cases = [
        ("approve_forever", "approve_forever"),
        ("", ""),
        ("ok\u{202e}", "ok\\u202e"),
    ];
    for (sent, shown) in cases {
        let (h, calls, audit) = host(
            gateway(),
            "gw",
            Caller::local(),
            Scripted::new(ApprovalAnswer::not_offered(sent, Channel::Elicitation)),
            SessionApprovals::new(),
        );
        let r = call(&h, "fs__write", 1).await;
        assert_eq!(reason_of(&r), Some("elicitation_declined"));
        assert_eq!(
            message_of(&r),
            format!(
                "`fs__write` was not approved: the answer \"{shown}\" is not one the form offered, so it counts as a decline"
            )
        );
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        let rec = &audit.tool_calls()[0];
        assert_eq!(
            (rec.decision, rec.channel, rec.decision_reason.clone()),
            (
                Decision::Declined,
                Some(Channel::Elicitation),
                Some(format!("answer not offered (\"{shown}\")"))
            )
        );
    }
}

/// A session approval covers the same caller under the same profile only.
#[tokio::test]
async fn session_approvals_cross_neither_profiles_nor_callers() {
    let session = SessionApprovals::new();
    let ask = json!({"asklist": ["fs__write"], "rules": [{"tools": ["time__now"], "disposition": "ask"}]});
    let approve = || {
        Scripted::new(ApprovalAnswer::new(
            ApprovalDecision::ApproveToolForSession,
            Channel::Elicitation,
        ))
    };
    let alice = Caller::new("alice", ["x"]);
    // alice approves fs__write and time__now for the session, under profile `one`.
    let first = approve();
    let (h, _, _) = host(
        ask.clone(),
        "one",
        alice.clone(),
        first.clone(),
        session.clone(),
    );
    assert!(call(&h, "fs__write", 1).await.is_ok());
    assert!(call(&h, "time__now", 2).await.is_ok());
    assert_eq!(first.asked(), 2);

    // (profile, caller, asked again?)
    let cases: Vec<(&str, Caller, bool)> = vec![
        ("one", alice.clone(), false),
        ("two", alice.clone(), true),
        ("one", Caller::new("mallory", ["x"]), true),
        ("one", Caller::local(), true),
    ];
    for (profile, caller, asks) in cases {
        let approver = Scripted::new(ApprovalAnswer::new(
            ApprovalDecision::Decline,
            Channel::Elicitation,
        ));
        let (h, calls, audit) = host(
            ask.clone(),
            profile,
            caller.clone(),
            approver.clone(),
            session.clone(),
        );
        let w = call(&h, "fs__write", 1).await;
        let t = call(&h, "time__now", 2).await;
        assert_eq!(
            approver.asked(),
            if asks { 2 } else { 0 },
            "{profile} {caller:?}"
        );
        assert_eq!(w.is_ok(), !asks);
        assert_eq!(t.is_ok(), !asks);
        assert_eq!(calls.load(Ordering::SeqCst), if asks { 0 } else { 2 });
        let channels: Vec<Option<Channel>> = audit.tool_calls().iter().map(|r| r.channel).collect();
        let want = if asks {
            Channel::Elicitation
        } else {
            Channel::Policy
        };
        assert_eq!(channels, [Some(want), Some(want)]);
    }
}

#[tokio::test]
async fn channels_of_the_audit() {
    // No ask: no channel. Fallback: `fallback`.
    let p = json!({"asklist": ["fs__write"], "denylist": ["fs__delete"], "elicitationFallback": "allow"});
    let (h, _, audit) = host(
        p,
        "gw",
        Caller::local(),
        FakeApprover::unsupported(),
        SessionApprovals::new(),
    );
    assert!(call(&h, "fs__read", 1).await.is_ok());
    assert!(call(&h, "fs__delete", 2).await.is_err());
    assert!(call(&h, "fs__write", 3).await.is_ok());
    let recs = audit.tool_calls();
    let got: Vec<(Option<Channel>, Decision)> =
        recs.iter().map(|r| (r.channel, r.decision)).collect();
    assert_eq!(
        got,
        [
            (None, Decision::Allowed),
            (None, Decision::Denied),
            (Some(Channel::Fallback), Decision::Unsupported),
        ]
    );
    assert!(
        audit
            .tool_calls()
            .iter()
            .all(|r| r.caller == "local" && r.risk == Risk::Medium)
    );
}

async fn write(h: &PolicyToolHost, path: &str, id: u64) -> Result<Value, ToolError> {
    h.call(
        "fs__write",
        json!({ "path": path }),
        &CallContext::detached(EvalId(1), id),
    )
    .await
}

/// A session approval given for a call of one risk does not cover a call of the same tool (and
/// the same deciding rule) whose risk forbids session approvals.
#[tokio::test]
async fn remembered_approvals_respect_the_risk_of_the_later_call() {
    let p = json!({
        "rules": [
            {"tools": ["fs__write"], "disposition": "ask"},
            {"tools": ["fs__write"], "when": {"/path": "^/etc"}, "disposition": "deny", "risk": "critical"}
        ],
        "riskPolicies": {"critical": {"allowSessionApproval": false}}
    });
    let session = SessionApprovals::new();
    let approver = Scripted::new(ApprovalAnswer::new(
        ApprovalDecision::ApproveToolForSession,
        Channel::Elicitation,
    ));
    let (h, _, audit) = host(p, "gw", Caller::local(), approver.clone(), session.clone());
    assert!(write(&h, "/tmp/a", 1).await.is_ok());
    assert!(write(&h, "/tmp/b", 2).await.is_ok());
    assert_eq!(
        approver.asked(),
        1,
        "the session approval covers the medium-risk call"
    );
    // Same rule decides (rules[0]), but the risk is critical: asked again, and the session
    // answer is refused there.
    let r = write(&h, "/etc/passwd", 3).await;
    assert_eq!(reason_of(&r), Some("elicitation_declined"));
    assert_eq!(approver.asked(), 2);
    let risks: Vec<(Risk, Option<Channel>)> = audit
        .tool_calls()
        .iter()
        .map(|r| (r.risk, r.channel))
        .collect();
    assert_eq!(
        risks,
        [
            (Risk::Medium, Some(Channel::Elicitation)),
            (Risk::Medium, Some(Channel::Policy)),
            (Risk::Critical, Some(Channel::Elicitation)),
        ]
    );
}

/// Red team: a session approval was keyed by the rule's *index*, and the server keeps a
/// session's approvals across a config reload. A reload that put a wider rule at the same
/// index (same profile name, same tool) let an approval given for the narrow rule cover calls
/// the human never saw: "fs__write under /tmp" approved for the session covered a write to
/// /etc/passwd once rules[0] no longer had the `when`. Approvals are now bound to the rule's
/// content; an unchanged rule keeps them.
#[tokio::test]
async fn a_session_approval_does_not_carry_over_to_a_different_rule_at_the_same_index() {
    let session = SessionApprovals::new();
    let v1 = json!({"rules": [
        {"tools": ["fs__write"], "when": {"/path": "^/tmp/"}, "disposition": "ask", "reason": "scratch files"},
        {"tools": ["fs__write"], "disposition": "deny"}
    ]});
    let approve = Scripted::new(ApprovalAnswer::new(
        ApprovalDecision::ApproveToolForSession,
        Channel::Elicitation,
    ));
    let (h, _, _) = host(v1, "gw", Caller::local(), approve.clone(), session.clone());
    assert!(write(&h, "/tmp/a", 1).await.is_ok());
    assert_eq!(approve.asked(), 1);
    assert_eq!(
        reason_of(&write(&h, "/etc/passwd", 2).await),
        Some("denied")
    );

    // The config is reloaded: same profile, rules[0] is now another (wider) rule.
    let v2 = json!({"rules": [
        {"tools": ["fs__write"], "disposition": "ask", "reason": "any file, system files included"}
    ]});
    let decline = Scripted::new(ApprovalAnswer::new(
        ApprovalDecision::Decline,
        Channel::Elicitation,
    ));
    let (h, calls, _) = host(v2, "gw", Caller::local(), decline.clone(), session.clone());
    let r = write(&h, "/etc/passwd", 3).await;
    assert_eq!(
        decline.asked(),
        1,
        "the new rules[0] must be asked about, not covered by the old rule's approval"
    );
    assert_eq!(reason_of(&r), Some("elicitation_declined"));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

/// Red team, contained: attempts to get past the absolute denylist, `defaultDisposition`, a
/// rule's `when` and its `requirePermissions`, with the exact reason, message, audit decision
/// and whether a human was asked. A rule allowing a denylisted tool (even for a caller holding
/// its permission) changes nothing; a missing permission denies before anyone is asked; a
/// `when` on a string does not match the same path wrapped in an array.
#[tokio::test]
async fn red_team_policy_bypass_attempts_are_contained() {
    let p = json!({
        "denylist": ["fs__delete"],
        "asklist": ["fs__write"],
        "defaultDisposition": "deny",
        "rules": [
            {"tools": ["fs__delete"], "disposition": "allow", "requirePermissions": ["destructive"],
             "reason": "ops may delete"},
            {"tools": ["fs__*"], "disposition": "allow", "when": {"/path": "^/tmp/"}},
            {"tools": ["time__now"], "disposition": "ask", "requirePermissions": ["clock"]}
        ]
    });
    let ops = Caller::new("ops", ["destructive", "clock"]);
    let local = Caller::local();
    // (caller, tool, args, denial reason, message, audit decision, asked)
    type Case<'a> = (
        &'a Caller,
        &'a str,
        Value,
        Option<&'a str>,
        &'a str,
        Decision,
        usize,
    );
    let cases: Vec<Case> = vec![
        (
            &ops,
            "fs__delete",
            json!({}),
            Some("denied"),
            "profile `gw` does not allow `fs__delete`",
            Decision::Denied,
            0,
        ),
        (
            &local,
            "fs__delete",
            json!({}),
            Some("denied"),
            "profile `gw` does not allow `fs__delete`",
            Decision::Denied,
            0,
        ),
        (
            &local,
            "fs__write",
            json!({"path": "/tmp/x"}),
            None,
            "",
            Decision::Allowed,
            0,
        ),
        (
            &local,
            "fs__write",
            json!({"path": "/etc/x"}),
            Some("elicitation_declined"),
            "`fs__write` was declined by the user",
            Decision::Declined,
            1,
        ),
        (
            &local,
            "fs__write",
            json!({"path": ["/tmp/x"]}),
            Some("elicitation_declined"),
            "`fs__write` was declined by the user",
            Decision::Declined,
            1,
        ),
        (
            &local,
            "fs__read",
            json!({"path": "/tmp/x"}),
            None,
            "",
            Decision::Allowed,
            0,
        ),
        (
            &local,
            "time__now",
            json!({}),
            Some("permission"),
            "`time__now` needs the permission `clock` under profile `gw`, which caller `local` lacks",
            Decision::Denied,
            0,
        ),
        (
            &ops,
            "time__now",
            json!({}),
            Some("elicitation_declined"),
            "`time__now` was declined by the user",
            Decision::Declined,
            1,
        ),
        (
            &ops,
            "web__get",
            json!({}),
            Some("denied"),
            "profile `gw` does not allow `web__get`",
            Decision::Denied,
            0,
        ),
    ];
    for (caller, tool, args, reason, message, decision, asked) in cases {
        let approver = Scripted::new(ApprovalAnswer::new(
            ApprovalDecision::Decline,
            Channel::Elicitation,
        ));
        let (h, calls, audit) = host(
            p.clone(),
            "gw",
            caller.clone(),
            approver.clone(),
            SessionApprovals::new(),
        );
        let r = h
            .call(tool, args.clone(), &CallContext::detached(EvalId(1), 1))
            .await;
        let what = format!("{} {tool} {args}", caller.name);
        assert_eq!(reason_of(&r), reason, "{what}: {r:?}");
        if reason.is_some() {
            assert_eq!(message_of(&r), message, "{what}");
            assert_eq!(
                calls.load(Ordering::SeqCst),
                0,
                "{what}: the tool was reached"
            );
        } else {
            assert_eq!(calls.load(Ordering::SeqCst), 1, "{what}");
        }
        assert_eq!(approver.asked(), asked, "{what}");
        let recs = audit.tool_calls();
        assert_eq!(recs.len(), 1, "{what}");
        assert_eq!(recs[0].decision, decision, "{what}");
        if reason.is_some() {
            assert_eq!(recs[0].reason.as_deref(), reason, "{what}");
        }
    }
}

/// The other side of the above: a reload that leaves the deciding rule as it was keeps the
/// session's approval (a new `Profile` with the same rule at the same index).
#[tokio::test]
async fn a_session_approval_survives_a_reload_that_keeps_its_rule() {
    let session = SessionApprovals::new();
    let p = json!({"rules": [
        {"tools": ["fs__write"], "when": {"/path": "^/tmp/"}, "disposition": "ask", "reason": "scratch files"}
    ]});
    let approve = Scripted::new(ApprovalAnswer::new(
        ApprovalDecision::ApproveToolForSession,
        Channel::Elicitation,
    ));
    let (h, _, _) = host(
        p.clone(),
        "gw",
        Caller::local(),
        approve.clone(),
        session.clone(),
    );
    assert!(write(&h, "/tmp/a", 1).await.is_ok());
    let mut reloaded = p;
    reloaded["asklist"] = json!(["web__*"]);
    let decline = Scripted::new(ApprovalAnswer::new(
        ApprovalDecision::Decline,
        Channel::Elicitation,
    ));
    let (h, calls, _) = host(reloaded, "gw", Caller::local(), decline.clone(), session);
    assert!(write(&h, "/tmp/b", 2).await.is_ok());
    assert_eq!(decline.asked(), 0);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
