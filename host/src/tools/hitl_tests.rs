//! A `hitl_request` question parks like an approval: saved with its eval, resumed under the
//! same id with what is left of its time, the answer given meanwhile taken, audited once.

use crate::approvals::given::Given;
use std::sync::Arc;
use std::time::Duration;

use codemode_policies::{AuditRecord, MemoryAuditSink, ParkedAsk};
use codemode_runtime::{CancellationToken, EvalId, ParkRequest, Runtime, RuntimeConfig};
use serde_json::{Value, json};

use crate::approvals::{Ask, Asker, Decided, Decisions, OpenAsks, Reply};
use crate::session::{AuditTarget, GovernedEval, GovernedStep};
use codemode_upstream::UpstreamPool;

/// A human who has not answered yet.
struct Undecided;

impl Asker for Undecided {
    fn supports(&self) -> bool {
        true
    }
    fn channel(&self) -> codemode_policies::Channel {
        codemode_policies::Channel::Elicitation
    }
    fn ask(&self, _ask: Ask) -> codemode_runtime::BoxFuture<'_, Reply> {
        Box::pin(std::future::pending())
    }
}

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

/// Every parked call's note (approval or question step), by call id.
fn notes(parked: &codemode_runtime::Suspended) -> Vec<(u64, ParkedAsk)> {
    parked
        .pending()
        .iter()
        .map(|p| {
            let note = p.note.clone().expect("a note");
            (
                p.call_id,
                serde_json::from_value(note).expect("a parked ask"),
            )
        })
        .collect()
}

const TWO_QUESTIONS: &str = "const [a, b] = await Promise.all([\
    codemode.hitl_request({question: 'first', options: ['a1', 'a2'], timeoutMs: 600000}),\
    codemode.hitl_request({question: 'second', options: ['b1', 'b2'], timeoutMs: 900000})]);\
    return [a.status, a.selectedOption, b.status, b.selectedOption];";

/// Two questions in flight at once (`Promise.all`) park together, each under its own id; the
/// one answered while parked resolves on resume, the other is asked again under the same id and
/// deadline (it parks again alone), and once it is answered both resolve — each call audited
/// once.
#[tokio::test]
async fn two_questions_in_flight_park_together_and_resume_one_at_a_time() {
    let f = Fixture::new();
    let asks = f.asks();
    let first = f.eval(true, &asks, None);
    let GovernedStep::Parked(parked) = first
        .run_step(TWO_QUESTIONS, &CancellationToken::new())
        .await
    else {
        panic!("the eval should park at its questions");
    };
    let both = notes(&parked);
    assert_eq!(both.len(), 2, "{both:?}");
    assert_ne!(both[0].1.approval, both[1].1.approval);
    let mut open: Vec<(String, Value)> = asks
        .snapshot()
        .into_iter()
        .map(|a| (a.id, a.view["args_summary"].clone()))
        .collect();
    open.sort_by_key(|x| x.1.to_string());
    let by_call = |call: u64| both.iter().find(|(c, _)| *c == call).unwrap().1.clone();
    let (q1, q2) = (by_call(1), by_call(2));
    assert_eq!(
        open,
        [
            (q1.approval.clone(), json!("first")),
            (q2.approval.clone(), json!("second"))
        ]
    );

    f.decisions.answer(&q1.approval, Some("a2"));
    let asks = f.asks();
    let second = f.eval(true, &asks, Some(first.id()));
    let GovernedStep::Parked(parked) = second
        .resume(TWO_QUESTIONS, &reload(&parked), &CancellationToken::new())
        .await
        .unwrap()
    else {
        panic!("the eval should park again at its second question");
    };
    // The second question: the same step, the same deadline (no fresh timeout).
    assert_eq!(notes(&parked), [(2, q2.clone())]);
    let open: Vec<String> = asks.snapshot().into_iter().map(|a| a.id).collect();
    assert_eq!(open, std::slice::from_ref(&q2.approval));
    // The first call ended on the resume: audited then, once.
    assert_eq!(f.tool_calls(), [("hitl_request".to_string(), 1)]);

    f.decisions.answer(&q2.approval, Some("b1"));
    let third = f.eval(false, &f.asks(), Some(first.id()));
    let GovernedStep::Finished(outcome) = third
        .resume(TWO_QUESTIONS, &reload(&parked), &CancellationToken::new())
        .await
        .unwrap()
    else {
        panic!("the resumed eval should finish");
    };
    assert_eq!(
        outcome.result,
        json!(["confirmed", "a2", "confirmed", "b1"]),
        "{:?}",
        outcome.error
    );
    let mut calls = f.tool_calls();
    calls.sort();
    assert_eq!(
        calls,
        [
            ("hitl_request".to_string(), 1),
            ("hitl_request".to_string(), 2)
        ]
    );
}

