//! The `codemode` binary as a user runs it: exit codes, output formats, `check`, `config check`,
//! and the terminal approval prompt (in a real pseudo-terminal).

mod agent_eval;
mod approve;
mod approve_rights;
mod classes;
mod clients;
mod codeforms;
mod commands;
mod examples;
mod oauth;
mod packaging;
mod sampling;
mod schemas;
mod upstream_forms;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn codemode() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_codemode"));
    // The compiled guest is cached per user; tests share the default cache.
    cmd.env_remove("RUST_LOG").env_remove("CODEMODE_CONFIG");
    cmd
}

fn run_with_stdin(args: &[&str], stdin: &str) -> Output {
    let mut child = codemode()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn codemode");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().expect("wait")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("codemode-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn run_prints_the_result_and_logs() {
    let out = run_with_stdin(
        &["run", "-"],
        "console.log('hi', {a: 1}); console.warn('careful'); 40 + 2",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "42\n");
    assert_eq!(text(&out.stderr), "[log] hi {\"a\":1}\n[warn] careful\n");
}

#[test]
fn run_reports_errors_with_file_line_column() {
    let dir = temp_dir("errors");
    let file = dir.join("bad.js");
    let cases: &[(&str, &str)] = &[
        (
            "let x = 1;\nthrow new TypeError('nope');\n",
            ":2:11: exception: TypeError: nope\n",
        ),
        (
            "let x = 1;\nlet y = ;\n",
            ":2:9: syntax: SyntaxError: unexpected token in expression: ';'\n",
        ),
        // A failed tool call is reported at the call (the tool's name).
        (
            "await codemode.nothing()",
            ":1:16: exception: UnknownToolError: unknown tool `nothing` (no tools are available)\n",
        ),
    ];
    for (code, want) in cases {
        std::fs::write(&file, code).unwrap();
        let out = codemode().args(["run"]).arg(&file).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{code}");
        assert_eq!(
            text(&out.stderr),
            format!("{}{want}", file.display()),
            "{code}"
        );
        assert_eq!(text(&out.stdout), "");
    }
}

#[test]
fn run_json_prints_the_outcome_and_limits_apply() {
    let out = run_with_stdin(
        &["run", "--json", "--fuel", "100000", "-"],
        "while (true) {}",
    );
    assert_eq!(out.status.code(), Some(1));
    let outcome: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(outcome["ok"], false);
    assert_eq!(outcome["error"]["kind"], "out_of_fuel");
    assert_eq!(outcome["stats"]["fuel_used"], 100000);

    let out = run_with_stdin(
        &["run", "--json", "--timeout", "200ms", "--fuel", "0", "-"],
        "while (true) {}",
    );
    let outcome: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(outcome["error"]["kind"], "timeout", "{outcome}");

    let out = run_with_stdin(
        &["run", "--json", "--max-output", "1KiB", "-"],
        "'x'.repeat(5000)",
    );
    let outcome: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(outcome["error"]["kind"], "output_limit", "{outcome}");

    let out = run_with_stdin(
        &["run", "--json", "--memory", "8MiB", "-"],
        "const a = []; while (true) a.push('y'.repeat(1e5) + a.length)",
    );
    let outcome: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(outcome["error"]["kind"], "memory_limit", "{outcome}");
}

/// docs/SERVER.md (`codemode run`): `--timeout 0` means no timeout. A bare `0` is the one number that needs no unit.
#[test]
fn run_timeout_zero_means_none() {
    let out = run_with_stdin(&["run", "--timeout", "0", "-"], "40 + 2");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "42\n");
    assert_eq!(text(&out.stderr), "");

    let out = codemode()
        .args(["run", "--timeout", "30", "x.js"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr)
            .contains("`30` has no unit; write e.g. `30s` or `30ms` (only `0` may omit the unit)"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn usage_errors_exit_2() {
    let cases: &[&[&str]] = &[
        &["run", "--memory", "12XB", "x.js"],
        &["run", "--timeout", "soon", "x.js"],
        &["run", "/definitely/not/here.js"],
        &["run", "--profile", "p", "x.js"],
        &["nonsense"],
        // A misspelt section or workload would otherwise measure nothing and look like a result.
        &["bench", "--only", "comput", "--no-process"],
        &["bench", "--workload", "loops", "--only", "compute"],
    ];
    for args in cases {
        let out = codemode().args(*args).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(!out.stderr.is_empty(), "{args:?}");
        if args[0] == "bench" {
            // The error lists what is accepted.
            assert!(
                text(&out.stderr).contains("compute") || text(&out.stderr).contains("richards"),
                "{args:?}: {}",
                text(&out.stderr)
            );
        }
    }
    let out = codemode().args(["run", "--help"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    for default in ["64MiB", "30s", "1MiB", "20000000000", "1000"] {
        assert!(
            text(&out.stdout).contains(default),
            "--help should state the default {default}"
        );
    }
}

#[test]
fn bench_with_an_unreachable_redis_fails_before_measuring() {
    // Nothing listens on loopback port 1: refused at once, before any other section runs.
    let out = codemode()
        .args(["bench", "--redis", "redis://127.0.0.1:1/0", "--quick"])
        .args(["--only", "suspend", "--no-process"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("codemode bench: --redis: redis://127.0.0.1:1/0: cannot connect: "),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        !stderr.contains("suspend: "),
        "measured before failing: {stderr}"
    );
    assert_eq!(text(&out.stdout), "");
    let out = codemode()
        .args(["bench", "--redis", "http://127.0.0.1:6379"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--redis"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn check_lists_call_sites() {
    let code = "const { a__x: go } = codemode;\nawait go({});\nconst k = 'b';\nawait codemode[k]();\nawait codemode?.['c__y']?.();\n";
    let out = run_with_stdin(&["check", "--json", "-"], code);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let preview: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let calls: Vec<(serde_json::Value, u64, bool)> = preview["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["tool"].clone(),
                c["line"].as_u64().unwrap(),
                c["dynamic"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            (serde_json::json!("a__x"), 2, false),
            (serde_json::Value::Null, 4, true),
            (serde_json::json!("c__y"), 5, false)
        ]
    );
    assert_eq!(preview["parse_error"], serde_json::Value::Null);

    let out = run_with_stdin(&["check", "--json", "-"], "codemode.a(\n");
    assert_eq!(out.status.code(), Some(1));
    let preview: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        preview["parse_error"]["message"],
        "Expected `)` but found `EOF`"
    );
    assert_eq!(preview["parse_error"]["line"], 2);
}

/// `codemode config check FILE`, run to completion.
fn config_check(file: &Path) -> Output {
    codemode()
        .args(["config", "check"])
        .arg(file)
        .output()
        .unwrap()
}

#[test]
fn config_check_names_paths() {
    let dir = temp_dir("config");
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        r#"{"evaluation": {"defaultProfile": "nope", "profiles": {"p": {"asklist": ["ok", "fs__["], "rules": [{"tools": ["x"], "when": {"/a": "("}, "disposition": "ask"}]}}}, "limitz": {}}"#,
    )
    .unwrap();
    let out = config_check(&bad);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    for needle in [
        "limitz",
        "asklist[1]",
        "fs__[",
        "rules[0].when[\"/a\"]",
        "defaultProfile",
    ] {
        assert!(stderr.contains(needle), "missing {needle:?} in:\n{stderr}");
    }
    // A key given twice: JSON parsers would keep only the second `denylist`.
    let twice = dir.join("twice.json");
    std::fs::write(
        &twice,
        r#"{"evaluation": {"profiles": {"p": {"denylist": ["fs__*"], "denylist": ["web__*"]}}}}"#,
    )
    .unwrap();
    let out = config_check(&twice);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr
            .contains("evaluation.profiles.p.denylist: the key `denylist` is given more than once"),
        "{stderr}"
    );
    let out = codemode().args(["config", "default"]).output().unwrap();
    let good = dir.join("good.json");
    std::fs::write(&good, &out.stdout).unwrap();
    let out = config_check(&good);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("ok (1 servers, 2 profiles"));
}

/// `config check` validates the gateway's policy keys, each error with its JSON path.
#[test]
fn config_check_gateway_policy_keys() {
    let dir = temp_dir("config-gateway");
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        r#"{"evaluation": {"evalRequiresPermissions": [""], "profiles": {"p": {
            "defaultDisposition": "maybe", "requirePermissions": "payments",
            "risk": {"pay__*": "severe", "[": "low"}, "defaultRisk": "HIGH",
            "riskPolicies": {"critical": {"allowSessionApproval": "no"}, "extreme": {}},
            "rules": [{"tools": ["x"], "disposition": "ask", "risk": "huge"}]}}}}"#,
    )
    .unwrap();
    let out = config_check(&bad);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    for needle in [
        "evaluation.evalRequiresPermissions[0]: a permission name cannot be empty",
        "evaluation.profiles.p.defaultDisposition: expected \"allow\", \"deny\" or \"ask\", found a string (\"maybe\")",
        "evaluation.profiles.p.requirePermissions: expected an array of strings, found a string (\"payments\")",
        "evaluation.profiles.p.risk[\"pay__*\"]: expected \"low\", \"medium\", \"high\" or \"critical\", found a string (\"severe\")",
        "evaluation.profiles.p.risk[\"[\"]: invalid glob `[`",
        "evaluation.profiles.p.defaultRisk: expected \"low\", \"medium\", \"high\" or \"critical\", found a string (\"HIGH\")",
        "evaluation.profiles.p.riskPolicies.critical.allowSessionApproval: expected a boolean, found a string (\"no\")",
        "evaluation.profiles.p.riskPolicies.extreme: unknown risk level `extreme`",
        "evaluation.profiles.p.rules[0].risk: expected \"low\", \"medium\", \"high\" or \"critical\", found a string (\"huge\")",
    ] {
        assert!(stderr.contains(needle), "missing {needle:?} in:\n{stderr}");
    }
    let good = dir.join("good.json");
    std::fs::write(
        &good,
        r#"{"evaluation": {"evalRequiresPermissions": ["eval"], "profiles": {"p": {
            "defaultDisposition": "ask", "requirePermissions": ["payments"],
            "risk": {"pay__*": "critical"}, "defaultRisk": "low",
            "riskPolicies": {"critical": {"approvalTimeoutSeconds": 300, "allowSessionApproval": false,
                                          "allowEvalApproval": false, "requireReason": true}},
            "rules": [{"tools": ["x"], "disposition": "ask", "risk": "high", "requirePermissions": ["destructive"]}]}}}}"#,
    )
    .unwrap();
    let out = config_check(&good);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

