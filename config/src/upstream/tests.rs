//! Server entries as Claude Desktop, Claude Code, VS Code and Cursor write them.

use std::time::Duration;

use crate::{Config, ConfigErrorKind, ServerTransport};

fn env(name: &str) -> Option<String> {
    match name {
        "GITHUB_TOKEN" => Some("ghp_s3cret".into()),
        "HOME" => Some("/home/u".into()),
        _ => None,
    }
}

fn load(json: &str) -> Config {
    Config::from_json_str_with_env(json, env).unwrap_or_else(|e| panic!("{e}"))
}

/// `(path, kind, message)` of each error.
fn errors(json: &str) -> Vec<(String, ConfigErrorKind, String)> {
    Config::from_json_str_with_env(json, env)
        .unwrap_err()
        .errors
        .iter()
        .map(|e| (e.path().to_string(), e.kind(), e.message().to_string()))
        .collect()
}

fn stdio(config: &Config, name: &str) -> (String, Vec<String>, Vec<(String, String)>) {
    match &config.servers[name].transport {
        ServerTransport::Stdio {
            command, args, env, ..
        } => (
            command.clone(),
            args.clone(),
            env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn claude_desktop_and_cursor_entries_read_as_written() {
    // Claude Desktop: command/args/env only. Cursor adds `type` and `${env:…}`.
    let c = load(
        r#"{"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}/docs"]},
            "gh": {"type": "stdio", "command": "gh-mcp", "env": {"GITHUB_TOKEN": "${env:GITHUB_TOKEN}"}},
            "remote": {"type": "streamable-http", "url": "https://api.example.com/mcp"}
        }}"#,
    );
    assert_eq!(
        stdio(&c, "fs").1,
        [
            "-y",
            "@modelcontextprotocol/server-filesystem",
            "/home/u/docs"
        ]
    );
    assert_eq!(
        stdio(&c, "gh").2,
        [("GITHUB_TOKEN".to_string(), "ghp_s3cret".to_string())]
    );
    assert!(matches!(&c.servers["remote"].transport,
        ServerTransport::Http { url, .. } if url == "https://api.example.com/mcp"));
    assert!(c.warnings.is_empty());
}

#[test]
fn claude_code_mcp_json_reads_with_defaults_in_references() {
    let c = load(
        r#"{"mcpServers": {
            "api": {"type": "http", "url": "${API_BASE_URL:-https://api.example.com}/mcp",
                    "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}},
            "local": {"type": "stdio", "command": "/usr/bin/srv", "args": [], "env": {}}
        }}"#,
    );
    match &c.servers["api"].transport {
        ServerTransport::Http { url, headers, .. } => {
            assert_eq!(url, "https://api.example.com/mcp");
            assert_eq!(headers["Authorization"], "Bearer ghp_s3cret");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(stdio(&c, "local").0, "/usr/bin/srv");
}

#[test]
fn vs_code_mcp_json_with_servers_inputs_and_comments() {
    let c = load(
        r#"{
          // VS Code's .vscode/mcp.json
          "inputs": [{"type": "promptString", "id": "token", "description": "Token", "password": true}],
          "servers": {
            "time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time",],},
          },
        }"#,
    );
    assert_eq!(stdio(&c, "time").1, ["mcp-server-time"]);
    let warnings: Vec<String> = c.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            "inputs: codemode does not prompt for VS Code inputs, and a `${input:…}` reference is an error; put each value in an environment variable and write `${env:NAME}`"
        ]
    );
    assert_eq!(
        errors(r#"{"servers": {"t": {"command": "x", "env": {"K": "${input:token}"}}}}"#),
        [(
            "servers.t.env.K".to_string(),
            ConfigErrorKind::InvalidValue,
            "`${input:token}` is a VS Code input, which codemode cannot prompt for; put the value in an environment variable and write `${env:NAME}`".to_string()
        )]
    );
}

#[test]
fn disabled_entries_are_skipped_unchecked() {
    let c = load(
        r#"{"mcpServers": {
            "off": {"disabled": true, "command": "x", "env": {"T": "${UNSET}"}, "whatever": 1},
            "on": {"disabled": false, "command": "y"}
        }}"#,
    );
    assert_eq!(c.servers.keys().collect::<Vec<_>>(), ["on"]);
    assert_eq!(
        errors(r#"{"mcpServers": {"s": {"disabled": "yes", "command": "x"}}}"#),
        [(
            "mcpServers.s.disabled".to_string(),
            ConfigErrorKind::WrongType,
            "expected a boolean, found a string (\"yes\")".to_string()
        )]
    );
}

