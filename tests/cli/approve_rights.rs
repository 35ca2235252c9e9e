//! `codemode approve` and approver rights by risk: an ask whose risk level names `approvers`
//! is announced to an approver without the right, with why, and not queued; an approver with
//! the right decides it. A stdio server started with `--approvals-http` behind tokens, asked by
//! a Python SDK client that cannot elicit.

use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use codemode_test_support::peers;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{temp_dir, text};

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `codemode approve` on `addr` with `token`, in a pseudo-terminal playing `dialogue`.
fn approver(addr: &str, token: &str, dialogue: &[&str]) -> Output {
    let here = env!("CARGO_MANIFEST_DIR");
    Command::new(peers::python())
        .arg(format!("{here}/tests/cli/approve_driver.py"))
        .args(dialogue)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_codemode"))
        .args(["approve", "--token-env", "APPROVER_TOKEN", "--url"])
        .arg(format!("http://{addr}"))
        .env("APPROVER_TOKEN", token)
        .output()
        .expect("run the pty driver")
}

#[test]
fn approve_shows_an_ask_it_may_not_decide_and_one_with_the_right_decides_it() {
    peers::ensure_installed();
    let dir = temp_dir("approve-rights");
    let config = dir.join("config.json");
    let tokens = json!([
        {"name": "ops", "sha256": sha256_hex("ops-token"), "permissions": ["approve"]},
        {"name": "lead", "sha256": sha256_hex("lead-token"), "permissions": ["approve", "approve:critical"]},
    ]);
    let profile = json!({
        "risk": {"search_tools": "critical"},
        "approvalTimeoutSeconds": 300,
        "riskPolicies": {"critical": {"approvers": ["approve:critical"], "requireApproval": true}}
    });
    let body =
        json!({"server": {"auth": {"tokens": tokens}}, "evaluation": {"profiles": {"p": profile}}});
    std::fs::write(&config, body.to_string()).unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let here = env!("CARGO_MANIFEST_DIR");
    let eval = Command::new(peers::python())
        .arg(format!("{here}/tests/cli/approve_eval.py"))
        .arg(env!("CARGO_BIN_EXE_codemode"))
        .arg(&config)
        .arg(&addr)
        .arg("return (await codemode.search_tools({query: \"time\", limit: 1})).results.length;")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the MCP client");
    let started = Instant::now();
    while TcpStream::connect(&addr).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the approval API never listened on {addr}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let ops = approver(&addr, "ops-token", &["you cannot decide this", "^D"]);
    let shown = text(&ops.stdout);
    assert_eq!(ops.status.code(), Some(0), "{shown}");
    let line = shown
        .lines()
        .find(|l| l.contains("you cannot decide this"))
        .unwrap_or_else(|| panic!("no refusal in:\n{shown}"));
    assert!(
        line.starts_with("[risk CRITICAL] `search_tools` from caller local (request "),
        "{line}"
    );
    assert!(
        line.trim_end_matches('\r').ends_with(
            "): you cannot decide this: `ops` cannot decide a critical-risk ask: it needs one of the permissions `approve:critical` (riskPolicies.critical.approvers)"
        ),
        "{line}"
    );
    // Not queued: no prompt offered a decision.
    assert!(!shown.contains("[a]pprove"), "{shown}");

    let lead = approver(
        &addr,
        "lead-token",
        &[
            "[v]iew full args",
            "a",
            "approve_once by lead via http",
            "^D",
        ],
    );
    let shown = text(&lead.stdout);
    assert_eq!(lead.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains(
            "[risk CRITICAL, read] `search_tools` wants approval (caller local, profile p, eval "
        ),
        "{shown}"
    );
    // Closes the client's stdin first: only now, its approvers done, may the server end.
    let eval = eval.wait_with_output().unwrap();
    assert!(eval.status.success(), "{}", text(&eval.stderr));
    let outcome: Value = serde_json::from_slice(&eval.stdout).expect("the eval's outcome");
    assert_eq!(outcome["ok"], Value::Bool(true), "{outcome}");
}
