//! Command tools end to end through `codemode run --json --config`: hostile arguments, output
//! bounds, timeouts that kill a whole process group, exit data, output modes, the environment,
//! and profiles deciding them like any tool.

use std::path::Path;

use serde_json::{Value, json};

use super::{run_with_stdin, temp_dir, text};

fn config(dir: &Path) -> std::path::PathBuf {
    let d = dir.display();
    let config = json!({
        "commands": {
            "argv": {"command": "/usr/bin/printf", "args": ["%s\n", "{a}", "{b?}"], "output": "lines",
                "description": "Echo each argument on its own line",
                "inputSchema": {"type": "object", "required": ["a"], "additionalProperties": false,
                    "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}},
            "ls-remote": {"command": "git", "args": ["ls-remote", "{repo}"],
                "inputSchema": {"type": "object", "required": ["repo"],
                    "properties": {"repo": {"type": "string"}}}},
            "zeros": {"command": "head", "args": ["-c", "1073741824", "/dev/zero"], "maxOutput": "1MiB"},
            "sleepy": {"command": "sh", "timeoutSeconds": 2,
                "args": ["-c", format!("sleep 300 & echo $! > {d}/pid; wait")]},
            "fail": {"command": "sh", "args": ["-c", "echo out; echo 'fatal: no such ref' >&2; exit 128"]},
            "records": {"command": "printf", "args": ["{\"id\":1}\n{\"id\":2}\n"], "output": "jsonl"},
            "env": {"command": "env", "output": "lines", "env": {"ONLY": "this"}},
            "danger": {"command": "touch", "args": [format!("{d}/danger")]},
            "asky": {"command": "touch", "args": [format!("{d}/asky")]}
        },
        "evaluation": {"profiles": {"p": {"denylist": ["danger"], "asklist": ["asky"]}}}
    });
    let path = dir.join("config.json");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

const SCRIPT: &str = r#"
const outcome = async (f) => { try { return {ok: await f()}; }
  catch (e) { return {name: e.name, message: e.message, data: e.data ?? null}; } };
const dir = DIR;
return {
  hostile: await codemode.argv({a: `$(touch ${dir}/X); touch ${dir}/Y`, b: "it's \"q\"\nnext; `id`"}),
  option: await outcome(() => codemode["ls-remote"]({repo: `--upload-pack=touch ${dir}/X`})),
  invalid: await outcome(() => codemode.argv({a: 1})),
  zeros: await outcome(() => codemode.zeros()),
  sleepy: await outcome(() => codemode.sleepy()),
  fail: await outcome(() => codemode.fail()),
  records: await codemode.records(),
  env: await codemode.env(),
  found: (await codemode.search_tools({query: "echo argument"})).results[0].name,
};
"#;

#[test]
fn command_tools_through_codemode_run() {
    let dir = temp_dir("commands");
    let config = config(&dir);
    let script = SCRIPT.replace("DIR", &Value::String(dir.display().to_string()).to_string());
    let out = run_with_stdin(
        &["run", "--json", "--config", config.to_str().unwrap(), "-"],
        &script,
    );
    let outcome: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)));
    assert_eq!(outcome["ok"], true, "{outcome}");
    let r = &outcome["result"];
    let d = dir.display();
    assert_eq!(
        r["hostile"],
        json!([
            format!("$(touch {d}/X); touch {d}/Y"),
            "it's \"q\"",
            "next; `id`"
        ])
    );
    assert_eq!(
        r["option"],
        json!({"name": "ToolError", "data": null, "message":
            "invalid arguments for `ls-remote`: the argument `repo` starts with `-`, so `git` would \
             read it as an option; refused (the tool's inputSchema can allow it with \"x-allowOption\": true)"})
    );
    assert_eq!(
        r["invalid"],
        json!({"name": "ToolError",
            "data": {"errors": [{"path": "/a", "message": "expected string, got number (1)"}], "unknown": [], "missing": []},
            "message": "invalid_arguments: `argv` was not called: /a: expected string, got number (1) \
                        (its types: get_tools({names: [\"argv\"]}))"})
    );
    assert_eq!(
        r["zeros"]["message"],
        "`zeros` wrote more than 1048576 bytes of output (maxOutput); it was stopped and its output dropped"
    );
    assert_eq!(
        r["sleepy"]["message"],
        "`sleepy` timed out after 2s (timeoutSeconds); it and every process it started were killed"
    );
    assert_eq!(
        r["fail"],
        json!({"name": "ToolError", "message": "`fail` exited with code 128: fatal: no such ref",
            "data": {"exitCode": 128, "stderr": "fatal: no such ref\n"}})
    );
    assert_eq!(r["records"], json!([{"id": 1}, {"id": 2}]));
    assert_eq!(r["env"], json!(["ONLY=this"]));
    assert_eq!(r["found"], "argv");
    for file in ["X", "Y"] {
        assert!(!dir.join(file).exists(), "{file} was created");
    }
    let pid: i32 = std::fs::read_to_string(dir.join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        gone(pid),
        "the sleeping grandchild {pid} survived the timeout"
    );
}

#[test]
fn profiles_deny_and_ask_about_command_tools() {
    let dir = temp_dir("commands-profile");
    let config = config(&dir);
    let script = "const r = [];\n\
        for (const t of ['danger', 'asky']) {\n\
          try { await codemode[t](); r.push('ran'); } catch (e) { r.push([e.name, e.toolName]); }\n\
        }\n\
        return r;";
    let out = run_with_stdin(
        &[
            "run",
            "--json",
            "--config",
            config.to_str().unwrap(),
            "--profile",
            "p",
            "-",
        ],
        script,
    );
    let outcome: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        outcome["result"],
        json!([
            ["ToolCallDeniedError", "danger"],
            ["ToolCallDeniedError", "asky"]
        ]),
        "{outcome}"
    );
    assert!(!dir.join("danger").exists() && !dir.join("asky").exists());
}

#[test]
fn a_bad_command_section_is_a_config_error_with_its_path() {
    let dir = temp_dir("commands-bad");
    let path = dir.join("config.json");
    std::fs::write(
        &path,
        r#"{"commands": {"search_tools": {"command": "echo"},
            "log": {"command": "git", "args": ["log", "--format={fmt}"],
                    "inputSchema": {"type": "object", "properties": {"fmt": {"type": "string"}}}}}}"#,
    )
    .unwrap();
    let out = super::config_check(&path);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("commands.search_tools: the command tool name `search_tools` is taken by a built-in tool; choose another"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "commands.log.args[1]: the placeholder `{fmt}` is part of the longer argument"
        ),
        "{stderr}"
    );
}

/// Gone, or a zombie waiting for its reaper (running nothing).
fn gone(pid: i32) -> bool {
    (0..200).any(|_| {
        let done = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| {
                matches!(rest.trim_start().chars().next(), Some('Z' | 'X'))
            }),
        };
        if !done {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        done
    })
}
