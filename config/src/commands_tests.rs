use std::time::Duration;

use serde_json::json;

use super::*;
use crate::{Config, ConfigErrorKind};

fn errors(json: &str) -> Vec<(String, ConfigErrorKind, String)> {
    Config::from_json_str(json)
        .unwrap_err()
        .errors
        .into_iter()
        .map(|e| (e.path().to_string(), e.kind(), e.message().to_string()))
        .collect()
}

#[test]
fn a_full_command_reads_every_key() {
    let c = Config::from_json_str(
        r#"{"commands": {"git-log": {
            "command": "sh", "args": ["-c", "{limit}", "{path?}"],
            "inputSchema": {"type": "object", "required": ["limit"], "properties": {
                "limit": {"type": "integer"},
                "path": {"type": "string", "x-allowOption": true}}},
            "description": "Recent commits", "cwd": "/", "env": {"LANG": "C"},
            "timeoutSeconds": 2.5, "maxOutput": "4KiB", "output": "jsonl"}}}"#,
    )
    .unwrap();
    let cmd = &c.commands["git-log"];
    assert_eq!(cmd.command, "sh");
    assert_eq!(
        cmd.args,
        [
            CommandArg::Literal("-c".into()),
            CommandArg::Param {
                name: "limit".into(),
                optional: false,
                allow_option: false
            },
            CommandArg::Param {
                name: "path".into(),
                optional: true,
                allow_option: true
            },
        ]
    );
    assert_eq!(cmd.description, "Recent commits");
    assert_eq!(cmd.cwd.as_deref(), Some(std::path::Path::new("/")));
    assert_eq!(cmd.env["LANG"], "C");
    assert_eq!(cmd.timeout, Duration::from_millis(2500));
    assert_eq!(cmd.max_output, 4096);
    assert_eq!(cmd.output, CommandOutput::Jsonl);
    assert_eq!(cmd.validate_args(&json!({"limit": 3})), Ok(()));
    assert_eq!(
        cmd.validate_args(&json!({"limit": "3"})),
        Err(InvalidCommandArgs {
            problems: vec![r#"/limit: "3" is not of type "integer""#.to_string()]
        })
    );
}

#[test]
fn defaults_are_the_stated_ones() {
    let c = Config::from_json_str(r#"{"commands": {"date": {"command": "date", "args": ["-u"]}}}"#)
        .unwrap();
    let cmd = &c.commands["date"];
    assert_eq!(cmd.timeout, DEFAULT_COMMAND_TIMEOUT);
    assert_eq!(cmd.max_output, DEFAULT_COMMAND_MAX_OUTPUT);
    assert_eq!(cmd.output, CommandOutput::Text);
    assert_eq!(cmd.description, "Runs `date -u`.");
    assert!(cmd.env.is_empty() && cmd.cwd.is_none());
    assert_eq!(
        cmd.input_schema,
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    );
    assert_eq!(cmd.validate_args(&json!({})), Ok(()));
    assert!(cmd.validate_args(&json!({"x": 1})).is_err());
}

#[test]
fn braces_that_are_not_a_whole_placeholder_are_literal_or_refused() {
    let c = Config::from_json_str(
        r#"{"commands": {"f": {"command": "echo", "args": ["HEAD@{1}", "{}", "{1x}", "{"]}}}"#,
    )
    .unwrap();
    let literals: Vec<_> = c.commands["f"]
        .args
        .iter()
        .map(|a| match a {
            CommandArg::Literal(s) => s.as_str(),
            CommandArg::Param { .. } => panic!("{a:?}"),
        })
        .collect();
    assert_eq!(literals, ["HEAD@{1}", "{}", "{1x}", "{"]);
    assert_eq!(
        errors(
            r#"{"commands": {"f": {"command": "echo", "args": ["--format={fmt}", "x{a?}y"],
                "inputSchema": {"type": "object", "properties": {"fmt": {"type": "string"}}}}}}"#
        ),
        [
            (
                "commands.f.args[0]".into(),
                ConfigErrorKind::InvalidValue,
                "the placeholder `{fmt}` is part of the longer argument \"--format={fmt}\"; a \
                 placeholder must be a whole `args` element (it becomes exactly one argument): \
                 split it, e.g. [\"--format\", \"{format}\"]"
                    .into()
            ),
            (
                "commands.f.args[1]".into(),
                ConfigErrorKind::InvalidValue,
                "the placeholder `{a?}` is part of the longer argument \"x{a?}y\"; a placeholder \
                 must be a whole `args` element (it becomes exactly one argument): split it, e.g. \
                 [\"--format\", \"{format}\"]"
                    .into()
            ),
        ]
    );
}

