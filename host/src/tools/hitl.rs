//! `hitl_request`: a script asks its human a multiple-choice question.
//!
//! ```js
//! const r = await codemode.hitl_request({
//!   question: "Deploy to production?", options: ["yes", "no"],
//!   requireConfirmation: true, confirmationMessage: "Really deploy?", defaultOption: "no", timeoutMs: 60000,
//!   metadata: { ticket: 42 },
//! });
//! // r = { ok, status: "confirmed"|"canceled"|"timeout"|"error", confirmed, selectedOption,
//! //       source: "user"|"timeout"|"system", requestId, message?, metadata? }
//! ```
//! Also callable as `human_intervention_request` ([`ALIAS`]). Options only: the answer is one
//! of them (free text is rejected), and each is plain text (a control or invisible character is
//! refused: every channel shows an option as it is, and it is what comes back). `metadata` (any JSON) is echoed back in the result. Without
//! an interactive human the request resolves to `canceled` (source `system`) or `timeout` —
//! never to an implicit confirmation: when nobody answers in time and a `defaultOption` was
//! given, the result is `{status: "timeout", selectedOption: <defaultOption>, confirmed: false,
//! source: "timeout"}` (the script learns the default, flagged as nobody's choice). `ok` is
//! `false` only for `status: "error"`.
//!
//! Each step (the choice, then the confirmation) is a wait for a human the eval may be parked
//! in ([`CallContext::awaiting_human`]), like an approval: its note ([`ParkedAsk::question`])
//! names the step's id, its deadline and the option already chosen, so that the call, made
//! again when the eval resumes, asks the same step under the same id with what is left of its
//! time (`timeoutMs` is a deadline across the park), takes an answer given meanwhile, and never
//! asks a choice already made again.

use std::time::Duration;

use codemode_policies::{ApprovalRequest, ParkedAsk};
use codemode_runtime::CallContext;
use serde_json::{Map, Value, json};

use crate::approvals::{Answer, Ask, Asker, Question};

/// Name of the built-in tool.
pub(crate) const TOOL_NAME: &str = codemode_policies::HITL_REQUEST;
/// The same tool under the name of the approval-gateway design.
pub(crate) const ALIAS: &str = "human_intervention_request";
/// Default time the human has, per question (the audit records it: one constant for both).
pub const DEFAULT_TIMEOUT: Duration = codemode_policies::HITL_DEFAULT_TIMEOUT;
/// Longest time a script may ask for.
pub(crate) const MAX_TIMEOUT: Duration = codemode_policies::HITL_MAX_TIMEOUT;
const MAX_OPTIONS: usize = 50;
const MAX_TEXT: usize = 4000;

/// The tool's description for catalogs.
pub(crate) const DESCRIPTION: &str = "Ask the human a multiple-choice question and wait for the answer. \
Options only (no free text); optionally a confirm/cancel step. Resolves to \
{ok, status: confirmed|canceled|timeout|error, confirmed, selectedOption, source: user|timeout|system, requestId, message?, metadata?}; \
never confirms implicitly (on timeout, selectedOption is defaultOption with confirmed: false). `metadata` is echoed back.";

/// JSON Schema of the arguments.
pub fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "question": {"type": "string", "description": "What to ask"},
            "options": {"type": "array", "items": {"type": "string"}, "minItems": 1, "uniqueItems": true,
                        "description": "The possible answers (non-empty, unique, plain text: no control or invisible characters)"},
            "requireConfirmation": {"type": "boolean", "description": "Ask for an explicit confirm/cancel after the choice"},
            "confirmationMessage": {"type": "string", "description": "Text of the confirmation step"},
            "defaultOption": {"type": "string", "description": "Pre-selected option (must be one of options); never chosen automatically"},
            "timeoutMs": {"type": "integer", "minimum": 1, "description": "How long the human has, per question (default 120000)"},
            "metadata": {"description": "Any JSON, echoed back in the result"}
        },
        "required": ["question", "options"],
        "additionalProperties": false
    })
}

struct Request {
    question: String,
    options: Vec<String>,
    require_confirmation: bool,
    confirmation_message: Option<String>,
    default_option: Option<String>,
    timeout: Duration,
    metadata: Option<Value>,
}