/// A question and an approval in flight at once park together, each with its own kind of note;
/// the approval's decision is not taken as the question's answer nor the other way round, and
/// with both given the eval finishes: the approved call runs once, the question resolves.
#[tokio::test]
async fn a_question_and_an_approval_in_flight_park_and_resume_together() {
    let config = codemode_policies::Config::from_json_str(
        r#"{"evaluation": {"profiles": {"p": {"asklist": ["search_tools"]}}}}"#,
    )
    .unwrap();
    let mut f = Fixture::new();
    f.profile = config.resolve_profile(Some("p")).unwrap();
    let code = "const [found, r] = await Promise.all([codemode.search_tools({query: 'tools'}),\
        codemode.hitl_request({question: 'q', options: ['a', 'b'], timeoutMs: 600000})]);\
        return [found.results.length > 0, r.status, r.selectedOption];";
    let asks = f.asks();
    let first = f.eval(true, &asks, None);
    let GovernedStep::Parked(parked) = first.run_step(code, &CancellationToken::new()).await else {
        panic!("the eval should park");
    };
    let both = notes(&parked);
    let kinds: Vec<(u64, bool)> = both
        .iter()
        .map(|(c, n)| (*c, n.question.is_some()))
        .collect();
    assert_eq!(kinds, [(1, false), (2, true)]);
    let (approval, question) = (both[0].1.approval.clone(), both[1].1.approval.clone());
    let mut kinds: Vec<Value> = asks
        .snapshot()
        .into_iter()
        .map(|a| a.view["kind"].clone())
        .collect();
    kinds.sort_by_key(Value::to_string);
    assert_eq!(kinds, [json!("approval"), json!("question")]);

    // Crossed: the approval's id gets a question's answer and the question's id a decision.
    f.decisions.answer(&approval, Some("a"));
    f.decisions.0.lock().unwrap().push((
        question.clone(),
        Decided::Approval(codemode_policies::ApprovalAnswer::new(
            codemode_policies::ApprovalDecision::ApproveOnce,
            codemode_policies::Channel::Http,
        )),
    ));
    let asks = f.asks();
    let second = f.eval(true, &asks, Some(first.id()));
    let GovernedStep::Parked(parked) = second
        .resume(code, &reload(&parked), &CancellationToken::new())
        .await
        .unwrap()
    else {
        panic!("crossed answers decide nothing: the eval parks again");
    };
    assert_eq!(notes(&parked), both);
    assert!(f.tool_calls().is_empty(), "{:?}", f.tool_calls());

    f.decisions.0.lock().unwrap().clear();
    f.decisions.answer(&question, Some("b"));
    f.decisions.0.lock().unwrap().push((
        approval.clone(),
        Decided::Approval(
            codemode_policies::ApprovalAnswer::new(
                codemode_policies::ApprovalDecision::ApproveOnce,
                codemode_policies::Channel::Http,
            )
            .decided_by("alice"),
        ),
    ));
    let third = f.eval(false, &f.asks(), Some(first.id()));
    let GovernedStep::Finished(outcome) = third
        .resume(code, &reload(&parked), &CancellationToken::new())
        .await
        .unwrap()
    else {
        panic!("the resumed eval should finish");
    };
    assert_eq!(
        outcome.result,
        json!([true, "confirmed", "b"]),
        "{:?}",
        outcome.error
    );
    let mut calls: Vec<_> = f
        .sink
        .tool_calls()
        .into_iter()
        .map(|r| (r.call_id, r.tool, r.decision, r.decided_by))
        .collect();
    calls.sort_by_key(|c| c.0);
    assert_eq!(
        calls,
        [
            (
                1,
                "search_tools".to_string(),
                codemode_policies::Decision::Approved,
                Some("alice".to_string())
            ),
            (
                2,
                "hitl_request".to_string(),
                codemode_policies::Decision::Allowed,
                None
            )
        ]
    );
}

