//! Configs as MCP clients write them, fed to `codemode run --json --config` with a real upstream
//! (mcp-server-time from PyPI): Claude Desktop, Claude Code (`.mcp.json`), VS Code
//! (`.vscode/mcp.json`, JSONC) and Cursor shapes; their errors; `CODEMODE_CONFIG`; and what
//! stderr carries (no colour off a terminal or with `NO_COLOR`, the cold-cache line on one).

use std::path::{Path, PathBuf};
use std::process::Output;

use codemode_test_support::peers;
use serde_json::{Value, json};

use super::{codemode, temp_dir, text};

const CALL_TIME: &str =
    "return (await codemode.time__get_current_time({ timezone: 'UTC' })).timezone;";

/// The time server's program and its arguments as JSON strings.
fn time_server() -> (String, String) {
    let (program, args) = peers::time_server_cmd();
    let args: Vec<Value> = args.into_iter().map(Value::String).collect();
    (json!(program).to_string(), json!(args).to_string())
}

fn run_json(config: &Path, script: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = codemode();
    cmd.args(["run", "--json", "--config"])
        .arg(config)
        .arg(script);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run codemode")
}

fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path
}

fn outcome(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} / {}", text(&out.stdout), text(&out.stderr)))
}

#[test]
fn each_client_config_shape_runs_end_to_end() {
    peers::ensure_installed();
    let dir = temp_dir("client-shapes");
    let script = write(&dir, "call.js", CALL_TIME);
    let (program, args) = time_server();
    let shapes = [
        // Claude Desktop (claude_desktop_config.json): command, args, env.
        (
            "claude-desktop.json",
            format!(
                r#"{{"mcpServers": {{"time": {{"command": {program}, "args": {args}, "env": {{"LANG": "C"}}}}}}}}"#
            ),
            "",
        ),
        // Claude Code (.mcp.json): `type`, `${VAR:-default}`.
        (
            ".mcp.json",
            format!(
                r#"{{"mcpServers": {{"time": {{"type": "stdio", "command": {program},
                    "args": ["--local-timezone", "${{CM_TEST_UNSET_TZ:-UTC}}"], "env": {{}}}}}}}}"#
            ),
            "",
        ),
        // VS Code (.vscode/mcp.json): `servers`, `inputs`, comments, trailing commas.
        (
            "vscode-mcp.json",
            format!(
                "{{\n  // workspace servers\n  \"inputs\": [],\n  \"servers\": {{\n    \"time\": {{\"type\": \"stdio\", \"command\": {program}, /* the pinned peer */ \"args\": {args},}},\n  }},\n}}\n"
            ),
            "",
        ),
        // Cursor (~/.cursor/mcp.json): `${env:VAR}`; a disabled entry; Cline/Roo keys.
        (
            "cursor-mcp.json",
            format!(
                r#"{{"mcpServers": {{
                    "time": {{"command": {program}, "args": ["--local-timezone", "${{env:CM_TEST_TZ}}"], "autoApprove": ["get_current_time"]}},
                    "old": {{"command": "/nonexistent/server", "disabled": true}}
                }}}}"#
            ),
            "mcpServers.time.autoApprove: warning: `autoApprove` is a setting of the MCP client this entry comes from; codemode ignores it: which calls run without asking is decided by a profile (`evaluation.profiles.<name>.allowlist`, see the README's Profiles)\n",
        ),
    ];
    for (name, config, warnings) in shapes {
        let path = write(&dir, name, &config);
        let out = run_json(&path, &script, &[("CM_TEST_TZ", "UTC")]);
        let got = outcome(&out);
        assert_eq!(
            (out.status.code(), &got["ok"], &got["result"]),
            (Some(0), &json!(true), &json!("UTC")),
            "{name}: {got}\n{}",
            text(&out.stderr)
        );
        let want = if warnings.is_empty() {
            String::new()
        } else {
            format!("{}: {warnings}", path.display())
        };
        assert_eq!(text(&out.stderr), want, "{name}");
    }
}

/// `codemode run --config` with each broken shape: exit 2, every error with its place, and a
/// secret in the environment never printed.
#[test]
fn client_config_errors_name_their_place_and_never_a_value() {
    let dir = temp_dir("client-errors");
    let script = write(&dir, "x.js", "1");
    let cases: [(&str, &str, &str); 4] = [
        (
            "sse.json",
            r#"{"mcpServers": {"legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"}}}"#,
            "mcpServers.legacy.type: `sse` (the old HTTP+SSE transport) is not supported: codemode's MCP client (rmcp) has no client for it; use the server's streamable HTTP endpoint instead (`\"type\": \"http\"` with its URL, often ending in `/mcp`)\n",
        ),
        (
            "env.json",
            r#"{"mcpServers": {"api": {"type": "http", "url": "${CM_TEST_BASE:-http://127.0.0.1:9}/mcp",
                "headers": {"Authorization": "Bearer ${CM_TEST_SECRET}", "X-Other": "${CM_TEST_MISSING}"}}}}"#,
            "mcpServers.api.headers.X-Other: the environment variable `CM_TEST_MISSING` is not set (referenced as `${CM_TEST_MISSING}`); set it, or give a default: `${CM_TEST_MISSING:-value}`\n",
        ),
        (
            "url.json",
            r#"{"mcpServers": {"api": {"url": "ftp://user:${CM_TEST_SECRET}@host/mcp"}}}"#,
            "mcpServers.api.url: `ftp://user:${CM_TEST_SECRET}@host/mcp` is not an http:// or https:// URL\n",
        ),
        (
            "jsonc.json",
            "{\n  // a comment\n  \"mcpServers\": {\n    /* block\n       comment */ \"a\": {\"command\": \"x\",},\n    \"b\": {\"command\": }\n  },\n}\n",
            "(root): invalid JSON at line 6, column 22: expected value\n",
        ),
    ];
    for (name, config, want) in cases {
        let path = write(&dir, name, config);
        let out = run_json(&path, &script, &[("CM_TEST_SECRET", "hunter2")]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", text(&out.stderr));
        assert_eq!(
            text(&out.stderr),
            format!("{}: {want}", path.display()),
            "{name}"
        );
        assert!(!text(&out.stderr).contains("hunter2"));
        assert_eq!(text(&out.stdout), "");
    }
}