fn python() -> &'static str {
    "python3"
}

fn write_profile_config(dir: &Path) -> PathBuf {
    let config = dir.join("config.json");
    std::fs::write(
        &config,
        r#"{"evaluation": {"profiles": {"p": {"asklist": ["hitl_*"], "approvalTimeoutSeconds": 3},
                                      "strict": {"denylist": ["hitl_*"]}}}}"#,
    )
    .unwrap();
    config
}

/// The terminal prompt's summary elides a long value; `v` shows the arguments in full.
#[test]
fn the_terminal_prompt_offers_the_full_arguments() {
    let dir = temp_dir("tty-full");
    let config = write_profile_config(&dir);
    let script = dir.join("ask.js");
    std::fs::write(
        &script,
        "const r = await codemode.hitl_request({question: 'Pick ' + 'q'.repeat(300) + ' END', options: ['a', 'b']}); return r.selectedOption",
    )
    .unwrap();
    let out = Command::new(python())
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/cli/approve_driver.py"
        ))
        .args(["v) view the full arguments", "v"])
        .args(["Full arguments:", "1"])
        .args(["2) b", "2"])
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_codemode"))
        .args(["run", "--config"])
        .arg(&config)
        .args(["--profile", "p"])
        .arg(&script)
        .output()
        .expect("python3 runs the pty driver");
    let screen = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{screen}");
    let full = format!("\"question\": \"Pick {} END\"", "q".repeat(300));
    assert!(screen.contains(&full), "{screen}");
    assert!(screen.trim_end().ends_with("\"b\""), "{screen}");
}