#[test]
fn placeholders_must_match_the_schema() {
    let got = errors(
        r#"{"commands": {"c": {"command": "echo", "args": ["{a}", "{b}", "{list?}", "{opt?}"],
            "inputSchema": {"type": "object", "required": ["a"], "properties": {
                "a": {"type": "string", "x-allowOption": "yes"},
                "b": {"type": "string"}, "list": {"type": ["array", "null"]}}}}}}"#,
    );
    let want: Vec<(String, ConfigErrorKind, String)> = vec![
        (
            "commands.c.inputSchema.properties.a.x-allowOption".into(),
            ConfigErrorKind::WrongType,
            "expected a boolean, found a string (\"yes\")".into(),
        ),
        (
            "commands.c.args[1]".into(),
            ConfigErrorKind::InvalidValue,
            "`{b}` is required here but `inputSchema` does not list `b` in `required`; add it \
             there, or write `{b?}` to drop the argument when absent"
                .into(),
        ),
        (
            "commands.c.inputSchema.properties.list".into(),
            ConfigErrorKind::InvalidValue,
            "`list` is used as one argument, so it cannot be of type `array`; use a string, \
             number, integer or boolean"
                .into(),
        ),
        (
            "commands.c.args[3]".into(),
            ConfigErrorKind::InvalidValue,
            "`{opt}` is not a property of `inputSchema`; declare it there".into(),
        ),
    ];
    assert_eq!(got, want);
    assert_eq!(
        errors(r#"{"commands": {"c": {"command": "echo", "args": ["{a}"]}}}"#),
        [(
            "commands.c".into(),
            ConfigErrorKind::MissingField,
            "missing `inputSchema`: `args` has placeholders, so the schema must declare them"
                .into()
        )]
    );
}

