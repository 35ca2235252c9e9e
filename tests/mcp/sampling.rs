//! An upstream's `sampling/createMessage` during a script's call goes to that eval's client's
//! model, governed by the profile's `sampling` and audited; refused with the reason otherwise,
//! and never to another eval's client (clients/sampling.py, with server-everything and the
//! upstream clients/chatty_server.py).

use serde_json::{Value, json};

use crate::harness::{Mode, Setup, Transport, assert_json, eval_summary};

fn config(scratch: &crate::harness::Scratch) -> Value {
    let mut config = crate::notifications::config(scratch);
    config["evaluation"]["profiles"] = json!({
        "open": {"sampling": "allow"},
        "guarded": {"approvalTimeoutSeconds": 30},
        "closed": {"sampling": "deny"},
    });
    config
}

const TRIGGER: &str = "everything__trigger-sampling-request";

/// What the script of server-everything's tool returns when a model answered.
fn answered(model: &str, text: &str) -> Value {
    json!({"is_error": false, "ok": true, "calls": [[TRIGGER, "ok", null]], "result": {
        "content": {"type": "text", "text": text},
        "model": model, "role": "assistant", "stopReason": "endTurn",
    }})
}

/// What the script of server-everything's tool gets when codemode refused the request.
fn refused(why: &str) -> Value {
    let message = format!("MCP error -32600: codemode refused this sampling request: {why}");
    json!({"is_error": true, "ok": false, "calls": [[TRIGGER, "error", message]],
        "error": ["exception", format!("ToolError: {message}")]})
}

/// What a human is shown about server-everything's request.
fn everything_prompt() -> String {
    "[upstream server `everything` asks to use your model]\n\
     During a call of a script of caller `local` (profile `guarded`), upstream server \
     `everything` asks the client's model to write a message.\n\n\
     System prompt:\n    You are a helpful test server.\n\n\
     Max tokens: 5; temperature 0.7\n\n\
     Messages (1):\n1. user, text:\n    Resource trigger-sampling-request context: hi\n\n\
     No answer within 30 s refuses the request."
        .to_string()
}

/// Runs client `script` against a `codemode serve --http` with chatty, on 2025-11-25.
fn with_chatty(name: &str, script: &str) -> (Setup, Value) {
    let setup = Setup::new(name, Transport::Http, config);
    let dir = setup.scratch.path("chatty");
    std::fs::create_dir_all(&dir).expect("create the chatty dir");
    let obs = setup.python(script, Mode::Legacy, &[("CHATTY_DIR", dir.as_path())]);
    (setup, obs)
}

