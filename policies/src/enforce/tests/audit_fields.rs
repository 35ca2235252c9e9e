//! The audit's account of each call (issue 28 B.2): the deciding stage, the caller's
//! permissions, who answered an ask on every channel and how long they had, and what a
//! `hitl_request` asked and was answered.

use super::*;
use crate::Caller;
use crate::audit::Stage;

/// Answers every ask with `answer`.
struct Answers(ApprovalAnswer);

impl Asker for Answers {
    fn supports(&self) -> bool {
        true
    }
    fn channel(&self) -> Channel {
        self.0.channel
    }
    fn ask(&self, _ask: Ask) -> codemode_runtime::BoxFuture<'_, Reply> {
        Box::pin(async move { self.0.to_reply() })
    }
}

fn host_for(caller: Caller, p: Value, asker: Arc<dyn Asker>) -> Setup {
    let (calls, inner) = inner();
    let audit = Arc::new(MemoryAuditSink::new());
    let host = PolicyToolHost::builder(inner)
        .profile(Some(profile(p)))
        .asker(asker)
        .caller(caller)
        .audit(audit.clone(), false)
        .build();
    Setup { host, calls, audit }
}

fn stage_name(stage: Option<Stage>) -> String {
    serde_json::to_value(stage)
        .unwrap()
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn every_record_names_its_deciding_stage() {
    let p = json!({
        "defaultDisposition": "allow",
        "denylist": ["fs__delete"],
        "asklist": ["fs__write"],
        "rules": [{"tools": ["web__get"], "disposition": "allow", "requirePermissions": ["net"]}]
    });
    let approve = ApprovalAnswer::new(ApprovalDecision::ApproveOnce, Channel::Elicitation);
    let s = host_for(Caller::new("ci", ["x"]), p, Arc::new(Answers(approve)));
    for (i, tool) in [
        "fs__read",
        "fs__delete",
        "web__get",
        "fs__write",
        "nope__x",
        "fail",
    ]
    .into_iter()
    .enumerate()
    {
        let _ = call(&s.host, tool, i as u64 + 1).await;
    }
    let rows: Vec<String> = s
        .audit
        .tool_calls()
        .iter()
        .map(|r| {
            format!(
                "{} {} {} {:?}",
                r.tool,
                stage_name(r.stage),
                r.decision.as_str(),
                r.reason
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            "fs__read execution allowed None",
            "fs__delete permission denied Some(\"denied\")",
            "web__get auth denied Some(\"permission\")",
            "fs__write approval approved None",
            // A tool that does not exist is denied, and says why.
            "nope__x registry denied Some(\"unknown_tool\")",
            "fail execution allowed None",
        ]
    );
    assert_eq!(
        s.calls.load(Ordering::SeqCst),
        2,
        "fs__read and fs__write ran"
    );
}

#[tokio::test]
async fn records_carry_the_callers_permissions_sorted_and_the_asks_timeout() {
    let p = json!({
        "defaultDisposition": "allow",
        "asklist": ["fs__write", "fs__delete"],
        "approvalTimeoutSeconds": 45,
        "risk": {"fs__delete": "critical"},
        "riskPolicies": {"critical": {"approvalTimeoutSeconds": 300}}
    });
    let approve =
        ApprovalAnswer::new(ApprovalDecision::ApproveOnce, Channel::Http).decided_by("ops");
    let s = host_for(
        Caller::new("ci", ["refunds", "allow_destructive", "deploy"]),
        p,
        Arc::new(Answers(approve)),
    );
    for (i, tool) in ["fs__read", "fs__write", "fs__delete"]
        .into_iter()
        .enumerate()
    {
        call(&s.host, tool, i as u64 + 1).await.unwrap();
    }
    let recs = s.audit.tool_calls();
    let got: Vec<(&str, Vec<&str>, Option<f64>)> = recs
        .iter()
        .map(|r| {
            let perms = r.caller_permissions.iter().map(String::as_str).collect();
            (r.tool.as_str(), perms, r.timeout_seconds)
        })
        .collect();
    let perms = vec!["allow_destructive", "deploy", "refunds"];
    assert_eq!(
        got,
        [
            ("fs__read", perms.clone(), None),
            ("fs__write", perms.clone(), Some(45.0)),
            ("fs__delete", perms, Some(300.0)),
        ]
    );
}

#[tokio::test]
async fn every_channel_names_who_decided() {
    let p = json!({"asklist": ["fs__write"]});
    let cases = [
        // The eval's own client answers an elicitation; the terminal is the local caller's.
        (Channel::Elicitation, None, "ci"),
        (Channel::Terminal, None, "ci"),
        // The approval API (the page, `codemode approve`) names its authenticated decider.
        (Channel::Http, Some("ops"), "ops"),
    ];
    for (channel, decider, want) in cases {
        let mut answer = ApprovalAnswer::new(ApprovalDecision::ApproveOnce, channel);
        answer.decided_by = decider.map(str::to_string);
        let s = host_for(
            Caller::new("ci", ["x"]),
            p.clone(),
            Arc::new(Answers(answer)),
        );
        call(&s.host, "fs__write", 1).await.unwrap();
        let rec = &s.audit.tool_calls()[0];
        assert_eq!(
            (rec.channel, rec.decided_by.as_deref()),
            (Some(channel), Some(want))
        );
    }
}

/// `hitl_request` (and its alias) recorded with its question, options, answer, metadata and the
/// question's timeout; the texts neutralised.
#[tokio::test]
async fn a_hitl_request_records_its_question_options_answer_and_metadata() {
    let tools = FnTools::new()
        .sync_tool("hitl_request", |_| {
            Ok(json!({"ok": true, "status": "confirmed", "confirmed": true,
                      "selectedOption": "yes", "source": "user", "requestId": "r"}))
        })
        .sync_tool("human_intervention_request", |_| {
            Ok(json!({"ok": true, "status": "timeout", "confirmed": false,
                      "selectedOption": "no", "source": "timeout", "requestId": "r"}))
        });
    let audit = Arc::new(MemoryAuditSink::new());
    let host = PolicyToolHost::builder(Arc::new(tools))
        .audit(audit.clone(), false)
        .build();
    let cx = CallContext::detached(EvalId(1), 1);
    let args = json!({"question": "Ship\u{1b}[2J?", "options": ["yes", "no"], "timeoutMs": 1500,
                      "metadata": {"ticket": 42, "by": "a\u{202e}b"}});
    host.call("hitl_request", args.clone(), &cx).await.unwrap();
    let mut alias_args = args.clone();
    alias_args.as_object_mut().unwrap().remove("timeoutMs");
    host.call("human_intervention_request", alias_args, &cx)
        .await
        .unwrap();
    host.call("fs__read", json!({}), &cx).await.unwrap_err();
    let recs = audit.tool_calls();
    let asked = |r: &ToolCallAuditRecord| {
        json!([
            r.question,
            r.options,
            r.answer,
            r.metadata,
            r.timeout_seconds
        ])
    };
    let shown = json!({"ticket": 42, "by": "a\\u202eb"});
    assert_eq!(
        asked(&recs[0]),
        json!(["Ship\\u001b[2J?", ["yes", "no"], "yes", shown, 1.5])
    );
    // A timeout's default option is nobody's answer; the default timeout counts.
    assert_eq!(
        asked(&recs[1]),
        json!(["Ship\\u001b[2J?", ["yes", "no"], null, shown, 120.0])
    );
    assert_eq!(asked(&recs[2]), json!([null, null, null, null, null]));
}
