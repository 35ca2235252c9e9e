//! The audit's account of an eval through a real MCP client (clients/audit.py, issue 28 B.2):
//! every `tool_call` record names its deciding stage and the caller's permissions; an answer by
//! elicitation names the client's caller as its decider, with the time the human had; a
//! `hitl_request` records its question, options, answer and metadata, neutralised; the log
//! still verifies, and `audit query --where` finds the records by the new fields.

use std::process::Command;

use serde_json::{Value, json};

use crate::harness::{CODEMODE, Mode, Setup, Transport, assert_json, base_config};

const TOKEN: &str = "ci-token-for-the-audit";

fn setup(name: &str, transport: Transport) -> Setup {
    Setup::new(name, transport, |scratch| {
        let mut config = base_config(scratch);
        config["evaluation"]["defaultProfile"] = json!("audited");
        config["evaluation"]["profiles"]["audited"] = json!({
            "defaultDisposition": "allow",
            "denylist": ["everything__get-sum"],
            "asklist": ["everything__echo"],
            "approvalTimeoutSeconds": 30,
            "rules": [{"tools": ["time__*"], "disposition": "allow", "requirePermissions": ["clock"]}]
        });
        if matches!(transport, Transport::Http) {
            config["server"] = json!({"auth": {"tokens": [{"name": "ci",
                "sha256": codemode_policies::AuditRecord::sha256_hex(TOKEN.as_bytes()),
                "permissions": ["refunds", "deploy"]}]}});
        }
        config
    })
}

/// `[tool, stage, decision, reason, channel, decided_by, caller_permissions, timeout_seconds]` of
/// each `tool_call` record, in the order written (one eval, calls in sequence).
fn rows(records: &[Value]) -> Vec<Value> {
    records
        .iter()
        .filter(|r| r["event"] == "tool_call")
        .map(|r| {
            let reason = match r["reason"].as_str() {
                Some(invalid) if invalid.starts_with("invalid_arguments:") => {
                    json!("invalid_arguments")
                }
                _ => r["reason"].clone(),
            };
            json!([
                r["tool"],
                r["stage"],
                r["decision"],
                reason,
                r["channel"],
                r["decided_by"],
                r["caller_permissions"],
                r["timeout_seconds"]
            ])
        })
        .collect()
}

/// Runs the client and checks what every transport agrees on; returns the audit records.
fn observe(setup: &Setup, mode: Mode, token: Option<&str>) -> Vec<Value> {
    let env: Vec<(&str, &std::path::Path)> = token
        .map(|t| ("CODEMODE_TOKEN", std::path::Path::new(t)))
        .into_iter()
        .collect();
    let obs = setup.python("audit.py", mode, &env);
    assert_eq!(obs["outcome"]["is_error"], false, "{obs}");
    assert_eq!(
        obs["outcome"]["structured"]["result"],
        json!([
            "ok",
            "denied",
            "permission",
            "UnknownToolError",
            "ToolError",
            "yes"
        ]),
        "{obs}"
    );
    assert_eq!(obs["asked"], json!([["decision"], ["answer"]]));
    setup.audit_once(&[("eval", 1)])
}

fn hitl_record(records: &[Value]) -> Value {
    let r = records
        .iter()
        .find(|r| r["tool"] == "hitl_request")
        .expect("a hitl_request record");
    json!({"question": r["question"], "options": r["options"], "answer": r["answer"],
           "metadata": r["metadata"], "timeout_seconds": r["timeout_seconds"], "stage": r["stage"]})
}

fn expected_rows(caller: &str, perms: &Value) -> Value {
    json!([
        [
            "everything__echo",
            "approval",
            "approved",
            null,
            "elicitation",
            caller,
            perms,
            30
        ],
        [
            "everything__get-sum",
            "permission",
            "denied",
            "denied",
            null,
            null,
            perms,
            null
        ],
        [
            "time__get_current_time",
            "auth",
            "denied",
            "permission",
            null,
            null,
            perms,
            null
        ],
        [
            "everything__nope",
            "registry",
            "denied",
            "unknown_tool",
            null,
            null,
            perms,
            null
        ],
        [
            "everything__echo",
            "validation",
            "invalid",
            "invalid_arguments",
            null,
            null,
            perms,
            null
        ],
        [
            "hitl_request",
            "execution",
            "allowed",
            null,
            null,
            null,
            perms,
            30
        ],
    ])
}

/// `codemode audit <args…> <the test's audit dir>`: exit code and stdout.
fn audit_cli(setup: &Setup, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(CODEMODE)
        .args(["audit"])
        .args(args)
        .arg(setup.scratch.path("audit"))
        .output()
        .expect("run codemode audit");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// An authenticated HTTP caller on protocol 2026-07-28 (elicitation answered by retrying).
#[test]
fn an_mcp_clients_audit_names_stage_permissions_decider_and_question() {
    let setup = setup("audit_fields_http", Transport::Http);
    let records = observe(&setup, Mode::Auto, Some(TOKEN));
    assert_json(
        "audit rows",
        &json!(rows(&records)),
        &expected_rows("ci", &json!(["deploy", "refunds"])),
    );
    assert_json(
        "hitl_request record",
        &hitl_record(&records),
        &json!({"question": "Ship\\u001b[2J it?", "options": ["yes", "no"], "answer": "yes",
                "metadata": {"deep": [[1, 2]], "note": "=cmd\\u202e", "ticket": 42},
                "timeout_seconds": 30, "stage": "execution"}),
    );
    // The chain still verifies with the new fields, and they can be queried.
    let (code, verified) = audit_cli(&setup, &["verify"]);
    assert_eq!(code, Some(0), "{verified}");
    assert!(verified.starts_with("ok: 7 records\n"), "{verified}");
    let (code, found) = audit_cli(
        &setup,
        &[
            "query",
            "--where",
            "stage=registry",
            "--where",
            "caller_permissions=[\"deploy\",\"refunds\"]",
            "--format",
            "json",
        ],
    );
    assert_eq!(code, Some(0));
    let found: Vec<Value> = serde_json::from_str(&found).expect("JSON");
    let tools: Vec<&Value> = found.iter().map(|r| &r["tool"]).collect();
    assert_eq!(tools, [&json!("everything__nope")]);
    let (_, found) = audit_cli(&setup, &["query", "--where", "answer=yes"]);
    assert_eq!(found.lines().count(), 1, "{found}");
    assert!(found.contains("\"tool\":\"hitl_request\""), "{found}");
}

/// The local caller over stdio on protocol 2025-11-25 (`elicitation/create`).
#[test]
fn over_stdio_the_local_caller_decides_by_elicitation() {
    let setup = setup("audit_fields_stdio", Transport::Stdio);
    let records = observe(&setup, Mode::Legacy, None);
    assert_json(
        "audit rows",
        &json!(rows(&records)),
        &expected_rows("local", &json!(["allow_destructive"])),
    );
    assert_eq!(hitl_record(&records)["answer"], "yes");
}
