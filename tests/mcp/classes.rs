//! Classification (issue 28 B.6) and `outputs.allow` (B.1) through real upstreams
//! (clients/classes.py): server-filesystem's own annotations make `write_file` destructive,
//! `create_directory` write and `list_allowed_directories` read. An HTTP caller whose token
//! lacks `allow_destructive` is refused the destructive call (reason `permission`, nobody
//! asked, the file never written); the local caller over stdio makes it. The audit records the
//! class and the deciding stage. server-everything's structured weather keeps only the allowed
//! fields (two rules' lists add up), its text echo is withheld with a warning, and the drifting
//! server's unannotated `account` (a write tool) keeps its allowed fields, masked within.

use serde_json::{Value, json};

use crate::harness::{Mode, Setup, Transport, base_config, eval_summary, stdio_server};
use crate::peers;

const TOKEN: &str = "ci-token-without-allow-destructive";

fn setup(name: &str, transport: Transport) -> Setup {
    Setup::new(name, transport, |scratch| {
        std::fs::create_dir_all(scratch.path("files")).expect("create the files dir");
        let mut config = base_config(scratch);
        config["mcpServers"]["fs"] =
            stdio_server(peers::filesystem_server_cmd(&scratch.path("files")));
        config["outputs"] = json!([
            {"tools": ["everything__get-structured-content"], "allow": ["/temperature"]},
            {"tools": ["everything__*"], "allow": ["/humidity"]},
            {"tools": ["drift__account"], "allow": ["/user", "/keys/*/id"], "mask": ["/user"]},
        ]);
        config["mcpServers"]["drift"] = stdio_server(peers::drifting_server_cmd());
        if matches!(transport, Transport::Http) {
            config["server"] = json!({"auth": {"tokens": [{"name": "ci",
                "sha256": codemode_policies::AuditRecord::sha256_hex(TOKEN.as_bytes()), "permissions": ["deploy"]}]}});
        }
        config
    })
}

fn observe(setup: &Setup, token: Option<&str>) -> Value {
    let files = setup.scratch.path("files");
    let mut env = vec![("CODEMODE_FILES", files.as_path())];
    if let Some(token) = token {
        env.push(("CODEMODE_TOKEN", std::path::Path::new(token)));
    }
    setup.python("classes.py", Mode::Auto, &env)
}

/// The evals classes.py runs.
const EVALS: usize = 2;

/// `[tool, decision, status, reason, classification, stage]` of each `fs__` record.
fn fs_records(setup: &Setup) -> Vec<Value> {
    setup
        .audit_once(&[("eval", EVALS)])
        .iter()
        .filter(|r| {
            r["event"] == "tool_call" && r["tool"].as_str().is_some_and(|t| t.starts_with("fs__"))
        })
        .map(|r| {
            json!([
                r["tool"],
                r["decision"],
                r["status"],
                r["reason"],
                r["classification"],
                r["stage"]
            ])
        })
        .collect()
}

/// The audit's `fs__` rows: `write_file`'s as given, then the write and the read tools', which
/// every caller may call.
fn assert_fs_records(setup: &Setup, write_file: Value) {
    let others = [
        json!([
            "fs__create_directory",
            "allowed",
            "ok",
            null,
            "write",
            "execution"
        ]),
        json!([
            "fs__list_allowed_directories",
            "allowed",
            "ok",
            null,
            "read",
            "execution"
        ]),
    ];
    let want: Vec<Value> = std::iter::once(write_file).chain(others).collect();
    assert_eq!(fs_records(setup), want);
}

/// What B.1 keeps of server-everything's results: the weather's allowed fields (the union of
/// both rules' lists), the echo's text withheld and said so.
fn assert_outputs(setup: &Setup, obs: &Value) {
    let outputs = eval_summary(&obs["outputs"]);
    assert_eq!(
        outputs["result"],
        json!({"weather": {"temperature": 36, "humidity": 82}, "echo": null,
               "account": {"user": "***", "keys": [{"id": 1}, {"id": 2}]}}),
        "{obs}"
    );
    let warnings: Vec<&str> = obs["outputs"]["structured"]["warnings"]
        .as_array()
        .unwrap_or_else(|| panic!("no warnings in {obs}"))
        .iter()
        .map(|w| w["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        warnings,
        [
            "the result of `everything__echo` was withheld: it is text, and the `outputs` rules for the tool allow only JSON fields"
        ]
    );
    let records = setup.audit_once(&[("eval", EVALS)]);
    let redacted = |tool: &str| {
        records
            .iter()
            .find(|r| r["event"] == "tool_call" && r["tool"] == tool)
            .map(|r| (r["redacted_paths"].clone(), r["classification"].clone()))
            .unwrap()
    };
    assert_eq!(
        redacted("everything__get-structured-content"),
        (json!(["/conditions"]), json!("read"))
    );
    assert_eq!(redacted("everything__echo"), (json!([""]), json!("read")));
    // A tool without annotations is write; what `allow` removes and what `mask` hides within
    // it, in document order.
    assert_eq!(
        redacted("drift__account"),
        (
            json!([
                "/keys/0/token",
                "/keys/1/token",
                "/password",
                "/ssn",
                "/user"
            ]),
            json!("write")
        )
    );
}

#[test]
fn a_token_without_allow_destructive_is_refused_a_destructive_upstream_tool() {
    let setup = setup("classes_http", Transport::Http);
    let obs = observe(&setup, Some(TOKEN));
    let fs = eval_summary(&obs["fs"]);
    let refusal = "`fs__write_file` is destructive and needs the permission `allow_destructive`, \
                   which caller `ci` lacks";
    assert_eq!(
        fs["result"],
        json!({"fs__write_file": refusal, "fs__create_directory": "ok",
               "fs__list_allowed_directories": "ok"}),
        "{obs}"
    );
    assert!(!setup.scratch.path("files/written.txt").exists());
    assert!(setup.scratch.path("files/made").is_dir());
    assert_fs_records(
        &setup,
        json!([
            "fs__write_file",
            "denied",
            "denied",
            "permission",
            "destructive",
            "auth"
        ]),
    );
    assert_outputs(&setup, &obs);
}

#[test]
fn the_local_caller_over_stdio_makes_the_destructive_call() {
    let setup = setup("classes_stdio", Transport::Stdio);
    let obs = observe(&setup, None);
    let fs = eval_summary(&obs["fs"]);
    assert_eq!(
        fs["result"],
        json!({"fs__write_file": "ok", "fs__create_directory": "ok",
               "fs__list_allowed_directories": "ok"}),
        "{obs}"
    );
    assert_eq!(
        std::fs::read_to_string(setup.scratch.path("files/written.txt")).unwrap(),
        "x"
    );
    assert_fs_records(
        &setup,
        json!([
            "fs__write_file",
            "allowed",
            "ok",
            null,
            "destructive",
            "execution"
        ]),
    );
    assert_outputs(&setup, &obs);
}
