use std::time::Duration;

use serde_json::json;

use super::*;
use crate::{ConfigErrorKind, DispositionKind};
use codemode_config::ServerTransport;
use codemode_config::{DEFAULT_CONFIG_JSON, DEFAULT_SERVER_START_TIMEOUT, DEFAULT_SERVER_TIMEOUT};

const EXAMPLE: &str = r#"{
  "mcpServers": {
    "name": { "command": "npx", "args": ["-y","x"], "env": {"K":"V"}, "cwd": "/x" },
    "other": { "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer x"}, "timeoutSeconds": 5,
               "isolateSessions": true }
  },
  "evaluation": {
    "defaultProfile": "supervised",
    "profiles": {
      "safe":       { "allowlist": ["time__*", "search_tools", "get_tools"] },
      "supervised": { "denylist": ["filesystem__delete_*"],
                      "asklist": ["filesystem__*", "gitlab__*"],
                      "elicitationFallback": "deny",
                      "approvalTimeoutSeconds": 60,
                      "maxPendingApprovals": 4,
                      "rules": [ { "tools": ["filesystem__write_file"], "when": { "/path": "^/etc/" },
                                   "disposition": "deny", "reason": "system files" } ] }
    }
  },
  "limits": { "fuel": 0, "memory": "64MiB", "timeout": "30s", "maxOutput": "1MiB", "maxToolCalls": 0, "maxConcurrentToolCalls": 16 },
  "audit":  { "dir": "./audit-logs", "includeArgs": false }
}"#;

#[test]
fn the_documented_example_parses() {
    let c = Config::from_json_str(EXAMPLE).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        c.servers["name"],
        ServerConfig {
            transport: ServerTransport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "x".into()],
                env: [("K".to_string(), "V".to_string())].into(),
                cwd: Some("/x".into()),
            },
            timeout: DEFAULT_SERVER_TIMEOUT,
            startup_timeout: DEFAULT_SERVER_START_TIMEOUT,
            isolate_sessions: false,
        }
    );
    assert_eq!(
        c.servers["other"],
        ServerConfig {
            transport: ServerTransport::Http {
                url: "http://127.0.0.1:1/mcp".into(),
                headers: [("Authorization".to_string(), "Bearer x".to_string())].into(),
                oauth: None,
            },
            timeout: Duration::from_secs(5),
            startup_timeout: DEFAULT_SERVER_START_TIMEOUT,
            isolate_sessions: true,
        }
    );
    // `0` in the file means unlimited.
    assert_eq!(
        c.limits,
        Limits {
            fuel: None,
            max_tool_calls: None,
            ..Limits::default()
        }
    );
    assert_eq!(
        c.audit,
        AuditConfig {
            dir: Some("./audit-logs".into()),
            include_args: false,
            key_env: None,
            key: None,
        }
    );
    assert_eq!(c.evaluation.default_profile.as_deref(), Some("supervised"));
    let p = c.resolve_profile(None).unwrap().unwrap();
    assert_eq!(p.name(), "supervised");
    assert_eq!(p.asklist(), ["filesystem__*", "gitlab__*"]);
    assert_eq!(p.rules()[0].reason(), Some("system files"));
    assert_eq!(p.rules()[0].when()[0].pointer(), "/path");
    assert_eq!(p.approval_timeout(), Duration::from_secs(60));
    let d = p.disposition("filesystem__write_file", &json!({"path": "/etc/hosts"}));
    assert_eq!(d.kind, DispositionKind::Deny);
    let safe = c.resolve_profile(Some("safe")).unwrap().unwrap();
    assert_eq!(
        safe.allowlist(),
        Some(
            &[
                "time__*".to_string(),
                "search_tools".into(),
                "get_tools".into()
            ][..]
        )
    );
    let err = c.resolve_profile(Some("nope")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown profile `nope`; available: safe, supervised"
    );
}