#[test]
fn client_only_keys_are_accepted_with_a_warning() {
    let c = load(
        r#"{"mcpServers": {"s": {"command": "x", "autoApprove": ["read"], "alwaysAllow": []}}}"#,
    );
    assert_eq!(c.servers.len(), 1);
    let warnings: Vec<String> = c.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            "mcpServers.s.autoApprove: `autoApprove` is a setting of the MCP client this entry comes from; codemode ignores it: which calls run without asking is decided by a profile (`evaluation.profiles.<name>.allowlist`, see the README's Profiles)",
            "mcpServers.s.alwaysAllow: `alwaysAllow` is a setting of the MCP client this entry comes from; codemode ignores it: which calls run without asking is decided by a profile (`evaluation.profiles.<name>.allowlist`, see the README's Profiles)",
        ]
    );
    // Other unknown keys stay errors.
    let got = errors(r#"{"mcpServers": {"s": {"command": "x", "envFile": ".env"}}}"#);
    assert_eq!(got[0].0, "mcpServers.s.envFile");
    assert_eq!(got[0].1, ConfigErrorKind::UnknownKey);
}

#[test]
fn types_are_checked_and_sse_is_refused_with_the_reason() {
    let got = errors(
        r#"{"mcpServers": {
            "a": {"type": "sse", "url": "http://127.0.0.1:1/sse"},
            "b": {"type": "http", "command": "x"},
            "c": {"type": "stdio", "url": "http://x/mcp"},
            "d": {"type": "websocket", "url": "ws://x"},
            "e": {"type": 1, "command": "x"}
        }}"#,
    );
    let want = [
        (
            "mcpServers.a.type",
            ConfigErrorKind::InvalidValue,
            "`sse` (the old HTTP+SSE transport) is not supported: codemode's MCP client (rmcp) has no client for it; use the server's streamable HTTP endpoint instead (`\"type\": \"http\"` with its URL, often ending in `/mcp`)",
        ),
        (
            "mcpServers.b.type",
            ConfigErrorKind::ConflictingKeys,
            "`type` says an HTTP server, but the entry has `command` (a stdio server); give `url`",
        ),
        (
            "mcpServers.c.type",
            ConfigErrorKind::ConflictingKeys,
            "`type` says a stdio server, but the entry has `url` (an HTTP server); give `command`",
        ),
        (
            "mcpServers.d.type",
            ConfigErrorKind::InvalidValue,
            "unknown server type `websocket`; allowed: `stdio`, `http`, `streamable-http`",
        ),
        (
            "mcpServers.d.url",
            ConfigErrorKind::InvalidValue,
            "`ws://x` is not an http:// or https:// URL",
        ),
        (
            "mcpServers.e.type",
            ConfigErrorKind::WrongType,
            "expected a string, found a number (1)",
        ),
    ];
    let want: Vec<(String, ConfigErrorKind, String)> = want
        .iter()
        .map(|(p, k, m)| (p.to_string(), *k, m.to_string()))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn unset_variables_are_errors_at_their_place_and_values_never_show() {
    let got = errors(
        r#"{"mcpServers": {
            "s": {"command": "x", "args": ["--token", "${MISSING_ARG}"], "env": {"A": "${env:MISSING_ENV}", "B": "${GITHUB_TOKEN}"}},
            "h": {"url": "${MISSING_URL}", "headers": {"X-Key": "${MISSING_HEADER}"}},
            "u": {"url": "ftp://${GITHUB_TOKEN}@host"}
        }}"#,
    );
    let paths: Vec<(&str, ConfigErrorKind)> =
        got.iter().map(|(p, k, _)| (p.as_str(), *k)).collect();
    assert_eq!(
        paths,
        [
            ("mcpServers.h.url", ConfigErrorKind::MissingEnv),
            ("mcpServers.h.headers.X-Key", ConfigErrorKind::MissingEnv),
            ("mcpServers.s.args[1]", ConfigErrorKind::MissingEnv),
            ("mcpServers.s.env.A", ConfigErrorKind::MissingEnv),
            ("mcpServers.u.url", ConfigErrorKind::InvalidValue),
        ]
    );
    assert_eq!(
        got[2].2,
        "the environment variable `MISSING_ARG` is not set (referenced as `${MISSING_ARG}`); set it, or give a default: `${MISSING_ARG:-value}`"
    );
    assert_eq!(
        got[4].2,
        "`ftp://${GITHUB_TOKEN}@host` is not an http:// or https:// URL"
    );
    for (_, _, message) in &got {
        assert!(!message.contains("ghp_s3cret"), "{message}");
    }
}

