//! Parking an eval that waits for humans, saving it to bytes and resuming it from them: the
//! resumed eval ends as an uninterrupted one would, every limit carried over, no call made twice.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use codemode_runtime::{
    BoxFuture, CallContext, CallStatus, ErrorKind, EvalControl, EvalOptions, EvalOutcome, EvalStep,
    ParkRequest, PendingCall, ResumeError, Suspended, ToolError, ToolHost,
};
use serde_json::{Value, json};

use crate::{RUNTIME, failed, ok, opts, show};

/// How `ask` answers.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Desk {
    /// At once, `"yes:<q>"`: the uninterrupted run.
    Auto,
    /// Waits for a human (forever) — unless made again after a resume, then `"yes:<q>"`.
    Human,
}

/// Tools for these tests: `ask` (a human's answer), `echo` (at once), `busy` (not a human wait:
/// returns once some `ask` waits for a human). Remembers every call made.
pub(crate) struct Tools {
    desk: Desk,
    /// (tool, args, resumed note) of every call made, in order.
    made: Mutex<Vec<(String, Value, Option<Value>)>>,
    waiting: AtomicUsize,
}

impl Tools {
    pub(crate) fn new(desk: Desk) -> Self {
        Tools {
            desk,
            made: Mutex::default(),
            waiting: AtomicUsize::new(0),
        }
    }

    fn made(&self) -> Vec<(String, Value, Option<Value>)> {
        self.made.lock().unwrap().clone()
    }
}

impl ToolHost for Tools {
    fn call<'a>(
        &'a self,
        name: &'a str,
        args: Value,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        self.made.lock().unwrap().push((
            name.to_string(),
            args.clone(),
            cx.resumed_note().cloned(),
        ));
        Box::pin(async move {
            match name {
                "echo" => Ok(args),
                "ask" => {
                    let q = args["q"].as_str().unwrap_or_default().to_string();
                    if self.desk == Desk::Human && cx.resumed_note().is_none() {
                        let _wait = cx.awaiting_human(json!({"ask": q}));
                        self.waiting.fetch_add(1, Ordering::SeqCst);
                        std::future::pending::<()>().await;
                    }
                    Ok(json!(format!("yes:{q}")))
                }
                "busy" => {
                    while self.waiting.load(Ordering::SeqCst) == 0 {
                        tokio::task::yield_now().await;
                    }
                    Ok(json!("done"))
                }
                _ => Err(ToolError::NotFound {
                    tool: name.to_string(),
                }),
            }
        })
    }

    fn tool_names(&self) -> Vec<String> {
        ["ask", "echo", "busy"].map(String::from).to_vec()
    }
}

/// Control that parks at the first chance.
pub(crate) fn parking() -> EvalControl {
    let request = ParkRequest::new();
    request.request();
    let mut control = EvalControl::new();
    control.park(request);
    control
}

/// Runs `code` asking it to park; it must.
async fn parked(code: &str, options: &EvalOptions, tools: &Tools) -> Suspended {
    let id = RUNTIME.allocate_eval_id();
    match RUNTIME
        .eval_parkable(id, code, options, tools, &parking())
        .await
    {
        EvalStep::Suspended(suspended) => suspended,
        EvalStep::Finished(outcome) => panic!("finished instead of parking: {}", show(&outcome)),
    }
}

/// Saves and loads `suspended`: what a resume in another process starts from.
pub(crate) fn through_bytes(suspended: &Suspended) -> Suspended {
    Suspended::load(&suspended.save()).expect("loading what was saved")
}

/// Resumes with `answers`; the eval must finish.
async fn resumed(
    suspended: &Suspended,
    answers: Vec<(u64, Result<Value, ToolError>)>,
    tools: &Tools,
) -> EvalOutcome {
    match RUNTIME
        .resume(suspended, answers, tools, &EvalControl::new())
        .await
        .expect("resuming")
    {
        EvalStep::Finished(outcome) => outcome,
        EvalStep::Suspended(_) => panic!("parked again without being asked to"),
    }
}

/// The ledger without durations: (id, tool, status, reason).
fn calls(outcome: &EvalOutcome) -> Vec<(u64, String, CallStatus, Option<String>)> {
    outcome
        .tool_calls
        .iter()
        .map(|c| (c.id, c.tool.clone(), c.status, c.reason.clone()))
        .collect()
}

const TWO_ASKS: &str = r#"console.log("before");
const xs = Array.from({ length: 10000 }, (_, i) => i);
const first = await codemode.echo({ n: 1 });
const [a, b] = await Promise.all([codemode.ask({ q: "a" }), codemode.ask({ q: "b" })]);
console.log("after", a, b);
return { sum: xs.reduce((s, x) => s + x, 0), first, a, b };"#;