#[test]
fn codemode_config_names_the_config_when_no_flag_does() {
    peers::ensure_installed();
    let dir = temp_dir("codemode-config");
    let script = write(&dir, "call.js", CALL_TIME);
    let (program, args) = time_server();
    let config = write(
        &dir,
        "config.json",
        &format!(
            r#"{{"mcpServers": {{"time": {{"command": {program}, "args": {args}}}}},
                "evaluation": {{"profiles": {{"ro": {{"denylist": ["time__*"]}}}}}}}}"#
        ),
    );
    let out = codemode()
        .args(["run", "--json"])
        .arg(&script)
        .env("CODEMODE_CONFIG", &config)
        .output()
        .unwrap();
    assert_eq!(outcome(&out)["result"], "UTC", "{}", text(&out.stderr));
    // --profile works with it too; --config wins over it.
    let out = codemode()
        .args(["run", "--json", "--profile", "ro"])
        .arg(&script)
        .env("CODEMODE_CONFIG", &config)
        .output()
        .unwrap();
    assert_eq!(
        outcome(&out)["tool_calls"][0]["status"],
        "denied",
        "{}",
        text(&out.stderr)
    );
    let missing = dir.join("missing.json");
    let out = codemode()
        .args(["run", "--json", "--config"])
        .arg(&missing)
        .arg(&script)
        .env("CODEMODE_CONFIG", &config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with(&format!("{}: cannot read the file", missing.display())),
        "{}",
        text(&out.stderr)
    );
    let out = codemode()
        .args(["run", "--profile", "ro"])
        .arg(&script)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "codemode: --profile needs a config: give --config FILE or set CODEMODE_CONFIG\n"
    );
}

/// A config whose one server fails to start: `codemode run` logs a warning line about it.
fn failing_server_config(dir: &Path) -> PathBuf {
    write(
        dir,
        "failing.json",
        r#"{"mcpServers": {"broken": {"command": "sh", "args": ["-c", "echo 'no key' >&2; exit 1"]}}}"#,
    )
}

#[test]
fn log_lines_carry_no_colour_off_a_terminal_or_with_no_color() {
    let dir = temp_dir("no-colour");
    let config = failing_server_config(&dir);
    let script = write(&dir, "x.js", "1");
    // Not a terminal: plain text.
    let out = codemode()
        .args(["run", "--config"])
        .arg(&config)
        .arg(&script)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("WARN") && stderr.contains("upstream MCP server is down"),
        "{stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    // A terminal: coloured, unless NO_COLOR says otherwise.
    let on_terminal = |no_color: Option<&str>| {
        let mut cmd = std::process::Command::new(super::python());
        cmd.arg(format!(
            "{}/tests/cli/pty_driver.py",
            env!("CARGO_MANIFEST_DIR")
        ))
        .arg("-")
        .arg(env!("CARGO_BIN_EXE_codemode"))
        .args(["run", "--config"])
        .arg(&config)
        .arg(&script)
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR");
        if let Some(v) = no_color {
            cmd.env("NO_COLOR", v);
        }
        text(&cmd.output().unwrap().stdout)
    };
    let coloured = on_terminal(None);
    assert!(
        coloured.contains("upstream MCP server is down") && coloured.contains('\u{1b}'),
        "{coloured:?}"
    );
    let plain = on_terminal(Some("1"));
    assert!(
        plain.contains("upstream MCP server is down") && !plain.contains('\u{1b}'),
        "{plain:?}"
    );
}

#[test]
fn a_cold_cache_shows_one_progress_line_on_a_terminal_only() {
    let dir = temp_dir("cold-cache");
    let script = write(&dir, "x.js", "6 * 7");
    let fresh = |name: &str| {
        let cache = dir.join(name);
        std::fs::create_dir_all(&cache).unwrap();
        cache
    };
    // Not a terminal: nothing but the result.
    let cache = fresh("cache-pipe");
    let out = codemode()
        .arg("run")
        .arg(&script)
        .env("CODEMODE_CACHE_DIR", &cache)
        .output()
        .unwrap();
    assert_eq!(
        (text(&out.stdout), text(&out.stderr)),
        ("42\n".into(), String::new())
    );
    // A terminal: the line, then erased; a second (warm) run has none.
    let cache = fresh("cache-tty");
    let on_terminal = || {
        let out = std::process::Command::new(super::python())
            .arg(format!(
                "{}/tests/cli/pty_driver.py",
                env!("CARGO_MANIFEST_DIR")
            ))
            .arg("-")
            .arg(env!("CARGO_BIN_EXE_codemode"))
            .arg("run")
            .arg(&script)
            .env("CODEMODE_CACHE_DIR", &cache)
            .output()
            .unwrap();
        text(&out.stdout)
    };
    assert_eq!(
        on_terminal(),
        format!(
            "codemode: compiling the sandbox (first run only, cached in {})…\r\u{1b}[2K42\r\n",
            cache.display()
        )
    );
    assert_eq!(on_terminal(), "42\r\n");
}