#[test]
fn start_timeout_is_read_and_defaults_to_30_seconds() {
    let c = load(
        r#"{"mcpServers": {"a": {"command": "x", "startTimeoutSeconds": 2.5}, "b": {"command": "y"}}}"#,
    );
    assert_eq!(c.servers["a"].startup_timeout, Duration::from_millis(2500));
    assert_eq!(c.servers["b"].startup_timeout, Duration::from_secs(30));
    let got = errors(r#"{"mcpServers": {"a": {"command": "x", "startTimeoutSeconds": 0}}}"#);
    assert_eq!(
        got,
        [(
            "mcpServers.a.startTimeoutSeconds".to_string(),
            ConfigErrorKind::InvalidValue,
            "expected a positive number of seconds, found a number (0)".to_string()
        )]
    );
}

#[test]
fn oauth_is_read_with_its_variables_and_its_secrets_redacted() {
    let c = load(
        r#"{"mcpServers": {"gh": {"url": "https://api.example.com/mcp", "oauth": {
            "clientId": "codemode", "clientSecret": "${GITHUB_TOKEN}",
            "scopes": ["repo", "read:org"], "redirectUri": "http://127.0.0.1:8765/callback"}},
          "auto": {"url": "https://b.example/mcp", "oauth": {}}}}"#,
    );
    let ServerTransport::Http {
        oauth: Some(oauth), ..
    } = &c.servers["gh"].transport
    else {
        panic!("{:?}", c.servers["gh"])
    };
    assert_eq!(oauth.client_id.as_deref(), Some("codemode"));
    assert_eq!(oauth.client_secret.as_deref(), Some("ghp_s3cret"));
    assert_eq!(oauth.scopes, ["repo", "read:org"]);
    assert_eq!(oauth.grant, crate::OAuthGrant::AuthorizationCode);
    assert_eq!(
        oauth.redirect_uri.as_deref(),
        Some("http://127.0.0.1:8765/callback")
    );
    let shown = format!("{oauth:?}");
    assert!(
        !shown.contains("ghp_s3cret") && shown.contains("<redacted>"),
        "{shown}"
    );
    assert!(matches!(&c.servers["auto"].transport,
        ServerTransport::Http { oauth: Some(o), .. } if *o == crate::UpstreamOAuth::default()));
}

#[test]
fn oauth_mistakes_are_named_where_they_are_without_the_secrets() {
    let got = errors(
        r#"{"mcpServers": {
          "a": {"url": "https://a/mcp", "oauth": {"clientSecret": "${GITHUB_TOKEN}"}},
          "b": {"url": "https://b/mcp", "oauth": {"grantType": "client_credentials", "clientId": "c"}},
          "c": {"url": "https://c/mcp", "oauth": {"privateKey": "pem", "clientId": "c"}},
          "d": {"url": "https://d/mcp", "oauth": {"redirectUri": "https://example.com/cb", "grantType": "password"}},
          "e": {"command": "x", "oauth": {}},
          "f": {"url": "https://f/mcp", "headers": {"Authorization": "Bearer t"}, "oauth": {}},
          "g": {"url": "https://g/mcp", "oauth": {"signingAlgorithm": "HS256", "clientMetadataUrl": "http://x/y"}}
        }}"#,
    );
    let found: Vec<(String, ConfigErrorKind)> =
        got.iter().map(|(p, k, _)| (p.clone(), *k)).collect();
    assert_eq!(
        found,
        [
            (
                "mcpServers.a.oauth.clientSecret".to_string(),
                ConfigErrorKind::ConflictingKeys
            ),
            (
                "mcpServers.b.oauth.grantType".to_string(),
                ConfigErrorKind::ConflictingKeys
            ),
            (
                "mcpServers.c.oauth.privateKey".to_string(),
                ConfigErrorKind::ConflictingKeys
            ),
            (
                "mcpServers.d.oauth.grantType".to_string(),
                ConfigErrorKind::InvalidValue
            ),
            (
                "mcpServers.d.oauth.redirectUri".to_string(),
                ConfigErrorKind::InvalidValue
            ),
            (
                "mcpServers.e.oauth".to_string(),
                ConfigErrorKind::ConflictingKeys
            ),
            (
                "mcpServers.f.oauth".to_string(),
                ConfigErrorKind::ConflictingKeys
            ),
            (
                "mcpServers.g.oauth.signingAlgorithm".to_string(),
                ConfigErrorKind::InvalidValue
            ),
            (
                "mcpServers.g.oauth.clientMetadataUrl".to_string(),
                ConfigErrorKind::InvalidValue
            ),
        ]
    );
    assert_eq!(
        got[1].2,
        "the client-credentials grant needs exactly one of `clientSecret` and `privateKey`"
    );
    assert_eq!(
        got[3].2,
        "unknown grant `password`; allowed: `authorization_code`, `client_credentials`"
    );
    for (_, _, message) in &got {
        assert!(
            !message.contains("ghp_s3cret") && !message.contains("pem"),
            "{message}"
        );
    }
}