#[tokio::test]
async fn a_parked_eval_resumed_from_bytes_ends_as_an_uninterrupted_one() {
    let straight = RUNTIME
        .eval(TWO_ASKS, &opts(), &Tools::new(Desk::Auto))
        .await;

    let tools = Tools::new(Desk::Human);
    let suspended = parked(TWO_ASKS, &opts(), &tools).await;
    assert_eq!(
        suspended.pending(),
        &[
            PendingCall {
                call_id: 2,
                name: "ask".into(),
                args: json!({"q": "a"}),
                line: Some(4),
                column: Some(44),
                note: Some(json!({"ask": "a"})),
            },
            PendingCall {
                call_id: 3,
                name: "ask".into(),
                args: json!({"q": "b"}),
                line: Some(4),
                column: Some(70),
                note: Some(json!({"ask": "b"})),
            },
        ]
    );
    assert_eq!(suspended.logs().len(), 1);
    assert_eq!(suspended.ledger()[0].status, CallStatus::Ok);
    let bytes = suspended.save();
    assert!(bytes.len() < 64 << 10, "{} bytes saved", bytes.len());

    // Call 2 was answered while parked; call 3 is made again and granted.
    let loaded = Suspended::load(&bytes).unwrap();
    assert_eq!(loaded.pending(), suspended.pending());
    assert_eq!(loaded.eval_id(), suspended.eval_id());
    let outcome = resumed(&loaded, vec![(2, Ok(json!("yes:a")))], &tools).await;

    assert_eq!(
        ok(&outcome),
        &json!({"sum": 49995000, "first": {"n": 1}, "a": "yes:a", "b": "yes:b"})
    );
    assert_eq!(outcome.result, straight.result);
    assert_eq!(outcome.logs, straight.logs, "{}", show(&outcome));
    assert_eq!(calls(&outcome), calls(&straight));
    assert_eq!(outcome.warnings, straight.warnings);
    assert_eq!(outcome.stats.fuel_used, straight.stats.fuel_used);
    assert_eq!(
        outcome.stats.memory_peak_bytes,
        straight.stats.memory_peak_bytes
    );
    assert_eq!(
        tools.made(),
        vec![
            ("echo".into(), json!({"n": 1}), None),
            ("ask".into(), json!({"q": "a"}), None),
            ("ask".into(), json!({"q": "b"}), None),
            ("ask".into(), json!({"q": "b"}), Some(json!({"ask": "b"}))),
        ],
        "the echo before parking and the answered ask are never made again"
    );
}

#[tokio::test]
async fn a_resumed_eval_that_waits_again_parks_again() {
    let tools = Tools::new(Desk::Human);
    let code =
        "const a = await codemode.ask({q: 'a'});\nconst b = await codemode.ask({q: 'b'});\n[a, b]";
    let first = through_bytes(&parked(code, &opts(), &tools).await);
    let second = match RUNTIME
        .resume(&first, vec![(1, Ok(json!("A")))], &tools, &parking())
        .await
        .unwrap()
    {
        EvalStep::Suspended(s) => through_bytes(&s),
        EvalStep::Finished(o) => panic!("finished: {}", show(&o)),
    };
    assert_eq!(
        second
            .pending()
            .iter()
            .map(|p| (p.call_id, p.note.clone()))
            .collect::<Vec<_>>(),
        vec![(2, Some(json!({"ask": "b"})))]
    );
    let outcome = resumed(&second, vec![(2, Ok(json!("B")))], &tools).await;
    assert_eq!(ok(&outcome), &json!(["A", "B"]));
    assert_eq!(outcome.tool_calls.len(), 2);
    assert_eq!(second.eval_id(), first.eval_id());
}

#[tokio::test]
async fn an_error_answer_rejects_the_call_and_the_script_can_catch_it() {
    let tools = Tools::new(Desk::Human);
    let code = "try { await codemode.ask({q: 'x'}); return 'granted'; } catch (e) { return [e.name, e.message]; }";
    let suspended = through_bytes(&parked(code, &opts(), &tools).await);
    let denied = ToolError::Denied {
        tool: "ask".into(),
        reason: "denied_by_human".into(),
        message: "no".into(),
    };
    let outcome = resumed(&suspended, vec![(1, Err(denied))], &tools).await;
    assert_eq!(ok(&outcome), &json!(["ToolCallDeniedError", "no"]));
    assert_eq!(
        calls(&outcome),
        vec![(
            1,
            "ask".into(),
            CallStatus::Denied,
            Some("denied_by_human".into())
        )]
    );
}

