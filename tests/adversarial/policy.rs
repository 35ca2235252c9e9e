//! Policy bypass: calling a denied or asked-about tool under another name, and argument rules
//! (`when`, `whenPath`) under another spelling of the same path. The fixture denies
//! `fs__move_file`, asks about `fs__create_directory` / `fs__edit_file` with nobody to ask
//! (so they are denied), and denies `fs__write_file` under `$ROOT/protected/` and to the canary.

use serde_json::json;

use crate::harness::{Case, Expect::*, case, run_table};

const MOVE: &str = "{ source: '$ROOT/canary.txt', destination: '$ROOT/public/moved.txt' }";

fn mv(name: &'static str, call: &str) -> Case {
    let script = format!(
        "const args = {MOVE}; try {{ await {call}; return 'ran'; }} catch (e) {{ return e.name }}"
    );
    case(name, script, Contained)
}

fn cases() -> Vec<Case> {
    vec![
        mv("denied tool by its name", "codemode.fs__move_file(args)"),
        mv(
            "denied tool by a computed name",
            "codemode[['fs', 'move_file'].join('__')](args)",
        ),
        mv(
            "denied tool through Reflect.get",
            "Reflect.get(codemode, 'fs__move_file')(args)",
        ),
        mv(
            "denied tool destructured",
            "(({ fs__move_file: m }) => m(args))(codemode)",
        ),
        mv(
            "denied tool through call()",
            "codemode.fs__move_file.call(null, args)",
        ),
        mv(
            "denied tool through apply()",
            "codemode.fs__move_file.apply(codemode, [args])",
        ),
        mv(
            "denied tool through bind()",
            "codemode.fs__move_file.bind(null)(args)",
        ),
        mv("denied tool in upper case", "codemode.FS__MOVE_FILE(args)"),
        mv("denied tool in mixed case", "codemode.fs__Move_File(args)"),
        mv(
            "denied tool with a Cyrillic homoglyph",
            "codemode['fs__m\\u043eve_file'](args)",
        ),
        mv(
            "denied tool with a zero-width space",
            "codemode['fs__move\\u200b_file'](args)",
        ),
        mv(
            "denied tool with a trailing space",
            "codemode['fs__move_file '](args)",
        ),
        mv(
            "denied tool with a NUL",
            "codemode['fs__move_file\\u0000'](args)",
        ),
        mv(
            "denied tool with a dot separator",
            "codemode['fs.move_file'](args)",
        ),
        mv(
            "denied tool with a slash separator",
            "codemode['fs/move_file'](args)",
        ),
        mv(
            "denied tool with one underscore",
            "codemode['fs_move_file'](args)",
        ),
        mv(
            "denied tool with three underscores",
            "codemode['fs___move_file'](args)",
        ),
        mv(
            "denied tool with a fullwidth underscore",
            "codemode['fs\\uff3f\\uff3fmove_file'](args)",
        ),
        mv(
            "denied tool through hitl_request",
            "codemode.hitl_request({ question: 'fs__move_file', tool: 'fs__move_file', args })",
        ),
        mv(
            "denied tool in parallel with allowed ones",
            "Promise.all([codemode.fs__list_allowed_directories({}), codemode.fs__move_file(args)])",
        ),
        case(
            "asked tool with nobody to ask is denied",
            "try { await codemode.fs__create_directory({ path: '$ROOT/made' }); return 'ran' } catch (e) { return e.name }",
            Returns(json!("ToolCallDeniedError")),
        ),
        case(
            "asked tool repeated 20 times",
            "let n = 0; for (let i = 0; i < 20; i++) await codemode.fs__create_directory({ path: '$ROOT/made' }).catch(() => n++); return n",
            Returns(json!(20)),
        ),
        case(
            "denied tool's error cannot be turned into success",
            "const r = await codemode.fs__move_file({ source: '$ROOT/canary.txt', destination: '$ROOT/public/m.txt' }).catch(e => { e.name = 'ok'; return e; }); return r.name",
            Returns(json!("ok")),
        ),
    ]
}

/// A write under `$ROOT/protected/` spelled `spelling` must not happen.
fn write(name: &'static str, spelling: &str) -> Case {
    let script = format!(
        "try {{ await codemode.fs__write_file({{ path: {spelling}, content: 'pwned' }}); return 'written'; }} catch (e) {{ return e.name }}"
    );
    case(name, script, Contained)
}

fn path_cases() -> Vec<Case> {
    vec![
        write("protected path as written", "'$ROOT/protected/a.txt'"),
        write(
            "protected path through ..",
            "'$ROOT/public/../protected/a.txt'",
        ),
        write(
            "protected path through a double slash",
            "'$ROOT//protected/a.txt'",
        ),
        write("protected path through /./", "'$ROOT/./protected/a.txt'"),
        write(
            "protected path through several ..",
            "'$ROOT/public/x/y/../../../protected/a.txt'",
        ),
        write(
            "protected path with a trailing /.",
            "'$ROOT/protected/./a.txt'",
        ),
        write("protected path relative to the root", "'protected/a.txt'"),
        write("protected path with ./ in front", "'./protected/a.txt'"),
        write("protected path as an array", "['$ROOT/protected/a.txt']"),
        write(
            "protected path as an object",
            "{ toString() { return '$ROOT/protected/a.txt' } }",
        ),
        write("canary through ..", "'$ROOT/public/../canary.txt'"),
        write("canary through a double slash", "'$ROOT//canary.txt'"),
    ]
}

#[test]
fn policy_bypass() {
    run_table("policy", cases());
}

#[test]
fn argument_rule_bypass() {
    run_table("paths", path_cases());
}
