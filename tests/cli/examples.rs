//! `examples/tools.json`, the shipped example of command tools, as a user runs it:
//! `codemode run --json --config examples/tools.json` started in a scratch git repository, each
//! of its six tools (`list_files`, `read_file`, `search_code`, `git_log`, `git_diff`, `echo`)
//! called for real with exact results; the arguments their schemas refuse (paths leaving the
//! tree, other extensions, options, revision ranges) refused before any program runs; text that
//! looks like an option passed as data; and its `readonly` profile.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use codemode_test_support::scratch_dir;
use serde_json::{Value, json};

use super::{codemode, text};

/// The example config, as shipped.
const TOOLS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/tools.json");

/// The patch of `feature/greeting` over `main` (blob ids follow from the contents).
const GREETING_PATCH: &str = "diff --git a/src/main.rs b/src/main.rs\n\
    index 7527576..2e6431c 100644\n\
    --- a/src/main.rs\n\
    +++ b/src/main.rs\n\
    @@ -1,3 +1,3 @@\n \
    fn main() {\n\
    -    println!(\"hello\");\n\
    +    println!(\"hello, world\");\n \
    }\n";

/// A fresh repository `<scratch>/repo`: on `main`, "Add README and main" (README.md,
/// src/main.rs) on 2024-05-01 and "Add notes" (notes.txt) on 2024-05-02; on
/// `feature/greeting`, "Greet the world" (src/main.rs changed) on 2024-05-03. `main` is checked
/// out. Author Ada; the user's own git config is not read.
fn scratch_repo(name: &str) -> PathBuf {
    let repo = scratch_dir("cli-examples", name).join("repo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(
        repo.join("README.md"),
        "# Demo\n\nRun `demo --verbose` to see more.\n",
    )
    .unwrap();
    std::fs::write(
        repo.join("src/main.rs"),
        "fn main() {\n    println!(\"hello\");\n}\n",
    )
    .unwrap();
    commit(&repo, "2024-05-01T10:00:00Z", "Add README and main");
    std::fs::write(repo.join("notes.txt"), "notes\n").unwrap();
    commit(&repo, "2024-05-02T10:00:00Z", "Add notes");
    git(&repo, &["checkout", "-q", "-b", "feature/greeting"]);
    std::fs::write(
        repo.join("src/main.rs"),
        "fn main() {\n    println!(\"hello, world\");\n}\n",
    )
    .unwrap();
    commit(&repo, "2024-05-03T10:00:00Z", "Greet the world");
    git(&repo, &["checkout", "-q", "main"]);
    repo
}

/// `git` in `repo`, without the user's global config: its trimmed standard output.
fn git(repo: &Path, args: &[&str]) -> String {
    git_at(repo, "2024-05-01T10:00:00Z", args)
}

/// `git add -A` then a commit dated `date`.
fn commit(repo: &Path, date: &str, message: &str) {
    git(repo, &["add", "-A"]);
    git_at(repo, date, &["commit", "-q", "-m", message]);
}

fn git_at(repo: &Path, date: &str, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(repo)
        .env("HOME", repo.parent().unwrap())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .envs([("GIT_AUTHOR_NAME", "Ada"), ("GIT_COMMITTER_NAME", "Ada")])
        .envs([
            ("GIT_AUTHOR_EMAIL", "ada@example.com"),
            ("GIT_COMMITTER_EMAIL", "ada@example.com"),
        ])
        .envs([("GIT_AUTHOR_DATE", date), ("GIT_COMMITTER_DATE", date)])
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
    text(&out.stdout).trim_end().to_string()
}

/// `codemode run --json --config examples/tools.json [extra] -` started in `repo`, with `script`
/// on standard input: its outcome.
fn run_in(repo: &Path, extra: &[&str], script: &str) -> Value {
    let mut child = codemode()
        .current_dir(repo)
        .args(["run", "--json", "--config", TOOLS])
        .args(extra)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn codemode");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(script.as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)))
}

/// The result of `script`, which must succeed, run in `repo`.
fn result_in(repo: &Path, script: &str) -> Value {
    let outcome = run_in(repo, &[], script);
    assert_eq!(outcome["ok"], true, "{outcome}");
    outcome["result"].clone()
}

/// `outcome(() => codemode.x(…))`: `{ok: result}`, or the error's name, message and data.
const OUTCOME: &str = "const outcome = async (f) => { try { return {ok: await f()}; }\n\
    catch (e) { return {name: e.name, message: e.message, data: e.data ?? null}; } };\n";