#[tokio::test]
async fn answers_for_calls_the_eval_does_not_wait_on_are_refused_and_lose_nothing() {
    let tools = Tools::new(Desk::Human);
    let suspended = parked("await codemode.ask({q: 'x'})", &opts(), &tools).await;
    let refused = RUNTIME
        .resume(
            &suspended,
            vec![(9, Ok(json!(1)))],
            &tools,
            &EvalControl::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        refused,
        ResumeError::UnknownCall {
            call_id: 9,
            pending: vec![1]
        }
    );
    assert_eq!(
        refused.to_string(),
        "an answer for call 9, which the eval does not wait on (it waits on [1])"
    );
    let twice = RUNTIME
        .resume(
            &suspended,
            vec![(1, Ok(json!(1))), (1, Ok(json!(2)))],
            &tools,
            &EvalControl::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(twice, ResumeError::DuplicateAnswer { call_id: 1 });
    // The refused resumes took nothing: the eval resumes.
    let outcome = resumed(&suspended, vec![(1, Ok(json!("fine")))], &tools).await;
    assert_eq!(ok(&outcome), &json!("fine"));
}

#[tokio::test]
async fn an_eval_with_a_call_that_is_not_a_human_wait_stays_in_memory() {
    // `busy` is in flight while `ask` waits for a human: no parking until `busy` is delivered.
    let tools = Tools::new(Desk::Human);
    let code =
        "const [a, b] = await Promise.all([codemode.ask({q: 'a'}), codemode.busy({})]);\n[a, b]";
    let suspended = through_bytes(&parked(code, &opts(), &tools).await);
    assert_eq!(
        suspended
            .pending()
            .iter()
            .map(|p| p.call_id)
            .collect::<Vec<_>>(),
        vec![1]
    );
    assert_eq!(suspended.ledger()[1].status, CallStatus::Ok);
    let outcome = resumed(&suspended, vec![(1, Ok(json!("A")))], &tools).await;
    assert_eq!(ok(&outcome), &json!(["A", "done"]));

    // Only non-human calls: the eval never parks and finishes normally.
    let outcome = RUNTIME
        .eval_parkable(
            RUNTIME.allocate_eval_id(),
            "await codemode.echo({k: 1})",
            &opts(),
            &Tools::new(Desk::Auto),
            &parking(),
        )
        .await
        .finished()
        .expect("finishes in memory");
    assert_eq!(ok(&outcome), &json!({"k": 1}));
}

#[tokio::test]
async fn queued_calls_are_saved_and_made_after_the_resume() {
    // One call at a time: the second ask waits for a place, never started.
    let mut options = opts();
    options.max_concurrent_tool_calls(1);
    let tools = Tools::new(Desk::Human);
    let code = "await Promise.all([codemode.ask({q: 'a'}), codemode.echo({e: 2})])";
    let suspended = through_bytes(&parked(code, &options, &tools).await);
    assert_eq!(
        suspended
            .pending()
            .iter()
            .map(|p| (p.call_id, p.note.clone()))
            .collect::<Vec<_>>(),
        vec![(1, Some(json!({"ask": "a"}))), (2, None)]
    );
    let outcome = resumed(&suspended, vec![(1, Ok(json!("A")))], &tools).await;
    assert_eq!(ok(&outcome), &json!(["A", {"e": 2}]));
    let made: Vec<_> = tools.made().into_iter().map(|(t, _, n)| (t, n)).collect();
    assert_eq!(made, vec![("ask".into(), None), ("echo".into(), None)]);
}

/// Limits exceeded only after the resume: each fails as it would have without the park, which
/// it could not if what was used before the park were forgotten.
#[tokio::test]
async fn every_limit_carries_across_a_resume() {
    // Tool calls: the one before parking counts; the third call is one too many.
    let mut options = opts();
    options.max_tool_calls(Some(2));
    let code = "await codemode.ask({q: 'a'});\nawait codemode.echo({});\nawait codemode.echo({});";
    let outcome = park_and_resume(code, &options).await;
    assert_eq!(
        failed(&outcome, ErrorKind::ToolLimit).message,
        "the script attempted more than 2 tool calls (the call to `echo` was refused)"
    );

    // Output: 60 bytes logged before parking, 60 after, 100 allowed.
    let mut options = opts();
    options.max_output(100);
    let line = "x".repeat(59);
    let code = format!(
        "console.log('{line}');\nawait codemode.ask({{q: 'a'}});\nconsole.log('{line}');\n1"
    );
    let outcome = park_and_resume(&code, &options).await;
    failed(&outcome, ErrorKind::OutputLimit);
    assert_eq!(outcome.logs.len(), 1, "{}", show(&outcome));

    // Fuel: the budget is what is left after the part before parking.
    let mut options = opts();
    options.fuel(Some(50_000_000));
    let code = "await codemode.ask({q: 'a'});\nwhile (true) {}";
    let outcome = park_and_resume(code, &options).await;
    assert_eq!(
        failed(&outcome, ErrorKind::OutOfFuel).message,
        "the script ran out of fuel (50000000 instructions)"
    );
    assert_eq!(outcome.stats.fuel_used, 50_000_000);

    // Wall time.
    let mut options = opts();
    options.timeout(Some(Duration::from_millis(300)));
    let outcome = park_and_resume(code, &options).await;
    assert_eq!(
        failed(&outcome, ErrorKind::Timeout).message,
        "the script exceeded its wall-clock timeout of 300ms"
    );

    // Memory: the limit holds after the resume.
    let mut options = opts();
    options.memory(16 << 20);
    let code = "await codemode.ask({q: 'a'});\nconst a = []; while (true) a.push('x'.repeat(1000) + a.length);";
    let outcome = park_and_resume(code, &options).await;
    failed(&outcome, ErrorKind::MemoryLimit);
}

async fn park_and_resume(code: &str, options: &EvalOptions) -> EvalOutcome {
    let tools = Tools::new(Desk::Human);
    let suspended = through_bytes(&parked(code, options, &tools).await);
    assert_eq!(suspended.options(), *options);
    let answer = suspended.pending()[0].call_id;
    resumed(&suspended, vec![(answer, Ok(json!("A")))], &tools).await
}

#[tokio::test]
async fn the_parked_time_counts_in_durations_but_not_against_the_timeout() {
    let mut options = opts();
    options.timeout(Some(Duration::from_secs(5)));
    let tools = Tools::new(Desk::Human);
    let suspended = through_bytes(&parked("await codemode.ask({q: 'a'})", &options, &tools).await);
    let bytes = suspended.save();
    // Parked "for an hour": the eval's own clock paused while it waited for a human.
    let aged = Suspended::load(&age(&bytes, 3_600_000)).unwrap();
    let outcome = resumed(&aged, vec![(1, Ok(json!("A")))], &tools).await;
    assert_eq!(ok(&outcome), &json!("A"));
    assert!(
        outcome.tool_calls[0].duration_ms >= 3_600_000.0,
        "{}",
        show(&outcome)
    );
    assert!(outcome.stats.wall_ms >= 3_600_000.0, "{}", show(&outcome));
}

/// `bytes` with the parking time moved `ms` earlier (the checksum recomputed).
fn age(bytes: &[u8], ms: u64) -> Vec<u8> {
    let header = 8 + 2 + 32 + 4;
    let len = u32::from_le_bytes(bytes[header..header + 4].try_into().unwrap()) as usize;
    let mut state: Value = serde_json::from_slice(&bytes[header + 4..header + 4 + len]).unwrap();
    let at = state["parked_at_ms"].as_u64().unwrap();
    state["parked_at_ms"] = json!(at - ms);
    let state = serde_json::to_vec(&state).unwrap();
    let mut out = bytes[..header].to_vec();
    out.extend_from_slice(&(state.len() as u32).to_le_bytes());
    out.extend_from_slice(&state);
    out.extend_from_slice(&bytes[header + 4 + len..]);
    let mut covered = out[..header - 4].to_vec();
    covered.extend_from_slice(&out[header..]);
    let crc = crc32(&covered);
    out[header - 4..header].copy_from_slice(&crc.to_le_bytes());
    out
}

/// CRC-32 (IEEE), bit by bit: the test's own, independent of the runtime's.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[tokio::test]
async fn any_damage_to_saved_bytes_is_a_load_error_never_a_panic() {
    let tools = Tools::new(Desk::Human);
    let suspended = parked(TWO_ASKS, &opts(), &tools).await;
    let bytes = suspended.save();
    assert!(Suspended::load(&bytes).is_ok());
    for len in (0..bytes.len()).step_by(7).chain([bytes.len() - 1]) {
        assert!(
            Suspended::load(&bytes[..len]).is_err(),
            "truncated to {len}"
        );
    }
    for at in (0..bytes.len()).step_by(3) {
        for bit in [0x01u8, 0x80] {
            let mut flipped = bytes.clone();
            flipped[at] ^= bit;
            assert!(
                Suspended::load(&flipped).is_err(),
                "bit {bit:#x} of byte {at}"
            );
        }
    }
    assert_eq!(
        Suspended::load(b"{}").unwrap_err().to_string(),
        "not a saved eval (the bytes do not start with the saved-eval magic)"
    );
    let mut later = bytes.clone();
    later[8] = 9;
    assert_eq!(
        Suspended::load(&later).unwrap_err().to_string(),
        "a saved eval of format version 9; this runtime reads versions 1 to 2"
    );
}
