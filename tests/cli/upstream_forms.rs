//! `codemode run` puts an upstream server's own form (server-everything's
//! `trigger-elicitation-request`, 13 fields) to the person at the terminal: defaults in
//! brackets, choices numbered, Enter keeps a default, and what the person left out is completed
//! from the defaults before it goes back (SEP-1034). Without a terminal the form is declined,
//! with a line saying so.

use std::path::Path;
use std::process::{Command, Stdio};

use codemode_test_support::{peers, scratch_dir};
use serde_json::json;

use super::{codemode, python, text};

/// Returns the raw elicitation result the upstream echoes in its last text block, as JSON text.
const SCRIPT: &str = r#"const r = await codemode["everything__trigger-elicitation-request"]({});
const raw = (Array.isArray(r) ? r : [r]).find(b => typeof b === "string" && b.includes("Raw result: "));
return JSON.stringify(JSON.parse(raw.slice(raw.indexOf("Raw result: ") + 12)));"#;

fn config(dir: &Path) -> std::path::PathBuf {
    peers::ensure_installed();
    let (program, args) = peers::everything_server_cmd();
    let config = json!({"mcpServers": {"everything": {"command": program, "args": args}}});
    let path = dir.join("config.json");
    std::fs::write(&path, config.to_string()).expect("write the config");
    std::fs::write(dir.join("form.js"), SCRIPT).expect("write the script");
    path
}

/// The raw elicitation result the upstream echoes, parsed from the script's result.
fn raw_result(screen: &str) -> serde_json::Value {
    let last = screen.trim_end().lines().last().unwrap_or_default();
    let echoed: String = serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {screen}"));
    serde_json::from_str(&echoed).unwrap_or_else(|e| panic!("{e}: {echoed}"))
}

#[test]
fn an_upstream_form_is_asked_on_the_terminal_and_completed_from_its_defaults() {
    let dir = scratch_dir("cli", "upstream-form");
    let config = config(&dir);
    // Only the required name and the integer are typed; Enter everywhere else.
    let out = Command::new(python())
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/cli/approve_driver.py"
        ))
        // The fields come in the order of their names.
        .args(["String with date format — Your date of birth: ", ""])
        .args(["(y/n): ", ""])
        .args(["String with email format", ""])
        .args(["[It was a dark and stormy night.]: ", ""])
        .args(["String with uri format", ""])
        .args(["[42]: ", "7"])
        .args(["[1) Cats]: ", ""])
        .args(["String — Your full, legal name (required): ", ""])
        .args(["this field is required > ", "Ada"])
        .args(["[3.14]: ", ""])
        .args(["[1) Tuna]: ", ""])
        .args(["[1) Superman]: ", "3"])
        .args(["[1) Guitar]: ", ""])
        .args(["[1) Monica]: ", ""])
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_codemode"))
        .args(["run", "--config"])
        .arg(&config)
        .arg(dir.join("form.js"))
        .output()
        .expect("python3 runs the pty driver");
    let screen = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{screen}");
    assert!(
        screen.contains(
            "[upstream server `everything` asks]\r\n    Please provide inputs for the following fields:"
        ),
        "{screen}"
    );
    assert!(
        screen.contains("      1) Superman\r\n      2) Green Lantern\r\n      3) Wonder Woman\r\n    a number [1) Superman]: "),
        "{screen}"
    );
    assert_eq!(
        raw_result(&screen),
        json!({"action": "accept", "content": {
            "name": "Ada",
            "firstLine": "It was a dark and stormy night.",
            "integer": 7,
            "number": 314.0 / 100.0, // the form's default, 3.14
            "untitledSingleSelectEnum": "Monica",
            "untitledMultipleSelectEnum": ["Guitar"],
            "titledSingleSelectEnum": "hero-3",
            "titledMultipleSelectEnum": ["fish-1"],
            "legacyTitledEnum": "pet-1",
        }}),
        "{screen}"
    );
}

#[test]
fn without_a_terminal_an_upstream_form_is_declined_with_a_line_saying_so() {
    let dir = scratch_dir("cli", "upstream-form-no-tty");
    let config = config(&dir);
    let out = codemode()
        .args(["run", "--config"])
        .arg(&config)
        .arg(dir.join("form.js"))
        .stdin(Stdio::null())
        .output()
        .expect("run codemode");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(raw_result(&text(&out.stdout)), json!({"action": "decline"}));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("declined an elicitation from upstream `everything`: the script whose call it came during has nobody to ask (no terminal, or a client without elicitation)"),
        "{stderr}"
    );
}
