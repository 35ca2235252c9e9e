//! The suite's client scenarios with codemode as the client, one row of [`ROWS`] each, run
//! concurrently (each scenario's test server listens on a port of its own): `codemode run`
//! through codemode_run.py, or `codemode serve` driven by a downstream Python SDK client. The
//! `auth/*` scenarios log in to the scenario's server ([`login`]): `codemode run --browser`
//! with an `oauth` object in the upstream's entry (`{}`, or what the scenario's registration
//! or grant needs).

use std::path::Path;
use std::sync::Mutex;

use serde_json::{Value, json};

use super::{checks, suite};
use crate::harness::{CODEMODE, Mode, Scratch};
use crate::peers;

/// The "browser" of the authorization-code scenarios: the suite's authorization endpoint
/// redirects at once to codemode's loopback listener, so following redirects completes a login.
const BROWSER: &str = "curl -sSL -o /dev/null";

/// How many scenarios run at once (each runs the suite, its test server and a client).
const CONCURRENT_ROWS: usize = 3;

/// How codemode is the client of a scenario.
enum Client {
    /// `codemode run` of `script` with the scenario's server as the upstream `conformance`
    /// (codemode_run.py): with `oauth`, an `oauth` object (this JSON, completed from
    /// `MCP_CONFORMANCE_CONTEXT`) in that upstream's entry; with `browser`, `--browser`
    /// [`BROWSER`].
    Run {
        script: &'static str,
        oauth: Option<&'static str>,
        browser: bool,
    },
    /// `codemode serve` over stdio under a Python SDK client in this mode that accepts every
    /// form with `{}` (clients/conformance_elicitation.py).
    Serve(Mode),
}

/// One client scenario, and what the client prints: `codemode run`'s result, or the Python
/// client's observations (JSON either way).
struct Row {
    scenario: &'static str,
    client: Client,
    prints: &'static str,
}

/// The sep1034 form accepted with `{}`, as the upstream received it and the human saw it.
const DEFAULTS_COMPLETED: &str = r#"{
    "result": "Elicitation completed: {\"age\":30,\"name\":\"John Doe\",\"score\":95.5,\"status\":\"active\",\"verified\":true}",
    "asked": [{"fields": ["age", "name", "score", "status", "verified"],
               "message": "[upstream server `conformance` asks]\n    Test client default value handling - please accept with defaults"}]
}"#;

/// An `auth/*` scenario: `codemode run --browser` logs in when the server asks, with `oauth`
/// as the upstream's `oauth` object (completed from the scenario's context), then runs
/// `return 1;` (the handshake and the tool listing are what need the login).
const fn login(scenario: &'static str, oauth: &'static str) -> Row {
    Row {
        scenario,
        client: Client::Run {
            script: "return 1;",
            oauth: Some(oauth),
            browser: true,
        },
        prints: "1",
    }
}

/// The client ID metadata document URL of the suite's CIMD scenario (its authorization server
/// accepts this one).
const CIMD: &str =
    r#"{"clientMetadataUrl": "https://conformance-test.local/client-metadata.json"}"#;
/// The client-credentials grant, its credentials from the scenario's context.
const HEADLESS: &str = r#"{"grantType": "client_credentials"}"#;

const ROWS: &[Row] = &[
    login("auth/metadata-default", "{}"),
    login("auth/metadata-var1", "{}"),
    login("auth/metadata-var2", "{}"),
    login("auth/metadata-var3", "{}"),
    login("auth/basic-cimd", CIMD),
    login("auth/scope-from-www-authenticate", "{}"),
    login("auth/scope-from-scopes-supported", "{}"),
    login("auth/scope-omitted-when-undefined", "{}"),
    // Its server asks for more scopes on `tools/call` only.
    Row {
        scenario: "auth/scope-step-up",
        client: Client::Run {
            script: r#"return await codemode["conformance__test-tool"]({});"#,
            oauth: Some("{}"),
            browser: true,
        },
        prints: r#""test""#,
    },
    // Its server never has enough scopes: codemode stops logging in after three attempts; the
    // upstream stays down and the script, which does not call it, still runs.
    login("auth/scope-retry-limit", "{}"),
    login("auth/token-endpoint-auth-basic", "{}"),
    login("auth/token-endpoint-auth-post", "{}"),
    login("auth/token-endpoint-auth-none", "{}"),
    login("auth/pre-registration", "{}"),
    login("auth/2025-03-26-oauth-metadata-backcompat", "{}"),
    login("auth/2025-03-26-oauth-endpoint-fallback", "{}"),
    login("auth/resource-mismatch", "{}"),
    login("auth/offline-access-scope", "{}"),
    login("auth/offline-access-not-supported", "{}"),
    login("auth/client-credentials-basic", HEADLESS),
    login("auth/client-credentials-jwt", HEADLESS),
    // Expected to fail (see expected-failures.txt): token exchange and the JWT-bearer grant.
    login("auth/cross-app-access-complete-flow", "{}"),
    Row {
        scenario: "initialize",
        client: Client::Run {
            script: "return 1;",
            oauth: None,
            browser: false,
        },
        prints: "1",
    },
    Row {
        scenario: "tools_call",
        client: Client::Run {
            script: "return await codemode.conformance__add_numbers({ a: 2, b: 3 });",
            oauth: None,
            browser: false,
        },
        prints: r#""The sum of 2 and 3 is 5""#,
    },
    Row {
        scenario: "sse-retry",
        client: Client::Run {
            script: "return await codemode.conformance__test_reconnection({});",
            oauth: None,
            browser: false,
        },
        prints: r#""Reconnection test completed successfully""#,
    },
    Row {
        scenario: "elicitation-sep1034-client-defaults",
        client: Client::Serve(Mode::Legacy),
        prints: DEFAULTS_COMPLETED,
    },
    Row {
        scenario: "elicitation-sep1034-client-defaults",
        client: Client::Serve(Mode::Auto),
        prints: DEFAULTS_COMPLETED,
    },
];