/// A call parked in its question under a profile that allowed it, resumed under a config whose
/// profile now denies `hitl_request`: the question's note passes an `ask`, never a deny.
#[tokio::test]
async fn a_question_note_does_not_pass_a_deny_added_while_parked() {
    let mut f = Fixture::new();
    let code = "try { return (await codemode.hitl_request({question: 'q', options: ['a']})).status; }\
                catch (e) { return 'threw'; }";
    let first = f.eval(true, &f.asks(), None);
    let GovernedStep::Parked(parked) = first.run_step(code, &CancellationToken::new()).await else {
        panic!("the eval should park at its question");
    };
    let question = note_of(&parked);
    f.decisions.answer(&question.approval, Some("a"));
    let config = codemode_policies::Config::from_json_str(
        r#"{"evaluation": {"profiles": {"p": {"denylist": ["hitl_request"]}}}}"#,
    )
    .unwrap();
    f.profile = config.resolve_profile(Some("p")).unwrap();
    let second = f.eval(false, &f.asks(), Some(first.id()));
    let GovernedStep::Finished(outcome) = second
        .resume(code, &reload(&parked), &CancellationToken::new())
        .await
        .unwrap()
    else {
        panic!("the resumed eval should finish");
    };
    assert_eq!(outcome.result, json!("threw"), "{:?}", outcome.error);
    let calls: Vec<_> = f
        .sink
        .tool_calls()
        .into_iter()
        .map(|r| (r.tool, r.decision))
        .collect();
    assert_eq!(
        calls,
        [(
            "hitl_request".to_string(),
            codemode_policies::Decision::Denied
        )]
    );
    // The answer given meanwhile is left untaken: the denied call never asked.
    assert_eq!(f.decisions.0.lock().unwrap().len(), 1);
}

/// Options are labels a human reads as they are on every channel — the approval page's buttons,
/// the API listing, a client's elicitation form — and one of them comes back to the script: an
/// option with a control or invisible character (a newline faking a line, an escape sequence, a
/// bidi override reversing what is read) is refused with the character shown escaped, before
/// anyone is asked.
#[tokio::test]
async fn an_option_with_control_or_invisible_characters_is_refused() {
    let cases = [
        ("keep\u{202e}atad eteled", "keep\\u202eatad eteled"),
        ("no\nApproved: yes", "no\\nApproved: yes"),
        ("\u{1b}[2Kyes", "\\u001b[2Kyes"),
        ("yes\u{200b}", "yes\\u200b"),
    ];
    for (option, shown) in cases {
        let args = json!({"question": "q", "options": ["keep", option]});
        let cx = codemode_runtime::CallContext::detached(EvalId(1), 1);
        let r = super::run(&args, &crate::approvals::NoAsker, "r1", &cx).await;
        assert_eq!(
            (&r["status"], &r["message"]),
            (
                &json!("error"),
                &json!(format!(
                    "option `{shown}` has a control or invisible character (shown escaped): \
                     an option is shown to the human as it is and must read as what it is"
                ))
            ),
            "{option:?}"
        );
    }
    // Plain text, punctuation and non-Latin scripts are options like any other.
    let args = json!({"question": "q", "options": ["ja – 是", "نعم", "back\\slash"]});
    let cx = codemode_runtime::CallContext::detached(EvalId(1), 1);
    let r = super::run(&args, &crate::approvals::NoAsker, "r1", &cx).await;
    assert_eq!(r["status"], json!("canceled"), "{r}");
}

/// Answers given while parked, taken as a store takes them: marked used at once, handed over
/// after a while (the write's round trip).
struct SlowGiven(Arc<Given>);

impl Decisions for SlowGiven {
    fn take(&self, id: &str) -> codemode_runtime::BoxFuture<'_, Option<Decided>> {
        let taken = self.0.take(id);
        Box::pin(async move {
            let taken = taken.await;
            if taken.is_some() {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            taken
        })
    }
}

