//! Running the suite's command line: `list`, `server --url URL`, `client --command CMD`, each
//! writing its checks under an output directory (`-o DIR`).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::harness::run_with_deadline;
use crate::peers;

/// Longest one run of the suite may take (it gives a client 30 s per scenario, its default).
const SUITE_DEADLINE: Duration = Duration::from_secs(180);

/// The scenarios the installed suite offers, in its order.
pub struct Scenarios {
    /// Scenarios run against a server (`server --scenario S`).
    pub server: Vec<String>,
    /// Scenarios run against a client (`client --scenario S`).
    pub client: Vec<String>,
}

/// What a run of the suite printed (shown with a failure: it names the scenarios it ran).
pub struct Printed {
    pub stdout: String,
    pub stderr: String,
}

fn suite(args: &[&str]) -> Command {
    peers::ensure_installed();
    let (node, entry) = peers::conformance_cmd();
    let mut cmd = Command::new(node);
    cmd.args(entry).args(args);
    cmd
}

fn run(what: &str, mut cmd: Command) -> Printed {
    let (status, stdout, stderr) = run_with_deadline(&mut cmd, SUITE_DEADLINE);
    // The suite exits non-zero when a check fails, expected or not: the checks themselves are
    // judged by the caller; only a run that never finished is an error here.
    assert!(
        status.is_some(),
        "the conformance suite ({what}) did not finish within {SUITE_DEADLINE:?}\n\
         stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    Printed { stdout, stderr }
}

/// `list`: every scenario of the installed suite.
pub fn scenarios() -> Scenarios {
    let printed = run("list", suite(&["list"]));
    let mut scenarios = Scenarios {
        server: Vec::new(),
        client: Vec::new(),
    };
    let mut section = None;
    for line in printed.stdout.lines() {
        if line.starts_with("Server scenarios") {
            section = Some(&mut scenarios.server);
        } else if line.starts_with("Client scenarios") {
            section = Some(&mut scenarios.client);
        } else if let (Some(list), Some(item)) = (section.as_mut(), line.trim().strip_prefix("- "))
        {
            // `  - name [2025-06-18,2025-11-25]`
            let name = item.split_whitespace().next().unwrap_or_default();
            list.push(name.to_string());
        }
    }
    assert!(
        !scenarios.server.is_empty() && !scenarios.client.is_empty(),
        "`conformance list` printed no scenarios:\n{}\n{}",
        printed.stdout,
        printed.stderr
    );
    scenarios
}

/// Every server scenario, the pending ones too (`--suite all`), against the MCP endpoint `url`;
/// each scenario's checks go to `out/server-<scenario>-<time>/checks.json`.
pub fn server(url: &str, out: &Path) -> Printed {
    let mut cmd = suite(&["server", "--url", url, "--suite", "all", "-o"]);
    cmd.arg(out);
    run("server", cmd)
}

/// The client scenario `scenario` with `command` as the client (the suite appends its test
/// server's URL as the last argument and runs the line with a shell), `env` added to the
/// suite's environment, which the client inherits. Its checks, stdout and stderr go to
/// `out/<scenario>-<time>/`.
pub fn client(scenario: &str, command: &str, env: &[(&str, String)], out: &Path) -> Printed {
    let mut cmd = suite(&["client", "--scenario", scenario, "--command", command, "-o"]);
    cmd.arg(out);
    for (key, value) in env {
        cmd.env(key, value);
    }
    run(scenario, cmd)
}

/// `words` as one shell command line (the suite runs the client's command with a shell).
pub fn shell_line(words: &[&str]) -> String {
    let quoted: Vec<String> = words
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
        .collect();
    quoted.join(" ")
}
