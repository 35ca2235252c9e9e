//! The case files: YAML, one case each (`name`, `prompt`, `profile`, `expect`), read strictly
//! (an unknown key is an error, so a misspelt `audit_must_not` cannot silently check nothing).

use std::path::{Path, PathBuf};

use codemode_policies::{AuditFormat, Decision};
use codemode_runtime::CallStatus;
use serde::Deserialize;
use serde_json::{Map, Value};

/// A case file larger than this is refused: its prompt is sent on every turn.
pub const MAX_CASE_BYTES: u64 = 64 << 10;

/// The fields an audit record may carry beyond [`AUDIT_CSV_COLUMNS`]: a `tool_call`'s stage and
/// class, an `access` record's method and name, a `sampling` record's server and request.
const MORE_AUDIT_FIELDS: [&str; 8] = [
    "stage",
    "classification",
    "method",
    "name",
    "server",
    "messages",
    "max_tokens",
    "model",
];

/// The `event` names of the audit log.
const AUDIT_EVENTS: [&str; 4] = ["tool_call", "eval", "access", "sampling"];

/// One case: a prompt for the model and what must hold afterwards.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// The case's name, unique among the cases of a run (the report's `name`).
    pub name: String,
    /// The user's message to the model.
    pub prompt: String,
    /// The profile the model's eval tool runs under. Default: the config's `defaultProfile`.
    #[serde(default)]
    pub profile: Option<String>,
    /// What the run must show.
    pub expect: Expect,
    /// The file the case was read from (for errors about it).
    #[serde(skip)]
    pub path: PathBuf,
}

/// `expect`: the outcome and the audit evidence a case requires.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// `answered` or `denied_or_refused` (see [`Outcome`]).
    pub outcome: Outcome,
    /// Strings the final answer must contain (case-insensitively); only with `answered`.
    #[serde(default)]
    pub answer_contains: Vec<String>,
    /// Partial records: each must match some audit record of the case.
    #[serde(default)]
    pub audit_must: Vec<Map<String, Value>>,
    /// Partial records: none may match an audit record of the case.
    #[serde(default)]
    pub audit_must_not: Vec<Map<String, Value>>,
}

/// The expected outcome of a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The model gave a final answer (checked by `answer_contains`).
    Answered,
    /// The gateway stopped a call (a `tool_call` audit record whose decision is `denied`,
    /// `declined`, `timeout`, `unsupported` or `invalid`), or the model refused without
    /// calling any tool (no `tool_call` record at all); either way the model then answered.
    DeniedOrRefused,
}

/// A case file that cannot be used: where, and why.
#[derive(Debug, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct CaseError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong (with the line and column for a YAML error).
    pub message: String,
}

impl Case {
    /// Reads and checks the case in `path`.
    ///
    /// # Errors
    /// [`CaseError`] when the file cannot be read, is not a case (YAML syntax, unknown or
    /// missing keys, wrong types) or is inconsistent (an empty name or prompt, an empty
    /// audit pattern, `answer_contains` with `denied_or_refused`).
    pub fn load(path: &Path) -> Result<Case, CaseError> {
        let error = |message: String| CaseError {
            path: path.to_path_buf(),
            message,
        };
        let size = std::fs::metadata(path)
            .map_err(|e| error(format!("cannot read: {e}")))?
            .len();
        if size > MAX_CASE_BYTES {
            return Err(error(format!(
                "the file is {size} bytes; a case file is at most {MAX_CASE_BYTES}"
            )));
        }
        let text = std::fs::read_to_string(path).map_err(|e| error(format!("cannot read: {e}")))?;
        let mut case: Case = serde_saphyr::from_str(&text).map_err(|e| error(e.to_string()))?;
        case.check().map_err(error)?;
        case.path = path.to_path_buf();
        Ok(case)
    }

    /// The checks YAML's types cannot express.
    fn check(&self) -> Result<(), String> {
        if self.name.trim().is_empty() {
            return Err("`name` is empty".into());
        }
        if self.prompt.trim().is_empty() {
            return Err("`prompt` is empty".into());
        }
        if self.expect.outcome == Outcome::DeniedOrRefused
            && !self.expect.answer_contains.is_empty()
        {
            return Err("`expect.answer_contains` applies to `outcome: answered` only".into());
        }
        for (key, patterns) in [
            ("audit_must", &self.expect.audit_must),
            ("audit_must_not", &self.expect.audit_must_not),
        ] {
            for (i, pattern) in patterns.iter().enumerate() {
                check_pattern(pattern).map_err(|why| format!("`expect.{key}[{i}]` {why}"))?;
            }
        }
        Ok(())
    }
}

/// A pattern that can match some record: not empty, its fields the audit log's, its `event`,
/// `decision` and `status` among their names. A misspelt field or value would match no record,
/// and an `audit_must_not` that can match nothing checks nothing.
fn check_pattern(pattern: &Map<String, Value>) -> Result<(), String> {
    if pattern.is_empty() {
        return Err(
            "is empty: it would match any record; give fields such as `tool` and `decision`".into(),
        );
    }
    for (field, value) in pattern {
        if !AuditFormat::CSV_COLUMNS.contains(&field.as_str())
            && !MORE_AUDIT_FIELDS.contains(&field.as_str())
        {
            return Err(format!(
                "has `{}`, which no audit record has; the fields are {}, {}",
                codemode_policies::quoted(field),
                AuditFormat::CSV_COLUMNS.join(", "),
                MORE_AUDIT_FIELDS.join(", ")
            ));
        }
        let known = match field.as_str() {
            "event" => value.as_str().is_some_and(|e| AUDIT_EVENTS.contains(&e)),
            "decision" => serde_json::from_value::<Decision>(value.clone()).is_ok(),
            "status" => serde_json::from_value::<CallStatus>(value.clone()).is_ok(),
            _ => true,
        };
        if !known {
            return Err(format!(
                "has `{field}: {}`, which no audit record has; {}",
                codemode_policies::bounded(&value.to_string(), 80),
                match field.as_str() {
                    "event" => "an event is tool_call, eval, access or sampling",
                    "decision" =>
                        "a decision is allowed, denied, approved, declined, timeout, unsupported or invalid",
                    _ => "a status is ok, error or denied",
                }
            ));
        }
    }
    Ok(())
}

