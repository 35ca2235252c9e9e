//! Arguments checked against the tool's schema between the policy's deny and its ask; results
//! masked by the output policy, with the audit's `redacted_paths` and `output_sha256`.

use super::*;
use crate::{Config, ToolSchemaSpec, ToolSchemas};

fn schemas() -> Arc<ToolSchemas> {
    let path = json!({"type": "object", "properties": {"path": {"type": "string"}},
        "required": ["path"]});
    let specs = ["fs__read", "fs__write", "fs__delete"].map(|name| ToolSchemaSpec {
        name,
        input_schema: &path,
        output_schema: None,
        signature: format!("{name}(args: {{ path: string }}): Promise<unknown>;"),
        annotated: None,
    });
    Arc::new(ToolSchemas::compile(specs).0)
}

fn checked(p: Value, approver: Arc<dyn Asker>, outputs: &str) -> Setup {
    let (calls, inner) = inner();
    let audit = Arc::new(MemoryAuditSink::new());
    let outputs = Config::from_json_str(&format!(r#"{{"outputs": {outputs}}}"#))
        .unwrap()
        .outputs;
    let host = PolicyToolHost::builder(inner)
        .profile(Some(profile(p)))
        .asker(approver)
        .audit(audit.clone(), false)
        .schemas(Arc::new(schemas()))
        .outputs(outputs)
        .build();
    Setup { host, calls, audit }
}

async fn call_with(
    h: &PolicyToolHost,
    tool: &str,
    args: Value,
    id: u64,
) -> Result<Value, ToolError> {
    h.call(tool, args, &CallContext::detached(EvalId(1), id))
        .await
}

#[tokio::test]
async fn invalid_arguments_are_refused_before_anyone_is_asked() {
    let approver = FakeApprover::new(ApprovalDecision::ApproveOnce, FAST);
    let s = checked(
        json!({"asklist": ["fs__*"], "denylist": ["fs__delete"]}),
        approver.clone(),
        "[]",
    );
    // Invalid under `ask`: refused, nobody asked, the tool never reached.
    let r = call_with(&s.host, "fs__write", json!({"path": 42}), 1).await;
    let Err(ToolError::Failed { message, data }) = &r else {
        panic!("{r:?}");
    };
    assert_eq!(
        message,
        "invalid_arguments: `fs__write` was not called: /path: expected string, got number (42) \
         (its types: get_tools({names: [\"fs__write\"]}))"
    );
    assert_eq!(
        data,
        &Some(
            json!({"errors": [{"path": "/path", "message": "expected string, got number (42)"}],
                   "unknown": [], "missing": []})
        )
    );
    assert_eq!((approver.asked(), s.calls.load(Ordering::SeqCst)), (0, 0));
    // Denied beats invalid: the profile's answer comes first.
    let r = call_with(&s.host, "fs__delete", json!({}), 2).await;
    assert_eq!(reason_of(&r), Some("denied"));
    // Valid: asked, then called.
    let r = call_with(&s.host, "fs__write", json!({"path": "/x"}), 3).await;
    assert_eq!(r, Ok(json!({"echo": {"path": "/x"}})));
    assert_eq!((approver.asked(), s.calls.load(Ordering::SeqCst)), (1, 1));
    // A tool without a schema is not checked.
    let r = call_with(&s.host, "web__get", json!(7), 4).await;
    assert_eq!(r, Ok(json!({"echo": 7})));

    let recs = s.audit.tool_calls();
    let rows: Vec<(u64, Decision, CallStatus, Option<&str>)> = recs
        .iter()
        .map(|r| (r.call_id, r.decision, r.status, r.reason.as_deref()))
        .collect();
    assert_eq!(
        rows,
        vec![
            (
                1,
                Decision::Invalid,
                CallStatus::Error,
                Some("invalid_arguments: /path: expected string, got number")
            ),
            (2, Decision::Denied, CallStatus::Denied, Some("denied")),
            (3, Decision::Approved, CallStatus::Ok, None),
            (4, Decision::Allowed, CallStatus::Ok, None),
        ]
    );
    // Only calls that returned have a result hash.
    let hashes: Vec<bool> = recs.iter().map(|r| r.output_sha256.is_some()).collect();
    assert_eq!(hashes, vec![false, false, true, true]);
}

#[tokio::test]
async fn without_a_profile_arguments_are_still_checked() {
    let (calls, inner) = inner();
    let host = PolicyToolHost::builder(inner)
        .schemas(Arc::new(schemas()))
        .build();
    let r = call_with(&host, "fs__read", json!({}), 1).await;
    assert!(
        matches!(&r, Err(ToolError::Failed { message, .. }) if message == "invalid_arguments: `fs__read` was not called: expected `path` (its types: get_tools({names: [\"fs__read\"]}))"),
        "{r:?}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn results_are_masked_and_the_audit_names_the_paths_and_the_original_hash() {
    let s = checked(
        json!({}),
        FakeApprover::unsupported(),
        r#"[{"tools": ["fs__*"], "mask": ["/echo/path"], "redact": ["/echo/token"]}]"#,
    );
    let args = json!({"path": "/home/ann/secret-plans.txt", "token": "t"});
    let r = call_with(&s.host, "fs__read", args.clone(), 1).await;
    assert_eq!(r, Ok(json!({"echo": {"path": "***.txt"}})));
    let r = call_with(&s.host, "time__now", json!({"path": "/x"}), 2).await;
    assert_eq!(r, Ok(json!({"echo": {"path": "/x"}})));
    let recs = s.audit.tool_calls();
    assert_eq!(recs[0].redacted_paths, vec!["/echo/path", "/echo/token"]);
    assert_eq!(
        recs[0].output_sha256.as_deref(),
        Some(args_sha256(&json!({"echo": args})).as_str())
    );
    assert_eq!(recs[1].redacted_paths, Vec::<String>::new());
}

/// A [`crate::ResultObserver`] is told of what the script received, after the output policy:
/// nothing removed or masked reaches it; a refused call tells it nothing.
#[tokio::test]
async fn the_observer_sees_the_result_as_the_script_does() {
    struct Seen(Mutex<Vec<(String, Value)>>);
    impl crate::ResultObserver for Seen {
        fn observe(&self, tool: &str, value: &Value) {
            self.0
                .lock()
                .unwrap()
                .push((tool.to_string(), value.clone()));
        }
    }
    let seen = Arc::new(Seen(Mutex::default()));
    let (_, inner) = inner();
    let outputs = Config::from_json_str(
        r#"{"outputs": [{"tools": ["fs__*"], "mask": ["/echo/path"], "redact": ["/echo/token"]}]}"#,
    )
    .unwrap()
    .outputs;
    let host = PolicyToolHost::builder(inner)
        .profile(Some(profile(json!({"denylist": ["fs__delete"]}))))
        .schemas(Arc::new(schemas()))
        .outputs(outputs)
        .observer(Some(seen.clone()))
        .build();
    let args = json!({"path": "/home/ann/secret-plans.txt", "token": "t"});
    let r = call_with(&host, "fs__read", args.clone(), 1).await;
    assert_eq!(r, Ok(json!({"echo": {"path": "***.txt"}})));
    assert!(call_with(&host, "fs__delete", args, 2).await.is_err());
    assert!(
        call_with(&host, "fs__read", json!({"path": 1}), 3)
            .await
            .is_err()
    );
    assert_eq!(
        *seen.0.lock().unwrap(),
        vec![("fs__read".to_string(), json!({"echo": {"path": "***.txt"}}))]
    );
}

/// `strictSchema` (B.7): under an `outputs` rule with it, a result that breaks the tool's
/// `outputSchema` fails the call with `invalid_output` (the value not returned, nothing in the
/// message the output policy hides), audited as an error with that reason; without it, the
/// result reaches the script (with a warning). A result that matches passes either way.
#[tokio::test]
async fn a_strict_schema_fails_the_call_whose_result_breaks_the_output_schema() {
    let path = json!({"type": "object"});
    let output = json!({"type": "object", "properties": {"echo": {"type": "object",
        "properties": {"path": {"type": "string"}}, "additionalProperties": false}}});
    let specs = ["fs__read", "fs__write"].map(|name| ToolSchemaSpec {
        name,
        input_schema: &path,
        output_schema: Some(&output),
        signature: format!("{name}(args: {{ path?: string }}): Promise<unknown>;"),
        annotated: None,
    });
    let (calls, inner) = inner();
    let audit = Arc::new(MemoryAuditSink::new());
    let outputs = Config::from_json_str(
        r#"{"outputs": [{"tools": ["fs__read"], "strictSchema": true, "mask": ["/echo/secret"]}]}"#,
    )
    .unwrap()
    .outputs;
    let host = PolicyToolHost::builder(inner)
        .audit(audit.clone(), false)
        .schemas(Arc::new(Arc::new(ToolSchemas::compile(specs).0)))
        .outputs(outputs)
        .build();
    let bad = json!({"path": "/a", "secret": "hunter2"});
    let r = call_with(&host, "fs__read", bad.clone(), 1).await;
    // The unexpected key is one the output policy masks: it is not named.
    let message = "invalid_output: the result of `fs__read` does not match its outputSchema: \
                   /echo: 1 unexpected property";
    assert_eq!(
        r,
        Err(ToolError::Failed {
            message: message.into(),
            data: Some(json!({"kind": "invalid_output"})),
        })
    );
    let r = call_with(&host, "fs__read", json!({"path": 7}), 2).await;
    assert_eq!(
        r,
        Err(ToolError::Failed {
            message: "invalid_output: the result of `fs__read` does not match its outputSchema: \
                      /echo/path: expected string, got number"
                .into(),
            data: Some(json!({"kind": "invalid_output"})),
        })
    );
    // Not strict: the same result reaches the script.
    let r = call_with(&host, "fs__write", bad.clone(), 3).await;
    assert_eq!(r, Ok(json!({"echo": bad})));
    let r = call_with(&host, "fs__read", json!({"path": "/a"}), 4).await;
    assert_eq!(r, Ok(json!({"echo": {"path": "/a"}})));
    assert_eq!(calls.load(Ordering::SeqCst), 4, "each tool ran");
    let recs = audit.tool_calls();
    let seen: Vec<(CallStatus, Option<&str>)> = recs
        .iter()
        .map(|r| (r.status, r.reason.as_deref()))
        .collect();
    assert_eq!(
        seen,
        [
            (CallStatus::Error, Some(message)),
            (
                CallStatus::Error,
                Some(
                    "invalid_output: the result of `fs__read` does not match its outputSchema: \
                     /echo/path: expected string, got number"
                )
            ),
            (CallStatus::Ok, None),
            (CallStatus::Ok, None),
        ]
    );
}

/// `approvalDiffs`: a read the caller's permissions would not allow is not made for the prompt
/// either (the human asked may be the caller itself).
#[tokio::test]
async fn a_diff_is_not_read_past_the_callers_permissions() {
    let approver = FakeApprover::new(ApprovalDecision::Decline, FAST);
    let (calls, inner) = inner();
    let host = PolicyToolHost::builder(inner)
        .profile(Some(profile(json!({
            "asklist": ["fs__write"],
            "rules": [{"tools": ["fs__read"], "disposition": "allow",
                       "requirePermissions": ["secrets"]}],
            "approvalDiffs": {"fs__write": {"read": "fs__read", "path": "path", "content": "c"}}
        }))))
        .asker(approver.clone())
        .build();
    let r = call_with(&host, "fs__write", json!({"path": "/s", "c": "x"}), 1).await;
    assert!(r.is_err(), "declined");
    let asked = approver.requests.lock().unwrap();
    assert!(
        asked[0].args_summary.ends_with(
            "\n\nNo diff: the profile does not let this caller read the file with `fs__read`."
        ),
        "{}",
        asked[0].args_summary
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0, "nothing was read");
}
