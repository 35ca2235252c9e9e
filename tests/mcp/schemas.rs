//! Tool schemas and the output policy through the MCP server (clients/schemas.py, Python SDK):
//! an invalid argument never reaches server-filesystem (its tapped requests and the missing
//! file prove it) and no human is asked about it; masks, removals and an outputSchema warning;
//! the audit's `redacted_paths` and `output_sha256`.

use serde_json::{Value, json};

use crate::harness::{Mode, Setup, Transport, base_config, eval_summary, stdio_server};
use crate::peers;

fn schemas(mode: Mode) {
    let name = format!("schemas_{mode:?}").to_lowercase();
    let setup = Setup::new(&name, Transport::Stdio, |scratch| {
        let mut config = base_config(scratch);
        config["mcpServers"]["fs"] = stdio_server(peers::tapped(
            peers::filesystem_server_cmd(&scratch.path("files")),
            &scratch.path("fs.requests"),
            &scratch.path("fs.pid"),
        ));
        config["mcpServers"]["drift"] = stdio_server(peers::drifting_server_cmd());
        config["evaluation"]["profiles"]["gate"] = json!({"asklist": ["fs__*"]});
        config["outputs"] = json!([{"tools": ["drift__*"], "mask": ["/keys/*/token"], "redact": ["/password", "/ssn"]}]);
        config
    });
    let obs = setup.python("schemas.py", mode, &[]);

    let invalid = eval_summary(&obs["invalid"]);
    let error = &invalid["result"];
    assert_eq!(error["name"], "ToolError", "{invalid}");
    assert_eq!(
        error["data"],
        json!({"errors": [{"path": "/content", "message": "expected string, got number (42)"}],
               "unknown": [], "missing": []})
    );
    let message = error["message"].as_str().unwrap();
    assert_eq!(
        message,
        "invalid_arguments: `fs__write_file` was not called: /content: expected string, got number \
         (42) (its types: get_tools({names: [\"fs__write_file\"]}))"
    );
    assert_eq!(
        invalid["calls"],
        json!([["fs__write_file", "error", message]])
    );
    // No human was asked, nothing was written, the server never saw the call.
    assert_eq!(obs["asked_after_invalid"], 0);
    assert_eq!(obs["written_after_invalid"], false);
    // The valid call is asked about, approved, and reaches the server.
    assert_eq!(obs["asked_after_valid"], 1);
    assert_eq!(obs["file"], "ok");
    assert_eq!(
        eval_summary(&obs["valid"])["calls"],
        json!([["fs__write_file", "ok", null]])
    );
    let sent = std::fs::read_to_string(setup.scratch.path("fs.requests")).unwrap();
    assert_eq!(sent.matches("write_file").count(), 1, "{sent}");

    let outputs = &obs["outputs"]["structured"];
    assert_eq!(
        outputs["result"],
        json!({"account": {"user": "ann", "keys": [{"id": 1, "token": "***abcd"}, {"id": 2, "token": "***"}]},
               "weather": {"temperature": "warm"}})
    );
    let warnings: Vec<&str> = outputs["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["message"].as_str().unwrap())
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("the result of `drift__weather` does not match its outputSchema: "),
        "{warnings:?}"
    );
    assert!(warnings[0].contains("/temperature: expected number, got string"));
    assert!(!warnings[0].contains("warm"), "{}", warnings[0]);

    let records = setup.audit_once(&[("eval", 3)]);
    let tool_calls: Vec<&Value> = records
        .iter()
        .filter(|r| r["event"] == "tool_call")
        .collect();
    let by_tool = |tool: &str| -> Vec<&Value> {
        tool_calls
            .iter()
            .copied()
            .filter(|r| r["tool"] == tool)
            .collect()
    };
    let writes = by_tool("fs__write_file");
    assert_eq!(
        writes
            .iter()
            .map(|r| json!([r["decision"], r["status"], r["reason"]]))
            .collect::<Vec<_>>(),
        vec![
            json!([
                "invalid",
                "error",
                "invalid_arguments: /content: expected string, got number"
            ]),
            json!(["approved", "ok", null]),
        ]
    );
    let account = by_tool("drift__account");
    assert_eq!(
        account[0]["redacted_paths"],
        json!(["/keys/0/token", "/keys/1/token", "/password", "/ssn"])
    );
    let returned = json!({"user": "ann", "password": "hunter2", "ssn": "078-05-1120",
        "keys": [{"id": 1, "token": "tok_live_0123456789abcd"}, {"id": 2, "token": "short"}]});
    assert_eq!(
        account[0]["output_sha256"],
        json!(codemode_policies::AuditRecord::args_sha256(&returned))
    );
}

#[test]
fn schemas_and_outputs_auto() {
    schemas(Mode::Auto);
}

#[test]
fn schemas_and_outputs_legacy() {
    schemas(Mode::Legacy);
}
