//! The case files: YAML, one case each (`name`, `prompt`, `profile`, `expect`), read strictly
//! (an unknown key is an error, so a misspelt `audit_must_not` cannot silently check nothing).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

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
        let text = std::fs::read_to_string(path).map_err(|e| error(format!("cannot read: {e}")))?;
        let case: Case = serde_saphyr::from_str(&text).map_err(|e| error(e.to_string()))?;
        case.check().map_err(error)?;
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
            if let Some(i) = patterns.iter().position(Map::is_empty) {
                return Err(format!(
                    "`expect.{key}[{i}]` is empty: it would match any record; give fields such as `tool` and `decision`"
                ));
            }
        }
        Ok(())
    }
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
}
