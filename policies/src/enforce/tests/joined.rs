//! Identical asks joined: one prompt for the calls with the same caller, profile, tool and
//! arguments waiting at once, its answer applied to each, each audited.

use super::*;
use crate::PendingAsks;

/// A host of eval `eval` for the local caller, joining asks through `asks`.
fn eval_host(
    approver: &Arc<GatedApprover>,
    asks: &PendingAsks,
    audit: &Arc<MemoryAuditSink>,
    calls: &Arc<AtomicUsize>,
) -> PolicyToolHost {
    let mut tools = FnTools::new();
    for name in TOOLS {
        let calls = calls.clone();
        tools = tools.sync_tool(*name, move |args| {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(json!({"echo": args}))
        });
    }
    PolicyToolHost::builder(Arc::new(tools))
        .profile(Some(profile(supervised_slowly())))
        .asker(approver.clone())
        .pending_asks(asks.clone())
        .audit(audit.clone(), false)
        .build()
}

/// [`supervised`] with time enough for the human (the tests answer when they choose).
fn supervised_slowly() -> Value {
    let mut p = supervised();
    p["approvalTimeoutSeconds"] = json!(30);
    p["maxPendingApprovals"] = json!(1);
    p
}

async fn call_in(
    h: &PolicyToolHost,
    eval: u64,
    call_id: u64,
    args: Value,
) -> Result<Value, ToolError> {
    h.call(
        "fs__write",
        args,
        &CallContext::detached(EvalId(eval), call_id),
    )
    .await
}

struct Env {
    approver: Arc<GatedApprover>,
    asks: PendingAsks,
    audit: Arc<MemoryAuditSink>,
    calls: Arc<AtomicUsize>,
}

fn env() -> Env {
    Env {
        approver: GatedApprover::new(),
        asks: PendingAsks::default(),
        audit: Arc::new(MemoryAuditSink::new()),
        calls: Arc::new(AtomicUsize::new(0)),
    }
}

impl Env {
    fn host(&self) -> PolicyToolHost {
        eval_host(&self.approver, &self.asks, &self.audit, &self.calls)
    }

    /// Until `asked` prompts are up and `joined` calls have joined them.
    /// (A bound, so that a call that never joins fails the test rather than hangs it.)
    async fn until(&self, asked: usize, joined: u64) {
        let reached = async {
            while self.approver.asked() < asked || self.asks.joined() < joined {
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(Duration::from_secs(30), reached)
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "never {asked} asked and {joined} joined: {} asked, {} joined",
                    self.approver.asked(),
                    self.asks.joined()
                )
            });
    }
}

fn joined_asks(recs: &[ToolCallAuditRecord]) -> Vec<Option<String>> {
    let mut by_call: Vec<&ToolCallAuditRecord> = recs.iter().collect();
    by_call.sort_by_key(|r| r.call_id);
    by_call.iter().map(|r| r.joined_ask.clone()).collect()
}

#[tokio::test]
async fn five_identical_calls_share_one_prompt_and_each_is_approved_once_and_audited() {
    let e = env();
    let host = e.host();
    let five = join_all((1..=5).map(|id| call_in(&host, 1, id, json!({"path": "/x"}))));
    let answer = async {
        e.until(1, 4).await;
        e.approver.answer_asked(ApprovalDecision::ApproveOnce);
    };
    let (results, ()) = tokio::join!(five, answer);
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(e.approver.asked(), 1);
    assert_eq!(e.calls.load(Ordering::SeqCst), 5);
    let recs = e.audit.tool_calls();
    assert_exactly_once(&recs, 5);
    let id = e.approver.request_id(0);
    assert_eq!(
        joined_asks(&recs),
        [
            None,
            Some(id.clone()),
            Some(id.clone()),
            Some(id.clone()),
            Some(id)
        ]
    );
    for r in &recs {
        assert_eq!(
            (r.decision, r.status, r.channel, r.decided_by.as_deref()),
            (
                Decision::Approved,
                CallStatus::Ok,
                Some(Channel::Elicitation),
                Some("local")
            ),
            "{r:?}"
        );
    }
    // Approved once each: the next identical call is asked about again.
    let again = call_in(&host, 1, 6, json!({"path": "/x"}));
    let answer = async {
        e.until(2, 4).await;
        e.approver.answer_asked(ApprovalDecision::ApproveOnce);
    };
    let (again, ()) = tokio::join!(again, answer);
    again.unwrap();
    assert_eq!(e.approver.asked(), 2);
}

#[tokio::test]
async fn calls_with_other_arguments_are_asked_about_separately() {
    let e = env();
    let host = e.host();
    let four = join_all([
        call_in(&host, 1, 1, json!({"path": "/x"})),
        call_in(&host, 1, 2, json!({"path": "/y"})),
        // The same arguments in another key order are the same call.
        call_in(&host, 1, 3, json!({"path": "/x", "mode": "w"})),
        call_in(&host, 1, 4, json!({"mode": "w", "path": "/x"})),
    ]);
    // One prompt at a time (maxPendingApprovals 1): each answered once up.
    let answers = async {
        for (asked, joined) in [(1, 0), (2, 0), (3, 1)] {
            e.until(asked, joined).await;
            e.approver.answer_asked(ApprovalDecision::ApproveOnce);
        }
    };
    let (results, ()) = tokio::join!(four, answers);
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let asked: Vec<Value> = e
        .approver
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.args.clone())
        .collect();
    assert_eq!(
        asked,
        [
            json!({"path": "/x"}),
            json!({"path": "/y"}),
            json!({"path": "/x", "mode": "w"})
        ]
    );
    let id = e.approver.request_id(2);
    assert_eq!(
        joined_asks(&e.audit.tool_calls()),
        [None, None, None, Some(id)]
    );
}

