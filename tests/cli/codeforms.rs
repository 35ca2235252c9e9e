//! Code as models write it, through the binary: fenced and TypeScript scripts with errors at
//! known places (`run --json`), and `check --config --profile` against a real upstream
//! (server-everything), and media as `run` prints them.

use std::path::Path;

use codemode_test_support::{peers, scratch_dir};
use serde_json::{Value, json};

use super::{codemode, run_with_stdin, text};

fn run_json(code: &str) -> (Option<i32>, Value) {
    let out = run_with_stdin(&["run", "--json", "-"], code);
    let outcome = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)));
    (out.status.code(), outcome)
}

/// A fenced TypeScript script throwing on line 4 of the text as written (the fence is line 1):
/// the error is at line 4, at the column of the last expression QuickJS evaluated there (the
/// property read `.n`), exactly where it is in the plain JavaScript the types blank out to.
#[test]
fn fenced_typescript_errors_are_on_the_lines_written() {
    let code = "```ts\ninterface P { n: number }\nconst p: P = { n: 1 } satisfies P;\n\
                throw new Error(`n=${p!.n as number}`);\n```\n";
    let (status, outcome) = run_json(code);
    assert_eq!(status, Some(1));
    assert_eq!(
        outcome["error"],
        json!({"kind": "exception", "message": "Error: n=1", "line": 4, "column": 25,
               "stack": "    at <eval> (script.js:4:25)\n"})
    );
    // The same text with the fence and the types blanked by hand: the same place.
    let (_, plain) = run_json("\n\nconst p = { n: 1 };\nthrow new Error(`n=${p .n}`);\n");
    assert_eq!(plain["error"]["line"], 4);
    assert_eq!(plain["error"]["column"], 25);
}

/// A TypeScript syntax error is reported at its place in the user's text, in the sandbox's
/// `syntax` shape, and a JavaScript one as before.
#[test]
fn typescript_syntax_errors_point_at_the_users_text() {
    let (status, outcome) =
        run_json("```typescript\nconst a: number = 1;\nconst b: string = ;\n```");
    assert_eq!(status, Some(1));
    assert_eq!(
        outcome["error"],
        json!({"kind": "syntax", "message": "SyntaxError: Unexpected token", "line": 3,
               "column": 19, "stack": null})
    );
    let (_, outcome) = run_json("const a = 1;\n  enum E { A }\nreturn a;");
    assert_eq!(outcome["error"]["kind"], "syntax");
    assert_eq!(
        (&outcome["error"]["line"], &outcome["error"]["column"]),
        (&json!(2), &json!(3))
    );
    assert_eq!(
        outcome["error"]["message"],
        "SyntaxError: TypeScript `enum` needs more than type stripping: use an object (`const Color = { Red: \"red\" }`)"
    );
}

#[test]
fn export_default_and_typescript_run() {
    let cases: &[(&str, Value)] = &[
        (
            "export default async function main(): Promise<number> {\n  return 6 * 7;\n}\n",
            json!(42),
        ),
        (
            "```js\nexport default async () => ({ ok: true });\n```",
            json!({"ok": true}),
        ),
        (
            "type Pair<T> = [T, T];\nconst swap = <T,>([a, b]: Pair<T>): Pair<T> => [b, a];\nreturn swap<number>([1, 2]);",
            json!([2, 1]),
        ),
        (
            "class Counter {\n  private n: number = 0;\n  inc(by?: number): this { this.n += by ?? 1; return this; }\n  get value(): number { return this.n; }\n}\nreturn new Counter().inc().inc(5).value;",
            json!(6),
        ),
    ];
    for (code, want) in cases {
        let (status, outcome) = run_json(code);
        assert_eq!(status, Some(0), "{code}: {outcome}");
        assert_eq!(&outcome["result"], want, "{code}");
    }
}

#[test]
fn check_reads_fenced_typescript() {
    let code = "```ts\nconst r: unknown = await codemode.a__x<{ id: string }>({});\nawait codemode.b__y(r as object);\n```\n";
    let out = run_with_stdin(&["check", "-"], code);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "<stdin>:2:26: a__x\n<stdin>:3:7: b__y\n");
    let out = run_with_stdin(&["check", "-"], "namespace N { export const x = 1; }\n");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "<stdin>:1:1: syntax: TypeScript `namespace` needs more than type stripping: use an object or plain functions\n"
    );
}