/// An option as a human tells it from the others: in Unicode's composed form (NFC: "é" as one
/// code point or as "e" and a combining accent look the same), neutralised, runs of white space
/// folded to one space and trimmed.
fn reads_as(option: &str) -> String {
    let composed = icu_normalizer::ComposingNormalizerBorrowed::new_nfc().normalize(option);
    codemode_policies::neutralize(&composed)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The arguments a script may give.
const KEYS: [&str; 7] = [
    "metadata",
    "question",
    "options",
    "requireConfirmation",
    "confirmationMessage",
    "defaultOption",
    "timeoutMs",
];

fn parse(args: &Value) -> Result<Request, String> {
    let obj = args.as_object().ok_or("arguments must be an object")?;
    if let Some(unknown) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(format!(
            "unknown argument `{unknown}` (allowed: {})",
            KEYS.join(", ")
        ));
    }
    let question = text(obj, "question", true)?.unwrap_or_default();
    let options = options(obj.get("options"))?;
    let require_confirmation = match obj.get("requireConfirmation") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        _ => return Err("`requireConfirmation` must be a boolean".into()),
    };
    let confirmation_message = text(obj, "confirmationMessage", false)?;
    let default_option = text(obj, "defaultOption", false)?;
    if let Some(d) = &default_option
        && !options.contains(d)
    {
        return Err(format!("`defaultOption` `{d}` is not one of the options"));
    }
    let timeout = match obj.get("timeoutMs") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT,
        Some(v) => match v.as_u64() {
            Some(ms) if ms > 0 => Duration::from_millis(ms).min(MAX_TIMEOUT),
            _ => return Err("`timeoutMs` must be a positive integer".into()),
        },
    };
    Ok(Request {
        question,
        options,
        require_confirmation,
        confirmation_message,
        default_option,
        timeout,
        metadata: obj.get("metadata").cloned(),
    })
}

/// The text argument `key`: a non-blank string of at most [`MAX_TEXT`] bytes; `None` when an
/// optional one is absent or null.
fn text(obj: &Map<String, Value>, key: &str, required: bool) -> Result<Option<String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) if !required => Ok(None),
        Some(Value::String(s)) if !codemode_policies::is_blank(s) && s.len() <= MAX_TEXT => {
            Ok(Some(s.clone()))
        }
        Some(Value::String(s)) if s.len() > MAX_TEXT => {
            Err(format!("`{key}` is longer than {MAX_TEXT} bytes"))
        }
        _ => Err(format!("`{key}` must be a non-empty string")),
    }
}

/// The `options` argument: 1 to [`MAX_OPTIONS`] plain-text strings that read apart.
fn options(given: Option<&Value>) -> Result<Vec<String>, String> {
    let items = match given {
        Some(Value::Array(items)) if !items.is_empty() && items.len() <= MAX_OPTIONS => items,
        Some(Value::Array(items)) if items.len() > MAX_OPTIONS => {
            return Err(format!("at most {MAX_OPTIONS} options"));
        }
        _ => return Err("`options` must be a non-empty array of strings".into()),
    };
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let s = match item.as_str() {
            Some(s) if !s.trim().is_empty() && s.len() <= MAX_TEXT => s,
            _ => return Err("every option must be a non-empty string".into()),
        };
        // What a human reads is what comes back: an option is shown as it is (a button, a
        // form's choice), so it must have nothing to neutralise.
        let shown = codemode_policies::neutralize(s);
        if shown != s {
            return Err(format!(
                "option `{shown}` has a control or invisible character (shown escaped): \
                 an option is shown to the human as it is and must read as what it is"
            ));
        }
        // Options that read the same are one option to a human: equal after neutralisation
        // once runs of white space (which a button or a list does not show apart) are folded.
        if out.iter().any(|o| reads_as(o) == reads_as(s)) {
            return Err(format!(
                "`options` must be unique; `{}` appears twice (options are compared as a human reads them: Unicode-normalised (NFC), white space folded)",
                reads_as(s)
            ));
        }
        out.push(s.to_string());
    }
    Ok(out)
}

fn result(
    status: &str,
    selected: Option<&str>,
    source: &str,
    request_id: &str,
    message: Option<String>,
) -> Value {
    let mut out = Map::new();
    out.insert("ok".into(), json!(status != "error"));
    out.insert("status".into(), json!(status));
    out.insert("confirmed".into(), json!(status == "confirmed"));
    out.insert(
        "selectedOption".into(),
        selected.map_or(Value::Null, |s| json!(s)),
    );
    out.insert("source".into(), json!(source));
    out.insert("requestId".into(), json!(request_id));
    if let Some(m) = message {
        out.insert("message".into(), json!(m));
    }
    Value::Object(out)
}

