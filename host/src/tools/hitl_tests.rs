//! A `hitl_request` question parks like an approval: saved with its eval, resumed under the
//! same id with what is left of its time, the answer given meanwhile taken, audited once.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use codemode_policies::{AuditRecord, MemoryAuditSink, ParkedAsk};
use codemode_runtime::{CancellationToken, EvalId, ParkRequest, Runtime, RuntimeConfig};
use serde_json::{Value, json};

use crate::approvals::{Answer, Asker, Decided, Decisions, OpenAsks, Question};
use crate::session::{AuditTarget, GovernedEval, GovernedStep};
use crate::upstream::UpstreamPool;

/// A human who has not answered yet.
struct Undecided;

impl Asker for Undecided {
    fn supports(&self) -> bool {
        true
    }
    fn channel(&self) -> codemode_policies::Channel {
        codemode_policies::Channel::Elicitation
    }
    fn ask(&self, _q: Question, _t: Duration) -> codemode_runtime::BoxFuture<'_, Answer> {
        Box::pin(std::future::pending())
    }
}

/// Answers given while the eval was parked, by ask id.
#[derive(Default)]
struct Given(Mutex<Vec<(String, Decided)>>);

impl Given {
    fn answer(&self, id: &str, option: Option<&str>) {
        self.0.lock().unwrap().push((
            id.to_string(),
            Decided::Question {
                answer: option.map(str::to_string),
                channel: codemode_policies::Channel::Http,
                decided_by: Some("alice".into()),
            },
        ));
    }
}

impl Decisions for Given {
    fn take(&self, id: &str) -> codemode_runtime::BoxFuture<'_, Option<Decided>> {
        let mut given = self.0.lock().unwrap();
        let found = given
            .iter()
            .position(|(i, _)| i == id)
            .map(|i| given.remove(i).1);
        Box::pin(async move { found })
    }
}

struct Fixture {
    runtime: Runtime,
    sink: Arc<MemoryAuditSink>,
    decisions: Arc<Given>,
    profile: Option<Arc<codemode_policies::Profile>>,
}

impl Fixture {
    fn new() -> Self {
        let mut config = RuntimeConfig::default();
        config.max_concurrent_evals(2);
        Fixture {
            runtime: Runtime::new(&config).expect("runtime"),
            sink: Arc::new(MemoryAuditSink::new()),
            decisions: Arc::default(),
            profile: None,
        }
    }

    /// A governed eval (fresh, or resuming `id`) that parks as soon as it waits for a human
    /// when `park`, with its open asks in `asks`.
    fn eval(&self, park: bool, asks: &Arc<OpenAsks>, id: Option<EvalId>) -> GovernedEval {
        let request = park.then(|| {
            let r = ParkRequest::new();
            r.request();
            r
        });
        let mut builder = GovernedEval::builder(self.runtime.clone())
            .tools(UpstreamPool::new())
            .profile(self.profile.clone())
            .asker(Arc::new(Undecided))
            .park(request)
            .open_asks(Some(asks.clone()))
            .audit(Some(AuditTarget {
                sink: self.sink.clone(),
                include_args: false,
            }));
        if let Some(id) = id {
            builder = builder.id(id);
        }
        builder.build()
    }

    fn asks(&self) -> Arc<OpenAsks> {
        Arc::new(OpenAsks::new(Some(self.decisions.clone())))
    }

    fn tool_calls(&self) -> Vec<(String, u64)> {
        self.sink
            .tool_calls()
            .into_iter()
            .map(|r| (r.tool, r.call_id))
            .collect()
    }
}

/// The one parked call's note, as a question step.
fn note_of(parked: &codemode_runtime::Suspended) -> ParkedAsk {
    let pending = parked.pending();
    assert_eq!(pending.len(), 1);
    let note = pending[0].note.clone().expect("a note");
    let cx = codemode_runtime::CallContext::detached_resumed(EvalId(0), 1, note);
    ParkedAsk::question_of(&cx).expect("a question step's note")
}

fn reload(parked: &codemode_runtime::Suspended) -> codemode_runtime::Suspended {
    codemode_runtime::Suspended::load(&parked.save()).expect("load")
}

const CONFIRMED: &str = "return await codemode.hitl_request({question: 'Deploy\\u001b[2K?', \
    options: ['yes', 'no'], requireConfirmation: true, timeoutMs: 600000, metadata: {t: 1}});";