#[test]
fn defaults() {
    let c = Config::default();
    assert!(c.servers.is_empty() && c.evaluation.profiles.is_empty());
    assert!(c.resolve_profile(None).unwrap().is_none());
    let l = &c.limits;
    assert_eq!(l.fuel, Some(codemode_runtime::DEFAULT_FUEL));
    assert_eq!(l.memory, 64 * 1024 * 1024);
    assert_eq!(l.timeout, Duration::from_secs(30));
    assert_eq!(l.max_output, 1024 * 1024);
    assert_eq!(l.max_result_text, 24 * 1024);
    assert_eq!(l.max_media_bytes, 4 * 1024 * 1024);
    assert_eq!(
        l.max_tool_calls,
        Some(codemode_runtime::DEFAULT_MAX_TOOL_CALLS)
    );
    assert_eq!(l.eval_options(), codemode_runtime::EvalOptions::default());
    assert_eq!(l.max_concurrent_tool_calls, 16);
    assert_eq!(c.audit.dir, None);
    // The embedded JSON says the same.
    let parsed = Config::from_json_str(DEFAULT_CONFIG_JSON).unwrap();
    assert_eq!(parsed.limits, c.limits);
    assert_eq!(parsed.audit, c.audit);
    assert_eq!(parsed.durable, c.durable);
    assert!(parsed.servers.is_empty() && parsed.evaluation.profiles.is_empty());
    // An empty object is the default too; a profile gets its documented defaults.
    let c = Config::from_json_str(r#"{"evaluation": {"profiles": {"p": {}}}}"#).unwrap();
    let p = c.profile("p").unwrap();
    assert_eq!(p.approval_timeout(), Duration::from_secs(60));
    assert_eq!(p.max_pending_approvals(), 4);
    assert_eq!(p.elicitation_fallback(), crate::Fallback::Deny);
    assert_eq!(p.allowlist(), None);
    // Unprofiled unless defaultProfile is set.
    assert!(c.resolve_profile(None).unwrap().is_none());
}

#[test]
fn valid_variants() {
    type Check = fn(&Config);
    let cases: &[(&str, Check)] = &[
        (r#"{"servers": {"a-b_1": {"command": "x"}}}"#, |c| {
            assert!(c.servers.contains_key("a-b_1"))
        }),
        (
            r#"{"$schema": "https://x", "limits": {"memory": 1000, "maxOutput": "10MB"}}"#,
            |c| {
                assert_eq!((c.limits.memory, c.limits.max_output), (1000, 10_000_000));
            },
        ),
        (
            r#"{"limits": {"maxResultText": "1KiB"}, "evaluation": {"profiles": {"p": {"description": "reads only"}}}}"#,
            |c| {
                assert_eq!(c.limits.max_result_text, 1024);
                assert_eq!(c.profile("p").unwrap().description(), Some("reads only"));
            },
        ),
        (r#"{"limits": {"maxMediaBytes": "512KiB"}}"#, |c| {
            assert_eq!(c.limits.max_media_bytes, 512 * 1024)
        }),
        (
            r#"{"limits": {"fuel": 5, "maxToolCalls": 3, "timeout": "1m30s"}}"#,
            |c| {
                assert_eq!(c.limits.fuel, Some(5));
                assert_eq!(c.limits.max_tool_calls, Some(3));
                assert_eq!(c.limits.timeout, Duration::from_secs(90));
            },
        ),
        (
            r#"{"evaluation": {"profiles": {"p": {"approvalTimeoutSeconds": 0.5, "elicitationFallback": "allow"}}}}"#,
            |c| {
                let p = c.profile("p").unwrap();
                assert_eq!(p.approval_timeout(), Duration::from_millis(500));
                assert_eq!(p.elicitation_fallback(), crate::Fallback::Allow);
            },
        ),
        (
            r#"{"audit": {"dir": "/var/log/cm", "includeArgs": true}}"#,
            |c| {
                assert!(c.audit.include_args);
            },
        ),
    ];
    for (json, check) in cases {
        let c = Config::from_json_str(json).unwrap_or_else(|e| panic!("{json}: {e}"));
        check(&c);
    }
}