/// Runs one `hitl_request` of call `cx` through `asker`. Never fails: problems are
/// `status: "error"`.
pub async fn run(args: &Value, asker: &dyn Asker, request_id: &str, cx: &CallContext) -> Value {
    let req = match parse(args) {
        Ok(r) => r,
        Err(message) => return result("error", None, "system", request_id, Some(message)),
    };
    let mut out = ask(&req, asker, request_id, cx).await;
    if let (Some(metadata), Value::Object(map)) = (&req.metadata, &mut out) {
        map.insert("metadata".into(), metadata.clone());
    }
    out
}

/// The choice form: one `answer` field whose values are the options.
fn choice_question(req: &Request) -> Question {
    let mut choice = json!({"type": "string", "title": "Answer", "enum": req.options});
    if let Some(d) = &req.default_option {
        choice["default"] = json!(d);
    }
    let schema =
        json!({"type": "object", "properties": {"answer": choice}, "required": ["answer"]});
    Question {
        // What the human reads is what the script sent, control characters made visible.
        message: codemode_policies::neutralize(&req.question),
        schema: schema.as_object().cloned().unwrap_or_default(),
    }
}

/// The confirmation form for `selected`: one `confirm` field, `confirm` or `cancel`.
fn confirm_question(req: &Request, selected: &str) -> Question {
    let message = req
        .confirmation_message
        .clone()
        .unwrap_or_else(|| format!("Confirm: {selected}?"));
    let schema = json!({"type": "object", "properties": {"confirm": {"type": "string", "title": "Confirm",
        "oneOf": [{"const": "confirm", "title": "Confirm"}, {"const": "cancel", "title": "Cancel"}]}},
        "required": ["confirm"]});
    Question {
        message: codemode_policies::neutralize(&message),
        schema: schema.as_object().cloned().unwrap_or_default(),
    }
}

/// Asks one step, as a wait its eval may park in: a fresh step (new id, the full timeout), or
/// the step `resumed` held when its eval was parked (its id, what is left of its time).
async fn step(
    asker: &dyn Asker,
    cx: &CallContext,
    (question, timeout): (Question, Duration),
    resumed: Option<&ParkedAsk>,
    selected: Option<&str>,
) -> Answer {
    let (id, timeout) = match resumed {
        Some(parked) => (parked.approval.clone(), parked.remaining()),
        None => (ApprovalRequest::new_id(), timeout),
    };
    let mut note = ParkedAsk::question(id.clone(), timeout, selected.map(str::to_string));
    if let Some(parked) = resumed {
        // The deadline as it was, not one recomputed from what is left (which would creep by
        // a millisecond's rounding at every resume).
        note.deadline_ms = parked.deadline_ms;
    }
    let ask = Ask::choice(id, question, timeout, cx.clone(), resumed.is_some());
    // An answer given while the eval was parked, taken before the step waits for a human:
    // waiting, the eval could be parked again mid-take and the answer used up undelivered. It
    // was accepted within the step's time (the store refuses later ones), so what is left of
    // that time does not bound the take.
    if let Some(reply) = asker.taken_while_parked(&ask).await {
        return reply.answer;
    }
    let _human = cx.awaiting_human(note.to_note());
    let asked = asker.ask(ask);
    // The step's deadline holds whatever the channel does with its timeout.
    tokio::time::timeout(timeout, asked)
        .await
        .map_or(Answer::Timeout, |reply| reply.answer)
}

async fn ask(req: &Request, asker: &dyn Asker, request_id: &str, cx: &CallContext) -> Value {
    if !asker.supports() {
        let message =
            "no interactive human is available to answer (the client does not support elicitation)";
        return result("canceled", None, "system", request_id, Some(message.into()));
    }
    let resumed = ParkedAsk::question_of(cx);
    // The option chosen before the eval was parked in the confirmation step, if it was.
    let chosen = resumed
        .as_ref()
        .and_then(|p| p.question.as_ref()?.selected.clone())
        .filter(|s| req.require_confirmation && req.options.contains(s));
    let (selected, confirming) = match chosen {
        Some(selected) => (selected, resumed.as_ref()),
        None => match choose(req, asker, request_id, cx, resumed.as_ref()).await {
            Ok(selected) => (selected, None),
            Err(ended) => return ended,
        },
    };
    if !req.require_confirmation {
        return result("confirmed", Some(&selected), "user", request_id, None);
    }
    confirm(req, asker, request_id, cx, (&selected, confirming)).await
}

