//! The policy layer under real evals: what the script sees, and the eval's timeout not counting
//! human time.

use std::sync::Arc;
use std::time::Duration;

use codemode_policies::{
    ApprovalAnswer, ApprovalDecision, Ask, AskKind, Asker, Channel, Decision, DispositionKind,
    MemoryAuditSink, PolicyToolHost, Profile, Reply,
};
use codemode_runtime::{
    BoxFuture, CallStatus, ErrorKind, EvalOptions, FnTools, Runtime, RuntimeConfig, ToolHost,
};
use codemode_script::extract_tool_calls;
use serde_json::{Value, json};

/// Says yes, after thinking for a while.
struct SlowYes(Duration);

impl Asker for SlowYes {
    fn supports(&self) -> bool {
        true
    }
    fn channel(&self) -> Channel {
        Channel::Elicitation
    }
    fn ask(&self, _ask: Ask) -> BoxFuture<'_, Reply> {
        Box::pin(async move {
            tokio::time::sleep(self.0).await;
            ApprovalAnswer::new(ApprovalDecision::ApproveOnce, Channel::Elicitation).to_reply()
        })
    }
}

fn tools() -> Arc<dyn ToolHost> {
    Arc::new(
        FnTools::new()
            .sync_tool("fs__read", |_| Ok(json!("contents")))
            .sync_tool("fs__write", |_| Ok(json!("written")))
            .sync_tool("fs__delete", |_| Ok(json!("deleted"))),
    )
}

const CODE: &str = r#"
    let denied;
    try {
      await codemode.fs__delete({ path: "/x" });
    } catch (e) {
      denied = [e.name, e instanceof ToolCallDeniedError, e.toolName, e.reason];
    }
    const written = await codemode.fs__write({ path: "/tmp/x" });
    const again = await codemode.fs__write({ path: "/tmp/y" });
    return { denied, written, again, read: await codemode.fs__read({}) };
"#;

/// Runs `CODE` with a 1 s timeout and a human who takes `think` to approve each write.
async fn run_with_slow_human(
    think: Duration,
) -> (codemode_runtime::EvalOutcome, Arc<MemoryAuditSink>) {
    let runtime = Runtime::new(&RuntimeConfig::default()).expect("runtime");
    let profile = Profile::from_json(
        "supervised",
        &json!({"denylist": ["fs__delete"], "asklist": ["fs__write"], "approvalTimeoutSeconds": 30}),
    )
    .expect("profile");
    let audit = Arc::new(MemoryAuditSink::new());
    let host = PolicyToolHost::builder(tools())
        .profile(Some(Arc::new(profile)))
        .asker(Arc::new(SlowYes(think)))
        .preview(Arc::new(extract_tool_calls(CODE)))
        .audit(audit.clone(), false)
        .build();
    let mut options = EvalOptions::default();
    options.timeout(Some(Duration::from_millis(1000)));
    (runtime.eval(CODE, &options, &host).await, audit)
}

fn check(outcome: &codemode_runtime::EvalOutcome, audit: &MemoryAuditSink) {
    assert!(outcome.ok, "{outcome:?}");
    assert_eq!(
        outcome.result,
        json!({
            "denied": ["ToolCallDeniedError", true, "fs__delete", "denied"],
            "written": "written",
            "again": "written",
            "read": "contents"
        })
    );
    let statuses: Vec<CallStatus> = outcome.tool_calls.iter().map(|c| c.status).collect();
    assert_eq!(
        statuses,
        [
            CallStatus::Denied,
            CallStatus::Ok,
            CallStatus::Ok,
            CallStatus::Ok
        ]
    );
    let decisions: Vec<(u64, Decision)> = audit
        .tool_calls()
        .iter()
        .map(|r| (r.call_id, r.decision))
        .collect();
    assert_eq!(
        decisions,
        [
            (1, Decision::Denied),
            (2, Decision::Approved),
            (3, Decision::Approved),
            (4, Decision::Allowed)
        ]
    );
}

