//! `codemode approve` in a real pseudo-terminal, answering an ask of a stdio server started with
//! `--approvals-http` by a Python SDK client that cannot elicit.

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use codemode_test_support::peers;
use serde_json::Value;

use super::{codemode, temp_dir, text};

const CODE: &str = "// the second call site\nif (false) { await codemode.get_tools({names: []}); }\n\
    const found = await codemode.search_tools({query: \"time\\u001b[2K\\nfake: approved\", limit: 1});\n\
    const asked = await codemode.hitl_request({question: \"Proceed?\\u001b[1A\", options: [\"go\", \"stop\"]});\n\
    return [found.results.length, asked.selectedOption];";

/// Runs `code` with `codemode_eval_p` on a stdio server of `config` serving the approval API,
/// and `codemode approve` on a pseudo-terminal playing `dialogue` (WAIT, TYPE pairs, see
/// approve_driver.py): what the approver's screen showed, and the eval's structured result.
fn approve_dialogue(config: &Path, code: &str, dialogue: &[(&str, &str)]) -> (String, Value) {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let here = env!("CARGO_MANIFEST_DIR");
    let eval = Command::new(peers::python())
        .arg(format!("{here}/tests/cli/approve_eval.py"))
        .arg(env!("CARGO_BIN_EXE_codemode"))
        .arg(config)
        .arg(&addr)
        .arg(code)
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
    let mut driver = Command::new(peers::python());
    driver.arg(format!("{here}/tests/cli/approve_driver.py"));
    for (wait, typed) in dialogue {
        driver.args([wait, typed]);
    }
    let screen = driver
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_codemode"))
        .args(["approve", "--url"])
        .arg(format!("http://{addr}/approvals/ui"))
        .output()
        .expect("run the pty driver");
    // Closes the client's stdin first: only now, its approvers done, may the server end.
    let eval = eval.wait_with_output().unwrap();
    let shown = text(&screen.stdout);
    assert_eq!(screen.status.code(), Some(0), "{shown}");
    assert!(eval.status.success(), "{}", text(&eval.stderr));
    let outcome: Value = serde_json::from_slice(&eval.stdout).expect("the eval's outcome");
    (shown, outcome)
}

#[test]
fn approve_answers_an_ask_in_a_terminal() {
    peers::ensure_installed();
    let dir = temp_dir("approve");
    let config = dir.join("config.json");
    std::fs::write(
        &config,
        r#"{"evaluation": {"profiles": {"p": {"asklist": ["search_tools"], "approvalTimeoutSeconds": 300}}}}"#,
    )
    .unwrap();
    let (shown, outcome) = approve_dialogue(
        &config,
        CODE,
        &[
            ("[v]iew full args", "x"),
            ("type one of a, e, s, d or v", "v"),
            ("Full arguments:", "a"),
            ("[1-2] answer [d]ecline", "2"),
            ("answer by local via http", "^D"),
        ],
    );
    assert_eq!(outcome["ok"], Value::Bool(true), "{outcome}");
    assert!(outcome["result"][0].is_u64(), "{outcome}");
    assert_eq!(outcome["result"][1], "stop", "{outcome}");

    // What the person saw: the risk, the tool, who asks, the neutralised summary (no raw escape
    // reaches the terminal; the multi-line query is a framed block, so its second line cannot
    // pass for a line of the prompt), the call sites, the keys, the full
    // arguments on request, and the outcome.
    let lines: Vec<&str> = shown.lines().map(|l| l.trim_end_matches('\r')).collect();
    for want in [
        "[risk MEDIUM, read] `search_tools` wants approval (caller local, profile p, eval ",
        "  \"query\": (text: 2 lines, 23 characters)",
        "    │ time\\u001b[2K",
        "    │ fake: approved",
        "  line 2:20  get_tools",
        "  line 3:21  search_tools",
        "  line 4:21  hitl_request",
        "  \"limit\": 1,",
        "  approve_once: sent",
        "[question] from caller local (eval ",
        "Proceed?\\u001b[1A",
        "  1) go",
        "  2) stop",
        "  answer: sent",
    ] {
        assert!(
            lines.iter().any(|l| l.contains(want)),
            "missing {want:?} in:\n{shown}"
        );
    }
    assert!(
        shown.contains(
            "[a]pprove [e]val [s]ession [d]ecline [v]iew full args (denied automatically in "
        ),
        "{shown}"
    );
    assert!(
        shown.contains(": approve_once by local via http"),
        "{shown}"
    );
    assert!(
        !shown.contains('\u{1b}'),
        "a raw escape reached the terminal:\n{shown}"
    );
    assert!(
        !lines.iter().any(|l| l.starts_with("fake: approved")),
        "a script-made line:\n{shown}"
    );
}