#[tokio::test]
async fn a_decline_declines_every_joined_call() {
    let e = env();
    let host = e.host();
    let three = join_all((1..=3).map(|id| call_in(&host, 1, id, json!({"path": "/x"}))));
    let answer = async {
        e.until(1, 2).await;
        e.approver.answer_asked(ApprovalDecision::Decline);
    };
    let (results, ()) = tokio::join!(three, answer);
    let reasons: Vec<Option<&str>> = results.iter().map(reason_of).collect();
    assert_eq!(reasons, [Some("elicitation_declined"); 3]);
    assert_eq!(e.approver.asked(), 1);
    assert_eq!(e.calls.load(Ordering::SeqCst), 0);
    let recs = e.audit.tool_calls();
    assert_exactly_once(&recs, 3);
    assert!(recs.iter().all(|r| r.decision == Decision::Declined));
}

/// An identical call of another eval is asked about on its own: an eval waiting on another
/// eval's prompt could not show its client the question (no input-required result of its own).
#[tokio::test]
async fn an_identical_call_of_another_eval_is_asked_about_separately() {
    let e = env();
    let (first, second) = (e.host(), e.host());
    let both = tokio::join!(
        call_in(&first, 1, 1, json!({"path": "/x"})),
        call_in(&second, 2, 1, json!({"path": "/x"})),
        async {
            e.until(2, 0).await;
            e.approver.answer_asked(ApprovalDecision::ApproveOnce);
        }
    );
    both.0.unwrap();
    both.1.unwrap();
    assert_eq!(e.approver.asked(), 2);
    assert!(e.audit.tool_calls().iter().all(|r| r.joined_ask.is_none()));
}

/// Two evals that carry the same runtime id (one resumed here from another process keeps the
/// id it was first given there, which a fresh eval of this process may hold too) still ask on
/// their own: an eval never waits on a question its own client is not shown.
#[tokio::test]
async fn an_identical_call_of_another_eval_with_the_same_eval_id_is_asked_about_separately() {
    let e = env();
    let (fresh, resumed) = (e.host(), e.host());
    let both = tokio::join!(
        call_in(&fresh, 3, 1, json!({"path": "/x"})),
        call_in(&resumed, 3, 1, json!({"path": "/x"})),
        async {
            e.until(2, 0).await;
            e.approver.answer_asked(ApprovalDecision::ApproveOnce);
        }
    );
    both.0.unwrap();
    both.1.unwrap();
    assert_eq!((e.approver.asked(), e.asks.joined()), (2, 0));
    assert!(e.audit.tool_calls().iter().all(|r| r.joined_ask.is_none()));
}

#[tokio::test]
async fn a_waiter_that_leaves_does_not_withdraw_the_ask_and_the_last_one_does() {
    let e = env();
    let host = e.host();
    // The asking call leaves (its eval ended); the joined one still gets the answer.
    {
        // Boxed, so that dropping one drops the call.
        let mut asking = Box::pin(call_in(&host, 1, 1, json!({"path": "/x"})));
        let mut joined = Box::pin(call_in(&host, 1, 7, json!({"path": "/x"})));
        tokio::select! {
            biased; // `asking` first: it asks, `joined` joins.
            _ = &mut asking => panic!("answered before anyone answered"),
            _ = &mut joined => panic!("answered before anyone answered"),
            () = e.until(1, 1) => {}
        }
        drop(asking);
        assert_eq!(e.approver.withdrawn.load(Ordering::SeqCst), 0);
        e.approver.answer_asked(ApprovalDecision::ApproveOnce);
        joined.await.unwrap();
    }
    assert_eq!(e.approver.asked(), 1);
    let recs = e.audit.tool_calls();
    let mut got: Vec<(u64, CallStatus, Option<&str>)> = recs
        .iter()
        .map(|r| (r.call_id, r.status, r.reason.as_deref()))
        .collect();
    got.sort_by_key(|g| g.1 == CallStatus::Ok);
    assert_eq!(
        got,
        [
            (1, CallStatus::Error, Some("cancelled")),
            (7, CallStatus::Ok, None)
        ]
    );
    // Every waiter leaves: the prompt is withdrawn.
    {
        let mut one = Box::pin(call_in(&host, 1, 2, json!({"path": "/y"})));
        let mut two = Box::pin(call_in(&host, 1, 3, json!({"path": "/y"})));
        tokio::select! {
            biased;
            _ = &mut one => panic!("answered before anyone answered"),
            _ = &mut two => panic!("answered before anyone answered"),
            () = e.until(2, 2) => {}
        }
        drop(one);
        assert_eq!(e.approver.withdrawn.load(Ordering::SeqCst), 0);
        drop(two);
    }
    assert_eq!(e.approver.withdrawn.load(Ordering::SeqCst), 1);
}