#[test]
fn list_files_lists_a_directory_of_the_tree() {
    let repo = scratch_repo("list");
    assert_eq!(
        result_in(
            &repo,
            "return [await codemode.list_files({}), await codemode.list_files({path: 'src'})]"
        ),
        json!([[".git/", "README.md", "notes.txt", "src/"], ["main.rs"]])
    );
}

#[test]
fn read_file_returns_the_text_of_a_file() {
    let repo = scratch_repo("read");
    assert_eq!(
        result_in(
            &repo,
            "return [await codemode.read_file({path: 'src/main.rs'}), \
             await codemode.read_file({path: 'README.md'})]"
        ),
        json!([
            "fn main() {\n    println!(\"hello\");\n}\n",
            "# Demo\n\nRun `demo --verbose` to see more.\n"
        ])
    );
}

#[test]
fn search_code_finds_plain_text_even_when_it_looks_like_an_option() {
    let repo = scratch_repo("search");
    let script = format!(
        "{OUTCOME}return [await codemode.search_code({{text: 'println!'}}), \
         await codemode.search_code({{text: '--verbose'}}), \
         await codemode.search_code({{text: 'fn main', path: 'src'}}), \
         await outcome(() => codemode.search_code({{text: 'hello', path: 'README.md'}}))]"
    );
    assert_eq!(
        result_in(&repo, &script),
        json!([
            ["src/main.rs:2:    println!(\"hello\");"],
            ["README.md:3:Run `demo --verbose` to see more."],
            ["src/main.rs:1:fn main() {"],
            // No match: git grep's exit code 1, as its description says.
            {"name": "ToolError", "message": "`search_code` exited with code 1",
             "data": {"exitCode": 1, "stderr": ""}}
        ])
    );
}

#[test]
fn git_log_lists_the_latest_commits_of_the_branch() {
    let repo = scratch_repo("log");
    let first = git(&repo, &["rev-parse", "--short", "HEAD~1"]);
    let second = git(&repo, &["rev-parse", "--short", "HEAD"]);
    assert_eq!(
        result_in(
            &repo,
            "return [await codemode.git_log({limit: 2}), \
             await codemode.git_log({limit: 1}), \
             await codemode.git_log({limit: 10, path: 'notes.txt'})]"
        ),
        json!([
            [
                format!("{second} 2024-05-02 Ada: Add notes"),
                format!("{first} 2024-05-01 Ada: Add README and main")
            ],
            [format!("{second} 2024-05-02 Ada: Add notes")],
            [format!("{second} 2024-05-02 Ada: Add notes")]
        ])
    );
}

#[test]
fn git_diff_compares_two_branches() {
    let repo = scratch_repo("diff");
    assert_eq!(
        result_in(
            &repo,
            "return [await codemode.git_diff({from: 'main', to: 'feature/greeting'}), \
             await codemode.git_diff({from: 'main~1', to: 'feature/greeting', \
             view: '--name-only'}), \
             await codemode.git_diff({from: 'main~1', to: 'main', view: '--stat'}), \
             await codemode.git_diff({from: 'main~1', to: 'main', path: 'src'})]"
        ),
        json!([
            GREETING_PATCH,
            "notes.txt\nsrc/main.rs\n",
            " notes.txt | 1 +\n 1 file changed, 1 insertion(+)\n",
            ""
        ])
    );
}

#[test]
fn echo_returns_its_text_unchanged() {
    let repo = scratch_repo("echo");
    let hostile = "-n $(touch X); `id` 'q' \"q\"\nnext";
    let script = format!(
        "return await codemode.echo({{text: {}}})",
        Value::String(hostile.into())
    );
    assert_eq!(result_in(&repo, &script), json!(hostile));
    assert!(!repo.join("X").exists());
}

/// The bounds of examples/tools.json's string arguments (its `pattern`s, as the refusals quote
/// them): a path in the tree; a file in the tree with a text extension; a branch, tag or commit;
/// a line of text.
const PATH_PATTERN: &str = r"^\.?[A-Za-z0-9_][A-Za-z0-9._-]*(/\.?[A-Za-z0-9_][A-Za-z0-9._-]*)*/?$";
const FILE_PATTERN: &str = concat!(
    r"^(\.?[A-Za-z0-9_][A-Za-z0-9._-]*/)*\.?[A-Za-z0-9_][A-Za-z0-9._-]*",
    r"\.(md|txt|json|rs|toml|js|ts|py|yaml|yml)$"
);
const REF_PATTERN: &str = r"^[A-Za-z0-9_][A-Za-z0-9_-]*([./][A-Za-z0-9_-]+)*([~^][0-9]{0,4})*$";
const LINE_PATTERN: &str = r"^[^\r\n]+$";