/// Three calls of `search_tools`: twice the same, then with other arguments (declined: its
/// reason is the result).
const TWICE_THEN_OTHER: &str = "const q = {query: 'time', limit: 1};\n\
    await codemode.search_tools(q);\n\
    await codemode.search_tools(q);\n\
    try { await codemode.search_tools({query: 'date', limit: 1}); return 'approved'; }\n\
    catch (e) { return e.reason; }";

/// A config asking about `search_tools` (risk medium) in profile `p`, remembering approvals
/// at that level for an hour, and in profile `plain`, not remembering them; with its store and
/// audit log in `dir`.
fn remembering_config(dir: &Path) -> std::path::PathBuf {
    let config = dir.join("config.json");
    let value = serde_json::json!({
        "durable": {"store": "local", "dir": dir.join("state")},
        "audit": {"dir": dir.join("audit")},
        "evaluation": {"profiles": {
            "p": {
                "asklist": ["search_tools"],
                "approvalTimeoutSeconds": 300,
                "riskPolicies": {"medium": {"rememberFor": "1h"}}
            },
            "plain": {"asklist": ["search_tools"], "approvalTimeoutSeconds": 300}
        }}
    });
    std::fs::write(&config, value.to_string()).unwrap();
    config
}

/// `[r]` in `codemode approve`, offered with its period where the level has `rememberFor`:
/// the identical call after it is not asked about (the audit names the rule), one with other
/// arguments is.
#[test]
fn approve_remembers_a_call_from_now_on_with_r() {
    peers::ensure_installed();
    let dir = temp_dir("approve-remember");
    let config = remembering_config(&dir);
    let (shown, outcome) = approve_dialogue(
        &config,
        TWICE_THEN_OTHER,
        &[
            ("[r]emember (for 1 hour) [d]ecline [v]iew full args", "r"),
            ("\"query\": \"date\"", "d"),
            ("search_tools", "^D"),
        ],
    );
    assert_eq!(outcome["ok"], Value::Bool(true), "{outcome}");
    assert_eq!(
        outcome["result"], "elicitation_declined",
        "{outcome}\n{shown}"
    );
    assert!(shown.contains("approve_remember: sent"), "{shown}");
    // Two asks: the first call's and the other arguments'; the identical call was not asked.
    assert_eq!(
        shown.matches("`search_tools` wants approval").count(),
        2,
        "{shown}"
    );
    assert!(
        shown.contains(
            "[a]pprove [e]val [s]ession [r]emember (for 1 hour) [d]ecline [v]iew full args"
        ),
        "{shown}"
    );
    let audit = codemode_test_support::audit_records(&dir.join("audit"));
    let rules: Vec<&Value> = audit.iter().filter(|r| r["event"] == "rule").collect();
    assert_eq!(rules.len(), 1, "{audit:?}");
    assert_eq!(
        (&rules[0]["action"], &rules[0]["channel"]),
        (&"created".into(), &"http".into())
    );
    let calls: Vec<(&Value, &Value)> = audit
        .iter()
        .filter(|r| r["event"] == "tool_call")
        .map(|r| (&r["decision"], &r["channel"]))
        .collect();
    let (approved, policy, declined) = (
        Value::from("approved"),
        Value::from("policy"),
        Value::from("declined"),
    );
    assert_eq!(
        calls,
        [
            (&approved, &Value::from("http")),
            (&approved, &policy),
            (&declined, &Value::from("http"))
        ],
        "{audit:?}"
    );
    let reason = audit
        .iter()
        .find(|r| r["event"] == "tool_call" && r["channel"] == "policy")
        .and_then(|r| r["decision_reason"].as_str())
        .unwrap_or_default()
        .to_string();
    let id = rules[0]["rule_id"].as_str().unwrap();
    assert!(
        reason.starts_with(&format!("remembered rule {id} (approved via http, until ")),
        "{reason}"
    );
}