/// Both steps park: the choice, then (resumed with the option chosen meanwhile) the
/// confirmation, under a new id whose note keeps the choice; resumed with the confirmation, the
/// call ends `confirmed` with the option — one audit record of the call, one of the eval.
#[tokio::test]
async fn both_steps_park_and_the_resumed_call_ends_confirmed_audited_once() {
    let f = Fixture::new();
    let asks = f.asks();
    let first = f.eval(true, &asks, None);
    let GovernedStep::Parked(parked) = first.run_step(CONFIRMED, &CancellationToken::new()).await
    else {
        panic!("the eval should park at its question");
    };
    assert!(f.sink.records().is_empty(), "{:?}", f.sink.records());
    let choice = note_of(&parked);
    assert_eq!(choice.question.as_ref().unwrap().selected, None);
    let open = asks.snapshot();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].id, choice.approval);
    // Listed as the live broker shows questions: its options, the text neutralised.
    let view = &open[0].view;
    assert_eq!(
        (
            &view["kind"],
            &view["tool"],
            &view["options"],
            &view["args_summary"]
        ),
        (
            &json!("question"),
            &json!("hitl_request"),
            &json!(["yes", "no"]),
            &json!("Deploy\\u001b[2K?")
        )
    );
    assert_eq!(
        open[0].question.schema["properties"]["answer"]["enum"],
        json!(["yes", "no"])
    );
    let left = choice.remaining();
    assert!(left > Duration::from_secs(590) && left <= Duration::from_secs(600));

    f.decisions.answer(&choice.approval, Some("no"));
    let asks = f.asks();
    let second = f.eval(true, &asks, Some(first.id()));
    let GovernedStep::Parked(parked) = second
        .resume(CONFIRMED, &reload(&parked), &CancellationToken::new())
        .await
        .unwrap()
    else {
        panic!("the resumed eval should park at the confirmation");
    };
    assert!(
        f.decisions.0.lock().unwrap().is_empty(),
        "the answer was taken"
    );
    let confirm = note_of(&parked);
    assert_ne!(confirm.approval, choice.approval);
    assert_eq!(
        confirm.question.as_ref().unwrap().selected.as_deref(),
        Some("no")
    );
    let open = asks.snapshot();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].view["options"], json!(["confirm", "cancel"]));
    assert_eq!(open[0].view["args_summary"], json!("Confirm: no?"));
    assert!(f.tool_calls().is_empty());

    f.decisions.answer(&confirm.approval, Some("confirm"));
    let third = f.eval(false, &f.asks(), Some(first.id()));
    let GovernedStep::Finished(outcome) = third
        .resume(CONFIRMED, &reload(&parked), &CancellationToken::new())
        .await
        .unwrap()
    else {
        panic!("the resumed eval should finish");
    };
    assert!(outcome.ok, "{:?}", outcome.error);
    assert_eq!(
        outcome.result,
        json!({"ok": true, "status": "confirmed", "confirmed": true, "selectedOption": "no",
            "source": "user", "requestId": format!("hitl-{}-1", first.id()), "metadata": {"t": 1}})
    );
    assert_eq!(f.tool_calls(), [("hitl_request".to_string(), 1)]);
    let evals = f
        .sink
        .records()
        .into_iter()
        .filter(|r| matches!(r, AuditRecord::Eval(_)))
        .count();
    assert_eq!(evals, 1);
}