/// `run --profile` puts asked calls to the person at the terminal; the answer decides.
#[test]
fn terminal_prompt_approves_declines_and_times_out() {
    let dir = temp_dir("tty");
    let config = write_profile_config(&dir);
    let script = dir.join("ask.js");
    // hitl_request itself is asked about by the profile; with no elicitation behind the terminal
    // asker beyond the prompt, its own question is also put on the terminal.
    std::fs::write(
        &script,
        "try { const r = await codemode.hitl_request({question: 'Pick', options: ['a', 'b']}); return r.status } catch (e) { return e.reason }",
    )
    .unwrap();
    let cases = [
        ("1", 0, "\"confirmed\""),
        ("", 0, "\"elicitation_declined\""),
        ("-", 0, "\"elicitation_timeout\""),
    ];
    for (answer, code, result) in cases {
        let out = Command::new(python())
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/cli/pty_driver.py"
            ))
            .arg(answer)
            .arg(env!("CARGO_BIN_EXE_codemode"))
            .args(["run", "--config"])
            .arg(&config)
            .args(["--profile", "p"])
            .arg(&script)
            .output()
            .expect("python3 runs the pty driver");
        let screen = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(code),
            "answer {answer:?}:\n{screen}"
        );
        assert!(
            screen.contains("A script of caller `local` wants to call `hitl_request`"),
            "{screen}"
        );
        assert!(
            screen.contains("line 1: hitl_request"),
            "the preview is shown:\n{screen}"
        );
        assert!(
            screen.trim_end().ends_with(result),
            "answer {answer:?}: want {result}:\n{screen}"
        );
    }
    // Without a terminal, the fallback (deny) applies and nothing is prompted.
    let out = codemode()
        .args(["run", "--config"])
        .arg(&config)
        .args(["--profile", "p"])
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        text(&out.stdout),
        "\"elicitation_unsupported\"\n",
        "{}",
        text(&out.stderr)
    );
    // A denylist never asks.
    let out = codemode()
        .args(["run", "--config"])
        .arg(&config)
        .args(["--profile", "strict"])
        .arg(&script)
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout), "\"denied\"\n", "{}", text(&out.stderr));
}