/// Each case: a document and, for every error expected, a `path: message` fragment and its
/// kind, in any order (the exact number of errors is checked).
#[test]
fn invalid_configs_report_every_error_with_its_path() {
    use ConfigErrorKind::*;
    let bad_descriptions = r#"{"limits": {"maxResultText": 255}, "evaluation": {"profiles": {
        "a": {"description": 3}, "b": {"description": "DESC"}}}}"#
        .replace("DESC", &"d".repeat(501));
    let cases: &[(&str, &[(&str, ConfigErrorKind)])] = &[
        (
            "{\"limits\": {\n  \"memory\": ,\n}}",
            &[(
                "(root): invalid JSON at line 2, column 13: expected value",
                Syntax,
            )],
        ),
        (
            "[]",
            &[("(root): expected an object, found an array", WrongType)],
        ),
        (
            r#"{"mcpServers": {"fs": {"command": "a"}, "fs": {"command": "b"}},
                "evaluation": {"profiles": {"p": {"deny": ["x"], "deny": ["y"]}}}}"#,
            &[
                (
                    "mcpServers.fs: the key `fs` is given more than once in this object",
                    DuplicateKey,
                ),
                (
                    "evaluation.profiles.p.deny: the key `deny` is given more than once",
                    DuplicateKey,
                ),
            ],
        ),
        (
            r#"{"limit": {}, "audit": {"dirr": "x"}}"#,
            &[
                (
                    "limit: unknown key `limit` (did you mean `limits`?); allowed keys: `$schema`, `mcpServers`",
                    UnknownKey,
                ),
                (
                    "audit.dirr: unknown key `dirr` (did you mean `dir`?); allowed keys: `dir`, `includeArgs`, `keyEnv`",
                    UnknownKey,
                ),
            ],
        ),
        (
            r#"{"mcpServers": {}, "servers": {}}"#,
            &[(
                "servers: `servers` is an alias of `mcpServers`; give only one of them",
                ConflictingKeys,
            )],
        ),
        (
            r#"{"mcpServers": {"a__b": {"command": "x"}, "bad name": {"command": "x"}, "": {"url": "x"}}}"#,
            &[
                (
                    "mcpServers.a__b: invalid server name `a__b`: `__` is reserved",
                    InvalidName,
                ),
                (
                    "mcpServers[\"bad name\"]: invalid server name `bad name`: use 1 to 64",
                    InvalidName,
                ),
                ("mcpServers[\"\"]: invalid server name ``", InvalidName),
                (
                    "mcpServers[\"\"].url: `x` is not an http:// or https:// URL",
                    InvalidValue,
                ),
            ],
        ),
        (
            r#"{"servers": {"both": {"command": "x", "url": "http://x"}, "neither": {"args": []}}}"#,
            &[
                (
                    "servers.both: give either `command` (stdio server) or `url` (HTTP server), not both",
                    ConflictingKeys,
                ),
                (
                    "servers.neither: missing `command` (stdio server) or `url` (HTTP server)",
                    MissingField,
                ),
            ],
        ),
        (
            r#"{"servers": {"s": {"command": 1, "args": [1], "env": {"K": 2}, "headers": {}, "timeoutSeconds": -1},
                            "h": {"url": "https://x", "cwd": "/", "headers": []}}}"#,
            &[
                (
                    "servers.s.timeoutSeconds: expected a positive number of seconds, found a number (-1)",
                    InvalidValue,
                ),
                (
                    "servers.s.headers: `headers` applies to HTTP servers (with `url`) only",
                    ConflictingKeys,
                ),
                (
                    "servers.s.command: expected a string, found a number (1)",
                    WrongType,
                ),
                (
                    "servers.s.args[0]: expected a string, found a number (1)",
                    WrongType,
                ),
                (
                    "servers.s.env.K: expected a string, found a number (2)",
                    WrongType,
                ),
                (
                    "servers.h.cwd: `cwd` applies to stdio servers (with `command`) only",
                    ConflictingKeys,
                ),
                (
                    "servers.h.headers: expected an object, found an array",
                    WrongType,
                ),
            ],
        ),
        (
            r#"{"limits": {"memory": "64 parsecs", "timeout": 30, "maxOutput": 0, "fuel": -1,
                           "maxToolCalls": "3", "maxConcurrentToolCalls": 0,
                           "maxMediaBytes": "4 parsecs"}}"#,
            &[
                ("limits.memory: unknown unit `parsecs`", InvalidValue),
                (
                    "limits.timeout: expected a duration such as \"30s\", found a number (30)",
                    WrongType,
                ),
                ("limits.maxOutput: must be greater than zero", InvalidValue),
                (
                    "limits.fuel: expected a non-negative whole number, found a number (-1)",
                    WrongType,
                ),
                (
                    "limits.maxToolCalls: expected a non-negative whole number, found a string (\"3\")",
                    WrongType,
                ),
                (
                    "limits.maxConcurrentToolCalls: must be at least 1",
                    InvalidValue,
                ),
                ("limits.maxMediaBytes: unknown unit `parsecs`", InvalidValue),
            ],
        ),
        (
            &bad_descriptions,
            &[
                (
                    "evaluation.profiles.a.description: expected a string, found a number (3)",
                    WrongType,
                ),
                (
                    "evaluation.profiles.b.description: at most 500 characters (it goes into a tool description), found 501",
                    InvalidValue,
                ),
                (
                    "limits.maxResultText: must be at least 256 bytes, found 255",
                    InvalidValue,
                ),
            ],
        ),
        (
            r#"{"limits": {"timeout": "30"}}"#,
            &[(
                "limits.timeout: `30` has no unit; write e.g. `30s`",
                InvalidValue,
            )],
        ),
        (
            r#"{"limits": {"timeout": "0s"}}"#,
            &[(
                "limits.timeout: the timeout must be greater than zero",
                InvalidValue,
            )],
        ),
        (
            r#"{"audit": {"dir": "", "includeArgs": "yes"}}"#,
            &[
                ("audit.dir: the directory is empty", InvalidValue),
                ("audit.includeArgs: expected a boolean", WrongType),
            ],
        ),
        (
            r#"{"audit": {"dir": "d", "keyEnv": "CODEMODE_TEST_SURELY_UNSET_AUDIT_KEY"}}"#,
            &[(
                "audit.keyEnv: the environment variable `CODEMODE_TEST_SURELY_UNSET_AUDIT_KEY` (the audit key) is not set",
                MissingEnv,
            )],
        ),
        (
            r#"{"audit": {"keyEnv": ""}}"#,
            &[("audit.keyEnv: the variable name is empty", InvalidValue)],
        ),
        (
            r#"{"evaluation": {"defaultProfile": "missing", "profiles": {"bad-name": {}, "ok": {}}}}"#,
            &[
                (
                    "evaluation.profiles.bad-name: invalid profile name `bad-name`",
                    InvalidName,
                ),
                (
                    "evaluation.defaultProfile: no profile is called `missing`; profiles: bad-name, ok",
                    UnknownProfile,
                ),
            ],
        ),
        (
            r#"{"evaluation": {"defaultProfile": "x"}}"#,
            &[(
                "evaluation.defaultProfile: no profile is called `x`; profiles: none",
                UnknownProfile,
            )],
        ),
        (
            r#"{"evaluation": {"profiles": {"supervised": {
                "asklist": ["ok__*", "filesystem__[", "a{b"], "denylist": "x",
                "elicitationFallback": "maybe", "approvalTimeoutSeconds": 0, "maxPendingApprovals": 0,
                "allowList": []}}}}"#,
            &[
                (
                    "evaluation.profiles.supervised.asklist[1]: invalid glob `filesystem__[`: unclosed character class; missing ']'",
                    InvalidGlob,
                ),
                (
                    "evaluation.profiles.supervised.asklist[2]: invalid glob `a{b`: unclosed alternate group",
                    InvalidGlob,
                ),
                (
                    "evaluation.profiles.supervised.denylist: expected an array of strings, found a string (\"x\")",
                    WrongType,
                ),
                (
                    "evaluation.profiles.supervised.elicitationFallback: expected \"deny\" or \"allow\", found a string (\"maybe\")",
                    InvalidValue,
                ),
                (
                    "evaluation.profiles.supervised.approvalTimeoutSeconds: expected a positive number of seconds, found a number (0)",
                    InvalidValue,
                ),
                (
                    "evaluation.profiles.supervised.maxPendingApprovals: must be at least 1",
                    InvalidValue,
                ),
                (
                    "evaluation.profiles.supervised.allowList: unknown key `allowList` (did you mean `allowlist`?)",
                    UnknownKey,
                ),
            ],
        ),
        (
            r#"{"evaluation": {"profiles": {"p": {"rules": [
                {"tools": ["fs__*"], "when": {"path": "^/etc/", "/a": "(", "/b": 3}, "disposition": "block"},
                {"when": {}},
                {"tools": [], "disposition": "ask", "reason": 1, "extra": true},
                "nope"
            ]}}}}"#,
            &[
                (
                    "evaluation.profiles.p.rules[0].when.path: `path` is not a JSON Pointer: it must be \"\" (the whole arguments) or start with `/` (e.g. \"/path\")",
                    InvalidPointer,
                ),
                (
                    "evaluation.profiles.p.rules[0].when[\"/a\"]: invalid regex `(`: unclosed group (at character 1)",
                    InvalidRegex,
                ),
                (
                    "evaluation.profiles.p.rules[0].when[\"/b\"]: expected a string, found a number (3)",
                    WrongType,
                ),
                (
                    "evaluation.profiles.p.rules[0].disposition: expected \"allow\", \"deny\" or \"ask\", found a string (\"block\")",
                    InvalidValue,
                ),
                (
                    "evaluation.profiles.p.rules[1]: missing `tools`",
                    MissingField,
                ),
                (
                    "evaluation.profiles.p.rules[1]: missing `disposition`",
                    MissingField,
                ),
                (
                    "evaluation.profiles.p.rules[2].tools: needs at least one glob",
                    InvalidValue,
                ),
                (
                    "evaluation.profiles.p.rules[2].reason: expected a string, found a number (1)",
                    WrongType,
                ),
                (
                    "evaluation.profiles.p.rules[2].extra: unknown key `extra`; allowed keys: `tools`, `when`, `whenPath`, `base`, `disposition`, `reason`",
                    UnknownKey,
                ),
                (
                    "evaluation.profiles.p.rules[3]: expected an object, found a string (\"nope\")",
                    WrongType,
                ),
            ],
        ),
        (
            r#"{"evaluation": {"profiles": {"p": {"rules": [
                {"tools": ["fs__*"], "whenPath": {"path": ["/etc/**"], "/a": [], "/b": "/etc", "/c": ["etc/**"], "/d": ["/a["]}, "disposition": "deny"},
                {"tools": ["fs__*"], "base": "/srv", "disposition": "deny"},
                {"tools": ["fs__*"], "whenPath": {"/p": ["/etc"]}, "base": "srv", "disposition": "deny"}
            ]}}}}"#,
            &[
                (
                    "evaluation.profiles.p.rules[0].whenPath.path: `path` is not a JSON Pointer",
                    InvalidPointer,
                ),
                (
                    "evaluation.profiles.p.rules[0].whenPath[\"/a\"]: needs at least one path glob (e.g. [\"/etc/**\"])",
                    InvalidValue,
                ),
                (
                    "evaluation.profiles.p.rules[0].whenPath[\"/b\"]: expected an array of strings, found a string (\"/etc\")",
                    WrongType,
                ),
                (
                    "evaluation.profiles.p.rules[0].whenPath[\"/c\"][0]: `etc/**` is not an absolute path glob",
                    InvalidGlob,
                ),
                (
                    "evaluation.profiles.p.rules[0].whenPath[\"/d\"][0]: invalid glob `/a[`",
                    InvalidGlob,
                ),
                (
                    "evaluation.profiles.p.rules[1].base: `base` resolves relative `whenPath` values; this rule has no `whenPath`",
                    InvalidValue,
                ),
                (
                    "evaluation.profiles.p.rules[2].base: `srv` is not an absolute directory (it must start with `/`)",
                    InvalidValue,
                ),
            ],
        ),
        (
            r#"{"evaluation": {"profiles": {"p": {"rules": {}}}}}"#,
            &[(
                "evaluation.profiles.p.rules: expected an array of rules, found an object",
                WrongType,
            )],
        ),
    ];
    for (json, wanted) in cases {
        let errs = match Config::from_json_str(json) {
            Ok(_) => panic!("accepted: {json}"),
            Err(e) => e,
        };
        let lines: Vec<String> = errs.to_string().lines().map(str::to_string).collect();
        assert_eq!(lines.len(), errs.errors.len(), "one line per error: {errs}");
        for (want, kind) in *wanted {
            let Some(error) = errs.iter().find(|e| e.to_string().contains(want)) else {
                panic!("missing `{want}` in:\n{errs}");
            };
            assert_eq!(error.kind(), *kind, "the kind of `{error}`");
        }
        assert_eq!(
            lines.len(),
            wanted.len(),
            "unexpected errors for {json}:\n{errs}"
        );
    }
}