#[test]
fn sampling_reaches_the_eval_client_as_its_profile_says() {
    let (setup, obs) = with_chatty("sampling", "sampling.py");
    assert_eq!(obs["protocol"], Mode::Legacy.protocol(), "{obs}");
    let evals: serde_json::Map<String, Value> = obs["evals"]
        .as_object()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, eval_summary(&v)))
        .collect();
    let heard = "a heard Resource trigger-sampling-request context: hi";
    let unattributed = "upstream server `chatty` refused `sample`: codemode refused this sampling request: it could not tie it to one script's call on `chatty` whose client can sample: calls of several scripts are in flight on the server, and its transport does not say whose call it is about (the server's isolateSessions gives each script its own connection)";
    let everything_request = json!({
        "maxTokens": 5,
        "messages": [{"role": "user", "content": {"type": "text", "text": "Resource trigger-sampling-request context: hi"}}],
        "systemPrompt": "You are a helpful test server.",
        "temperature": 0.699999988079071,
    });
    let without_meta = |asked: &Value| -> Value {
        let mut asked = asked.as_array().cloned().unwrap_or_default();
        for request in &mut asked {
            if let Some(request) = request.as_object_mut() {
                request.remove("_meta");
            }
        }
        Value::Array(asked)
    };
    assert_json(
        "sampling through codemode",
        &json!({
            "evals": evals,
            "model_a": without_meta(&obs["model_a"]),
            "model_b": without_meta(&obs["model_b"]),
            "model_d": without_meta(&obs["model_d"]),
            "modern_protocol": obs["modern_protocol"],
            "model_a_after_everything": obs["model_a_after_everything"],
            "asked_a": obs["asked_a"],
            "asked_b": obs["asked_b"],
            "asked_c": obs["asked_c"],
            "asked_d": obs["asked_d"],
        }),
        &json!({
            "evals": {
                // `codemode serve` declares sampling to its upstreams.
                "declared": {"is_error": false, "ok": true, "calls": [["chatty__declared", "ok", null]], "result": {"result": true}},
                "allowed": answered("model-a", heard),
                "approved": answered("model-a", heard),
                "declined": refused("it was declined by the user"),
                "denied": refused("profile `closed` denies sampling"),
                "no_model": refused("this script's client did not declare `sampling`"),
                // A 2026-07-28 client's model answers in the retry of an input-required result.
                "modern": answered("model-d", "d heard Resource trigger-sampling-request context: hi"),
                "modern_asked": answered("model-d", "d heard Resource trigger-sampling-request context: hi"),
                "held": {"is_error": false, "ok": true, "calls": [["chatty__hold", "ok", null]], "result": {"result": "a"}},
                "crowded": {"is_error": true, "ok": false, "calls": [["chatty__sample", "error", unattributed]],
                    "error": ["exception", format!("ToolError: {unattributed}")]},
                "alone": {"is_error": false, "ok": true, "calls": [["chatty__sample", "ok", null]],
                    "result": {"result": "model-b: b heard ping"}},
            },
            // A's model answered the allowed and the approved request, and nothing else.
            "model_a": [everything_request, everything_request],
            "model_a_after_everything": 2,
            "model_b": [{
                "maxTokens": 32,
                "messages": [
                    {"role": "user", "content": {"type": "text", "text": "ping"}},
                    {"role": "user", "content": {"type": "image", "mimeType": "image/png",
                        "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR4nGNgYAAAAAMAASsJTYQAAAAASUVORK5CYII="}},
                ],
                "modelPreferences": {"hints": [{"name": "claude"}], "speedPriority": 0.75},
                "systemPrompt": "Answer in one word.",
                "temperature": 0.25,
            }],
            "asked_a": [everything_prompt(), everything_prompt()],
            "asked_b": ["[upstream server `chatty` asks to use your model]\n\
                During a call of a script of caller `local` (profile `guarded`), upstream server \
                `chatty` asks the client's model to write a message.\n\n\
                System prompt:\n    Answer in one word.\n\n\
                Max tokens: 32; temperature 0.25\n\
                Model preferences: hints `claude`, speed priority 0.75\n\n\
                Messages (2):\n1. user, text:\n    ping\n2. user, image (image/png, 68 bytes)\n\n\
                No answer within 30 s refuses the request."],
            "asked_c": [],
            "asked_d": [everything_prompt()],
            "model_d": [everything_request, everything_request],
            "modern_protocol": Mode::Auto.protocol(),
        }),
    );
    assert_audit(&setup.audit_once(&[("eval", 11)]));
    let log = std::fs::read_to_string(setup.scratch.path("server.log")).unwrap_or_default();
    assert_eq!(
        log.matches("refused a sampling request from upstream `chatty`: calls of several scripts are in flight on the server").count(),
        1,
        "{log}"
    );
}

/// A JSON value as a row shows it: a string without quotes.
fn plain(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_string)
}