#[test]
fn every_error_of_the_servers_is_reported_at_once() {
    let got = errors(
        r#"{"mcpServers": {
            "a b": {"type": 1, "command": "", "args": ["${UNSET}", 2], "env": {"K": 3, "L": "${UNSET2}"},
                    "headers": {}, "timeoutSeconds": 0, "isolateSessions": "no", "disabled": "x",
                    "extra": 1},
            "h": {"url": 5, "cwd": "/"},
            "z": {"url": "https://z/mcp", "args": [],
                  "oauth": {"scopes": ["a b", 3, "${GITHUB_TOKEN}"], "grantType": 2}}
        }}"#,
    );
    use ConfigErrorKind::*;
    let unset = |name: &str| {
        format!(
            "the environment variable `{name}` is not set (referenced as `${{{name}}}`); set it, or give a default: `${{{name}:-value}}`"
        )
    };
    let want: Vec<(String, ConfigErrorKind, String)> = [
        (
            r#"mcpServers["a b"]"#,
            InvalidName,
            "invalid server name `a b`: use 1 to 64 ASCII letters, digits, `_` or `-`".to_string(),
        ),
        (
            r#"mcpServers["a b"].extra"#,
            UnknownKey,
            "unknown key `extra`; allowed keys: `type`, `command`, `args`, `env`, `cwd`, `url`, `headers`, `oauth`, `timeoutSeconds`, `startTimeoutSeconds`, `isolateSessions`, `disabled`, `autoApprove`, `alwaysAllow`".to_string(),
        ),
        (
            r#"mcpServers["a b"].type"#,
            WrongType,
            "expected a string, found a number (1)".to_string(),
        ),
        (
            r#"mcpServers["a b"].command"#,
            InvalidValue,
            "the command is empty".to_string(),
        ),
        (
            r#"mcpServers["a b"].args[1]"#,
            WrongType,
            "expected a string, found a number (2)".to_string(),
        ),
        (
            r#"mcpServers["a b"].env.K"#,
            WrongType,
            "expected a string, found a number (3)".to_string(),
        ),
        (
            r#"mcpServers["a b"].timeoutSeconds"#,
            InvalidValue,
            "expected a positive number of seconds, found a number (0)".to_string(),
        ),
        (
            r#"mcpServers["a b"].isolateSessions"#,
            WrongType,
            "expected a boolean, found a string (\"no\")".to_string(),
        ),
        (
            r#"mcpServers["a b"].disabled"#,
            WrongType,
            "expected a boolean, found a string (\"x\")".to_string(),
        ),
        (
            r#"mcpServers["a b"].headers"#,
            ConflictingKeys,
            "`headers` applies to HTTP servers (with `url`) only".to_string(),
        ),
        (r#"mcpServers["a b"].args[0]"#, MissingEnv, unset("UNSET")),
        (r#"mcpServers["a b"].env.L"#, MissingEnv, unset("UNSET2")),
        (
            "mcpServers.h.url",
            WrongType,
            "expected a string, found a number (5)".to_string(),
        ),
        (
            "mcpServers.h.cwd",
            ConflictingKeys,
            "`cwd` applies to stdio servers (with `command`) only".to_string(),
        ),
        (
            "mcpServers.z.oauth.grantType",
            WrongType,
            "expected a string, found a number (2)".to_string(),
        ),
        (
            "mcpServers.z.oauth.scopes[1]",
            WrongType,
            "expected a string, found a number (3)".to_string(),
        ),
        (
            "mcpServers.z.args",
            ConflictingKeys,
            "`args` applies to stdio servers (with `command`) only".to_string(),
        ),
        (
            "mcpServers.z.oauth.scopes[0]",
            InvalidValue,
            "a scope is one non-empty word without spaces".to_string(),
        ),
    ]
    .into_iter()
    .map(|(p, k, m)| (p.to_string(), k, m))
    .collect();
    assert_eq!(got, want);
}

#[test]
fn a_url_given_with_a_wrong_value_is_not_also_missing() {
    assert_eq!(
        errors(r#"{"mcpServers": {"s": {"url": true}}}"#),
        [(
            "mcpServers.s.url".to_string(),
            ConfigErrorKind::WrongType,
            "expected a string, found a boolean (true)".to_string()
        )]
    );
}
