//! The approval page (`/approvals/ui`) in a real headless browser: Debian's Chromium driven by
//! playwright-core (installed by tests/mcp/browser/setup.sh). A Python SDK client that cannot
//! elicit runs a script whose ask waits; the page shows it (hostile text escaped, never
//! interpreted), a click approves it; the script's `hitl_request` question appears next, a click
//! answers it, and the suspended script finishes. "Approve from now on" records a rule that
//! lets the identical call through unasked. An operator without the approver right the
//! ask's risk level names sees it marked as not decidable, its buttons disabled.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::harness::{Mode, Setup, Transport, assert_json, base_config, eval_summary};

fn install() -> std::path::PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/browser");
    let dir = std::env::var_os("CODEMODE_TEST_BROWSER").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-browser"),
        Into::into,
    );
    let out = Command::new("bash")
        .arg(here.join("setup.sh"))
        .env("CODEMODE_TEST_BROWSER", &dir)
        .output()
        .expect("run tests/mcp/browser/setup.sh");
    assert!(
        out.status.success(),
        "installing the browser failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("node_modules/playwright-core")
}

/// Runs `client` and, beside it, the page script `script` (tests/mcp/browser/) in Chromium with
/// `env`; returns the client's result and what the script printed (one JSON object).
fn with_page(
    setup: &Setup,
    script: &str,
    env: &[(&str, &str)],
    client: impl FnOnce() -> Value + Send,
) -> (Value, Value) {
    let playwright = install();
    let user_data = setup.scratch.path("chromium-profile");
    let (client, browser) = std::thread::scope(|s| {
        let client = s.spawn(client);
        let browser = Command::new("node")
            .arg(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/mcp/browser")
                    .join(script),
            )
            .envs(env.iter().copied())
            .env("PLAYWRIGHT_CORE", &playwright)
            .env("USER_DATA_DIR", &user_data)
            .output()
            .expect("run node");
        if !browser.status.success() {
            // Shown now: the client waits for the page.
            eprintln!(
                "the browser script failed:\n{}",
                String::from_utf8_lossy(&browser.stderr)
            );
        }
        (client.join().expect("the client thread"), browser)
    });
    assert!(
        browser.status.success(),
        "the browser script failed:\n{}",
        String::from_utf8_lossy(&browser.stderr)
    );
    let obs = serde_json::from_slice(&browser.stdout).expect("the page's observations");
    (client, obs)
}

#[test]
fn the_approval_page_approves_a_waiting_script() {
    let setup = Setup::new("approval_page", Transport::Http, |scratch| {
        let mut config = base_config(scratch);
        config["evaluation"]["profiles"]["gate"] =
            json!({"asklist": ["everything__echo"], "approvalTimeoutSeconds": 300});
        config["approvals"] = json!({"http": true});
        config
    });
    let page = setup
        .url()
        .expect("an HTTP setup")
        .replace("/mcp", "/approvals/ui");
    let (client, obs) = with_page(
        &setup,
        "approve_page.cjs",
        &[("APPROVALS_URL", page.as_str())],
        || setup.python("approvals_wait.py", Mode::Legacy, &[]),
    );
    let hostile = "<img src=x onerror=alert(1)>\u{202e}\u{1b}[2K\n  \"fake\": \"approved\"";
    assert_json(
        "approval page",
        &obs,
        &json!({
            "title": "codemode approvals",
            "cards": 1,
            "risk": "medium",
            "tool": "everything__echo",
            "args": {"message": hostile},
            "full_args_label": "Full arguments",
            // A line break in a value frames the value: its second line cannot pass for a key.
            "args_text": "{\n  \"message\": (text: 2 lines, 54 characters)\n    │ <img src=x \
                          onerror=alert(1)>\\u202e\\u001b[2K\n    │   \"fake\": \"approved\"\n}",
            "call_sites": [
                "line 1:20  time__get_current_time",
                "line 2:20  everything__echo",
                "line 3:21  hitl_request"
            ],
            "buttons": ["Approve once", "Approve for this script", "Approve for this session", "Decline"],
            "countdown": true,
            "injected_elements": 0,
            "decision": "approve_once  everything__echo (medium) by local via http",
            "question": {"text": "Ship\\nit <b>now</b>?", "buttons": ["ship", "hold", "Decline"],
                "injected_elements": 0},
            "dialogs": [],
        }),
    );
    assert_json(
        "the approved script",
        &eval_summary(&client["result"]),
        &json!({"is_error": false, "ok": true, "result": [format!("Echo: {hostile}"), "confirmed", "ship"],
            "calls": [["everything__echo", "ok", null], ["hitl_request", "ok", null]]}),
    );
}