/// `timeoutMs` is a deadline across the park: resumed after it passed, with no answer given,
/// the call ends `timeout` at once, the default option flagged as nobody's choice.
#[tokio::test]
async fn a_question_resumed_after_its_deadline_times_out_with_its_default() {
    let f = Fixture::new();
    let code = "return await codemode.hitl_request({question: 'q', options: ['a', 'b'], \
                defaultOption: 'b', timeoutMs: 300});";
    let asks = f.asks();
    let first = f.eval(true, &asks, None);
    let GovernedStep::Parked(parked) = first.run_step(code, &CancellationToken::new()).await else {
        panic!("the eval should park at its question");
    };
    let note = note_of(&parked);
    while note.remaining() > Duration::ZERO {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let second = f.eval(false, &f.asks(), Some(first.id()));
    let GovernedStep::Finished(outcome) = second
        .resume(code, &reload(&parked), &CancellationToken::new())
        .await
        .unwrap()
    else {
        panic!("the resumed eval should finish");
    };
    let r = &outcome.result;
    assert_eq!(
        (
            &r["status"],
            &r["selectedOption"],
            &r["confirmed"],
            &r["source"]
        ),
        (
            &json!("timeout"),
            &json!("b"),
            &json!(false),
            &json!("timeout")
        )
    );
    assert_eq!(f.tool_calls(), [("hitl_request".to_string(), 1)]);
}

/// A decline given while parked cancels the question; an answer for another id is not taken.
#[tokio::test]
async fn a_decline_given_while_parked_cancels_and_other_ids_are_left() {
    let f = Fixture::new();
    let code = "return await codemode.hitl_request({question: 'q', options: ['a']});";
    let asks = f.asks();
    let first = f.eval(true, &asks, None);
    let GovernedStep::Parked(parked) = first.run_step(code, &CancellationToken::new()).await else {
        panic!("the eval should park at its question");
    };
    let note = note_of(&parked);
    f.decisions.answer("another-id", Some("a"));
    f.decisions.answer(&note.approval, None);
    let second = f.eval(false, &f.asks(), Some(first.id()));
    let GovernedStep::Finished(outcome) = second
        .resume(code, &reload(&parked), &CancellationToken::new())
        .await
        .unwrap()
    else {
        panic!("the resumed eval should finish");
    };
    assert_eq!(outcome.result["status"], json!("canceled"));
    assert_eq!(outcome.result["source"], json!("user"));
    let left: Vec<String> = f
        .decisions
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|(i, _)| i.clone())
        .collect();
    assert_eq!(left, ["another-id"]);
    let _: Value = outcome.result;
}

/// A profile that asks before `hitl_request`: the approval parks, then (approved meanwhile) the
/// question parks; made again after that second park, the call is not put to its approver a
/// second time — its question's note says the ask was passed — and is audited once, as approved.
#[tokio::test]
async fn an_approved_call_parked_in_its_question_is_not_asked_for_approval_again() {
    let config = codemode_policies::Config::from_json_str(
        r#"{"evaluation": {"profiles": {"p": {"asklist": ["hitl_request"]}}}}"#,
    )
    .unwrap();
    let mut f = Fixture::new();
    f.profile = config.resolve_profile(Some("p")).unwrap();
    let code = "return (await codemode.hitl_request({question: 'q', options: ['a']})).status;";
    let first = f.eval(true, &f.asks(), None);
    let GovernedStep::Parked(parked) = first.run_step(code, &CancellationToken::new()).await else {
        panic!("the eval should park at its approval");
    };
    let note = parked.pending()[0].note.clone().unwrap();
    let approval: ParkedAsk = serde_json::from_value(note).unwrap();
    assert_eq!(approval.question, None);
    f.decisions.0.lock().unwrap().push((
        approval.approval.clone(),
        Decided::Approval(
            codemode_policies::ApprovalAnswer::new(
                codemode_policies::ApprovalDecision::ApproveOnce,
                codemode_policies::Channel::Http,
            )
            .decided_by("alice"),
        ),
    ));
    let second = f.eval(true, &f.asks(), Some(first.id()));
    let GovernedStep::Parked(parked) = second
        .resume(code, &reload(&parked), &CancellationToken::new())
        .await
        .unwrap()
    else {
        panic!("the approved call should park at its question");
    };
    let question = note_of(&parked);
    f.decisions.answer(&question.approval, Some("a"));
    let third = f.eval(false, &f.asks(), Some(first.id()));
    let (loaded, cancel) = (reload(&parked), CancellationToken::new());
    let resumed = third.resume(code, &loaded, &cancel);
    // Asked for approval again, the call would wait on a human who never answers.
    let GovernedStep::Finished(outcome) = tokio::time::timeout(Duration::from_secs(30), resumed)
        .await
        .expect("not asked for approval again")
        .unwrap()
    else {
        panic!("the resumed eval should finish");
    };
    assert_eq!(outcome.result, json!("confirmed"), "{:?}", outcome.error);
    let records: Vec<_> = f
        .sink
        .tool_calls()
        .into_iter()
        .map(|r| (r.tool, r.decision, r.decision_reason))
        .collect();
    assert_eq!(
        records,
        [(
            "hitl_request".to_string(),
            codemode_policies::Decision::Approved,
            Some("approved before its eval was parked".to_string())
        )]
    );
}