fn everything_config(dir: &Path) -> std::path::PathBuf {
    peers::ensure_installed();
    let (program, args) = peers::everything_server_cmd();
    let config = json!({
        "mcpServers": {"everything": {"command": program, "args": args}},
        "evaluation": {"profiles": {"p": {
            "denylist": ["everything__get-env"],
            "asklist": ["everything__echo"],
            "rules": [{"tools": ["everything__get-sum"], "when": {"/a": "^9"}, "disposition": "deny"}]
        }}}
    });
    let path = dir.join("config.json");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

/// `check --config --profile`: the upstream's tools are listed (server-everything started, the
/// script not run); each finding is one line, in source order; unknown or denied → exit 1.
#[test]
fn check_with_a_config_reports_unknown_denied_and_asked_calls() {
    let dir = scratch_dir("cli", "check-config");
    let config = everything_config(&dir);
    let script = dir.join("s.md");
    std::fs::write(
        &script,
        "```ts\nconst e: any = await codemode.everything__echo({message: 'hi'});\n\
         await codemode['everything__get-env']({});\nawait codemode.everything__ecko({});\n\
         const s = await codemode['everything__get-sum']({a: 1, b: 2});\nawait codemode[k]();\n\
         // Never runs: check runs no script code.\nawait codemode.everything__echo({message: 'ran'});\n```\n",
    )
    .unwrap();
    let args = |json: bool| {
        let mut a = vec!["check".to_string()];
        if json {
            a.push("--json".into());
        }
        a.extend([
            "--config".into(),
            config.display().to_string(),
            "--profile".into(),
            "p".into(),
            script.display().to_string(),
        ]);
        a
    };
    let out = codemode().args(args(false)).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let s = script.display();
    assert_eq!(
        text(&out.stdout),
        format!(
            "{s}:2:22: `everything__echo` will ask for approval under profile `p` (asklist glob `everything__echo`)\n\
             {s}:3:7: `everything__get-env` is denied by profile `p` (denylist glob `everything__get-env`)\n\
             {s}:4:7: unknown tool `everything__ecko`; did you mean `everything__echo`, `everything__get-env`, `everything__get-sum`?\n\
             {s}:5:17: `everything__get-sum` may be denied under profile `p`, depending on its arguments (rules[0])\n\
             {s}:6:7: the tool's name is computed at run time: not checked\n\
             {s}:8:7: `everything__echo` will ask for approval under profile `p` (asklist glob `everything__echo`)\n"
        )
    );

    let out = codemode().args(args(true)).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["profile"], "p");
    assert_eq!(v["parse_error"], Value::Null);
    let kinds: Vec<(&str, u64)> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["kind"].as_str().unwrap(), f["line"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("asks", 2),
            ("denied", 3),
            ("unknown_tool", 4),
            ("depends_on_arguments", 5),
            ("dynamic", 6),
            ("asks", 8)
        ]
    );
    assert_eq!(
        v["findings"][2]["suggestions"],
        json!([
            "everything__echo",
            "everything__get-env",
            "everything__get-sum"
        ])
    );

    // Only known tools the profile allows or asks about: exit 0, the asks still reported.
    let ok = dir.join("ok.ts");
    std::fs::write(
        &ok,
        "const n: number = (await codemode['everything__get-sum']({a: 1, b: 2})) as number;\n\
         return await codemode.everything__echo({message: `${n}`});\n",
    )
    .unwrap();
    let out = codemode()
        .args(["check", "--config"])
        .arg(&config)
        .args(["--profile", "p"])
        .arg(&ok)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!(
            "{o}:1:26: `everything__get-sum` may be denied under profile `p`, depending on its arguments (rules[0])\n\
             {o}:2:14: `everything__echo` will ask for approval under profile `p` (asklist glob `everything__echo`)\n",
            o = ok.display()
        )
    );

    // An unknown profile is a usage error.
    let out = codemode()
        .args(["check", "--config"])
        .arg(&config)
        .args(["--profile", "nope"])
        .arg(&ok)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `codemode run` prints a script's media as their references — type, MIME type, size and id —
/// never their bytes (server-everything's tiny image, 4,033 bytes).
#[test]
fn run_prints_media_as_references_without_their_bytes() {
    let dir = scratch_dir("cli", "run-media");
    let config = everything_config(&dir);
    let mut cmd = codemode();
    cmd.args(["run", "--config"]).arg(&config).arg("-");
    let out = {
        use std::io::Write;
        let mut child = cmd
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let script = "const r = await codemode['everything__get-tiny-image']({}); r[1]";
        child
            .stdin
            .take()
            .unwrap()
            .write_all(script.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut printed: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)));
    let id = printed["id"].take();
    let id = id.as_str().unwrap_or_default();
    assert!(
        id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()),
        "{id}"
    );
    assert_eq!(
        printed,
        json!({"type": "image", "mimeType": "image/png", "size": 4033, "id": null})
    );
    assert!(!text(&out.stdout).contains("iVBORw0KGgo"));
}