/// The choice step: the option the human chose, or the request's result when the step ended
/// it (declined, timed out, failed, or an answer that is no option).
async fn choose(
    req: &Request,
    asker: &dyn Asker,
    request_id: &str,
    cx: &CallContext,
    resumed: Option<&ParkedAsk>,
) -> Result<String, Value> {
    let question = (choice_question(req), req.timeout);
    let error = |message: String| result("error", None, "system", request_id, Some(message));
    match step(asker, cx, question, resumed, None).await {
        Answer::Accept(content) => match content.get("answer").and_then(Value::as_str) {
            Some(a) if req.options.iter().any(|o| o == a) => Ok(a.to_string()),
            Some(a) => Err(error(format!("the answer `{a}` is not one of the options"))),
            None => Err(error("the answer names no option".into())),
        },
        Answer::Decline | Answer::Cancel => Err(result("canceled", None, "user", request_id, None)),
        Answer::Timeout => Err(result(
            "timeout",
            req.default_option.as_deref(),
            "timeout",
            request_id,
            Some("nobody answered in time".into()),
        )),
        Answer::Failed(e) => Err(error(e)),
    }
}

/// The confirmation step for `selected` (`resumed`: the step as its eval was parked in it).
async fn confirm(
    req: &Request,
    asker: &dyn Asker,
    request_id: &str,
    cx: &CallContext,
    (selected, resumed): (&str, Option<&ParkedAsk>),
) -> Value {
    let question = (confirm_question(req, selected), req.timeout);
    match step(asker, cx, question, resumed, Some(selected)).await {
        Answer::Accept(content)
            if content.get("confirm").and_then(Value::as_str) == Some("confirm") =>
        {
            result("confirmed", Some(selected), "user", request_id, None)
        }
        Answer::Accept(_) | Answer::Decline | Answer::Cancel => {
            result("canceled", Some(selected), "user", request_id, None)
        }
        Answer::Timeout => result(
            "timeout",
            Some(selected),
            "timeout",
            request_id,
            Some("nobody confirmed in time".into()),
        ),
        Answer::Failed(e) => result("error", Some(selected), "system", request_id, Some(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approvals::Reply;
    use codemode_runtime::BoxFuture;
    use std::sync::Mutex;

    /// Answers questions from a script of answers.
    struct Scripted(Mutex<Vec<Answer>>);
    impl Asker for Scripted {
        fn supports(&self) -> bool {
            true
        }
        fn channel(&self) -> codemode_policies::Channel {
            codemode_policies::Channel::Elicitation
        }
        fn ask(&self, _ask: Ask) -> BoxFuture<'_, Reply> {
            let next = self.0.lock().unwrap().remove(0);
            Box::pin(async move { Reply::new(next, codemode_policies::Channel::Elicitation) })
        }
    }

    fn cx() -> CallContext {
        CallContext::detached(codemode_runtime::EvalId(1), 1)
    }

    fn asker(answers: Vec<Answer>) -> Scripted {
        Scripted(Mutex::new(answers))
    }

    #[tokio::test]
    async fn validation_errors() {
        let cases = [
            json!({"options": ["a"]}),
            json!({"question": "\u{200b}\u{3164} ", "options": ["a"]}),
            json!({"question": "q", "options": []}),
            json!({"question": "q", "options": ["a", "a"]}),
            json!({"question": "q", "options": ["a"], "defaultOption": "b"}),
            json!({"question": "q", "options": ["a"], "timeoutMs": -1}),
            json!({"question": "q", "options": ["a"], "freeText": true}),
            json!("not an object"),
        ];
        for args in cases {
            let r = run(&args, &asker(vec![]), "r1", &cx()).await;
            assert_eq!(r["status"], "error", "{args}: {r}");
            assert_eq!(r["ok"], false);
            assert!(r["message"].as_str().is_some_and(|m| !m.is_empty()));
        }
    }

    #[tokio::test]
    async fn options_that_read_the_same_are_refused() {
        let invisible = |shown: &str| {
            format!(
                "option `{shown}` has a control or invisible character (shown escaped): an option is shown to the human as it is and must read as what it is"
            )
        };
        let twice = |shown: &str| {
            format!(
                "`options` must be unique; `{shown}` appears twice (options are compared as a human reads them: Unicode-normalised (NFC), white space folded)"
            )
        };
        let cases = [
            // A hidden tag, variation selector, Hangul filler or grapheme joiner.
            (
                json!(["Cancel", "Cancel\u{e0020}"]),
                invisible("Cancel\\u{e0020}"),
            ),
            (
                json!(["Cancel", "Cancel\u{fe0f}"]),
                invisible("Cancel\\ufe0f"),
            ),
            (
                json!(["Cancel", "Cancel\u{3164}"]),
                invisible("Cancel\\u3164"),
            ),
            (
                json!(["Cancel", "Can\u{34f}cel"]),
                invisible("Can\\u034fcel"),
            ),
            // White space a button or a list does not show apart.
            (json!(["Cancel", " Cancel"]), twice("Cancel")),
            (json!(["Do  it", "Do\u{3000}it"]), twice("Do it")),
            // The same text in two Unicode forms: composed and decomposed.
            (json!(["caf\u{e9}", "cafe\u{301}"]), twice("caf\u{e9}")),
            (
                json!(["\u{d55c}", "\u{1112}\u{1161}\u{11ab}"]),
                twice("\u{d55c}"),
            ),
            (
                json!(["\u{c5}ngstr\u{f6}m", "\u{212b}ngstr\u{f6}m"]),
                twice("\u{c5}ngstr\u{f6}m"),
            ),
        ];
        for (options, want) in cases {
            let args = json!({"question": "q", "options": options});
            let r = run(&args, &asker(vec![]), "r1", &cx()).await;
            assert_eq!(r["status"], "error", "{args}: {r}");
            assert_eq!(r["message"], want.as_str(), "{args}");
        }
    }

    #[tokio::test]
    async fn outcomes() {
        let q = json!({"question": "Deploy?", "options": ["yes", "no"]});
        let qc =
            json!({"question": "Deploy?", "options": ["yes", "no"], "requireConfirmation": true});
        let cases: Vec<(Value, Vec<Answer>, &str, Value, &str)> = vec![
            (
                q.clone(),
                vec![Answer::Accept(json!({"answer": "yes"}))],
                "confirmed",
                json!("yes"),
                "user",
            ),
            (
                q.clone(),
                vec![Answer::Accept(json!({"answer": "maybe"}))],
                "error",
                json!(null),
                "system",
            ),
            (
                q.clone(),
                vec![Answer::Decline],
                "canceled",
                json!(null),
                "user",
            ),
            (
                q.clone(),
                vec![Answer::Timeout],
                "timeout",
                json!(null),
                "timeout",
            ),
            (
                json!({"question": "Deploy?", "options": ["yes", "no"], "defaultOption": "no"}),
                vec![Answer::Timeout],
                "timeout",
                json!("no"),
                "timeout",
            ),
            (
                qc.clone(),
                vec![
                    Answer::Accept(json!({"answer": "no"})),
                    Answer::Accept(json!({"confirm": "confirm"})),
                ],
                "confirmed",
                json!("no"),
                "user",
            ),
            (
                qc.clone(),
                vec![
                    Answer::Accept(json!({"answer": "no"})),
                    Answer::Accept(json!({"confirm": "cancel"})),
                ],
                "canceled",
                json!("no"),
                "user",
            ),
            (
                qc,
                vec![Answer::Accept(json!({"answer": "no"})), Answer::Timeout],
                "timeout",
                json!("no"),
                "timeout",
            ),
        ];
        for (args, answers, status, selected, source) in cases {
            let r = run(&args, &asker(answers), "r2", &cx()).await;
            assert_eq!(r["status"], status, "{r}");
            assert_eq!(r["selectedOption"], selected, "{r}");
            assert_eq!(r["source"], source, "{r}");
            assert_eq!(r["confirmed"], status == "confirmed");
            assert_eq!(r["requestId"], "r2");
        }
    }

    #[tokio::test]
    async fn metadata_is_echoed_back() {
        let meta = json!({"ticket": 42, "tags": ["a", {"b": null}]});
        let r = run(
            &json!({"question": "q", "options": ["a"], "metadata": meta}),
            &asker(vec![Answer::Accept(json!({"answer": "a"}))]),
            "r4",
            &cx(),
        )
        .await;
        assert_eq!(
            r,
            json!({"ok": true, "status": "confirmed", "confirmed": true, "selectedOption": "a",
                "source": "user", "requestId": "r4", "metadata": meta})
        );
        // Echoed on every outcome, errors included (once the arguments parse).
        let r = run(
            &json!({"question": "q", "options": ["a"], "metadata": "m"}),
            &crate::approvals::NoAsker,
            "r5",
            &cx(),
        )
        .await;
        assert_eq!(r["metadata"], "m");
    }

    #[tokio::test]
    async fn without_a_human_it_cancels() {
        let r = run(
            &json!({"question": "q", "options": ["a"], "defaultOption": "a"}),
            &crate::approvals::NoAsker,
            "r3",
            &cx(),
        )
        .await;
        assert_eq!(r["status"], "canceled");
        assert_eq!(r["source"], "system");
        assert_eq!(r["confirmed"], false);
        assert_eq!(r["selectedOption"], Value::Null);
    }
}

#[cfg(test)]
#[path = "hitl_tests.rs"]
mod parked_tests;
