//! The suite's verdicts: the checks of each scenario (`checks.json`), judged against
//! `expected-failures.txt`. A check passes when it is SUCCESS, or has the status its line in
//! that file gives; INFO entries are the suite's trace, not checks. Anything else — a failing
//! check not listed, a listed one that now has another status (passing included: take it off
//! the list), a listed scenario or check that no longer ran — fails the test with the check's
//! name and message.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// How the suite stamps a result directory: `-2026-11-28T04-06-25-216Z` after the scenario.
const TIMESTAMP_SUFFIX: usize = "-2026-11-28T04-06-25-216Z".len();

/// One scenario's results.
pub struct Scenario {
    /// The directory holding `checks.json` (and, for client scenarios, the client's
    /// `stdout.txt` and `stderr.txt`).
    pub dir: PathBuf,
    /// Every entry of `checks.json`, INFO ones included.
    pub checks: Vec<Value>,
}

impl Scenario {
    /// The `details` of the check `id` (each of these checks appears once).
    pub fn details(&self, id: &str) -> &Value {
        let check = self.checks.iter().find(|c| c["id"] == id);
        &check.unwrap_or_else(|| panic!("no check `{id}` in {}", self.dir.display()))["details"]
    }

    /// A file the suite saved beside `checks.json` (client scenarios: `stdout.txt`).
    pub fn file(&self, name: &str) -> String {
        let path = self.dir.join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }
}

/// Every scenario the suite wrote under `out`, by name (`prefix` is what the suite puts before
/// the name: `server-` for server scenarios, nothing for client ones; a name with a `/`, as
/// `auth/…`, is a nested directory).
pub fn load(out: &Path, prefix: &str) -> BTreeMap<String, Scenario> {
    let mut found = BTreeMap::new();
    collect(out, out, prefix, &mut found);
    found
}

fn collect(root: &Path, dir: &Path, prefix: &str, found: &mut BTreeMap<String, Scenario>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("read a result directory").path();
        if path.is_dir() {
            collect(root, &path, prefix, found);
        } else if path.file_name().is_some_and(|n| n == "checks.json") {
            let dir = path.parent().expect("checks.json is in a directory");
            let relative = dir.strip_prefix(root).expect("under the output directory");
            let stamped = relative.to_string_lossy();
            let stamped = &stamped[..stamped.len().saturating_sub(TIMESTAMP_SUFFIX)];
            let name = stamped.strip_prefix(prefix).unwrap_or(stamped).to_string();
            let text = std::fs::read_to_string(&path).expect("read checks.json");
            let checks: Vec<Value> = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: not a JSON array ({e})", path.display()));
            let scenario = Scenario {
                dir: dir.to_path_buf(),
                checks,
            };
            assert!(
                found.insert(name.clone(), scenario).is_none(),
                "scenario {name} ran twice"
            );
        }
    }
}

/// One line of `expected-failures.txt`.
struct Expected {
    scenario: String,
    check: String,
    /// The statuses the check may have (`FAILURE`, or `SUCCESS|WARNING`, …).
    statuses: Vec<String>,
}

fn expected() -> Vec<Expected> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/conformance/expected-failures.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let mut words = line.split_whitespace();
            let mut next = || words.next().map(str::to_string);
            let (Some(scenario), Some(check), Some(statuses), Some(_reason)) =
                (next(), next(), next(), next())
            else {
                panic!(
                    "{}: `{line}` is not `SCENARIO CHECK STATUS REASON…`",
                    path.display()
                );
            };
            let statuses = statuses.split('|').map(str::to_string).collect();
            Expected {
                scenario,
                check,
                statuses,
            }
        })
        .collect()
}

/// Judges the scenarios `names` (each must have run) in `results`: the list of every check
/// that did not end as expected, with its status and message, or of every expectation that no
/// longer applies. Empty when all is as expected.
pub fn verdict(names: &[&str], results: &BTreeMap<String, Scenario>) -> Vec<String> {
    let expected: Vec<Expected> = expected()
        .into_iter()
        .filter(|e| names.contains(&e.scenario.as_str()))
        .collect();
    let mut wrong = Vec::new();
    for name in names {
        let Some(scenario) = results.get(*name) else {
            wrong.push(format!("{name}: did not run (no checks.json)"));
            continue;
        };
        let judged: Vec<&Value> = scenario
            .checks
            .iter()
            .filter(|c| c["status"] != "INFO")
            .collect();
        if judged.is_empty() {
            wrong.push(format!("{name}: no check was made"));
        }
        for check in judged {
            let (id, status) = (
                check["id"].as_str().unwrap_or("?"),
                check["status"].as_str().unwrap_or("?"),
            );
            let listed = expected
                .iter()
                .find(|e| e.scenario == *name && e.check == id);
            let allowed = listed.map_or(vec!["SUCCESS".to_string()], |e| e.statuses.clone());
            if !allowed.iter().any(|s| s == status) {
                let message = check["errorMessage"].as_str().unwrap_or("");
                wrong.push(format!(
                    "{name}: {id} is {status} (expected {}): {} {message}",
                    allowed.join("|"),
                    check["description"].as_str().unwrap_or(""),
                ));
            }
        }
    }
    for stale in &expected {
        let ran = results.get(&stale.scenario).is_some_and(|s| {
            s.checks
                .iter()
                .any(|c| c["id"] == stale.check.as_str() && c["status"] != "INFO")
        });
        if !ran {
            wrong.push(format!(
                "{}: {} is listed in expected-failures.txt but was not checked",
                stale.scenario, stale.check
            ));
        }
    }
    wrong
}