/// Two questions in flight, the first answered while parked. Resumed (with a park asked for,
/// as a node that spills at once does), the first call takes its answer — which a store marks
/// used before handing it over — while the second waits for its human. The first call took it
/// while holding its wait for a human, so the eval parked again in the middle of the take: the
/// answer was used up and never delivered, and the first question was asked again. The answer
/// is now taken before the step waits for a human, so the eval cannot park mid-take.
#[tokio::test]
async fn an_answer_taken_on_resume_is_not_lost_when_the_eval_parks_again() {
    let f = Fixture::new();
    let asks = f.asks();
    let first = f.eval(true, &asks, None);
    let GovernedStep::Parked(parked) = first
        .run_step(TWO_QUESTIONS, &CancellationToken::new())
        .await
    else {
        panic!("the eval should park at its questions");
    };
    let both = notes(&parked);
    let q2 = both.iter().find(|(c, _)| *c == 2).unwrap().1.clone();
    let q1 = both.iter().find(|(c, _)| *c == 1).unwrap().1.clone();
    f.decisions.answer(&q1.approval, Some("a1"));
    let slow = Arc::new(OpenAsks::new(Some(Arc::new(SlowGiven(
        f.decisions.clone(),
    )))));
    let second = f.eval(true, &slow, Some(first.id()));
    let GovernedStep::Parked(parked) = second
        .resume(TWO_QUESTIONS, &reload(&parked), &CancellationToken::new())
        .await
        .unwrap()
    else {
        panic!("the eval should park again at its second question");
    };
    assert_eq!(
        notes(&parked),
        [(2, q2.clone())],
        "the first answer was lost"
    );
    f.decisions.answer(&q2.approval, Some("b2"));
    let third = f.eval(false, &f.asks(), Some(first.id()));
    let GovernedStep::Finished(outcome) = third
        .resume(TWO_QUESTIONS, &reload(&parked), &CancellationToken::new())
        .await
        .unwrap()
    else {
        panic!("the resumed eval should finish");
    };
    assert_eq!(
        outcome.result,
        json!(["confirmed", "a1", "confirmed", "b2"]),
        "{:?}",
        outcome.error
    );
}

/// The same with an approval and a question in flight: the approval given while parked is
/// taken on resume while the question waits for its human; the eval must not park again in the
/// middle of the take (the decision used up, the call asked again).
#[tokio::test]
async fn an_approval_taken_on_resume_is_not_lost_when_the_eval_parks_again() {
    let config = codemode_policies::Config::from_json_str(
        r#"{"evaluation": {"profiles": {"p": {"asklist": ["search_tools"]}}}}"#,
    )
    .unwrap();
    let mut f = Fixture::new();
    f.profile = config.resolve_profile(Some("p")).unwrap();
    let code = "const [found, r] = await Promise.all([codemode.search_tools({query: 'tools'}),\
        codemode.hitl_request({question: 'q', options: ['a', 'b'], timeoutMs: 600000})]);\
        return [found.results.length > 0, r.status, r.selectedOption];";
    let first = f.eval(true, &f.asks(), None);
    let GovernedStep::Parked(parked) = first.run_step(code, &CancellationToken::new()).await else {
        panic!("the eval should park");
    };
    let both = notes(&parked);
    f.decisions.0.lock().unwrap().push((
        both[0].1.approval.clone(),
        Decided::Approval(codemode_policies::ApprovalAnswer::new(
            codemode_policies::ApprovalDecision::ApproveOnce,
            codemode_policies::Channel::Http,
        )),
    ));
    let slow = Arc::new(OpenAsks::new(Some(Arc::new(SlowGiven(
        f.decisions.clone(),
    )))));
    let second = f.eval(true, &slow, Some(first.id()));
    let GovernedStep::Parked(parked) = second
        .resume(code, &reload(&parked), &CancellationToken::new())
        .await
        .unwrap()
    else {
        panic!("the eval should park again at its question");
    };
    assert_eq!(
        notes(&parked),
        [both[1].clone()],
        "the approval was lost: {:?}",
        f.decisions.0.lock().unwrap()
    );
}
