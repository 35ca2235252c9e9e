//! Classification: a destructive call needs `allow_destructive` (denied with reason
//! `permission`, nobody asked, the tool never reached); the class comes from the config's globs,
//! else the tools' annotations, else write; asks show it; every record carries it and its stage.

use super::*;
use crate::{ALLOW_DESTRUCTIVE, Caller, Class, Config, ToolSchemaSpec, ToolSchemas};

/// `fs__read` annotated read-only, `fs__delete` destructive, `fs__write` without annotations.
fn annotated() -> Arc<ToolSchemas> {
    let path = json!({"type": "object", "properties": {"path": {"type": "string"}}});
    let specs = [
        ("fs__read", Some(Class::Read)),
        ("fs__delete", Some(Class::Destructive)),
        ("fs__write", None),
    ]
    .map(|(name, annotated)| ToolSchemaSpec {
        name,
        input_schema: &path,
        output_schema: None,
        signature: format!("{name}(args: {{ path?: string }}): Promise<unknown>;"),
        annotated,
    });
    Arc::new(ToolSchemas::compile(specs).0)
}

fn host(
    caller: Caller,
    evaluation: &str,
    profile_json: Option<Value>,
    asker: Arc<dyn Asker>,
) -> Setup {
    let config = Config::from_json_str(&format!(r#"{{"evaluation": {evaluation}}}"#)).unwrap();
    let (calls, inner) = inner();
    let audit = Arc::new(MemoryAuditSink::new());
    let host = PolicyToolHost::builder(inner)
        .profile(profile_json.map(profile))
        .asker(asker)
        .caller(caller)
        .audit(audit.clone(), false)
        .schemas(Arc::new(annotated()))
        .classification(config.evaluation.classification.clone())
        .build();
    Setup { host, calls, audit }
}

/// Each record as `tool class stage decision`.
fn stages(s: &Setup) -> Vec<String> {
    s.audit
        .tool_calls()
        .into_iter()
        .map(|r| {
            let stage = serde_json::to_value(r.stage.unwrap()).unwrap();
            let class = r.classification.unwrap();
            format!(
                "{} {class} {} {}",
                r.tool,
                stage.as_str().unwrap(),
                r.decision.as_str()
            )
        })
        .collect()
}

#[tokio::test]
async fn a_destructive_call_without_allow_destructive_is_denied_with_reason_permission() {
    let approver = FakeApprover::new(ApprovalDecision::ApproveOnce, FAST);
    // Even a profile that allows everything, and even without a profile.
    for profile_json in [Some(json!({"defaultDisposition": "allow"})), None] {
        let s = host(
            Caller::new("ci", ["deploy"]),
            "{}",
            profile_json,
            approver.clone(),
        );
        let r = call(&s.host, "fs__delete", 1).await;
        let Err(ToolError::Denied {
            reason, message, ..
        }) = &r
        else {
            panic!("{r:?}");
        };
        assert_eq!(reason, "permission");
        assert_eq!(
            message,
            "`fs__delete` is destructive and needs the permission `allow_destructive`, which caller `ci` lacks"
        );
        assert_eq!(
            call(&s.host, "fs__read", 2).await,
            Ok(json!({"echo": {"path": "/x"}}))
        );
        assert_eq!(
            call(&s.host, "fs__write", 3).await,
            Ok(json!({"echo": {"path": "/x"}}))
        );
        assert_eq!((approver.asked(), s.calls.load(Ordering::SeqCst)), (0, 2));
        let recs = s.audit.tool_calls();
        assert_eq!(
            (recs[0].status, recs[0].reason.as_deref()),
            (CallStatus::Denied, Some("permission"))
        );
        assert_eq!(
            stages(&s),
            [
                "fs__delete destructive auth denied",
                "fs__read read execution allowed",
                "fs__write write execution allowed"
            ]
        );
    }
}

#[tokio::test]
async fn the_local_caller_and_a_granted_token_may_unless_the_config_withdraws_it() {
    let approver = FakeApprover::new(ApprovalDecision::ApproveOnce, FAST);
    let ok = Ok(json!({"echo": {"path": "/x"}}));
    let s = host(Caller::local(), "{}", None, approver.clone());
    assert_eq!(call(&s.host, "fs__delete", 1).await, ok);
    let s = host(
        Caller::new("ops", [ALLOW_DESTRUCTIVE]),
        "{}",
        None,
        approver.clone(),
    );
    assert_eq!(call(&s.host, "fs__delete", 1).await, ok);
    let off = r#"{"localAllowDestructive": false}"#;
    let s = host(Caller::local(), off, None, approver.clone());
    assert_eq!(
        reason_of(&call(&s.host, "fs__delete", 1).await),
        Some("permission")
    );
    let s = host(Caller::new("ops", [ALLOW_DESTRUCTIVE]), off, None, approver);
    assert_eq!(call(&s.host, "fs__delete", 1).await, ok);
}

#[tokio::test]
async fn config_globs_classify_over_annotations_and_asks_show_the_class() {
    let approver = FakeApprover::new(ApprovalDecision::ApproveOnce, FAST);
    // `fs__*` read and `fs__write` destructive: the most restrictive wins for fs__write;
    // fs__delete becomes read by config; a tool nobody lists (`web__get`) is write.
    let classes = r#"{"classification": {"read": ["fs__*"], "destructive": ["fs__write"]}}"#;
    let s = host(
        Caller::new("ci", Vec::<String>::new()),
        classes,
        Some(json!({"asklist": ["fs__delete", "web__get"]})),
        approver.clone(),
    );
    assert_eq!(
        reason_of(&call(&s.host, "fs__write", 1).await),
        Some("permission")
    );
    assert!(call(&s.host, "fs__delete", 2).await.is_ok());
    assert!(call(&s.host, "web__get", 3).await.is_ok());
    let asked: Vec<(String, Class)> = approver
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|r| (r.tool.clone(), r.classification))
        .collect();
    assert_eq!(
        asked,
        [
            ("fs__delete".into(), Class::Read),
            ("web__get".into(), Class::Write)
        ]
    );
    let q = approver.requests.lock().unwrap()[0].question();
    assert!(
        q.message.contains("\nRisk: medium\nClass: read\n"),
        "{}",
        q.message
    );
    assert_eq!(
        stages(&s),
        [
            "fs__write destructive auth denied",
            "fs__delete read approval approved",
            "web__get write approval approved"
        ]
    );
}
