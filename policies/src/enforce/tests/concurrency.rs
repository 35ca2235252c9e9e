use super::*;

#[tokio::test]
async fn queued_asks_of_one_tool_share_an_eval_approval() {
    let approver = FakeApprover::new(
        ApprovalDecision::ApproveToolForEval,
        Duration::from_millis(50),
    );
    let s = setup(
        Some(profile(supervised())),
        approver.clone(),
        SessionApprovals::new(),
    );
    let results = join_all((1..=2).map(|id| call(&s.host, "fs__write", id))).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(approver.asked(), 1);
    assert_eq!(s.calls.load(Ordering::SeqCst), 2);
    assert_exactly_once(&s.audit.tool_calls(), 2);
}

#[tokio::test]
async fn timeouts_never_approve_and_later_asks_still_ask() {
    let approver = FakeApprover::new(ApprovalDecision::ApproveToolForSession, SLOW);
    let session = SessionApprovals::new();
    let s = setup(
        Some(profile(supervised())),
        approver.clone(),
        session.clone(),
    );
    let started = std::time::Instant::now();
    let results = join_all((1..=2).map(|id| call(&s.host, "fs__write", id))).await;
    // Identical calls: the second joined the first's prompt, and timed out with it.
    assert!(started.elapsed() < Duration::from_secs(5));
    let reasons: Vec<Option<&str>> = results.iter().map(reason_of).collect();
    assert_eq!(reasons, [Some("elicitation_timeout"); 2]);
    assert_eq!(approver.asked(), 1);
    assert!(session.is_empty());
    assert_eq!(s.calls.load(Ordering::SeqCst), 0);
    let recs = s.audit.tool_calls();
    assert_exactly_once(&recs, 2);
    assert!(
        recs.iter()
            .all(|r| r.decision == Decision::Timeout && r.status == CallStatus::Denied)
    );
}

#[tokio::test]
async fn an_abandoned_call_is_audited_once_as_cancelled() {
    let approver = FakeApprover::new(ApprovalDecision::ApproveOnce, SLOW);
    let s = setup(
        Some(profile(supervised())),
        approver.clone(),
        SessionApprovals::new(),
    );
    // Two asks (the limit) abandoned while the human thinks: the eval ended.
    let both = join_all([call(&s.host, "fs__write", 1), call(&s.host, "a", 2)]);
    // Dropped once both asks reached the human (however slow the machine), not after a guess.
    let asked = async {
        while approver.asked() < 2 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    tokio::select! {
        _ = both => panic!("the calls ended while the human was thinking"),
        () = asked => {}
    }
    assert_eq!(approver.asked(), 2);
    let recs = s.audit.tool_calls();
    assert_exactly_once(&recs, 2);
    for rec in &recs {
        assert_eq!(
            (rec.status, rec.decision),
            (CallStatus::Error, Decision::Timeout)
        );
        assert_eq!(rec.reason.as_deref(), Some("cancelled"));
    }
    assert_eq!(s.calls.load(Ordering::SeqCst), 0);
    // Their pending slots were freed: the next ask is put to the human (and times out),
    // rather than refused for a full queue.
    let r = call(&s.host, "b", 3).await;
    assert_eq!(reason_of(&r), Some("elicitation_timeout"));
    assert_eq!(approver.asked(), 3);
    assert_exactly_once(&s.audit.tool_calls(), 3);
}

#[tokio::test]
async fn many_concurrent_calls_are_each_audited_once() {
    let approver = FakeApprover::new(ApprovalDecision::ApproveOnce, Duration::from_millis(5));
    let s = setup(
        Some(profile(supervised())),
        approver,
        SessionApprovals::new(),
    );
    let tools = [
        "fs__read",
        "fs__delete",
        "web__get",
        "fs__write",
        "time__now",
        "fail",
        "a",
        "b",
    ];
    let calls = (0..64u64).map(|i| {
        call(
            &s.host,
            tools[usize::try_from(i).unwrap() % tools.len()],
            i + 1,
        )
    });
    let results = join_all(calls).await;
    assert_eq!(results.len(), 64);
    let recs = s.audit.tool_calls();
    assert_exactly_once(&recs, 64);
    for (rec, result) in recs
        .iter()
        .map(|r| (r, &results[usize::try_from(r.call_id - 1).unwrap()]))
    {
        let status = match result {
            Ok(_) => CallStatus::Ok,
            Err(ToolError::Denied { .. }) => CallStatus::Denied,
            Err(_) => CallStatus::Error,
        };
        assert_eq!(rec.status, status, "{rec:?}");
    }
    // `fail` is not in the allowlist: denied before reaching the tool, not failed.
    assert!(
        recs.iter()
            .filter(|r| r.tool == "fail")
            .all(|r| r.status == CallStatus::Denied)
    );
}

#[tokio::test]
async fn unprofiled_calls_are_allowed_and_audited_with_args_on_request() {
    let (calls, inner) = inner();
    let audit = Arc::new(MemoryAuditSink::new());
    let host = PolicyToolHost::builder(inner)
        .audit(audit.clone(), true)
        .session_id(Some("s".into()))
        .build();
    assert!(host.profile().is_none());
    call(&host, "fs__delete", 1).await.unwrap();
    let r = call(&host, "fail", 2).await;
    assert!(matches!(r, Err(ToolError::Failed { .. })));
    let r = call(&host, "missing", 3).await;
    assert!(matches!(r, Err(ToolError::NotFound { .. })));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let recs = audit.tool_calls();
    let got: Vec<(CallStatus, Decision)> = recs.iter().map(|r| (r.status, r.decision)).collect();
    assert_eq!(
        got,
        [
            (CallStatus::Ok, Decision::Allowed),
            (CallStatus::Error, Decision::Allowed),
            // No such tool: nothing was allowed to run.
            (CallStatus::Error, Decision::Denied)
        ]
    );
    assert_eq!(recs[2].reason.as_deref(), Some("unknown_tool"));
    assert_eq!(recs[0].args, Some(json!({"path": "/x"})));
    assert_eq!(recs[0].args_sha256, args_sha256(&json!({"path": "/x"})));
    assert_eq!(
        (recs[0].profile.as_deref(), recs[0].session_id.as_deref()),
        (None, Some("s"))
    );
    assert_eq!(recs[1].reason, None, "tool error messages are not logged");
    assert_eq!(host.tool_names().len(), TOOLS.len() + 1);

    // Without includeArgs, the field is absent from the JSON.
    let s = setup(None, FakeApprover::unsupported(), SessionApprovals::new());
    call(&s.host, "a", 1).await.unwrap();
    let line = serde_json::to_value(crate::AuditRecord::ToolCall(
        s.audit.tool_calls()[0].clone(),
    ))
    .unwrap();
    assert!(line.get("args").is_none() && line.get("args_sha256").is_some());
}

#[test]
fn the_host_is_a_shareable_tool_host() {
    fn assert_tool_host<T: ToolHost + Send + Sync + 'static>() {}
    assert_tool_host::<PolicyToolHost>();
    let _default_preview = Preview::default();
}
