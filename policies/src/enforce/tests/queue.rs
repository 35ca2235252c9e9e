//! Asks beyond `maxPendingApprovals` wait for a slot, in arrival order, each up to its own
//! approval timeout (then: `queue_timeout`).

use super::*;

#[tokio::test]
async fn asks_beyond_the_limit_wait_for_a_slot_in_arrival_order() {
    // maxPendingApprovals = 2; five different tools ask at once; the human answers the
    // prompts up so far, three times.
    let approver = GatedApprover::new();
    let mut p = supervised();
    p["approvalTimeoutSeconds"] = json!(30);
    let s = setup(Some(profile(p)), approver.clone(), SessionApprovals::new());
    let tools = ["a", "b", "c", "d", "e"];
    let five = join_all(tools.iter().zip(1..).map(|(t, id)| call(&s.host, t, id)));
    let answers = async {
        for up in [2, 4, 5] {
            approver.until_asked(up).await;
            // No more than the limit is up at once.
            assert_eq!(approver.asked(), up);
            approver.answer_asked(ApprovalDecision::ApproveOnce);
        }
    };
    let (results, ()) = tokio::join!(five, answers);
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let asked: Vec<String> = approver
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.tool.clone())
        .collect();
    assert_eq!(asked, tools);
    assert_eq!(s.calls.load(Ordering::SeqCst), 5);
    assert_exactly_once(&s.audit.tool_calls(), 5);
}

#[tokio::test]
async fn an_ask_without_a_slot_within_its_approval_timeout_is_denied_queue_timeout() {
    // `a` (high risk: 30 s for its human) holds the one slot; `b` may wait 0.2 s for it.
    let approver = GatedApprover::new();
    let mut p = supervised();
    p["maxPendingApprovals"] = json!(1);
    p["risk"] = json!({"a": "high"});
    p["riskPolicies"] = json!({"high": {"approvalTimeoutSeconds": 30}});
    let s = setup(Some(profile(p)), approver.clone(), SessionApprovals::new());
    let holding = call(&s.host, "a", 1);
    tokio::pin!(holding);
    let waiting = call(&s.host, "b", 2);
    let r = tokio::select! {
        // `a` first: it takes the slot.
        biased;
        _ = &mut holding => panic!("`a` was answered"),
        r = waiting => r,
    };
    match &r {
        Err(ToolError::Denied {
            reason, message, ..
        }) => {
            assert_eq!(reason, "queue_timeout");
            assert_eq!(
                message,
                "`b` needs approval, and waited 200ms for a slot without getting one: this eval's other asks held all maxPendingApprovals = 1 slots; await them before asking for more"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(approver.asked(), 1, "`b` was never put to the human");
    let recs = s.audit.tool_calls();
    assert_eq!(recs.len(), 1);
    let b = &recs[0];
    assert_eq!(
        (
            b.call_id,
            b.decision,
            b.status,
            b.reason.as_deref(),
            b.channel,
            b.timeout_seconds
        ),
        (
            2,
            Decision::Timeout,
            CallStatus::Denied,
            Some("queue_timeout"),
            Some(Channel::Policy),
            Some(0.2)
        )
    );
    // The slot is `a`'s still; answered, it frees it for the next ask.
    approver.answer_asked(ApprovalDecision::ApproveOnce);
    holding.await.unwrap();
    let next = tokio::join!(call(&s.host, "c", 3), async {
        approver.until_asked(2).await;
        approver.answer_asked(ApprovalDecision::ApproveOnce);
    });
    next.0.unwrap();
}
