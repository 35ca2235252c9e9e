//! The broker and the HTTP approval API with authentication, over a real loopback socket:
//! every refusal's status, the decider's permissions, risk policies, expiry, and the first
//! answer winning across channels.

use std::sync::Arc;
use std::time::Duration;

use codemode_policies::{
    ApprovalAnswer, ApprovalDecision, ApprovalRequest, Caller, Channel, MatchedBy, Risk,
    RiskPolicy, summarize_args,
};
use codemode_runtime::{BoxFuture, EvalId};
use codemode_script::Preview;
use serde_json::{Value, json};

use super::broker::{ApprovalBroker, BrokerEvent, Choice};
use super::{Answer, Ask, Asker, Channels, Question, Reply, http};
use crate::auth::{AuthError, Authenticate};

/// Tokens `op` (may approve), `viewer` (may not), `agent` (may approve, but is the caller of
/// the asks), `boss` (the caller `agent` with `approve_self`).
pub(super) struct Tokens;

impl Authenticate for Tokens {
    fn authenticate(&self, headers: &::http::HeaderMap) -> Result<Caller, AuthError> {
        let token = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or(AuthError::Missing)?;
        Ok(match token {
            "op" => Caller::new("op", ["approve"]),
            "viewer" => Caller::new("viewer", Vec::<String>::new()),
            "agent" => Caller::new("agent", ["approve"]),
            "boss" => Caller::new("agent", ["approve", "approve_self"]),
            _ => return Err(AuthError::Invalid("unknown token".into())),
        })
    }
    fn enabled(&self) -> bool {
        true
    }
}

pub(super) fn request(policy: RiskPolicy) -> ApprovalRequest {
    let args = json!({"path": "/etc/passwd"});
    ApprovalRequest {
        id: ApprovalRequest::new_id(),
        tool: "fs__write".into(),
        args_summary: summarize_args(&args),
        args,
        profile: Some("p".into()),
        eval_id: EvalId(7),
        call_id: 1,
        session_id: None,
        caller: Caller::new("agent", ["payments"]),
        risk: Risk::Critical,
        classification: codemode_policies::Class::Write,
        risk_policy: policy,
        matched: MatchedBy::Asklist("fs__*".into()),
        reason: None,
        preview: Arc::new(Preview::default()),
        timeout: Duration::from_secs(300),
        call: codemode_runtime::CallContext::detached(codemode_runtime::EvalId(1), 1),
        resumed: false,
    }
}

/// Asks approvals as the policy layer does, through an eval's channels.
pub(super) struct Approver(Channels);

impl Approver {
    fn supports(&self) -> bool {
        self.0.supports()
    }

    pub(super) async fn approve(&self, req: ApprovalRequest) -> ApprovalAnswer {
        let reply = self.0.ask(Ask::approval(&req)).await;
        match ApprovalAnswer::from_reply(&reply) {
            Some(answer) => answer,
            None => std::future::pending().await,
        }
    }
}

/// The channels of an eval asking through `asker` and `broker`.
pub(super) fn approver_over(asker: Arc<dyn Asker>, broker: &Arc<ApprovalBroker>) -> Arc<Approver> {
    Arc::new(Approver(Channels::new(
        asker,
        Some(broker.clone()),
        "7",
        "agent",
    )))
}

async fn start(broker: Arc<ApprovalBroker>) -> String {
    start_with(broker, codemode_config::ListenerLimits::default()).await
}

/// The API on its own listener, under `limits`.
pub(super) async fn start_with(
    broker: Arc<ApprovalBroker>,
    limits: codemode_config::ListenerLimits,
) -> String {
    start_with_auth(broker, Arc::new(Tokens), limits).await
}

/// The API on its own listener, under `limits`, authenticating with `auth`.
pub(super) async fn start_with_auth(
    broker: Arc<ApprovalBroker>,
    auth: Arc<dyn Authenticate>,
    limits: codemode_config::ListenerLimits,
) -> String {
    let listener = http::bind("127.0.0.1:0".parse().unwrap(), auth.as_ref())
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = tokio_util::sync::CancellationToken::new();
    tokio::spawn(http::serve(
        listener,
        broker,
        auth,
        Arc::new(move || limits),
        shutdown,
    ));
    format!("http://{addr}")
}