#[test]
fn names_programs_and_values_are_checked_where_they_are() {
    let cases: &[(&str, &str, ConfigErrorKind, &str)] = &[
        (
            r#"{"commands": {"a__b": {"command": "echo"}}}"#,
            "commands.a__b",
            ConfigErrorKind::InvalidName,
            "invalid command tool name `a__b`: `__` is reserved for upstream tools (`server__tool`)",
        ),
        (
            r#"{"commands": {"get_tools": {"command": "echo"}}}"#,
            "commands.get_tools",
            ConfigErrorKind::InvalidName,
            "the command tool name `get_tools` is taken by a built-in tool; choose another",
        ),
        (
            r#"{"commands": {"a.b": {"command": "echo"}}}"#,
            r#"commands["a.b"]"#,
            ConfigErrorKind::InvalidName,
            "invalid command tool name `a.b`: use 1 to 64 ASCII letters, digits, `_` or `-`",
        ),
        (
            r#"{"commands": {"x": {"command": "no-such-program-xyz"}}}"#,
            "commands.x.command",
            ConfigErrorKind::InvalidValue,
            "`no-such-program-xyz` was not found in /usr/local/bin:/usr/bin:/bin",
        ),
        (
            r#"{"commands": {"x": {"command": "bin/tool"}}}"#,
            "commands.x.command",
            ConfigErrorKind::InvalidValue,
            "`bin/tool` is a relative path; give an absolute path or a bare program name (looked up in /usr/local/bin:/usr/bin:/bin)",
        ),
        (
            r#"{"commands": {"x": {"command": "/etc/passwd"}}}"#,
            "commands.x.command",
            ConfigErrorKind::InvalidValue,
            "`/etc/passwd` is not an executable file",
        ),
        (
            r#"{"commands": {"x": {"args": []}}}"#,
            "commands.x",
            ConfigErrorKind::MissingField,
            "missing `command`",
        ),
        (
            r#"{"commands": {"x": {"command": "echo", "cwd": "/no/such/dir"}}}"#,
            "commands.x.cwd",
            ConfigErrorKind::InvalidValue,
            "`/no/such/dir` is not an existing directory",
        ),
        (
            r#"{"commands": {"x": {"command": "echo", "output": "yaml"}}}"#,
            "commands.x.output",
            ConfigErrorKind::InvalidValue,
            "unknown output `yaml`; expected \"text\", \"lines\", \"json\" or \"jsonl\"",
        ),
        (
            r#"{"commands": {"x": {"command": "echo", "maxOutput": 0}}}"#,
            "commands.x.maxOutput",
            ConfigErrorKind::InvalidValue,
            "must be greater than zero",
        ),
        (
            r#"{"commands": {"x": {"command": "echo", "timeoutSeconds": 0}}}"#,
            "commands.x.timeoutSeconds",
            ConfigErrorKind::InvalidValue,
            "expected a positive number of seconds, found a number (0)",
        ),
        (
            r#"{"commands": {"x": {"command": "echo", "env": {"A=B": "1"}}}}"#,
            r#"commands.x.env["A=B"]"#,
            ConfigErrorKind::InvalidName,
            "`A=B` is not an environment variable name (empty, `=` or NUL)",
        ),
        (
            r#"{"commands": {"x": {"command": "echo", "inputSchema": {"type": "string"}}}}"#,
            "commands.x.inputSchema",
            ConfigErrorKind::InvalidValue,
            "expected an object schema (`\"type\": \"object\"`), found an object",
        ),
        (
            r#"{"commands": {"x": {"command": "echo", "shell": true}}}"#,
            "commands.x.shell",
            ConfigErrorKind::UnknownKey,
            "unknown key `shell`; allowed keys: `command`, `args`, `inputSchema`, `description`, `cwd`, `env`, `timeoutSeconds`, `maxOutput`, `output`",
        ),
    ];
    for (json, path, kind, message) in cases {
        let got = errors(json);
        assert_eq!(
            got,
            [(path.to_string(), *kind, message.to_string())],
            "{json}"
        );
    }
}

#[test]
fn an_invalid_schema_is_a_config_error() {
    let got = errors(
        r#"{"commands": {"x": {"command": "echo",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "strng"}}}}}}"#,
    );
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, "commands.x.inputSchema");
    assert_eq!(got[0].1, ConfigErrorKind::InvalidValue);
    assert!(
        got[0].2.starts_with("not a valid JSON Schema (at `"),
        "{}",
        got[0].2
    );
}

#[test]
fn the_builtin_names_are_refused_and_commands_default_to_none() {
    assert!(Config::from_json_str("{}").unwrap().commands.is_empty());
    for name in BUILTIN_TOOL_NAMES {
        let json = format!(r#"{{"commands": {{"{name}": {{"command": "echo"}}}}}}"#);
        assert_eq!(errors(&json)[0].1, ConfigErrorKind::InvalidName, "{name}");
    }
}

#[test]
fn resolve_command_uses_the_fixed_path_only() {
    let sh = resolve_command("sh").unwrap();
    assert!(
        COMMAND_PATH
            .split(':')
            .any(|d| sh.parent() == Some(std::path::Path::new(d)))
    );
    assert_eq!(
        resolve_command("/bin/sh").unwrap(),
        std::path::Path::new("/bin/sh")
    );
    assert!(resolve_command("./sh").is_err());
}

#[test]
fn free_string_arguments_are_warned_about() {
    let c = Config::from_json_str(
        r#"{"commands": {"ps": {"command": "echo",
            "args": ["-o", "pid,args", "{pid}", "{any?}", "{n?}", "{mode?}", "{rev?}", "{flag?}"],
            "inputSchema": {"type": "object", "required": ["pid"], "properties": {
                "pid": {"type": "string"},
                "any": {},
                "n": {"type": "integer"},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "rev": {"type": "string", "pattern": "^[0-9a-f]{7,40}$"},
                "flag": {"type": "boolean"}}}}}}"#,
    )
    .unwrap();
    let warning = |name: &str| {
        (
            format!("commands.ps.inputSchema.properties.{name}"),
            format!(
                "`{{{name}}}` is a whole argument that may be any string, which the program may read as an option or a keyword of its own (`ps -o pid,args {{pid}}` with `pid: \"axe\"`); bound it with `\"type\": \"integer\"`, `enum` or `pattern`"
            ),
        )
    };
    let got: Vec<(String, String)> = c
        .warnings
        .iter()
        .map(|w| (w.path().to_string(), w.message().to_string()))
        .collect();
    assert_eq!(got, [warning("pid"), warning("any")]);
}