#[test]
fn load_names_the_file() {
    let dir = std::env::temp_dir().join(format!("codemode-policies-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("missing.json");
    let err = Config::load(&missing).unwrap_err();
    assert_eq!(err.errors.len(), 1);
    let error = &err.errors[0];
    assert_eq!(error.path(), missing.display().to_string());
    assert_eq!(error.kind(), ConfigErrorKind::Io);
    assert!(
        error.message().starts_with("cannot read the file: "),
        "{err}"
    );
    let source = std::error::Error::source(error).expect("the I/O error is the source");
    let io = source
        .downcast_ref::<std::io::Error>()
        .expect("an io::Error");
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);

    let file = dir.join("ok.json");
    std::fs::write(&file, EXAMPLE).unwrap();
    let c = Config::load(&file).unwrap();
    assert_eq!(c.servers.len(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn profile_from_json_paths_are_relative() {
    let err = Profile::from_json("p", &json!({"asklist": ["["]})).unwrap_err();
    assert_eq!(err.errors[0].kind(), ConfigErrorKind::InvalidGlob);
    assert_eq!(
        err.to_string(),
        "asklist[0]: invalid glob `[`: unclosed character class; missing ']'"
    );
    let err = Profile::from_json("no-dash", &json!({})).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("(root): invalid profile name `no-dash`"),
        "{err}"
    );
}