/// "Approve from now on" on the approval page, offered with its period where the ask's level
/// has `rememberFor`: the click approves, the identical call after it runs without an ask (its
/// note and the audit name the rule), the call with other arguments is asked about (declined).
#[test]
fn the_approval_page_approves_a_call_from_now_on() {
    let setup = Setup::new("approval_page_remember", Transport::Http, |scratch| {
        let mut config = base_config(scratch);
        config["evaluation"]["profiles"]["gate"] = json!({"asklist": ["everything__echo"],
            "approvalTimeoutSeconds": 60, "riskPolicies": {"medium": {"rememberFor": "2h"}}});
        config["approvals"] = json!({"http": true});
        config
    });
    let page = setup
        .url()
        .expect("an HTTP setup")
        .replace("/mcp", "/approvals/ui");
    let (client, obs) = with_page(
        &setup,
        "remember_page.cjs",
        &[("APPROVALS_URL", page.as_str())],
        || setup.python("approvals_remember.py", Mode::Legacy, &[]),
    );
    assert_json(
        "the approval page, answered from now on",
        &obs,
        &json!({
            "buttons": ["Approve once", "Approve for this script", "Approve for this session",
                "Approve from now on (for 2 hours)", "Decline"],
            "first_args": "{\n  \"message\": \"same\"\n}",
            "next_cards": 1,
            "next_args": "{\n  \"message\": \"other\"\n}",
            "decisions": [
                "decline  everything__echo (medium) by local via http",
                "approve_remember  everything__echo (medium) by local via http",
            ],
        }),
    );
    assert_eq!(
        client["result"],
        json!(["Echo: same", "Echo: same", "elicitation_declined"]),
        "{client}"
    );
    let notes = client["notes"].as_array().expect("the calls' notes");
    let again = notes[1].as_str().unwrap_or_default();
    assert!(
        again.starts_with("approved by local from now on (rule "),
        "{client}"
    );
    assert_eq!(
        client["audit"],
        json!([
            ["rule", "created", "http"],
            ["tool_call", "approved", "http"],
            ["tool_call", "approved", "policy"],
            ["tool_call", "declined", "http"],
        ]),
        "{client}"
    );
}

/// An ask whose risk level names approvers (`riskPolicies.critical.approvers`) as the approval
/// page shows it to an operator without the right: listed, marked as not decidable with the
/// reason, every button disabled; once the lead decides through the API,
/// the page moves it to the last decisions.
#[test]
fn the_approval_page_shows_an_ask_its_reader_cannot_decide() {
    let setup = crate::rights::rights_setup("approval_page_rights");
    let served = crate::auth::Served::start(&setup.config, &[], &[]);
    let url = served.url();
    let page = url.replace("/mcp", "/approvals/ui");
    let saw = setup.scratch.path("page-saw");
    let mut env = crate::rights::rights_env(&url);
    env.push(("PAGE_SAW", saw.as_path()));
    let saw = saw.to_str().expect("a UTF-8 path");
    let (client, obs) = with_page(
        &setup,
        "cannot_decide_page.cjs",
        &[
            ("APPROVALS_URL", page.as_str()),
            ("OPS_TOKEN", "ops-token"),
            ("PAGE_SAW", saw),
        ],
        || setup.python("approvals_rights.py", Mode::Legacy, &env),
    );
    assert_json(
        "the approval page to an operator without the right",
        &obs,
        &json!({
            "cards": 1,
            "risk": "critical",
            "tool": "everything__echo",
            "approvers": "Approvers: any of approve:critical",
            "cannot_decide": format!("You cannot decide this: {}", crate::rights::OPS_REFUSED),
            "buttons": ["Approve once", "Approve for this script", "Approve for this session", "Decline"],
            "enabled": 0,
            "decision": "approve_once  everything__echo (critical) by lead via http",
        }),
    );
    assert_eq!(
        client["result"],
        json!({"ok": true, "result": "Echo: deploy"})
    );
    assert_eq!(client["ops_decides"][0], 403);
}