impl Row {
    /// A name for the row's scratch directory and messages.
    fn label(&self) -> String {
        let mode = match self.client {
            Client::Serve(mode) => format!("-{}", mode.protocol()),
            Client::Run { .. } => String::new(),
        };
        format!("{}{mode}", self.scenario.replace('/', "_"))
    }

    /// The client's command line for the suite, and what it adds to the client's environment.
    fn command(&self, scratch: &Scratch) -> (String, Vec<(&'static str, String)>) {
        let python = peers::python().display().to_string();
        // Each scenario's logins in its own state dir: rows run at once and all name their
        // upstream `conformance`, so a shared store would hand one scenario another's tokens.
        let state = (
            "CODEMODE_STATE_DIR",
            scratch.path("state").display().to_string(),
        );
        match &self.client {
            Client::Run {
                script,
                oauth,
                browser,
            } => {
                let script_file = scratch.path("script.js");
                std::fs::write(&script_file, script).expect("write the script");
                let oauth: Option<Value> =
                    oauth.map(|o| serde_json::from_str(o).expect("a row's oauth is JSON"));
                let spec = json!({
                    "codemode": CODEMODE, "dir": scratch.path(""), "script": script_file,
                    "oauth": oauth, "browser": browser.then_some(BROWSER),
                });
                let spec_file = scratch.path("client.json");
                std::fs::write(&spec_file, spec.to_string()).expect("write the client spec");
                let wrapper = here().join("codemode_run.py").display().to_string();
                let spec_file = spec_file.display().to_string();
                (
                    suite::shell_line(&[&python, &wrapper, &spec_file]),
                    vec![state],
                )
            }
            Client::Serve(mode) => {
                let client = Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/mcp/clients/conformance_elicitation.py");
                let env = vec![
                    ("CODEMODE_BIN", CODEMODE.to_string()),
                    (
                        "CODEMODE_CONFIG",
                        scratch.path("codemode.json").display().to_string(),
                    ),
                    ("CODEMODE_DIR", scratch.path("").display().to_string()),
                    ("CODEMODE_MODE", mode.as_str().to_string()),
                    ("PYTHONUNBUFFERED", "1".to_string()),
                    ("PYTHONDONTWRITEBYTECODE", "1".to_string()),
                    state,
                ];
                let client = client.display().to_string();
                (suite::shell_line(&[&python, &client]), env)
            }
        }
    }

    /// Runs the scenario: what did not end as expected (empty when all did).
    fn run(&self) -> Vec<String> {
        let label = self.label();
        let scratch = Scratch::new(&format!("conformance_{label}"));
        let out = scratch.path("results");
        let (command, env) = self.command(&scratch);
        let printed = suite::client(self.scenario, &command, &env, &out);
        let results = checks::load(&out, "");
        let mut wrong = checks::verdict(&[self.scenario], &results);
        let mut client_output = String::new();
        if let Some(result) = results.get(self.scenario) {
            let stdout = result.file("stdout.txt");
            let last = stdout
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            let got: Value = serde_json::from_str(last).unwrap_or(Value::Null);
            let want: Value = serde_json::from_str(self.prints).expect("a row's output is JSON");
            if got != want {
                wrong.push(format!("the client printed {stdout:?}, expected {want}"));
            }
            client_output = format!("stdout:\n{stdout}\nstderr:\n{}", result.file("stderr.txt"));
        }
        if wrong.is_empty() {
            return wrong;
        }
        let server_log = std::fs::read_to_string(scratch.path("server.log")).unwrap_or_default();
        vec![format!(
            "{label}:\n  {}\n---- the client's {client_output}\n---- codemode serve's log:\n{server_log}\n\
             ---- the suite's output:\n{}\n{}",
            wrong.join("\n  "),
            printed.stdout,
            printed.stderr
        )]
    }
}

fn here() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/conformance")
}

#[test]
fn codemode_passes_the_client_scenarios() {
    let next = Mutex::new(ROWS.iter());
    let wrong = Mutex::new(Vec::new());
    let offered = std::thread::scope(|scope| {
        let offered = scope.spawn(|| suite::scenarios().client);
        for _ in 0..CONCURRENT_ROWS {
            scope.spawn(|| {
                loop {
                    // Taken in a statement of its own: the lock is released before the row runs.
                    let row = next.lock().unwrap_or_else(|e| e.into_inner()).next();
                    let Some(row) = row else { break };
                    let found = row.run();
                    wrong
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .extend(found);
                }
            });
        }
        offered.join().expect("list the scenarios")
    });
    let mut missing: Vec<&str> = offered
        .iter()
        .map(String::as_str)
        .filter(|s| !ROWS.iter().any(|row| row.scenario == *s))
        .collect();
    missing.sort();
    assert!(
        missing.is_empty(),
        "client scenarios without a row: {missing:?}"
    );
    let wrong = wrong.into_inner().unwrap_or_else(|e| e.into_inner());
    assert!(
        wrong.is_empty(),
        "{} client scenario(s) did not end as expected:\n\n{}",
        wrong.len(),
        wrong.join("\n\n")
    );
}