/// Two approvals of 700 ms each: 1.4 s of human time in an eval limited to 1 s.
#[tokio::test]
async fn denials_reach_the_script_and_human_time_does_not_count() {
    let (outcome, audit) = run_with_slow_human(Duration::from_millis(700)).await;
    check(&outcome, &audit);
    assert!(outcome.stats.wall_ms > 1400.0, "{}", outcome.stats.wall_ms);
}

/// One approval longer than the eval's whole timeout.
#[tokio::test]
async fn a_single_approval_longer_than_the_timeout() {
    let (outcome, audit) = run_with_slow_human(Duration::from_millis(1300)).await;
    check(&outcome, &audit);
}

/// However a script reaches a denied tool — an alias of `codemode`, a computed name,
/// destructuring, `Reflect` — the decision is made on the name actually called, at run time, and
/// the tool is never reached.
#[tokio::test]
async fn aliased_and_computed_calls_of_a_denied_tool_are_still_denied() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let runtime = Runtime::new(&RuntimeConfig::default()).expect("runtime");
    let deletes = Arc::new(AtomicUsize::new(0));
    let counter = deletes.clone();
    let inner: Arc<dyn ToolHost> = Arc::new(FnTools::new().sync_tool("fs__delete", move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
        Ok(json!("deleted"))
    }));
    let profile =
        Arc::new(Profile::from_json("p", &json!({"denylist": ["fs__del*"]})).expect("profile"));
    let scripts = [
        "const c = codemode; return await c.fs__delete({})",
        "const k = ['fs', 'delete'].join('__'); return await codemode[k]({})",
        "const { fs__delete: d } = codemode; return await d({})",
        "return await Reflect.get(codemode, 'fs__' + 'delete')({})",
        "const call = (o, n) => o[n]({}); return await call(codemode, `fs__${'delete'}`)",
        "return await [codemode].map((c) => c)[0]['fs__delete']()",
    ];
    for code in scripts {
        let host = PolicyToolHost::builder(inner.clone())
            .profile(Some(profile.clone()))
            .preview(Arc::new(extract_tool_calls(code)))
            .build();
        let outcome = runtime.eval(code, &EvalOptions::default(), &host).await;
        assert!(!outcome.ok, "{code}: {outcome:?}");
        let error = outcome.error.as_ref().expect("error");
        assert_eq!(error.kind, ErrorKind::Exception, "{code}");
        assert_eq!(
            error.message, "ToolCallDeniedError: profile `p` does not allow `fs__delete`",
            "{code}"
        );
        assert_eq!(outcome.tool_calls.len(), 1, "{code}");
        assert_eq!(outcome.tool_calls[0].tool, "fs__delete", "{code}");
        assert_eq!(outcome.tool_calls[0].status, CallStatus::Denied, "{code}");
    }
    assert_eq!(
        deletes.load(Ordering::SeqCst),
        0,
        "a denied tool was reached"
    );
}

/// Answers by tool: approve `fs__write` for the session (which a critical risk forbids),
/// decline anything else with a reason; remembers each request's tool and risk.
struct ByTool(std::sync::Mutex<Vec<(String, codemode_policies::Risk)>>);

impl Asker for ByTool {
    fn supports(&self) -> bool {
        true
    }
    fn channel(&self) -> Channel {
        Channel::Http
    }
    fn ask(&self, ask: Ask) -> BoxFuture<'_, Reply> {
        let AskKind::Approval(req) = ask.kind else {
            panic!("not an approval")
        };
        self.0.lock().unwrap().push((req.tool.clone(), req.risk));
        let answer = if req.tool == "fs__write" {
            ApprovalAnswer::new(ApprovalDecision::ApproveToolForSession, Channel::Http)
                .with_reason(Some("fine".into()))
        } else {
            ApprovalAnswer::new(ApprovalDecision::Decline, Channel::Http)
                .with_reason(Some("not on a Friday".into()))
                .decided_by("alice")
        };
        Box::pin(async move { answer.to_reply() })
    }
}

