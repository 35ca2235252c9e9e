//! Approver rights by risk (`riskPolicies.<level>.approvers`) and `requireApproval`, end to end
//! with the Python SDK: over HTTP behind real tokens, the agent's own elicitation cannot approve,
//! an operator without the right sees the ask but is refused `403`, and the lead approves (the
//! audit names the lead and the right); over stdio, with no approval API, the local caller
//! lacking the right is denied at once.

use std::path::Path;

use serde_json::{Value, json};

use crate::auth::{Served, sha256_hex};
use crate::harness::{Mode, Setup, Transport, assert_json, base_config, eval_summary};

/// `everything__echo` is allowed, but critical: approved by a holder of `approve:critical`.
fn gate() -> Value {
    json!({
        "risk": {"everything__echo": "critical"},
        "approvalTimeoutSeconds": 300,
        "riskPolicies": {"critical": {"approvers": ["approve:critical"], "requireApproval": true}}
    })
}

pub(crate) const OPS_REFUSED: &str = "`ops` cannot decide a critical-risk ask: it needs one of the permissions `approve:critical` (riskPolicies.critical.approvers)";

/// The setup of the approver-rights tests: the profile [`gate`], the approval API, and three
/// callers by bearer token — `agent` and `ops` holding `approve`, `lead` also
/// `approve:critical`.
pub(crate) fn rights_setup(name: &str) -> Setup {
    Setup::new(name, Transport::Stdio, |s| {
        let mut c = base_config(s);
        c["evaluation"]["profiles"]["gate"] = gate();
        c["approvals"] = json!({"http": true});
        c["server"] = json!({"auth": {"tokens": [
            {"name": "agent", "sha256": sha256_hex("agent-token"), "permissions": ["approve"]},
            {"name": "ops", "sha256": sha256_hex("ops-token"), "permissions": ["approve"]},
            {"name": "lead", "sha256": sha256_hex("lead-token"), "permissions": ["approve", "approve:critical"]},
        ]}});
        c
    })
}

/// The environment of `approvals_rights.py` against `url`: the three callers' tokens.
pub(crate) fn rights_env(url: &str) -> Vec<(&'static str, &Path)> {
    vec![
        ("CODEMODE_AUTH_URL", Path::new(url)),
        ("AGENT_TOKEN", Path::new("agent-token")),
        ("OPS_TOKEN", Path::new("ops-token")),
        ("LEAD_TOKEN", Path::new("lead-token")),
    ]
}

fn approver_rights(mode: Mode) {
    let name = format!("approver_rights_{mode:?}").to_lowercase();
    let setup = rights_setup(&name);
    let served = Served::start(&setup.config, &[], &[]);
    let url = served.url();
    let obs = setup.python("approvals_rights.py", mode, &rights_env(&url));
    assert_json(
        &name,
        &obs,
        &json!({
            "ops_sees": {"caller": "agent", "tool": "everything__echo", "risk": "critical",
                "approvers": ["approve:critical"], "decidable": false, "cannot_decide": OPS_REFUSED},
            "lead_sees": {"decidable": true, "cannot_decide": null},
            "agent_prompt": {
                "last": "You cannot approve it here: `agent` cannot decide a critical-risk ask: it needs \
                    one of the permissions `approve:critical` (riskPolicies.critical.approvers). It waits \
                    for such an approver on the HTTP approval API (request ID). Decline withdraws the \
                    call; Cancel only closes this prompt.",
                "offered": ["decline", "cancel"]
            },
            "ops_decides": [403, {"error": OPS_REFUSED}],
            "lead_decides": [200, {"status": "decided"}],
            "result": {"ok": true, "result": "Echo: deploy"},
            "decided": {"decision": "approve_once", "decided_by": "lead",
                "decided_with": "approve:critical", "channel": "http"},
        }),
    );
    let call = setup
        .audit_once(&[("eval", 1)])
        .into_iter()
        .find(|r| r["event"] == "tool_call" && r["tool"] == "everything__echo")
        .expect("the call's audit record");
    let fields: Value = [
        "caller",
        "disposition",
        "decision",
        "channel",
        "decided_by",
        "approver_right",
        "risk",
    ]
    .iter()
    .map(|k| (k.to_string(), call[*k].clone()))
    .collect::<serde_json::Map<String, Value>>()
    .into();
    assert_json(
        &format!("{name}: audit"),
        &fields,
        &json!({"caller": "agent", "disposition": "ask", "decision": "approved", "channel": "http",
            "decided_by": "lead", "approver_right": "approve:critical", "risk": "critical"}),
    );
}

#[test]
fn approver_rights_legacy() {
    approver_rights(Mode::Legacy);
}

/// Over stdio nobody but the local caller can answer, and it holds no approver right: a call
/// `requireApproval` asks about is denied at once, the message naming the permission, and the
/// client is not prompted.
#[test]
fn approver_rights_without_an_approval_api_deny_at_once() {
    let setup = Setup::new("approver_rights_stdio", Transport::Stdio, |s| {
        let mut c = base_config(s);
        c["evaluation"]["profiles"]["gate"] = gate();
        c
    });
    let obs = setup.python("approvals_rights_stdio.py", Mode::Legacy, &[]);
    assert_eq!(
        obs["prompts"],
        json!(0),
        "approver rights over stdio: nobody was prompted"
    );
    assert_json(
        "approver rights over stdio: eval",
        &eval_summary(&obs["result"]),
        &json!({"is_error": false, "ok": true,
            "result": "`everything__echo` needs approval by an approver: `local` cannot decide a \
                critical-risk ask: it needs one of the permissions `approve:critical` \
                (riskPolicies.critical.approvers), and no other approver can be asked here (the \
                HTTP approval API is not served); ask an approver to run it",
            "calls": [["everything__echo", "denied", "permission"]]}),
    );
}
