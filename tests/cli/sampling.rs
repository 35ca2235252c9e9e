//! `codemode run` has no model: it does not declare `sampling` to upstreams, and an upstream
//! that asks anyway is refused, saying why (tests/mcp/clients/chatty_server.py asks without
//! looking at the capability).

use std::process::Command;

use codemode_test_support::{peers, scratch_dir};
use serde_json::{Value, json};

use super::text;

const SCRIPT: &str = r#"const declared = await codemode.chatty__declared({});
let sampled;
try { sampled = await codemode.chatty__sample({ text: "ping" }); } catch (e) { sampled = e.message; }
return { declared, sampled };"#;

#[test]
fn codemode_run_neither_declares_nor_forwards_sampling() {
    let dir = scratch_dir("cli", "sampling");
    peers::ensure_installed();
    let chatty = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/mcp/clients/chatty_server.py"
    );
    let config = json!({
        "mcpServers": {
            "chatty": {"command": peers::python(), "args": [chatty], "env": {"CHATTY_DIR": dir}},
        },
        "audit": {"dir": dir.join("audit")},
    });
    let path = dir.join("config.json");
    std::fs::write(&path, config.to_string()).expect("write the config");
    std::fs::write(dir.join("sample.js"), SCRIPT).expect("write the script");
    let out = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["run", "--json", "--config"])
        .arg(&path)
        .arg(dir.join("sample.js"))
        .output()
        .expect("codemode runs");
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    let outcome: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(
        outcome["result"],
        json!({
            "declared": {"result": false},
            "sampled": "upstream server `chatty` refused `sample`: codemode refused this sampling request: this script has no client whose model could answer (one of `codemode run`, or resumed from the durable store, has none)",
        }),
        "{stdout}"
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("refused a sampling request from upstream `chatty`: this script has no client whose model could answer"),
        "{stderr}"
    );
}