/// The gateway's decisions as a script sees them: a rule's missing permission, an answer the
/// risk policy forbids, a decline's reason, the absolute denylist and `defaultDisposition`.
#[tokio::test]
async fn permissions_risk_policies_and_decline_reasons_reach_the_script() {
    use codemode_policies::{Caller, Risk};
    let runtime = Runtime::new(&RuntimeConfig::default()).expect("runtime");
    let inner: Arc<dyn ToolHost> = Arc::new(
        FnTools::new()
            .sync_tool("fs__read", |_| Ok(json!("contents")))
            .sync_tool("fs__write", |_| Ok(json!("written")))
            .sync_tool("fs__delete", |_| Ok(json!("deleted")))
            .sync_tool("pay__refund", |_| Ok(json!("refunded")))
            .sync_tool("web__get", |_| Ok(json!("page"))),
    );
    let profile = Profile::from_json(
        "gateway",
        &json!({
            "denylist": ["fs__delete"],
            "asklist": ["fs__write"],
            "defaultDisposition": "ask",
            "risk": {"fs__write": "critical", "fs__read": "low"},
            "riskPolicies": {"critical": {"allowSessionApproval": false}},
            "rules": [
                {"tools": ["fs__delete"], "disposition": "allow"},
                {"tools": ["fs__read"], "disposition": "allow"},
                {"tools": ["pay__*"], "disposition": "ask", "requirePermissions": ["payments"]}
            ]
        }),
    )
    .expect("profile");
    let code = r#"
        const out = {};
        for (const [name, tool] of [["delete", "fs__delete"], ["write", "fs__write"],
                                    ["refund", "pay__refund"], ["web", "web__get"],
                                    ["read", "fs__read"]]) {
          try {
            out[name] = await codemode[tool]({});
          } catch (e) {
            out[name] = [e.name, e.reason, e.message];
          }
        }
        return out;
    "#;
    let approver = Arc::new(ByTool(std::sync::Mutex::new(Vec::new())));
    let audit = Arc::new(MemoryAuditSink::new());
    let host = PolicyToolHost::builder(inner)
        .profile(Some(Arc::new(profile)))
        .asker(approver.clone())
        .caller(Caller::new("ci", ["deploy"]))
        .preview(Arc::new(extract_tool_calls(code)))
        .audit(audit.clone(), false)
        .build();
    let outcome = runtime.eval(code, &EvalOptions::default(), &host).await;
    assert!(outcome.ok, "{outcome:?}");
    let denied = "ToolCallDeniedError";
    assert_eq!(
        outcome.result,
        json!({
            "delete": [denied, "denied", "profile `gateway` does not allow `fs__delete`"],
            "write": [denied, "elicitation_declined", "`fs__write` was not approved: the answer \"approve for this session\" was refused (approving for the rest of the session is not allowed at this risk level; risk critical), so it counts as a decline"],
            "refund": [denied, "permission", "`pay__refund` needs the permission `payments` under profile `gateway`, which caller `ci` lacks"],
            "web": [denied, "elicitation_declined", "`web__get` was declined by `alice`: not on a Friday"],
            "read": "contents"
        })
    );
    assert_eq!(
        *approver.0.lock().unwrap(),
        [
            ("fs__write".to_string(), Risk::Critical),
            ("web__get".to_string(), Risk::High)
        ]
    );
    let recs = audit.tool_calls();
    type Row<'a> = (
        &'a str,
        &'a str,
        Risk,
        Option<Channel>,
        Option<&'a str>,
        Option<&'a str>,
    );
    let rows: Vec<Row<'_>> = recs
        .iter()
        .map(|r| {
            (
                r.tool.as_str(),
                r.caller.as_str(),
                r.risk,
                r.channel,
                r.decided_by.as_deref(),
                r.reason.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("fs__delete", "ci", Risk::Medium, None, None, Some("denied")),
            (
                "fs__write",
                "ci",
                Risk::Critical,
                Some(Channel::Http),
                None,
                Some("elicitation_declined")
            ),
            (
                "pay__refund",
                "ci",
                Risk::Medium,
                None,
                None,
                Some("permission")
            ),
            (
                "web__get",
                "ci",
                Risk::High,
                Some(Channel::Http),
                Some("alice"),
                Some("elicitation_declined")
            ),
            ("fs__read", "ci", Risk::Low, None, None, None),
        ]
    );
    assert_eq!(recs[3].decision_reason.as_deref(), Some("not on a Friday"));
}