#[test]
fn top_level_help_says_what_the_program_does() {
    let out = codemode().arg("-h").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stdout).lines().next(),
        Some(
            "Run the JavaScript an AI agent writes in a WebAssembly sandbox, with per-call tool policies"
        )
    );
}

#[test]
fn a_missing_config_is_named_once() {
    let dir = temp_dir("missing-config");
    let script = dir.join("x.js");
    std::fs::write(&script, "1").unwrap();
    let missing = dir.join("nope.json");
    let out = codemode()
        .args(["run", "--config"])
        .arg(&missing)
        .arg(&script)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!(
            "{}: cannot read the file: No such file or directory (os error 2)\n",
            missing.display()
        )
    );
}

#[test]
fn serve_http_names_a_bad_address() {
    let out = codemode()
        .args(["serve", "--http", "localhost:http"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(
            "expected HOST:PORT with a port from 0 to 65535, e.g. localhost:8080 (got `localhost:http`)"
        ),
        "{}",
        text(&out.stderr)
    );
}

/// The one `*.jsonl` file of an audit directory.
fn audit_file(dir: &Path) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

fn audit_config(dir: &Path, extra: &str) -> PathBuf {
    let logs = dir.join("logs");
    let config = dir.join("config.json");
    std::fs::write(
        &config,
        format!(
            r#"{{"audit": {{"dir": {}{extra}}}}}"#,
            serde_json::to_string(logs.to_str().unwrap()).unwrap()
        ),
    )
    .unwrap();
    config
}

/// A log written by `codemode run` verifies; edited by hand, it breaks at the edited line
/// (exit 1). Keyed (`audit.keyEnv`), it verifies only with the key.
#[test]
fn audit_verify_finds_a_hand_edit() {
    let dir = temp_dir("audit-verify");
    let config = audit_config(&dir, "");
    let script = dir.join("s.js");
    std::fs::write(
        &script,
        "await codemode.search_tools({query: 'a'}); await codemode.search_tools({query: 'b'}); 1",
    )
    .unwrap();
    let out = codemode()
        .arg("run")
        .arg("--config")
        .arg(&config)
        .arg(&script)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let logs = dir.join("logs");
    let file = audit_file(&logs);
    let verify = |key_env: Option<&str>| {
        let mut cmd = codemode();
        cmd.args(["audit", "verify"]).arg(&logs);
        if let Some(var) = key_env {
            cmd.args(["--key-env", var]).env(var, "k3y");
        }
        cmd.output().unwrap()
    };
    let out = verify(None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "ok: 3 records");
    let head_prefix = format!("{}: 3 records, head ", file.display());
    assert!(lines[1].starts_with(&head_prefix), "{stdout}");
    assert_eq!(lines[1].len(), head_prefix.len() + 64);
    assert_eq!(lines.len(), 2);

    // Change the second record's decision, as someone covering their tracks would.
    let original = std::fs::read_to_string(&file).unwrap();
    let mut rows: Vec<String> = original.lines().map(str::to_string).collect();
    assert!(rows[1].contains("\"decision\":\"allowed\""), "{}", rows[1]);
    rows[1] = rows[1].replace("\"decision\":\"allowed\"", "\"decision\":\"denied\"");
    std::fs::write(&file, rows.join("\n") + "\n").unwrap();
    let out = verify(None);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), format!("broken: {}:2\n", file.display()));
    assert_eq!(
        text(&out.stderr),
        format!(
            "codemode: {}:2: the record was edited: its hash does not match it\n",
            file.display()
        )
    );

    // An HMAC chain: verifies with its key only; a config naming a missing key is refused.
    let keyed = temp_dir("audit-verify-keyed");
    let config = audit_config(&keyed, r#", "keyEnv": "CODEMODE_TEST_AUDIT_KEY""#);
    let out = codemode()
        .arg("run")
        .arg("--config")
        .arg(&config)
        .arg(&script)
        .env("CODEMODE_TEST_AUDIT_KEY", "k3y")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let logs = keyed.join("logs");
    let out = codemode()
        .args(["audit", "verify", "--key-env", "CODEMODE_TEST_AUDIT_KEY"])
        .arg(&logs)
        .env("CODEMODE_TEST_AUDIT_KEY", "k3y")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("ok: 3 records\n"));
    let out = codemode()
        .args(["audit", "verify"])
        .arg(&logs)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stdout),
        format!("broken: {}:1\n", audit_file(&logs).display())
    );
    let out = codemode()
        .arg("run")
        .arg("--config")
        .arg(&config)
        .arg(&script)
        .env_remove("CODEMODE_TEST_AUDIT_KEY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!(
            "{}: audit.keyEnv: the environment variable `CODEMODE_TEST_AUDIT_KEY` (the audit key) is not set\n",
            config.display()
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&keyed).unwrap();
}