async fn post(base: &str, id: &str, token: Option<&str>, body: Value) -> (u16, Value) {
    let mut req = codemode_upstream::crypto::http_client()
        .post(format!("{base}/approvals/{id}"))
        .json(&body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let www = r
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_string());
    let mut body: Value = r.json().await.unwrap();
    if status == 401 {
        // `/mcp`'s challenge: bare without a token, `invalid_token` with a bad one.
        let want = match token {
            None => "Bearer".to_string(),
            Some(_) => {
                "Bearer error=\"invalid_token\", error_description=\"unknown token\"".to_string()
            }
        };
        assert_eq!(www.as_deref(), Some(want.as_str()));
    }
    body["error"] = json!(body["error"].as_str().map(|_| "…"));
    (status, body)
}

async fn get(base: &str, path: &str, token: &str) -> (u16, Value) {
    let r = codemode_upstream::crypto::http_client()
        .get(format!("{base}{path}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

/// The page reaches a browser that has no token yet (its login form asks for one); the API
/// behind it does not, nor does anything but a `GET` of the page.
#[tokio::test]
async fn the_page_is_served_without_a_token_and_nothing_else_is() {
    let base = start(Arc::new(ApprovalBroker::default())).await;
    let client = codemode_upstream::crypto::http_client();
    let page = client
        .get(format!("{base}/approvals/ui"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 200);
    assert!(
        page.text()
            .await
            .unwrap()
            .contains("<form id=\"login\" hidden>")
    );
    let mut refused = Vec::new();
    for (method, path) in [
        ("GET", "/approvals"),
        ("GET", "/approvals/stream"),
        ("POST", "/approvals/ui"),
        ("POST", "/approvals/some-id"),
    ] {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let r = client
            .request(method, format!("{base}{path}"))
            .send()
            .await
            .unwrap();
        refused.push((path, r.status().as_u16()));
    }
    assert_eq!(
        refused,
        [
            ("/approvals", 401),
            ("/approvals/stream", 401),
            ("/approvals/ui", 401),
            ("/approvals/some-id", 401)
        ]
    );
    // The `Host` check still holds for the page.
    let rebound = client
        .get(format!("{base}/approvals/ui"))
        .header("Host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status().as_u16(), 403);
}

#[tokio::test]
async fn the_api_checks_token_permission_self_approval_risk_and_state() {
    let broker = Arc::new(ApprovalBroker::default());
    let base = start(broker.clone()).await;
    let strict = RiskPolicy {
        approval_timeout: None,
        allow_eval_approval: true,
        allow_session_approval: false,
        require_reason: true,
        ..RiskPolicy::default()
    };
    let req = request(strict);
    let id = req.id.clone();
    let approver = approver_over(Arc::new(super::NoAsker), &broker);
    assert!(approver.supports());
    let mut events = broker.subscribe();
    let asking = tokio::spawn({
        let approver = approver.clone();
        async move { approver.approve(req).await }
    });
    while broker.pending().is_empty() {
        tokio::task::yield_now().await;
    }
    let once = json!({"decision": "approve_once", "reason": "checked"});
    let refused = json!({"error": "…"});
    let cases = [
        (None, once.clone(), 401),
        (Some("nope"), once.clone(), 401),
        (Some("viewer"), once.clone(), 403),
        (Some("agent"), once.clone(), 403),
        (
            Some("op"),
            json!({"decision": "approve_session", "reason": "x"}),
            422,
        ),
        (Some("op"), json!({"decision": "approve_once"}), 422),
        (
            Some("op"),
            json!({"decision": "decline", "reason": " "}),
            422,
        ),
        // Invisible characters alone are no reason either.
        (
            Some("op"),
            json!({"decision": "approve_once", "reason": "\u{200b}\u{3164}\u{e0020}\u{2060}"}),
            422,
        ),
    ];
    for (token, body, status) in cases {
        assert_eq!(
            post(&base, &id, token, body.clone()).await,
            (status, refused.clone()),
            "{token:?} {body}"
        );
    }
    assert_eq!(get(&base, "/approvals", "viewer").await.0, 403);
    let (status, listed) = get(&base, "/approvals", "op").await;
    assert_eq!(status, 200);
    assert_eq!(listed["approvals"][0]["id"], json!(id));
    assert_eq!(listed["approvals"][0]["caller"], json!("agent"));
    // The id the audit log writes, so `codemode audit query --eval ID` finds the eval's records.
    assert_eq!(
        listed["approvals"][0]["eval_id"],
        json!(codemode_policies::AuditRecord::eval_id(EvalId(7)))
    );
    assert_eq!(listed["approvals"][0]["risk"], json!("critical"));
    assert_eq!(
        listed["approvals"][0]["allowed_decisions"],
        json!(["approve_once", "approve_eval", "decline"])
    );
    // `boss` speaks for the same caller, with approve_self.
    assert_eq!(
        post(&base, &id, Some("boss"), once.clone()).await,
        (200, json!({"status": "decided", "error": null}))
    );
    assert_eq!(
        asking.await.unwrap(),
        ApprovalAnswer::new(ApprovalDecision::ApproveOnce, Channel::Http)
            .with_reason(Some("checked".into()))
            .decided_by("agent")
    );
    assert_eq!(
        post(&base, &id, Some("op"), once.clone()).await,
        (409, refused.clone())
    );
    assert!(matches!(events.recv().await.unwrap(), BrokerEvent::Requested(v) if v.id == id));
    assert!(matches!(events.recv().await.unwrap(), BrokerEvent::Decided(v) if v.id == id));

    // A request withdrawn unanswered (the policy's timeout, the eval's end) expires.
    let req = request(RiskPolicy::default());
    let id = req.id.clone();
    let asking = tokio::spawn({
        let approver = approver.clone();
        async move { approver.approve(req).await }
    });
    while broker.pending().is_empty() {
        tokio::task::yield_now().await;
    }
    asking.abort();
    let event = events.recv().await.unwrap();
    assert_eq!(
        (event.name(), event.view().id.as_str()),
        ("requested", id.as_str())
    );
    let event = events.recv().await.unwrap();
    assert_eq!(
        (event.name(), event.view().id.as_str()),
        ("expired", id.as_str())
    );
    assert_eq!(post(&base, &id, Some("op"), once).await, (409, refused));
    let (_, decided) = get(&base, "/approvals?state=decided&limit=5", "op").await;
    let decided: Vec<(&str, &str)> = decided["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["decision"].as_str().unwrap(),
                d["channel"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(decided, [("expired", "policy"), ("approve_once", "http")]);
    assert_eq!(
        post(&base, "nope", Some("op"), json!({"decision": "decline"}))
            .await
            .0,
        404
    );
}

/// Answers every question after `delay` with `decision`.
struct Scripted {
    decision: &'static str,
    delay: Duration,
}

impl Asker for Scripted {
    fn supports(&self) -> bool {
        true
    }
    fn channel(&self) -> Channel {
        Channel::Elicitation
    }
    fn ask(&self, _ask: Ask) -> BoxFuture<'_, Reply> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            Reply::new(
                Answer::Accept(json!({"decision": self.decision})),
                Channel::Elicitation,
            )
        })
    }
}

#[tokio::test]
async fn the_first_answer_wins_and_the_other_channel_is_withdrawn() {
    let broker = Arc::new(ApprovalBroker::default());
    let mut events = broker.subscribe();
    // Not served: only the client's channel asks.
    let client = Arc::new(Scripted {
        decision: "decline",
        delay: Duration::ZERO,
    });
    let approver = approver_over(client.clone(), &broker);
    let answer = approver.approve(request(RiskPolicy::default())).await;
    assert_eq!(answer.channel, Channel::Elicitation);
    assert!(events.try_recv().is_err());

    // Served: the client answers first; the broker's request is closed as decided there.
    broker.set_served(true);
    let req = request(RiskPolicy::default());
    let id = req.id.clone();
    let answer = approver.approve(req).await;
    assert_eq!(
        answer,
        ApprovalAnswer::new(ApprovalDecision::Decline, Channel::Elicitation)
    );
    let e = events.recv().await.unwrap();
    assert_eq!((e.name(), e.view().id.as_str()), ("requested", id.as_str()));
    let e = events.recv().await.unwrap();
    assert_eq!(
        (e.name(), e.view().decision, e.view().channel),
        ("decided", Some("decline"), Some("elicitation"))
    );
    assert!(broker.pending().is_empty());

    // The HTTP side answers first; the client's question is dropped.
    let slow = Arc::new(Scripted {
        decision: "approve_once",
        delay: Duration::from_secs(3600),
    });
    let approver = approver_over(slow, &broker);
    let req = request(RiskPolicy::default());
    let id = req.id.clone();
    let asking = tokio::spawn({
        let approver = approver.clone();
        async move { approver.approve(req).await }
    });
    while broker.pending().is_empty() {
        tokio::task::yield_now().await;
    }
    broker
        .decide(
            &id,
            &Caller::new("op", ["approve"]),
            Choice::Decision(ApprovalDecision::ApproveToolForEval),
            None,
        )
        .unwrap();
    assert_eq!(
        asking.await.unwrap(),
        ApprovalAnswer::new(ApprovalDecision::ApproveToolForEval, Channel::Http).decided_by("op")
    );
}

/// The elicitation form: the risk is stated, script-chosen text is neutralised, only the
/// decisions the risk policy allows are offered, and a reason is asked where one is required.
#[test]
fn the_form_states_the_risk_and_shows_no_raw_control_characters() {
    let mut req = request(RiskPolicy {
        approval_timeout: None,
        allow_eval_approval: false,
        allow_session_approval: false,
        require_reason: true,
        ..RiskPolicy::default()
    });
    req.reason = Some("backup\u{1b}[2K\nApproved by admin\u{202e}".into());
    req.preview = Arc::new(codemode_script::extract_tool_calls(
        "await codemode.fs__write({path: '/etc/passwd'});",
    ));
    let q = req.question();
    assert_eq!(
        q.message,
        "A script of caller `agent` wants to call `fs__write` (profile `p`, asklist glob `fs__*`).\n\
         Risk: critical\n\
         Class: write\n\
         Reason: backup\\u001b[2K\\nApproved by admin\\u202e\n\n\
         Arguments:\n{\n  \"path\": \"/etc/passwd\"\n}\n\n\
         The script's tool calls:\n  line 1: fs__write\n\n\
         A reason is required at this risk level.\n\n\
         No answer within 300 s denies the call."
    );
    let schema = Value::Object(q.schema);
    let offered: Vec<&str> = schema["properties"]["decision"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["const"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["approve_once", "decline", "cancel"]);
    assert_eq!(schema["required"], json!(["decision", "reason"]));

    // A caller's name (a token's `sub`) holding a backtick cannot close the quote.
    let mut forged = request(RiskPolicy::default());
    forged.caller = Caller::new("agent` (verified admin) and `ci", Vec::<String>::new());
    let q = forged.question();
    assert!(
        q.message.starts_with(
            "A script of caller `agent\\` (verified admin) and \\`ci` wants to call `fs__write`"
        ),
        "{}",
        q.message
    );

    // Without a required reason: one field, every decision.
    let q = request(RiskPolicy::default()).question();
    let schema = Value::Object(q.schema);
    assert_eq!(schema["required"], json!(["decision"]));
    assert_eq!(
        schema["properties"]["decision"]["oneOf"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
}

/// `hitl_request` questions travel the broker too: offered with their options, answered with
/// one of them (or declined), checked like approvals.
#[tokio::test]
async fn questions_are_answered_through_the_api_with_one_of_their_options() {
    let broker = Arc::new(ApprovalBroker::default());
    let base = start(broker.clone()).await;
    let asker = Arc::new(Channels::new(
        Arc::new(super::NoAsker),
        Some(broker.clone()),
        "9",
        "agent",
    ));
    assert!(asker.supports());
    let question = Question {
        message: "Deploy\u{1b}[2K to prod?".into(),
        schema: json!({"type": "object", "properties": {"answer": {"type": "string",
            "enum": ["yes", "no"]}}, "required": ["answer"]})
        .as_object()
        .cloned()
        .unwrap(),
    };
    let asking = tokio::spawn({
        let asker = asker.clone();
        async move {
            asker
                .ask(Ask::form(question, Duration::from_secs(300)))
                .await
                .answer
        }
    });
    while broker.pending().is_empty() {
        tokio::task::yield_now().await;
    }
    let (_, listed) = get(&base, "/approvals", "op").await;
    let q = &listed["approvals"][0];
    let id = q["id"].as_str().unwrap().to_string();
    assert_eq!(
        (
            &q["kind"],
            &q["tool"],
            &q["caller"],
            &q["options"],
            &q["args_summary"],
            &q["eval_id"]
        ),
        (
            &json!("question"),
            &json!("hitl_request"),
            &json!("agent"),
            &json!(["yes", "no"]),
            &json!("Deploy\\u001b[2K to prod?"),
            &json!("9")
        )
    );
    assert!(q.get("risk").is_none());
    let refused = json!({"error": "…"});
    for (token, body, status) in [
        (
            Some("agent"),
            json!({"decision": "answer", "answer": "yes"}),
            403,
        ),
        (
            Some("op"),
            json!({"decision": "answer", "answer": "maybe"}),
            422,
        ),
        (Some("op"), json!({"decision": "answer"}), 422),
        (Some("op"), json!({"decision": "approve_once"}), 422),
    ] {
        assert_eq!(
            post(&base, &id, token, body.clone()).await,
            (status, refused.clone()),
            "{body}"
        );
    }
    assert_eq!(
        post(
            &base,
            &id,
            Some("op"),
            json!({"decision": "answer", "answer": "no"})
        )
        .await
        .0,
        200
    );
    assert_eq!(
        asking.await.unwrap(),
        Answer::Accept(json!({"answer": "no"}))
    );
    let (_, decided) = get(&base, "/approvals?state=decided&limit=1", "op").await;
    let d = &decided["approvals"][0];
    assert_eq!(
        (
            &d["decision"],
            &d["answer"],
            &d["decided_by"],
            &d["channel"]
        ),
        (&json!("answer"), &json!("no"), &json!("op"), &json!("http"))
    );
    // An approval request does not take an answer.
    let req = request(RiskPolicy::default());
    let id = req.id.clone();
    let approver = approver_over(Arc::new(super::NoAsker), &broker);
    let asking = tokio::spawn(async move { approver.approve(req).await });
    while broker.pending().is_empty() {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        post(
            &base,
            &id,
            Some("op"),
            json!({"decision": "answer", "answer": "x"})
        )
        .await
        .0,
        422
    );
    asking.abort();
}

/// A client that approves — just after the HTTP API declined the same ask.
struct LateClient(Arc<ApprovalBroker>);

impl Asker for LateClient {
    fn supports(&self) -> bool {
        true
    }
    fn channel(&self) -> Channel {
        Channel::Elicitation
    }
    fn ask(&self, ask: Ask) -> BoxFuture<'_, Reply> {
        Box::pin(async move {
            self.0
                .decide(
                    &ask.id,
                    &Caller::new("op", ["approve"]),
                    Choice::Decision(ApprovalDecision::Decline),
                    Some("api no".into()),
                )
                .expect("the API's decision is accepted");
            Reply::new(
                Answer::Accept(json!({"decision": "approve_once"})),
                Channel::Elicitation,
            )
        })
    }
}

/// Red team of the one-ask change (F1, issue 28 A.3): the client and the API answer at once.
/// The API was told `decided`, so its decline is what holds — whichever reply the channels
/// see first (both are ready together here; the loop makes either order happen).
#[tokio::test]
async fn when_the_api_decided_first_its_answer_holds_over_the_client_s() {
    let broker = Arc::new(ApprovalBroker::default());
    broker.set_served(true);
    for _ in 0..40 {
        let approver = approver_over(Arc::new(LateClient(broker.clone())), &broker);
        let answer = approver.approve(request(RiskPolicy::default())).await;
        assert_eq!(
            answer,
            ApprovalAnswer::new(ApprovalDecision::Decline, Channel::Http)
                .with_reason(Some("api no".into()))
                .decided_by("op")
        );
    }
}

/// Red-team probe of the page's exemption from authentication: only `GET` of exactly
/// `/approvals/ui` (any query) passes without a token; neighbouring paths, other methods and
/// encodings authenticate first, and the `Host`/`Origin` checks still refuse the page.
#[tokio::test]
async fn only_a_get_of_the_page_itself_skips_the_token() {
    let base = start(Arc::new(ApprovalBroker::default())).await;
    let client = codemode_upstream::crypto::http_client();
    // (method, path, extra header, the status it must get)
    let probes = [
        ("GET", "/approvals/ui?x=1", None, 200),
        ("HEAD", "/approvals/ui", None, 401),
        ("GET", "/approvals/ui/", None, 401),
        ("GET", "//approvals/ui", None, 401),
        ("GET", "/approvals/%75i", None, 401),
        ("GET", "/approvals/UI", None, 401),
        ("PUT", "/approvals/ui", None, 401),
        (
            "GET",
            "/approvals/ui",
            Some(("Origin", "http://attacker.example")),
            403,
        ),
        ("GET", "/approvals/ui", Some(("Host", "localhost.")), 403),
    ];
    let mut wrong = Vec::new();
    for (method, path, header, want) in probes {
        let verb = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = client.request(verb, format!("{base}{path}"));
        if let Some((name, value)) = header {
            request = request.header(name, value);
        }
        let got = request.send().await.unwrap().status().as_u16();
        if got != want {
            wrong.push(format!("{method} {path} {header:?}: {got}, want {want}"));
        }
    }
    assert_eq!(wrong, Vec::<String>::new());
}