/// The message of a call to `tool` that its `inputSchema` refused, for `problem`.
fn refused(tool: &str, problem: &str) -> String {
    format!(
        "invalid_arguments: `{tool}` was not called: {problem} (its types: \
         get_tools({{names: [\"{tool}\"]}}))"
    )
}

/// `problem` for a string `value` at `pointer` that does not match `pattern` (the value quoted
/// as JSON, the pattern as written).
fn mismatch(pointer: &str, value: &str, pattern: &str) -> String {
    format!("{pointer}: {} does not match \"{pattern}\"", json!(value))
}

/// What the schemas refuse never reaches a program: each call rejects with a `ToolError`
/// (`invalid_arguments`, naming the argument), and `git diff --output=…` writes nothing.
#[test]
fn arguments_outside_the_bounds_are_refused_before_anything_runs() {
    let repo = scratch_repo("refusals");
    let target = repo.parent().unwrap().join("written");
    let output_option = format!("--output={}", target.display());
    let calls: Vec<(String, String)> = vec![
        (
            "read_file({path: '../x.txt'})".into(),
            refused("read_file", &mismatch("/path", "../x.txt", FILE_PATTERN)),
        ),
        (
            "read_file({path: 'src/../../x.md'})".into(),
            refused(
                "read_file",
                &mismatch("/path", "src/../../x.md", FILE_PATTERN),
            ),
        ),
        (
            "read_file({path: '/etc/passwd'})".into(),
            refused("read_file", &mismatch("/path", "/etc/passwd", FILE_PATTERN)),
        ),
        (
            "read_file({path: 'a.exe'})".into(),
            refused("read_file", &mismatch("/path", "a.exe", FILE_PATTERN)),
        ),
        (
            "read_file({path: '-rf'})".into(),
            refused("read_file", &mismatch("/path", "-rf", FILE_PATTERN)),
        ),
        (
            "read_file({path: 'README.md', mode: 'raw'})".into(),
            refused("read_file", "unknown key `mode`; expected `path`"),
        ),
        (
            "list_files({path: '..'})".into(),
            refused("list_files", &mismatch("/path", "..", PATH_PATTERN)),
        ),
        (
            format!("git_diff({{from: '{output_option}', to: 'main'}})"),
            refused("git_diff", &mismatch("/from", &output_option, REF_PATTERN)),
        ),
        (
            "git_diff({from: 'main..feature/greeting', to: 'main'})".into(),
            refused(
                "git_diff",
                &mismatch("/from", "main..feature/greeting", REF_PATTERN),
            ),
        ),
        (
            format!("git_diff({{from: 'main', to: 'main', view: '{output_option}'}})"),
            refused(
                "git_diff",
                &format!(
                    "/view: {} is not one of \"--patch\", \"--stat\" or \"--name-only\"",
                    json!(output_option)
                ),
            ),
        ),
        (
            "search_code({text: 'a\\nb'})".into(),
            refused("search_code", &mismatch("/text", "a\nb", LINE_PATTERN)),
        ),
        (
            "git_log({limit: 1000})".into(),
            refused("git_log", "/limit: 1000 is greater than the maximum of 100"),
        ),
        (
            "git_log({limit: '5'})".into(),
            refused("git_log", "/limit: expected integer, got string (\"5\")"),
        ),
    ];
    let script: String = calls
        .iter()
        .map(|(call, _)| {
            format!(
                "try {{ await codemode.{call}; r.push('ran'); }} \
                 catch (e) {{ r.push([e.name, e.message]); }}\n"
            )
        })
        .collect();
    let results = result_in(&repo, &format!("const r = [];\n{script}return r"));
    let expected: Vec<Value> = calls
        .iter()
        .map(|(_, message)| json!(["ToolError", message]))
        .collect();
    assert_eq!(results, Value::Array(expected));
    assert!(!target.exists(), "git wrote {}", target.display());
}

/// The `readonly` profile allows the six tools and denies everything else (here the built-in
/// `hitl_request`).
#[test]
fn the_readonly_profile_allows_the_tools_and_nothing_else() {
    let repo = scratch_repo("profile");
    let outcome = run_in(
        &repo,
        &["--profile", "readonly"],
        "const r = [await codemode.echo({text: 'hi'})];\n\
         try { await codemode.hitl_request({question: 'q', options: ['a']}); r.push('asked'); }\n\
         catch (e) { r.push([e.name, e.toolName, e.reason, e.message]); }\n\
         return r",
    );
    assert_eq!(
        outcome["result"],
        json!([
            "hi",
            [
                "ToolCallDeniedError",
                "hitl_request",
                "denied",
                "profile `readonly` does not allow `hitl_request`"
            ]
        ]),
        "{outcome}"
    );
}