/// `audit query` selects and orders records across files, in each format.
#[test]
fn audit_query_prints_each_format() {
    let dir = temp_dir("audit-query");
    let a = r#"{"ts":"2024-05-01T10:00:01.000Z","event":"tool_call","eval_id":"x-1","call_id":1,"caller":"ci","session_id":null,"profile":"p","tool":"fs__read","args_sha256":"aa","disposition":"allow","decision":"allowed","reason":null,"status":"ok","duration_ms":1.5,"prev_hash":"p1","hash":"h1"}"#;
    let b = r#"{"ts":"2024-05-01T10:00:02.000Z","event":"tool_call","eval_id":"x-1","call_id":2,"caller":"ci","session_id":null,"profile":"p","tool":"fs__write","args_sha256":"bb","disposition":"deny","decision":"denied","reason":"denied","status":"denied","duration_ms":0.5,"prev_hash":"h1","hash":"h2"}"#;
    let c = r#"{"ts":"2024-05-01T10:00:03.000Z","event":"eval","eval_id":"x-1","caller":"ci","session_id":null,"profile":"p","code_sha256":"cc","ok":true,"error_kind":null,"fuel_used":10,"wall_ms":3.0,"tool_calls":2,"prev_hash":"h0","hash":"h3"}"#;
    // The eval record is in an earlier-named file: the output is in time order regardless.
    std::fs::write(dir.join("2024-04-30.jsonl"), format!("{c}\n")).unwrap();
    std::fs::write(dir.join("2024-05-01.jsonl"), format!("{b}\n{a}\n")).unwrap();
    let query = |args: &[&str]| {
        let out = codemode()
            .args(["audit", "query"])
            .arg(&dir)
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    assert_eq!(query(&[]), format!("{a}\n{b}\n{c}\n"));
    assert_eq!(
        query(&["--tool", "fs__*", "--format", "jsonl"]),
        format!("{a}\n{b}\n")
    );
    assert_eq!(query(&["--decision", "denied"]), format!("{b}\n"));
    assert_eq!(
        query(&["--event", "eval", "--caller", "ci", "--eval", "x-1"]),
        format!("{c}\n")
    );
    assert_eq!(
        query(&[
            "--since",
            "2024-05-01T10:00:02Z",
            "--until",
            "2024-05-01T10:00:02.999Z"
        ]),
        format!("{b}\n")
    );
    assert_eq!(query(&["--since", "1h"]), "");
    assert_eq!(query(&["--caller", "someone", "--format", "json"]), "[]\n");
    let json: serde_json::Value =
        serde_json::from_str(&query(&["--event", "eval", "--format", "json"])).unwrap();
    assert_eq!(
        json,
        serde_json::json!([serde_json::from_str::<serde_json::Value>(c).unwrap()])
    );
    assert_eq!(
        query(&["--format", "csv"]),
        "ts,event,eval_id,call_id,caller,session_id,profile,tool,risk,disposition,decision,reason,channel,decided_by,decision_reason,status,duration_ms,args_sha256,args,redacted_paths,output_sha256,stage,classification,caller_permissions,timeout_seconds,question,options,answer,metadata,code_sha256,ok,error_kind,fuel_used,wall_ms,tool_calls,prev_hash,hash\n\
         2024-05-01T10:00:01.000Z,tool_call,x-1,1,ci,,p,fs__read,,allow,allowed,,,,,ok,1.5,aa,,,,,,,,,,,,,,,,,,p1,h1\n\
         2024-05-01T10:00:02.000Z,tool_call,x-1,2,ci,,p,fs__write,,deny,denied,denied,,,,denied,0.5,bb,,,,,,,,,,,,,,,,,,h1,h2\n\
         2024-05-01T10:00:03.000Z,eval,x-1,,ci,,p,,,,,,,,,,,,,,,,,,,,,,,cc,true,,10,3.0,2,h0,h3\n"
    );
    let out = codemode()
        .args(["audit", "query"])
        .arg(&dir)
        .args(["--since", "yesterday", "--tool", "a["])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "codemode: --since: `yesterday` is neither an RFC 3339 time (2024-05-01T12:00:00Z) nor a duration back from now (90m, 1h, 7d)\n\
         codemode: --tool: invalid tool glob `a[`: unclosed character class; missing ']'\n"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two `codemode run` processes writing one directory at once keep one valid chain, with
/// distinct eval ids.
#[test]
fn concurrent_runs_share_one_audit_chain() {
    let dir = temp_dir("audit-concurrent");
    let config = audit_config(&dir, "");
    let script = dir.join("s.js");
    std::fs::write(
        &script,
        "for (let i = 0; i < 20; i++) { await codemode.search_tools({query: 'q' + i}); } 1",
    )
    .unwrap();
    let children: Vec<_> = (0..2)
        .map(|_| {
            codemode()
                .arg("run")
                .arg("--config")
                .arg(&config)
                .arg(&script)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let logs = dir.join("logs");
    let out = codemode()
        .args(["audit", "verify"])
        .arg(&logs)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).starts_with("ok: 42 records\n"),
        "{}",
        text(&out.stdout)
    );
    let out = codemode()
        .args(["audit", "query", "--format", "json"])
        .arg(&logs)
        .output()
        .unwrap();
    let records: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let mut ids: Vec<&str> = records
        .iter()
        .filter(|r| r["event"] == "eval")
        .map(|r| r["eval_id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 2, "{ids:?}");
    for id in &ids {
        let calls = records
            .iter()
            .filter(|r| r["event"] == "tool_call" && r["eval_id"] == *id)
            .count();
        assert_eq!(calls, 20, "{id}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Red team, contained: `codemode run` without `--config` gives the script no tools at all — not
/// even the built-ins — however the name is reached.
#[test]
fn run_without_a_config_exposes_no_tool_not_even_the_built_ins() {
    let code = "const out = [];\n\
        for (const n of ['search_tools', 'get_tools', 'hitl_request', 'then', 'constructor', '__proto__']) {\n\
          try { await Reflect.get(codemode, n)({query: 'x', names: [], question: 'q', options: ['a']}); out.push('called ' + n); }\n\
          catch (e) { out.push(e.name); }\n\
        }\n\
        out";
    let out = run_with_stdin(&["run", "--json", "-"], code);
    let outcome: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(outcome["ok"], true, "{outcome}");
    assert_eq!(
        outcome["result"],
        // `then`, `constructor` and `__proto__` are names JavaScript looks up by itself: never
        // tools, undefined, so no call at all.
        serde_json::json!([
            "UnknownToolError",
            "UnknownToolError",
            "UnknownToolError",
            "TypeError",
            "TypeError",
            "TypeError"
        ]),
        "{outcome}"
    );
    let ledger: Vec<&str> = outcome["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    assert_eq!(ledger, ["error"; 3], "{outcome}");
}

/// `run --json`: a failed call is reported at its call site, an error in a declaration on its own
/// line, and a script that succeeded carries the guest's warnings; `codemode` itself converts to
/// a string without calling anything, and an over-long name is a catchable rejection.
#[test]
fn run_json_points_at_calls_and_warns() {
    let run = |code: &str| -> serde_json::Value {
        let out = run_with_stdin(&["run", "--json", "-"], code);
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)))
    };
    let outcome = run("const a = 1;\n  await codemode.nope({});");
    assert_eq!(
        outcome["error"],
        serde_json::json!({
            "kind": "exception",
            "message": "UnknownToolError: unknown tool `nope` (no tools are available)",
            "line": 2,
            "column": 18,
            "stack": "    at codemode.nope (script.js:2:18)\n"
        }),
        "{outcome}"
    );

    let outcome = run("const o={};\nconst b=2;\nconst c=o.list.length;");
    assert_eq!(
        (&outcome["error"]["line"], &outcome["error"]["column"]),
        (&serde_json::json!(3), &serde_json::json!(16)),
        "{outcome}"
    );

    let outcome = run(
        "codemode.nope({}).catch(() => 0);\nconst name = String(codemode);\n\
         try { await codemode['x'.repeat(2000)](); } catch (e) { console.log(e.name); }\n\
         const stack = await codemode.nope().catch((e) => e.stack);\n\
         let done = [name, stack]",
    );
    assert_eq!(outcome["ok"], true, "{outcome}");
    assert_eq!(outcome["result"], serde_json::Value::Null);
    assert_eq!(outcome["logs"][0]["message"], "UnknownToolError");
    assert_eq!(
        outcome["warnings"],
        serde_json::json!([{
            "message": "the result is null: the script's last statement is not an expression and it has no `return` (end it with the value to return, or `return` it)",
            "line": 5,
            "column": 1
        }]),
        "{outcome}"
    );
    // Two calls to `nope`; `String(codemode)` and the over-long name reached no tool.
    let tools: Vec<&str> = outcome["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["tool"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["nope", "nope"], "{outcome}");

    let outcome = run(
        "const s = String(codemode);\nconst t = await codemode.nope().catch((e) => e.stack);\n[s, t]",
    );
    assert_eq!(
        outcome["result"],
        serde_json::json!([
            "[object codemode]",
            "    at codemode.nope (script.js:2:26)\n"
        ]),
        "{outcome}"
    );
}