/// One `sampling` record per request that reached an eval's gate (the unattributed one reached
/// none), in order, with who decided and how it ended.
fn assert_audit(records: &[Value]) {
    let rows: Vec<String> = records
        .iter()
        .filter(|r| r["event"] == "sampling")
        .map(|r| {
            let fields = [
                "server",
                "profile",
                "session_id",
                "decision",
                "channel",
                "status",
            ];
            let mut row: Vec<String> = fields.iter().map(|f| plain(&r[*f])).collect();
            row.extend(["reason", "model", "messages", "max_tokens"].map(|f| plain(&r[f])));
            row.join(" | ")
        })
        .collect();
    // A 2026-07-28 request has a handler of its own, numbered among the server's sessions.
    let session_of = |row: usize| {
        let session = rows
            .get(row)
            .and_then(|r| r.split(" | ").nth(2))
            .unwrap_or_default()
            .to_string();
        assert!(
            session.starts_with('s') && !["s1", "s2", "s3"].contains(&session.as_str()),
            "{session}"
        );
        session
    };
    let modern = format!(
        "everything | open | {} | allowed | null | ok | null | model-d | 1 | 5",
        session_of(5)
    );
    let modern_asked = format!(
        "everything | guarded | {} | approved | elicitation | ok | null | model-d | 1 | 5",
        session_of(6)
    );
    assert_eq!(
        rows,
        [
            "everything | open | s1 | allowed | null | ok | null | model-a | 1 | 5",
            "everything | guarded | s1 | approved | elicitation | ok | null | model-a | 1 | 5",
            "everything | guarded | s1 | declined | elicitation | denied | it was declined by the user | null | 1 | 5",
            "everything | closed | s1 | denied | null | denied | profile `closed` denies sampling | null | 1 | 5",
            "everything | open | s3 | denied | null | denied | this script's client did not declare `sampling` | null | 1 | 5",
            &modern,
            &modern_asked,
            "chatty | guarded | s2 | approved | elicitation | ok | null | model-b | 2 | 32",
        ]
    );
    // The request's hash, not its messages: the same request hashes alike.
    let hashes: Vec<&str> = records
        .iter()
        .filter(|r| r["event"] == "sampling" && r["server"] == "everything")
        .filter_map(|r| r["request_sha256"].as_str())
        .collect();
    assert_eq!(hashes.len(), 7);
    assert!(
        hashes.iter().all(|h| h.len() == 64 && *h == hashes[0]),
        "{hashes:?}"
    );
}

/// With the HTTP approval API served, a client with a model but no elicitation is asked there:
/// approved once (its model answers), then declined (it is not asked).
#[test]
fn a_sampling_request_is_decided_on_the_http_approval_api() {
    let setup = Setup::new("sampling_http", Transport::Http, |scratch| {
        let mut config = config(scratch);
        config["approvals"] = json!({"http": true});
        config
    });
    let obs = setup.python("sampling_http.py", Mode::Legacy, &[]);
    let question = json!({
        "kind": "question",
        "caller": "local",
        "options": ["approve", "decline"],
        "args": {"options": ["approve", "decline"], "question": everything_prompt()},
        "posted": 200,
    });
    assert_json(
        "sampling decided on the approval API",
        &json!({
            "approved_question": obs["approved_question"],
            "approved": eval_summary(&obs["approved"]),
            "declined_question": obs["declined_question"],
            "declined": eval_summary(&obs["declined"]),
            "model": obs["model"],
        }),
        &json!({
            "approved_question": question,
            "approved": answered("model-a", "a heard Resource trigger-sampling-request context: hi"),
            "declined_question": question,
            "declined": refused("it was declined by `local`"),
            "model": 1,
        }),
    );
    let rows: Vec<Value> = setup
        .audit_once(&[("eval", 2)])
        .iter()
        .filter(|r| r["event"] == "sampling")
        .map(|r| {
            json!([
                r["decision"],
                r["channel"],
                r["decided_by"],
                r["status"],
                r["model"]
            ])
        })
        .collect();
    assert_eq!(
        rows,
        [
            json!(["approved", "http", "local", "ok", "model-a"]),
            json!(["declined", "http", "local", "denied", null]),
        ]
    );
}

/// A request whose script stopped waiting (its eval cancelled while the human is asked) is
/// withdrawn: audited as not answered in time, and the model is never asked.
#[test]
fn a_sampling_request_is_withdrawn_when_its_script_stops_waiting() {
    let (_setup, obs) = with_chatty("sampling_withdrawn", "sampling_withdrawn.py");
    assert_json(
        "a withdrawn sampling request",
        &json!({
            "finished_anyway": obs["finished_anyway"],
            "withdrawn": obs["withdrawn"],
            "model": obs["model"],
            "record": obs["record"],
            "next": eval_summary(&obs["next"]),
        }),
        &json!({
            // The client cancelled the eval; its human's question was withdrawn at once (not
            // at the approval timeout), although chatty kept its request open.
            "finished_anyway": null,
            "withdrawn": true,
            "model": 0,
            "record": {"server": "chatty", "profile": "guarded", "decision": "timeout",
                "channel": null, "status": "denied", "model": null,
                "reason": "withdrawn before it was answered: the upstream cancelled it, or the script's call ended"},
            "next": {"is_error": false, "ok": true, "calls": [], "result": 3},
        }),
    );
}