/// `codemode run --profile P SCRIPT` on a pseudo-terminal playing `dialogue` (see
/// approve_driver.py): its exit code and screen.
fn run_dialogue(
    config: &Path,
    profile: &str,
    script: &Path,
    dialogue: &[(&str, &str)],
) -> (i32, String) {
    let mut driver = Command::new(peers::python());
    driver.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/cli/approve_driver.py"
    ));
    for (wait, typed) in dialogue {
        driver.args([wait, typed]);
    }
    let out = driver
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_codemode"))
        .args(["run", "--config"])
        .arg(config)
        .args(["--profile", profile])
        .arg(script)
        .env_remove("CODEMODE_CONFIG")
        .output()
        .expect("run the pty driver");
    (out.status.code().unwrap_or(-1), text(&out.stdout))
}

/// `codemode run`'s terminal prompt offers "from now on" with the key of `codemode approve`
/// where the level has `rememberFor` (only there): the rule, kept in the config's durable
/// store, lets the identical call through unasked in this run and the next, not other
/// arguments; `codemode rules list` shows it.
#[test]
fn run_remembers_a_call_from_now_on_with_r() {
    peers::ensure_installed();
    let dir = temp_dir("run-remember");
    let config = remembering_config(&dir);
    let script = dir.join("calls.js");
    std::fs::write(&script, TWICE_THEN_OTHER).unwrap();
    let (code, screen) = run_dialogue(
        &config,
        "p",
        &script,
        &[
            ("[r] Approve this call from now on (for 1 hour)", "r"),
            ("\"query\": \"date\"", "d"),
        ],
    );
    assert_eq!(code, 0, "{screen}");
    assert!(
        screen.trim_end().ends_with("\"elicitation_declined\""),
        "{screen}"
    );
    assert_eq!(
        screen.matches("wants to call `search_tools`").count(),
        2,
        "{screen}"
    );
    for want in [
        "  1) [a] Approve this call\r\n",
        "  4) [r] Approve this call from now on (for 1 hour)\r\n",
        "  5) [d] Decline\r\n",
        "  6) Cancel\r\n",
    ] {
        assert!(screen.contains(want), "missing {want:?} in:\n{screen}");
    }
    // The next run, with nobody at the terminal, makes the identical call unasked.
    let once = dir.join("once.js");
    std::fs::write(&once, "const r = await codemode.search_tools({query: 'time', limit: 1}); return typeof r.results;").unwrap();
    let out = super::codemode()
        .args(["run", "--config"])
        .arg(&config)
        .args(["--profile", "p"])
        .arg(&once)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout), "\"object\"\n", "{}", text(&out.stderr));
    let listed = super::codemode()
        .args(["rules", "list", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let listed = text(&listed.stdout);
    assert!(
        listed.contains("caller=local profile=p tool=search_tools")
            && listed.contains("via terminal"),
        "{listed}"
    );
    assert_eq!(listed.lines().count(), 1, "{listed}");
    let audit = codemode_test_support::audit_records(&dir.join("audit"));
    let calls: Vec<Value> = audit
        .iter()
        .filter(|r| matches!(r["event"].as_str(), Some("tool_call" | "rule")))
        .map(|r| {
            serde_json::json!([
                r["event"],
                r["decision"].as_str().or(r["action"].as_str()),
                r["channel"]
            ])
        })
        .collect();
    assert_eq!(
        calls,
        [
            serde_json::json!(["rule", "created", "terminal"]),
            serde_json::json!(["tool_call", "approved", "terminal"]),
            serde_json::json!(["tool_call", "approved", "policy"]),
            serde_json::json!(["tool_call", "declined", "terminal"]),
            serde_json::json!(["tool_call", "approved", "policy"]),
        ],
        "{audit:?}"
    );

    // A level without rememberFor: the prompt has no such choice.
    let (code, screen) = run_dialogue(&config, "plain", &once, &[("Type a number", "d")]);
    assert_eq!(code, 1, "{screen}");
    assert!(
        screen.contains("  1) [a] Approve this call\r\n"),
        "{screen}"
    );
    assert!(!screen.contains("from now on"), "{screen}");
}

/// `codemode run`'s human output cannot be forged by the script: log lines, the error line and
/// the result show control, bidi and zero-width characters as escapes.
#[test]
fn run_output_shows_hostile_text_escaped() {
    let out = super::run_with_stdin(
        &["run", "-"],
        "console.log('step 1\\n[log] all checks passed\\u001b[2K'); \
         console.warn('\\u202eevil\\u200b'); \
         return 'ok\\r\\u2028done';",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "\"ok\\r\\u2028done\"\n");
    assert_eq!(
        text(&out.stderr),
        "[log] step 1\\n[log] all checks passed\\u001b[2K\n[warn] \\u202eevil\\u200b\n"
    );
    let out = super::run_with_stdin(&["run", "-"], "throw new Error('bad\\n\\u001b[32mok');");
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.starts_with("<stdin>:1:") || err.starts_with("-:1:"),
        "{err}"
    );
    assert!(err.ends_with("bad\\n\\u001b[32mok\n"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// The hostile log line of issue 17 and a tool name carrying a fake `file:line:col: kind:` line
/// and a terminal escape: each stays on its own line of `codemode run`'s stderr, escaped.
#[test]
fn run_output_escapes_fake_lines_and_terminal_titles() {
    let out = super::run_with_stdin(
        &["run", "-"],
        "console.log(\"x\\n[error] FAKE\\u001b]0;t\\u0007\");\n\
         await codemode[\"t\\n<stdin>:1:1: internal: \\u001b[2K\"]({});",
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "");
    let err = text(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert_eq!(lines[0], "[log] x\\n[error] FAKE\\u001b]0;t\\u0007");
    // The position after `<stdin>` is the call site's where the guest knows it.
    assert!(lines[1].starts_with("<stdin>"), "{err}");
    assert!(
        lines[1].ends_with(
            ": exception: UnknownToolError: unknown tool `t\\n<stdin>:1:1: internal: \\u001b[2K` (no tools are available)"
        ),
        "{err}"
    );
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err}");
}

/// Without authentication, the approval API's own listener must be a loopback address.
#[test]
fn approvals_http_refuses_a_public_address_without_auth() {
    let dir = temp_dir("approvals-public");
    let config = dir.join("config.json");
    std::fs::write(&config, "{}").unwrap();
    let out = super::codemode()
        .args(["serve", "--approvals-http", "0.0.0.0:0", "--config"])
        .arg(&config)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "codemode: refusing to serve the approval API on 0.0.0.0:0 without authentication: \
         use a loopback address such as 127.0.0.1:PORT\n"
    );
}

/// `codemode approve` against an HTTPS API whose certificate no trusted root signed: refused
/// with why, in a process where nothing but codemode's own code installed a TLS crypto provider
/// (reqwest panics without one).
#[test]
fn approve_over_https_refuses_an_unknown_certificate() {
    let base = format!("https://127.0.0.1:{}", codemode_test_support::tls::serve());
    let out = codemode()
        .args(["approve", "--url", &base])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        format!(
            "codemode approve: cannot reach {base}: error sending request for url \
             ({base}/approvals/stream): client error (Connect): invalid peer certificate: \
             UnknownIssuer\n"
        )
    );
}
