//! Builds a [`Config`]: `codemode_config` reads the document and its settings sections, and
//! hands the policy sections to [`Policies`], which reads them here. The entry points:
//! [`Config::from_json_str`], [`Config::from_json_str_with_env`] and [`Config::load`].

use std::path::Path;
use std::sync::Arc;

use codemode_config::{ConfigErrors, Document, JsonPath, PolicySections, Reader, Settings};
use serde_json::Value;

use super::evaluation::read_evaluation;
use super::{Config, EvaluationConfig};
use crate::OutputPolicy;

impl Config {
    /// Parses and validates a configuration.
    ///
    /// The text is JSON, with comments (`//`, `/* */`) and trailing commas allowed.
    /// Top-level keys: `mcpServers` (or its alias `servers`, not both), `evaluation`, `limits`,
    /// `audit`, `approvals`, `server` (how `serve --http` accepts requests), `commands` (local
    /// command tools), `outputs` (masks and removals in tool results), `durable` (where waiting
    /// evals and sessions are kept), `$schema` (ignored, for
    /// editors) and `inputs` (VS Code's prompts: accepted, with a [warning](Config::warnings)
    /// when non-empty). Every key is optional; unknown keys are errors. `${VAR}` references in
    /// servers' `args`, `env`, `headers` and `url` are read from the process environment.
    ///
    /// # Errors
    ///
    /// [`ConfigErrors`] with every problem found, each with its JSON path: invalid JSON (with
    /// line and column), a key given twice in one object (JSON would silently keep the last),
    /// unknown keys (listing the allowed ones), wrong types, bad globs and
    /// regexes, invalid names, a `defaultProfile` naming no profile, …
    pub fn from_json_str(json: &str) -> Result<Config, ConfigErrors> {
        let doc = Document::parse(json)?;
        let mut policies = Policies::default();
        let settings = Settings::read(&doc, &mut policies)?;
        #[cfg(test)]
        tests::assert_schema_accepts(&doc);
        Ok(policies.into_config(settings))
    }

    /// [`Config::from_json_str`], reading the `${VAR}` references of servers through `env`
    /// instead of the process environment (`None`: unset).
    ///
    /// ```
    /// use codemode_config::{ConfigErrorKind, ServerTransport};
    /// use codemode_policies::Config;
    /// let json = r#"{"mcpServers": {"api": {"type": "http", "url": "${BASE:-http://localhost:3000}/mcp",
    ///     "headers": {"Authorization": "Bearer ${env:API_TOKEN}"}}}}"#;
    /// let config = Config::from_json_str_with_env(json, |name| {
    ///     (name == "API_TOKEN").then(|| "t0ken".to_string())
    /// })
    /// .unwrap();
    /// let ServerTransport::Http { url, headers, .. } = &config.servers["api"].transport else { panic!() };
    /// assert_eq!(url, "http://localhost:3000/mcp");
    /// assert_eq!(headers["Authorization"], "Bearer t0ken");
    ///
    /// let errors = Config::from_json_str_with_env(json, |_| None).unwrap_err();
    /// assert_eq!(errors.errors[0].kind(), ConfigErrorKind::MissingEnv);
    /// assert_eq!(errors.errors[0].path(), "mcpServers.api.headers.Authorization");
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Config::from_json_str`].
    pub fn from_json_str_with_env(
        json: &str,
        env: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Result<Config, ConfigErrors> {
        let doc = Document::parse(json)?;
        let mut policies = Policies::default();
        let settings = Settings::read_with_env(&doc, env, &mut policies)?;
        #[cfg(test)]
        tests::assert_schema_accepts(&doc);
        Ok(policies.into_config(settings))
    }

    /// Reads and parses the configuration file at `path`. Relative paths inside it (`audit.dir`,
    /// a server's `cwd`) are kept as written: they are relative to the process's working
    /// directory, not to the file.
    ///
    /// # Errors
    ///
    /// An I/O error (one [`ConfigError`](codemode_config::ConfigError) of kind [`ConfigErrorKind::Io`](codemode_config::ConfigErrorKind::Io) whose path is the
    /// file name), or what
    /// [`Config::from_json_str`] reports.
    pub fn load(path: impl AsRef<Path>) -> Result<Config, ConfigErrors> {
        let doc = Document::load(path.as_ref())?;
        let mut policies = Policies::default();
        let settings = Settings::read(&doc, &mut policies)?;
        Ok(policies.into_config(settings))
    }
}

/// The policy sections of one file, read as `codemode_config` reaches them.
#[derive(Default)]
struct Policies {
    evaluation: EvaluationConfig,
    outputs: Arc<OutputPolicy>,
}

impl PolicySections for Policies {
    fn evaluation(&mut self, r: &mut Reader, v: &Value, path: &JsonPath) {
        self.evaluation = read_evaluation(r, v, path);
    }

    fn outputs(&mut self, r: &mut Reader, v: &Value, path: &JsonPath) {
        self.outputs = Arc::new(super::outputs::read_outputs(r, v, path));
    }
}

impl Policies {
    fn into_config(self, settings: Settings) -> Config {
        // `..`: `Settings` is non-exhaustive; a section added there must be added to `Config`
        // too, or it is read and dropped.
        let Settings {
            servers,
            limits,
            audit,
            approvals,
            server,
            commands,
            durable,
            logging,
            telemetry,
            warnings,
            ..
        } = settings;
        Config {
            servers,
            evaluation: self.evaluation,
            limits,
            audit,
            approvals,
            server,
            commands,
            outputs: self.outputs,
            durable,
            logging,
            telemetry,
            warnings,
        }
    }
}

#[cfg(test)]
mod tests {
    use codemode_config::Document;

    /// The schema accepts what the reader accepted: checked on every config this crate's
    /// tests read successfully (profiles, rules, outputs included), so that they hold the
    /// schema (`codemode config schema`) to the reader.
    pub(super) fn assert_schema_accepts(doc: &Document) {
        let problems = codemode_config::schema_problems(doc.value());
        assert!(
            problems.is_empty(),
            "the reader accepts {} but the schema does not: {problems:?}",
            doc.value()
        );
    }
}
