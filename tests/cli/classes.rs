//! `codemode run` (issue 28 B.6): the local caller makes server-filesystem's destructive
//! `write_file` (its annotations say `destructiveHint`), unless the config sets
//! `evaluation.localAllowDestructive: false`; then the call is refused with reason
//! `permission` and the file is never written. The audit records the class and the stage.

use codemode_test_support::peers;
use serde_json::{Value, json};

use super::{codemode, temp_dir, text};

fn run(local_allow: Option<bool>, name: &str) -> (Value, Vec<Value>, std::path::PathBuf) {
    peers::ensure_installed();
    let dir = temp_dir(name);
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let (program, args) = peers::filesystem_server_cmd(&files);
    let mut config = json!({
        "mcpServers": {"fs": {"command": program, "args": args}},
        "audit": {"dir": dir.join("audit")},
    });
    if let Some(allow) = local_allow {
        config["evaluation"] = json!({"localAllowDestructive": allow});
    }
    let config_path = dir.join("codemode.json");
    std::fs::write(&config_path, config.to_string()).unwrap();
    let script = dir.join("write.js");
    let target = files.join("written.txt");
    std::fs::write(
        &script,
        format!(
            "await codemode.fs__write_file({{path: {}, content: 'x'}}); return 'written';",
            json!(target)
        ),
    )
    .unwrap();
    let out = codemode()
        .args(["run", "--json", "--config"])
        .arg(&config_path)
        .arg(&script)
        .output()
        .expect("run codemode");
    let outcome: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} / {}", text(&out.stdout), text(&out.stderr)));
    let mut records = Vec::new();
    for entry in std::fs::read_dir(dir.join("audit")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|x| x == "jsonl") {
            for line in std::fs::read_to_string(path).unwrap().lines() {
                let r: Value = serde_json::from_str(line).unwrap();
                if r["event"] == "tool_call" {
                    records.push(json!([
                        r["tool"],
                        r["decision"],
                        r["reason"],
                        r["classification"],
                        r["stage"]
                    ]));
                }
            }
        }
    }
    (outcome, records, target)
}

#[test]
fn codemode_run_lets_the_local_caller_make_a_destructive_call() {
    let (outcome, records, target) = run(None, "classes-run-local");
    assert_eq!(outcome["ok"], true, "{outcome}");
    assert_eq!(outcome["result"], "written");
    assert_eq!(std::fs::read_to_string(target).unwrap(), "x");
    assert_eq!(
        records,
        [json!([
            "fs__write_file",
            "allowed",
            null,
            "destructive",
            "execution"
        ])]
    );
}

#[test]
fn codemode_run_refuses_it_when_the_config_withdraws_the_local_right() {
    let (outcome, records, target) = run(Some(false), "classes-run-withdrawn");
    assert_eq!(outcome["ok"], false, "{outcome}");
    let call = &outcome["tool_calls"][0];
    assert_eq!(
        json!([
            call["tool"],
            call["status"],
            call["reason"],
            outcome["error"]["message"]
        ]),
        json!([
            "fs__write_file",
            "denied",
            "permission",
            "ToolCallDeniedError: `fs__write_file` is destructive and needs the permission \
             `allow_destructive`, which caller `local` lacks"
        ]),
        "{outcome}"
    );
    assert!(!target.exists());
    assert_eq!(
        records,
        [json!([
            "fs__write_file",
            "denied",
            "permission",
            "destructive",
            "auth"
        ])]
    );
}

/// `audit query --risk` and `--where` over the records `codemode run` wrote: the destructive
/// write is found by its risk, its class and its stage together, and by nothing that does not
/// hold for it; a risk level that does not exist is refused, naming the flag.
#[test]
fn audit_query_finds_run_records_by_risk_and_fields() {
    let (outcome, records, target) = run(None, "classes-run-query");
    assert_eq!(outcome["ok"], true, "{outcome}");
    assert_eq!(records.len(), 1, "{records:?}");
    // `run` writes into DIR/files and audits into DIR/audit.
    let audit = target.parent().unwrap().parent().unwrap().join("audit");
    let query = |args: &[&str]| {
        let out = codemode()
            .args(["audit", "query", "--event", "tool_call"])
            .arg(&audit)
            .args(args)
            .output()
            .expect("run codemode audit query");
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let tools = |stdout: &str| -> Vec<Value> {
        stdout
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["tool"].clone())
            .collect()
    };
    let (code, found, err) = query(&[
        "--risk",
        "medium",
        "--where",
        "classification=destructive",
        "--where",
        "stage=execution",
        "--where",
        "caller_permissions=[\"allow_destructive\"]",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(tools(&found), [json!("fs__write_file")]);
    for miss in [
        &["--risk", "low"][..],
        &["--where", "classification=write"],
        &["--risk", "medium", "--where", "stage=auth"],
        &["--where", "reason=\"permission\""],
    ] {
        let (code, found, err) = query(miss);
        assert_eq!((code, found.as_str()), (Some(0), ""), "{miss:?}: {err}");
    }
    let (code, found, err) = query(&["--risk", "severe"]);
    assert_eq!((code, found.as_str()), (Some(2), ""));
    assert_eq!(
        err,
        "codemode: --risk: `severe` is not a risk level: low, medium, high or critical\n"
    );
}
