use super::*;

/// One call each: what came back, whether the tool ran, and its audit record.
#[tokio::test]
async fn single_calls() {
    use ApprovalDecision::*;
    type Case = (
        &'static str,
        Option<Arc<FakeApprover>>,
        Value,
        Option<&'static str>,
        Decision,
        DispositionKind,
    );
    let ask = DispositionKind::Ask;
    let cases: Vec<Case> = vec![
        // (tool, approver (None: unsupported), profile, denial reason, decision, disposition)
        (
            "fs__read",
            None,
            supervised(),
            None,
            Decision::Allowed,
            DispositionKind::Allow,
        ),
        (
            "fs__delete",
            None,
            supervised(),
            Some("denied"),
            Decision::Denied,
            DispositionKind::Deny,
        ),
        (
            "web__get",
            None,
            supervised(),
            Some("denied"),
            Decision::Denied,
            DispositionKind::Deny,
        ),
        (
            "fs__write",
            Some(FakeApprover::new(ApproveOnce, FAST)),
            supervised(),
            None,
            Decision::Approved,
            ask,
        ),
        (
            "time__now",
            Some(FakeApprover::new(ApproveOnce, FAST)),
            supervised(),
            None,
            Decision::Approved,
            ask,
        ),
        (
            "fs__write",
            Some(FakeApprover::new(Decline, FAST)),
            supervised(),
            Some("elicitation_declined"),
            Decision::Declined,
            ask,
        ),
        (
            "fs__write",
            Some(FakeApprover::new(Cancel, FAST)),
            supervised(),
            Some("elicitation_declined"),
            Decision::Declined,
            ask,
        ),
        (
            "fs__write",
            Some(FakeApprover::new(ApproveOnce, SLOW)),
            supervised(),
            Some("elicitation_timeout"),
            Decision::Timeout,
            ask,
        ),
        (
            "fs__write",
            None,
            supervised(),
            Some("elicitation_unsupported"),
            Decision::Unsupported,
            ask,
        ),
        (
            "fs__write",
            None,
            json!({"asklist": ["*"], "elicitationFallback": "allow"}),
            None,
            Decision::Unsupported,
            ask,
        ),
    ];
    for (tool, approver, p, want_reason, decision, disposition) in cases {
        let label = format!("{tool} {p} {want_reason:?}");
        let asked_approver = approver.clone();
        let approver: Arc<dyn Asker> = match approver {
            Some(a) => a,
            None => FakeApprover::unsupported(),
        };
        let s = setup(Some(profile(p)), approver, SessionApprovals::new());
        let r = call(&s.host, tool, 7).await;
        assert_eq!(reason_of(&r), want_reason, "{label}: {r:?}");
        let ran = want_reason.is_none();
        assert_eq!(s.calls.load(Ordering::SeqCst), usize::from(ran), "{label}");
        if let Some(a) = asked_approver {
            assert_eq!(a.asked(), 1, "{label}");
        }
        let recs = s.audit.tool_calls();
        assert_eq!(recs.len(), 1, "{label}");
        let rec = &recs[0];
        assert_eq!(
            (rec.decision, rec.disposition),
            (decision, disposition),
            "{label}"
        );
        let status = if ran {
            CallStatus::Ok
        } else {
            CallStatus::Denied
        };
        assert_eq!(rec.status, status, "{label}");
        assert_eq!(
            rec.reason.as_deref(),
            want_reason.or(if tool == "time__now" {
                Some("clock")
            } else {
                None
            }),
            "{label}"
        );
        assert_eq!(
            (rec.tool.as_str(), rec.call_id, rec.eval_id.clone()),
            (tool, 7, crate::AuditRecord::eval_id(EvalId(1)))
        );
        assert_eq!(rec.profile.as_deref(), Some("p"));
    }
}