/// Red team, contained: odd, computed and protocol names, and arguments that change between
/// reads (getters, `toJSON`, proxies). Each call is decided on the exact name and the exact
/// arguments the tool then receives (the arguments are serialised once, in the sandbox): a
/// denylisted tool is never reached, a `when` rule cannot be dodged by arguments that look
/// different the second time they are read, and names that merely resemble a tool (case,
/// leading space, doubled separator) are unknown tools, while names the denylist's glob
/// covers (a zero-width or `_` suffix) are denied by it. Every attempt has one ledger row.
#[tokio::test]
async fn red_team_odd_names_and_shifting_arguments_are_decided_on_what_the_tool_receives() {
    use std::sync::Mutex;
    let runtime = Runtime::new(&RuntimeConfig::default()).expect("runtime");
    let received: Arc<Mutex<Vec<(String, serde_json::Value)>>> = Arc::default();
    let mut tools = FnTools::new();
    for name in ["fs__delete", "fs__write", "then", "toJSON", "constructor"] {
        let received = received.clone();
        tools = tools.sync_tool(name, move |args| {
            received
                .lock()
                .unwrap()
                .push((name.to_string(), args.clone()));
            Ok(json!("done"))
        });
    }
    let inner: Arc<dyn ToolHost> = Arc::new(tools);
    let profile = Arc::new(
        Profile::from_json(
            "p",
            &json!({
                "denylist": ["fs__delete*", "then", "toJSON", "constructor"],
                "rules": [{"tools": ["fs__write"], "when": {"/path": "^/etc/"},
                           "disposition": "deny", "reason": "system files"}]
            }),
        )
        .expect("profile"),
    );
    let catch = "catch (e) { return [e.name, e.toolName ?? null, e.reason ?? null]; }";
    let denied = |tool: &str| json!(["ToolCallDeniedError", tool, "denied"]);
    let unknown = json!(["UnknownToolError", null, null]);
    let system = json!(["ToolCallDeniedError", "fs__write", "denied"]);
    // (script body before `catch`, what it returns, the ledger's (tool, status))
    let cases: Vec<(&str, serde_json::Value, (&str, CallStatus))> = vec![
        // Names that resemble fs__delete.
        (
            "return await codemode['fs__delete\\u200b']({})",
            denied("fs__delete\u{200b}"),
            ("fs__delete\u{200b}", CallStatus::Denied),
        ),
        (
            "return await codemode['fs__delete_']({})",
            denied("fs__delete_"),
            ("fs__delete_", CallStatus::Denied),
        ),
        (
            "return await codemode['FS__DELETE']({})",
            unknown.clone(),
            ("FS__DELETE", CallStatus::Error),
        ),
        (
            "return await codemode[' fs__delete']({})",
            unknown.clone(),
            (" fs__delete", CallStatus::Error),
        ),
        (
            "return await codemode['fs____delete']({})",
            unknown.clone(),
            ("fs____delete", CallStatus::Error),
        ),
        (
            "return await codemode['fs__delete'.normalize('NFKC')]({})",
            denied("fs__delete"),
            ("fs__delete", CallStatus::Denied),
        ),
        // Calling conventions.
        (
            "return await Function.prototype.call.call(codemode.fs__delete, null, {})",
            denied("fs__delete"),
            ("fs__delete", CallStatus::Denied),
        ),
        (
            "return await codemode.fs__delete.apply(undefined, [{}])",
            denied("fs__delete"),
            ("fs__delete", CallStatus::Denied),
        ),
        (
            "return await Reflect.apply(Reflect.get(codemode, 'fs__delete'), codemode, [{}])",
            denied("fs__delete"),
            ("fs__delete", CallStatus::Denied),
        ),
        (
            "const f = codemode.fs__delete.bind({}); return await f({})",
            denied("fs__delete"),
            ("fs__delete", CallStatus::Denied),
        ),
        // Arguments that change between reads: the policy sees what the tool gets.
        (
            "let n = 0; const a = { get path() { return n++ === 0 ? '/etc/passwd' : '/tmp/ok'; } };\nreturn await codemode.fs__write(a)",
            system.clone(),
            ("fs__write", CallStatus::Denied),
        ),
        (
            "let n = 0; const a = { get path() { return n++ === 0 ? '/tmp/ok' : '/etc/passwd'; } };\nreturn await codemode.fs__write(a)",
            json!("done"),
            ("fs__write", CallStatus::Ok),
        ),
        (
            "let n = 0; const a = { toJSON() { return { path: n++ === 0 ? '/etc/shadow' : '/tmp/ok' }; } };\nreturn await codemode.fs__write(a)",
            system.clone(),
            ("fs__write", CallStatus::Denied),
        ),
        (
            "let n = 0; const a = new Proxy({}, { ownKeys: () => ['path'],\n\
          getOwnPropertyDescriptor: () => ({ value: 'x', enumerable: true, configurable: true }),\n\
          get: (t, k) => k === 'path' ? (n++ === 0 ? '/etc/hosts' : '/tmp/ok') : undefined });\n\
          return await codemode.fs__write(a)",
            system.clone(),
            ("fs__write", CallStatus::Denied),
        ),
    ];
    for (body, want, (tool, status)) in &cases {
        let code = format!("try {{ {body} }} {catch}");
        let host = PolicyToolHost::builder(inner.clone())
            .profile(Some(profile.clone()))
            .preview(Arc::new(extract_tool_calls(&code)))
            .build();
        let outcome = runtime.eval(&code, &EvalOptions::default(), &host).await;
        assert!(outcome.ok, "{code}: {outcome:?}");
        assert_eq!(&outcome.result, want, "{code}");
        let rows: Vec<(&str, CallStatus)> = outcome
            .tool_calls
            .iter()
            .map(|c| (c.tool.as_str(), c.status))
            .collect();
        assert_eq!(rows, [(*tool, *status)], "{code}");
    }
    // The names JavaScript looks up by itself are never tools (guest/src/namespace.rs): reading
    // them gives `undefined`, so calling them is a TypeError and no call reaches the policy.
    for name in ["toJSON", "constructor", "then"] {
        let code = format!(
            "try {{ return await codemode['{name}']({{}}) }} catch (e) {{ return e.name }}"
        );
        let host = PolicyToolHost::builder(inner.clone())
            .profile(Some(profile.clone()))
            .preview(Arc::new(extract_tool_calls(&code)))
            .build();
        let outcome = runtime.eval(&code, &EvalOptions::default(), &host).await;
        assert_eq!(outcome.result, json!("TypeError"), "{code}: {outcome:?}");
        assert!(outcome.tool_calls.is_empty(), "{code}: {outcome:?}");
    }
    let got = received.lock().unwrap().clone();
    assert_eq!(
        got,
        [("fs__write".to_string(), json!({"path": "/tmp/ok"})),],
        "only what the policy allowed reached a tool"
    );
}

