//! `codemode run --json --config` with real upstreams: arguments checked against the tool's
//! inputSchema before the call (a real server-filesystem, tapped, never sees the call), the
//! check before the profile's ask, the output policy's masks and removals, the audit's
//! `redacted_paths`/`output_sha256`, and an outputSchema mismatch warning (a real Python SDK
//! server).

use serde_json::{Value, json};

use codemode_test_support::peers;

use super::{run_with_stdin, temp_dir, text};

fn server((command, args): (std::path::PathBuf, Vec<String>)) -> Value {
    json!({ "command": command, "args": args })
}

#[test]
fn invalid_arguments_never_leave_the_host_and_outputs_are_masked() {
    peers::ensure_installed();
    let dir = temp_dir("schemas");
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let requests = dir.join("fs.requests");
    let config = json!({
        "mcpServers": {
            "fs": server(peers::tapped(
                peers::filesystem_server_cmd(&files),
                &requests,
                &dir.join("fs.pid"),
            )),
            "everything": server(peers::everything_server_cmd()),
            "drift": server(peers::drifting_server_cmd()),
        },
        "evaluation": {"profiles": {"ask": {"asklist": ["fs__*"], "elicitationFallback": "deny"}}},
        "outputs": [
            {"tools": ["drift__account"], "mask": ["/password", "/keys/*/token"], "redact": ["/ssn"]},
            {"tools": ["everything__echo"], "mask": [""]}
        ],
        "audit": {"dir": dir.join("audit")}
    });
    let config_path = dir.join("config.json");
    std::fs::write(&config_path, config.to_string()).unwrap();
    let target = files.join("out.txt");
    let code = format!(
        r#"const bad = await codemode.fs__write_file({{ path: {path}, content: 42 }})
  .then(() => "written", (e) => ({{ name: e.name, message: e.message, data: e.data }}));
const asked = await codemode.fs__write_file({{ path: {path}, content: "ok" }})
  .then(() => "written", (e) => ({{ name: e.name, reason: e.reason }}));
const account = await codemode.drift__account({{}});
const weather = await codemode.drift__weather({{}});
const echo = await codemode.everything__echo({{ message: "a long secret message" }});
return {{ bad, asked, account, weather, echo }};"#,
        path = json!(target.display().to_string())
    );
    let out = run_with_stdin(
        &[
            "run",
            "--json",
            "--config",
            config_path.to_str().unwrap(),
            "--profile",
            "ask",
            "-",
        ],
        &code,
    );
    let outcome: Value = serde_json::from_str(text(&out.stdout).trim())
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&out.stdout), text(&out.stderr)));
    assert_eq!(outcome["ok"], true, "{outcome}");
    let result = &outcome["result"];

    // The invalid call: a ToolError naming the path, expected and given, and where the types are.
    let bad = &result["bad"];
    assert_eq!(bad["name"], "ToolError");
    assert_eq!(
        bad["data"],
        json!({"errors": [{"path": "/content", "message": "expected string, got number (42)"}],
               "unknown": [], "missing": []})
    );
    let message = bad["message"].as_str().unwrap();
    assert_eq!(
        message,
        "invalid_arguments: `fs__write_file` was not called: /content: expected string, got number \
         (42) (its types: get_tools({names: [\"fs__write_file\"]}))"
    );
    // It never reached the upstream: no file, and the server was never sent a write_file.
    assert!(!target.exists());
    let sent = std::fs::read_to_string(&requests).unwrap();
    assert!(sent.contains("\"tools/list\""), "{sent}");
    assert!(!sent.contains("write_file"), "{sent}");
    // The valid call was then put to the profile's ask (nobody to ask: denied).
    assert_eq!(
        result["asked"],
        json!({"name": "ToolCallDeniedError", "reason": "elicitation_unsupported"})
    );

    // Masks and removals.
    assert_eq!(
        result["account"],
        json!({"user": "ann", "password": "***",
               "keys": [{"id": 1, "token": "***abcd"}, {"id": 2, "token": "***"}]})
    );
    assert_eq!(result["echo"], json!("***sage"));
    // The drifted result resolves, with a warning naming the tool and the paths.
    assert_eq!(result["weather"], json!({"temperature": "warm"}));
    let warnings = outcome["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let warning = warnings[0]["message"].as_str().unwrap();
    assert!(
        warning.starts_with("the result of `drift__weather` does not match its outputSchema: "),
        "{warning}"
    );
    assert!(
        warning.contains("/temperature: expected number, got string"),
        "{warning}"
    );
    // Worded without the value: a warning must not show what an outputs mask hides.
    assert!(!warning.contains("warm"), "{warning}");
    assert!(
        warning.contains("(root): \"unit\" is a required property"),
        "{warning}"
    );

    // The ledger.
    let calls: Vec<(&str, &str)> = outcome["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["tool"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("fs__write_file", "error"),
            ("fs__write_file", "denied"),
            ("drift__account", "ok"),
            ("drift__weather", "ok"),
            ("everything__echo", "ok"),
        ]
    );
    assert_eq!(outcome["tool_calls"][0]["reason"], json!(message));

    // The audit log.
    let audit_dir = dir.join("audit");
    let mut records = Vec::new();
    for entry in std::fs::read_dir(&audit_dir).unwrap() {
        let body = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        records.extend(
            body.lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap()),
        );
    }
    let call = |id: u64| {
        records
            .iter()
            .find(|r| r["event"] == "tool_call" && r["call_id"] == id)
            .unwrap_or_else(|| panic!("no record of call {id}: {records:?}"))
    };
    let invalid = call(1);
    assert_eq!(
        (
            &invalid["decision"],
            &invalid["status"],
            &invalid["disposition"]
        ),
        (&json!("invalid"), &json!("error"), &json!("ask"))
    );
    // Without `includeArgs`, the given value is not in the log.
    assert_eq!(
        invalid["reason"],
        json!("invalid_arguments: /content: expected string, got number")
    );
    assert_eq!(invalid["output_sha256"], Value::Null);
    let account = call(3);
    assert_eq!(
        account["redacted_paths"],
        json!(["/keys/0/token", "/keys/1/token", "/password", "/ssn"])
    );
    let returned = json!({"user": "ann", "password": "hunter2", "ssn": "078-05-1120",
        "keys": [{"id": 1, "token": "tok_live_0123456789abcd"}, {"id": 2, "token": "short"}]});
    assert_eq!(
        account["output_sha256"],
        json!(codemode_policies::AuditRecord::args_sha256(&returned))
    );
    assert_eq!(call(4)["redacted_paths"], json!([]));
    assert_eq!(call(5)["redacted_paths"], json!([""]));
    let _ = std::fs::remove_dir_all(&dir);
}