#[tokio::test]
async fn denials_carry_the_tool_and_a_message() {
    let s = setup(
        Some(profile(supervised())),
        FakeApprover::unsupported(),
        SessionApprovals::new(),
    );
    let cases = [
        ("fs__delete", "profile `p` does not allow `fs__delete`"),
        ("web__get", "profile `p` does not allow `web__get`"),
        (
            "time__now",
            "`time__now` (clock) needs approval and this client cannot be asked: ask the user to run it, or use a client with elicitation",
        ),
    ];
    for (tool, want) in cases {
        match call(&s.host, tool, 1).await {
            Err(ToolError::Denied {
                tool: t, message, ..
            }) => {
                assert_eq!(t, tool);
                assert!(message.starts_with(want), "{message}");
            }
            other => panic!("{tool}: {other:?}"),
        }
    }
    assert_eq!(s.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn approval_requests_carry_the_context() {
    let approver = FakeApprover::new(ApprovalDecision::ApproveOnce, FAST);
    let (_, inner) = inner();
    let preview = Arc::new(extract_tool_calls(
        "await codemode.time__now({path: '/x'}); codemode.fs__read()",
    ));
    let host = PolicyToolHost::builder(inner)
        .profile(Some(profile(supervised())))
        .asker(approver.clone())
        .preview(preview.clone())
        .session_id(Some("sess-1".into()))
        .build();
    call(&host, "time__now", 3).await.unwrap();
    let req = approver.requests.lock().unwrap()[0].clone();
    assert_eq!(req.tool, "time__now");
    assert_eq!(req.args_summary, "{\n  \"path\": \"/x\"\n}");
    assert_eq!(req.profile.as_deref(), Some("p"));
    assert_eq!((req.eval_id, req.call_id), (EvalId(1), 3));
    assert_eq!(req.session_id.as_deref(), Some("sess-1"));
    assert_eq!(req.matched, MatchedBy::Rule(0));
    assert_eq!(req.reason.as_deref(), Some("clock"));
    assert_eq!(*req.preview, *preview);
    assert_eq!(req.preview.tools(), ["fs__read", "time__now"]);
    assert_eq!(req.timeout, Duration::from_millis(200));
}

#[tokio::test]
async fn approve_once_for_eval_and_for_session() {
    use ApprovalDecision::*;
    // (answer, asks for 2 calls in one eval, asks in a second eval of the same session)
    let cases = [
        (ApproveOnce, 2, 1),
        (ApproveToolForEval, 1, 1),
        (ApproveToolForSession, 1, 0),
    ];
    for (answer, asks_in_eval, asks_next_eval) in cases {
        let session = SessionApprovals::new();
        let approver = FakeApprover::new(answer, FAST);
        let s = setup(
            Some(profile(supervised())),
            approver.clone(),
            session.clone(),
        );
        call(&s.host, "fs__write", 1).await.unwrap();
        call(&s.host, "fs__write", 2).await.unwrap();
        assert_eq!(approver.asked(), asks_in_eval, "{answer:?}");
        // Another tool is not covered.
        call(&s.host, "a", 3).await.unwrap();
        assert_eq!(approver.asked(), asks_in_eval + 1, "{answer:?}");

        let next_approver = FakeApprover::new(ApproveOnce, FAST);
        let next = setup(
            Some(profile(supervised())),
            next_approver.clone(),
            session.clone(),
        );
        call(&next.host, "fs__write", 1).await.unwrap();
        assert_eq!(next_approver.asked(), asks_next_eval, "{answer:?}");
        // A fresh session asks again.
        let other = setup(
            Some(profile(supervised())),
            next_approver.clone(),
            SessionApprovals::new(),
        );
        call(&other.host, "fs__write", 1).await.unwrap();
        assert_eq!(next_approver.asked(), asks_next_eval + 1, "{answer:?}");
        let decisions: Vec<Decision> = s.audit.tool_calls().iter().map(|r| r.decision).collect();
        assert_eq!(decisions, [Decision::Approved; 3]);
    }
}

#[tokio::test]
async fn a_session_approval_does_not_cover_a_rule_or_a_deny() {
    let session = SessionApprovals::new();
    let p = profile(json!({
        "asklist": ["fs__write"],
        "rules": [{"tools": ["fs__write"], "when": {"/path": "^/etc/"}, "disposition": "ask"},
                  {"tools": ["fs__write"], "when": {"/path": "^/root/"}, "disposition": "deny"}]
    }));
    let approver = FakeApprover::new(ApprovalDecision::ApproveToolForSession, FAST);
    let s = setup(Some(p), approver.clone(), session);
    let cx = CallContext::detached(EvalId(1), 1);
    s.host
        .call("fs__write", json!({"path": "/tmp/a"}), &cx)
        .await
        .unwrap();
    s.host
        .call("fs__write", json!({"path": "/tmp/b"}), &cx)
        .await
        .unwrap();
    assert_eq!(approver.asked(), 1);
    s.host
        .call("fs__write", json!({"path": "/etc/a"}), &cx)
        .await
        .unwrap();
    s.host
        .call("fs__write", json!({"path": "/etc/b"}), &cx)
        .await
        .unwrap();
    assert_eq!(approver.asked(), 2);
    let r = s
        .host
        .call("fs__write", json!({"path": "/root/a"}), &cx)
        .await;
    assert_eq!(reason_of(&r), Some("denied"));
    assert_eq!(s.calls.load(Ordering::SeqCst), 4);
}

/// An ask for a tool that does not exist reaches nobody: the call fails as unknown.
#[tokio::test]
async fn unknown_tools_are_never_asked_about() {
    let approver = FakeApprover::new(ApprovalDecision::ApproveOnce, FAST);
    let s = setup(
        Some(profile(json!({"asklist": ["*"]}))),
        approver.clone(),
        SessionApprovals::new(),
    );
    let r = call(&s.host, "fs__wr\u{1b}[2Kite", 1).await;
    assert_eq!(
        r,
        Err(ToolError::NotFound {
            tool: "fs__wr\u{1b}[2Kite".into()
        })
    );
    assert_eq!(approver.asked(), 0);
    call(&s.host, "fs__write", 2).await.unwrap();
    assert_eq!(approver.asked(), 1);
}

/// A call to a tool that does not exist is audited as denied, with its reason, whatever the
/// profile says of the name (it was audited as allowed, with no reason).
#[tokio::test]
async fn a_call_to_a_tool_that_does_not_exist_is_audited_as_denied() {
    for p in [None, Some(json!({"asklist": ["*"]})), Some(json!({}))] {
        let s = setup(
            p.clone().map(profile),
            FakeApprover::new(ApprovalDecision::ApproveOnce, FAST),
            SessionApprovals::new(),
        );
        let r = call(&s.host, "no__such", 1).await;
        assert_eq!(
            r,
            Err(ToolError::NotFound {
                tool: "no__such".into()
            })
        );
        let rec = &s.audit.tool_calls()[0];
        assert_eq!(
            (rec.decision, rec.reason.as_deref(), rec.status),
            (Decision::Denied, Some("unknown_tool"), CallStatus::Error),
            "{p:?}"
        );
    }
}
