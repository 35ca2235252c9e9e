//! `codemode approve` in a real pseudo-terminal, answering an ask of a stdio server started with
//! `--approvals-http` by a Python SDK client that cannot elicit.

use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use codemode_test_support::peers;
use serde_json::Value;

use super::{codemode, temp_dir, text};

const CODE: &str = "// the second call site\nif (false) { await codemode.get_tools({names: []}); }\n\
    const found = await codemode.search_tools({query: \"time\\u001b[2K\\nfake: approved\", limit: 1});\n\
    const asked = await codemode.hitl_request({question: \"Proceed?\\u001b[1A\", options: [\"go\", \"stop\"]});\n\
    return [found.results.length, asked.selectedOption];";

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
        .arg(CODE)
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
    let screen = Command::new(peers::python())
        .arg(format!("{here}/tests/cli/approve_driver.py"))
        .args(["[v]iew full args", "x"])
        .args(["type one of a, e, s, d or v", "v"])
        .args(["Full arguments:", "a"])
        .args(["[1-2] answer [d]ecline", "2"])
        .args(["answer by local via http", "^D"])
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_codemode"))
        .args(["approve", "--url"])
        .arg(format!("http://{addr}/approvals/ui"))
        .output()
        .expect("run the pty driver");
    let eval = eval.wait_with_output().unwrap();
    let shown = text(&screen.stdout);
    assert_eq!(screen.status.code(), Some(0), "{shown}");
    assert!(eval.status.success(), "{}", text(&eval.stderr));
    let outcome: Value = serde_json::from_slice(&eval.stdout).expect("the eval's outcome");
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