#[test]
fn every_error_of_the_section_is_reported_at_once() {
    let got = errors(
        r#"{"commands": {
            "a__b": {"command": "", "args": ["x{y}z", 3], "cwd": "/no/such/dir",
                     "env": {"A": 1, "D=E": "v"}, "timeoutSeconds": 0, "maxOutput": "x",
                     "output": "yaml", "shell": true},
            "ok": {"args": ["{p}"], "inputSchema": {"type": "object", "properties": {}}}
        }}"#,
    );
    use ConfigErrorKind::*;
    let want: Vec<(String, ConfigErrorKind, String)> = [
        (
            "commands.a__b",
            InvalidName,
            "invalid command tool name `a__b`: `__` is reserved for upstream tools (`server__tool`)",
        ),
        (
            "commands.a__b.shell",
            UnknownKey,
            "unknown key `shell`; allowed keys: `command`, `args`, `inputSchema`, `description`, `cwd`, `env`, `timeoutSeconds`, `maxOutput`, `output`",
        ),
        ("commands.a__b.command", InvalidValue, "the command is empty"),
        (
            "commands.a__b.args[0]",
            InvalidValue,
            "the placeholder `{y}` is part of the longer argument \"x{y}z\"; a placeholder must be a whole `args` element (it becomes exactly one argument): split it, e.g. [\"--format\", \"{format}\"]",
        ),
        (
            "commands.a__b.args[1]",
            WrongType,
            "expected a string, found a number (3)",
        ),
        (
            "commands.a__b.cwd",
            InvalidValue,
            "`/no/such/dir` is not an existing directory",
        ),
        (
            "commands.a__b.env.A",
            WrongType,
            "expected a string, found a number (1)",
        ),
        (
            "commands.a__b.timeoutSeconds",
            InvalidValue,
            "expected a positive number of seconds, found a number (0)",
        ),
        (
            "commands.a__b.maxOutput",
            InvalidValue,
            "`x` does not start with a whole number (e.g. 64MiB)",
        ),
        (
            "commands.a__b.output",
            InvalidValue,
            "unknown output `yaml`; expected \"text\", \"lines\", \"json\" or \"jsonl\"",
        ),
        (
            "commands.a__b.env[\"D=E\"]",
            InvalidName,
            "`D=E` is not an environment variable name (empty, `=` or NUL)",
        ),
        ("commands.ok", MissingField, "missing `command`"),
        (
            "commands.ok.args[0]",
            InvalidValue,
            "`{p}` is not a property of `inputSchema`; declare it there",
        ),
    ]
    .iter()
    .map(|(p, k, m)| (p.to_string(), *k, m.to_string()))
    .collect();
    assert_eq!(got, want);
}

#[test]
fn a_command_given_with_a_wrong_value_is_not_also_missing() {
    assert_eq!(
        errors(r#"{"commands": {"x": {"command": 5}}}"#),
        [(
            "commands.x.command".into(),
            ConfigErrorKind::WrongType,
            "expected a string, found a number (5)".into()
        )]
    );
}

#[test]
fn env_is_an_object_of_strings() {
    assert_eq!(
        errors(r#"{"commands": {"x": {"command": "echo", "env": ["A=1"]}}}"#),
        [(
            "commands.x.env".into(),
            ConfigErrorKind::WrongType,
            "expected an object, found an array".into()
        )]
    );
}