/// Red team: a `when` regex tests the literal argument string, so README's first system-files
/// rule (`"when": {"/path": "^/etc/"}`) let other spellings of the same file through
/// (`/tmp/../etc/passwd`, `//etc/passwd`, `/./etc/passwd`), which a filesystem server resolves to
/// it. README's rule now uses `whenPath`: globs over the value lexically normalised to an
/// absolute path; a relative path (no `base`) or a non-string value fails closed.
#[tokio::test]
async fn the_readme_system_files_rule_denies_every_spelling_of_etc() {
    let rule = |base: Option<&str>| {
        let mut rule = json!({"tools": ["fs__write"], "whenPath": {"/path": ["/etc", "/etc/**"]},
                              "disposition": "deny", "reason": "system files"});
        if let Some(base) = base {
            rule["base"] = json!(base);
        }
        Profile::from_json("supervised", &json!({ "rules": [rule] })).expect("profile")
    };
    let kind = |profile: &Profile, path: Value| {
        profile
            .disposition("fs__write", &json!({ "path": path }))
            .kind
    };
    let no_base = rule(None);
    for path in [
        json!("/etc/passwd"),
        json!("/tmp/../etc/passwd"),
        json!("/tmp/../etc/hostname"),
        json!("//etc/passwd"),
        json!("/./etc/passwd"),
        json!("/./etc"),
        json!("/../../etc/shadow"),
        json!("etc/x"),
        json!("../etc/x"),
        json!(["/etc/passwd"]),
        json!(7),
        Value::Null,
    ] {
        assert_eq!(
            kind(&no_base, path.clone()),
            DispositionKind::Deny,
            "`{path}` is (or may be) a system file"
        );
    }
    for path in ["/tmp/etc/passwd", "/etcetera", "/tmp/x/../y"] {
        assert_eq!(
            kind(&no_base, json!(path)),
            DispositionKind::Allow,
            "`{path}` is not a system file"
        );
    }
    let root = rule(Some("/"));
    assert_eq!(kind(&root, json!("etc/x")), DispositionKind::Deny);
    assert_eq!(kind(&root, json!("tmp/x")), DispositionKind::Allow);
    let srv = rule(Some("/srv/app"));
    assert_eq!(kind(&srv, json!("../../etc/x")), DispositionKind::Deny);
    assert_eq!(kind(&srv, json!("etc/x")), DispositionKind::Allow);
}