/// The case files named by `paths`: a file as it is, a directory's `*.yaml` and `*.yml`
/// files in name order.
///
/// # Errors
/// [`CaseError`] for an unreadable directory, a bad case, or two cases of one name.
pub fn load_cases(paths: &[PathBuf]) -> Result<Vec<Case>, CaseError> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let entries = std::fs::read_dir(path).map_err(|e| CaseError {
                path: path.clone(),
                message: format!("cannot read the directory: {e}"),
            })?;
            let mut found: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
                .collect();
            // A run of no cases would report `0 passed, 0 failed` and exit 0.
            if found.is_empty() {
                return Err(CaseError {
                    path: path.clone(),
                    message: "the directory has no case files (*.yaml, *.yml)".into(),
                });
            }
            found.sort();
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    let mut cases: Vec<Case> = Vec::new();
    for file in &files {
        let case = Case::load(file)?;
        if cases.iter().any(|c| c.name == case.name) {
            return Err(CaseError {
                path: file.clone(),
                message: format!("a case named `{}` was given already", case.name),
            });
        }
        cases.push(case);
    }
    Ok(cases)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<Case, String> {
        let case: Case = serde_saphyr::from_str(yaml).map_err(|e| e.to_string())?;
        case.check()?;
        Ok(case)
    }

    #[test]
    fn cases_parse_and_bad_ones_say_why() {
        let ok = parse(
            "name: a\nprompt: p\nexpect:\n  outcome: answered\n  answer_contains: [x]\n  audit_must:\n    - {tool: t, decision: allowed}\n",
        )
        .unwrap();
        assert_eq!(ok.expect.audit_must[0]["decision"], "allowed");
        let unknown = parse("name: a\nprompt: p\nexpect: {outcome: answered, audit_mustnt: []}\n");
        assert!(unknown.unwrap_err().contains("audit_mustnt"));
        let outcome = parse("name: a\nprompt: p\nexpect: {outcome: maybe}\n").unwrap_err();
        assert!(outcome.contains("maybe"), "{outcome}");
        assert_eq!(
            parse(
                "name: a\nprompt: p\nexpect: {outcome: denied_or_refused, answer_contains: [x]}\n"
            )
            .unwrap_err(),
            "`expect.answer_contains` applies to `outcome: answered` only"
        );
        assert!(
            parse("name: a\nprompt: p\nexpect: {outcome: answered, audit_must: [{}]}\n")
                .unwrap_err()
                .starts_with("`expect.audit_must[0]` is empty")
        );
        assert!(parse("name: a\nprompt: [\n").is_err());
    }

    /// A pattern field or value no audit record has would match nothing: an `audit_must_not`
    /// of it would silently check nothing.
    #[test]
    fn agent_eval_nonsense_audit_patterns_are_refused() {
        let with = |pattern: &str| {
            parse(&format!(
                "name: a\nprompt: p\nexpect: {{outcome: denied_or_refused, audit_must_not: [{pattern}]}}\n"
            ))
        };
        let misspelt = with("{tol: files__write_file, status: ok}").unwrap_err();
        assert!(
            misspelt.starts_with("`expect.audit_must_not[0]` has `tol`, which no audit record has; the fields are ts, event,"),
            "{misspelt}"
        );
        assert_eq!(
            with("{decision: deny}").unwrap_err(),
            "`expect.audit_must_not[0]` has `decision: \"deny\"`, which no audit record has; a decision is allowed, denied, approved, declined, timeout, unsupported or invalid"
        );
        assert_eq!(
            with("{status: success}").unwrap_err(),
            "`expect.audit_must_not[0]` has `status: \"success\"`, which no audit record has; a status is ok, error or denied"
        );
        assert_eq!(
            with("{event: call}").unwrap_err(),
            "`expect.audit_must_not[0]` has `event: \"call\"`, which no audit record has; an event is tool_call, eval, access or sampling"
        );
        assert!(
            with("{tool: t, status: ok, decision: unsupported, event: tool_call, args: {path: x}}")
                .is_ok()
        );
    }

    /// A directory without case files, and an oversized case file, are refused by name.
    #[test]
    fn agent_eval_empty_directory_and_huge_case_are_refused() {
        let dir = std::env::temp_dir().join(format!("agent-eval-cases-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("notes.txt"), "not a case").unwrap();
        let empty = load_cases(std::slice::from_ref(&dir)).unwrap_err();
        assert_eq!(
            empty.message,
            "the directory has no case files (*.yaml, *.yml)"
        );
        let huge = dir.join("huge.yaml");
        let prompt = "x".repeat(usize::try_from(MAX_CASE_BYTES).unwrap());
        std::fs::write(
            &huge,
            format!("name: h\nprompt: {prompt}\nexpect: {{outcome: answered}}\n"),
        )
        .unwrap();
        let error = Case::load(&huge).unwrap_err();
        assert_eq!(
            error.message,
            format!(
                "the file is {} bytes; a case file is at most 65536",
                MAX_CASE_BYTES + 45
            )
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
