//! Command tools through the MCP server with the Python SDK (clients/commands.py): discovery,
//! hostile arguments, exit data, a profile's denial, and hot reload adding a command.

use serde_json::{Value, json};

use crate::harness::{Mode, Scratch, Setup, Transport, assert_json, audit_calls, sorted};

fn config(scratch: &Scratch) -> Value {
    json!({
        "commands": {
            "argv": {"command": "printf", "args": ["%s\n", "{a}", "{b?}"], "output": "lines",
                "description": "Echo each argument on its own line",
                "inputSchema": {"type": "object", "required": ["a"], "additionalProperties": false,
                    "properties": {"a": {"type": "string", "description": "the first"},
                                   "b": {"type": "string"}}}},
            "fail": {"command": "sh", "args": ["-c", "echo 'fatal: bad revision' >&2; exit 2"]}
        },
        "evaluation": {"profiles": {"p": {"denylist": ["fail"]}}},
        "audit": {"dir": scratch.path("audit")}
    })
}

#[test]
fn command_tools_through_the_mcp_server() {
    let setup = Setup::new("commands_stdio", Transport::Stdio, config);
    let mut v2 = config(&setup.scratch);
    v2["commands"]["added"] = json!({"command": "printf", "args": ["%s", "{word}"],
        "description": "A command added by reload",
        "inputSchema": {"type": "object", "required": ["word"],
            "properties": {"word": {"type": "string"}}}});
    let v2 = setup.config_version("v2.json", &v2);
    let obs = setup.python("commands.py", Mode::Auto, &[("CODEMODE_CONFIG_V2", &v2)]);
    let files = setup.scratch.path("files");
    let declaration = obs["declaration"].as_str().unwrap_or_default();
    assert!(
        declaration.contains("Echo each argument on its own line")
            && declaration.contains("argv(")
            && declaration.contains("the first"),
        "{declaration}"
    );
    let mut rest = obs.clone();
    rest.as_object_mut().unwrap().remove("declaration");
    assert_json(
        "command tools",
        &rest,
        &json!({
            "search": ["argv"],
            "eval": {
                "hostile": [format!("$(touch {}/X)", files.display()), "a; b", "'c' \"d\" | e"],
                "option": {"name": "ToolError", "data": null, "message":
                    "invalid arguments for `argv`: the argument `a` starts with `-`, so `printf` would \
                     read it as an option; refused (the tool's inputSchema can allow it with \"x-allowOption\": true)"},
                "fail": {"name": "ToolError", "message": "`fail` exited with code 2: fatal: bad revision",
                    "data": {"exitCode": 2, "stderr": "fatal: bad revision\n"}},
            },
            "denied": ["ToolCallDeniedError", "fail"],
            "files": ["hello.txt"],
            "added": "reloaded",
        }),
    );
    assert_json(
        "command tools: audit tool_call records",
        &json!(audit_calls(&setup.audit_once(&[("eval", 3)]))),
        &sorted(json!([
            ["added", null, "allowed", "ok", null],
            ["argv", null, "allowed", "ok", null],
            ["argv", null, "allowed", "error", null],
            ["fail", null, "allowed", "error", null],
            ["fail", "p", "denied", "denied", "denied"],
        ])),
    );
}