/// An allowing `whenPath` rule fails closed the other way: a value it cannot judge does not make
/// it allow.
#[tokio::test]
async fn an_allowing_when_path_rule_never_allows_what_it_cannot_judge() {
    let profile = Profile::from_json(
        "p",
        &json!({"defaultDisposition": "deny",
                "rules": [{"tools": ["fs__read"], "whenPath": {"/path": ["/srv/**"]}, "disposition": "allow"}]}),
    )
    .expect("profile");
    let kind = |path: Value| {
        profile
            .disposition("fs__read", &json!({ "path": path }))
            .kind
    };
    assert_eq!(kind(json!("/srv/a")), DispositionKind::Allow);
    assert_eq!(kind(json!("/srv/../etc/passwd")), DispositionKind::Deny);
    assert_eq!(kind(json!("srv/a")), DispositionKind::Deny);
    assert_eq!(kind(json!(1)), DispositionKind::Deny);
}

/// Red team, contained: a tool that panics (a host bug, never a script's doing) unwinds through
/// the eval, and the policy layer's guard still writes exactly one record for the attempt, as
/// abandoned (`error`, reason `cancelled`) — the attempt is never lost from the audit log.
#[tokio::test]
async fn a_panicking_tool_still_leaves_exactly_one_audit_record() {
    let inner: Arc<dyn ToolHost> =
        Arc::new(FnTools::new().sync_tool("fs__read", |_| panic!("a tool bug")));
    let audit = Arc::new(MemoryAuditSink::new());
    let host = PolicyToolHost::builder(inner)
        .profile(Some(Arc::new(
            Profile::from_json("p", &json!({})).expect("profile"),
        )))
        .audit(audit.clone(), false)
        .build();
    let runtime = Runtime::new(&RuntimeConfig::default()).expect("runtime");
    let task = tokio::spawn(async move {
        runtime
            .eval(
                "await codemode.fs__read({})",
                &EvalOptions::default(),
                &host,
            )
            .await
    });
    let joined = task.await;
    assert!(
        joined.as_ref().is_err_and(tokio::task::JoinError::is_panic),
        "{joined:?}"
    );
    let rows: Vec<(String, CallStatus, Option<String>, Decision)> = audit
        .tool_calls()
        .into_iter()
        .map(|r| (r.tool, r.status, r.reason, r.decision))
        .collect();
    assert_eq!(
        rows,
        [(
            "fs__read".to_string(),
            CallStatus::Error,
            Some("cancelled".to_string()),
            Decision::Allowed
        )]
    );
}
