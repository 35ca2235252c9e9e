//! The document root: which sections exist, the `mcpServers`/`servers` alias, VS Code's
//! `inputs`, and the hand-off of the policy sections (`evaluation`, `outputs`) to the crate
//! that builds decisions from them.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::approvals::{ApprovalsConfig, read_approvals};
use crate::audit::{AuditConfig, read_audit};
use crate::commands::{CommandConfig, read_commands};
use crate::document::parse_ordered;
use crate::durable::{DurableConfig, read_durable};
use crate::error::{ConfigError, ConfigErrorKind, ConfigErrors, ConfigWarning};
use crate::limits::{Limits, read_limits};
use crate::logging::{LoggingConfig, read_logging};
use crate::reader::{JsonPath, KeyOrder, Reader};
use crate::server::{ServerSettings, read_server_settings};
use crate::substitute::EnvLookup;
use crate::telemetry::{TelemetryConfig, read_telemetry};
use crate::upstream::{ServerConfig, read_servers};

/// A configuration text parsed: its JSON value, with each object's keys in written order.
///
/// Parsing refuses a key given twice in one object (every such key, each with its path): JSON
/// readers keep the last and drop the others silently, which in a policy file is a rule lost.
#[derive(Debug, Clone)]
pub struct Document {
    value: Value,
    key_order: KeyOrder,
}

impl Document {
    /// Parses `json`: JSON with comments (`//`, `/* */`) and trailing commas allowed.
    ///
    /// # Errors
    ///
    /// Invalid JSON (one error naming line and column), or every key given twice in an object.
    pub fn parse(json: &str) -> Result<Document, ConfigErrors> {
        let (value, key_order) = parse_ordered(json)?;
        Ok(Document { value, key_order })
    }

    /// Reads and parses the file at `path`.
    ///
    /// # Errors
    ///
    /// One [`ConfigErrorKind::Io`] error whose path is the file name, or what
    /// [`Document::parse`] reports.
    pub fn load(path: &Path) -> Result<Document, ConfigErrors> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigErrors::single(ConfigError::io(path.display().to_string(), e)))?;
        Document::parse(&text)
    }

    /// The JSON value.
    pub fn value(&self) -> &Value {
        &self.value
    }
}

/// The sections whose values are policies (`evaluation`: profiles; `outputs`: masks), read by
/// the crate that decides with them (`codemode_policies`) with the same [`Reader`], so that
/// their problems are reported with everything else, in document order.
pub trait PolicySections {
    /// Reads the `evaluation` section, found at `path`.
    fn evaluation(&mut self, r: &mut Reader, v: &Value, path: &JsonPath);
    /// Reads the `outputs` section, found at `path`.
    fn outputs(&mut self, r: &mut Reader, v: &Value, path: &JsonPath);
}

/// Every section of the file but the policy ones ([`PolicySections`]). `Default` is what an
/// empty file means.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Settings {
    /// The upstream MCP servers, by name (`mcpServers`, alias `servers`). Default: none.
    pub servers: BTreeMap<String, ServerConfig>,
    /// Resource limits of each eval (`limits`). Default: [`Limits::default`].
    pub limits: Limits,
    /// The audit log (`audit`). Default: off.
    pub audit: AuditConfig,
    /// Where approvals can be answered besides the client (`approvals`). Default: the client's
    /// channel only.
    pub approvals: ApprovalsConfig,
    /// How `serve --http` accepts requests (`server`): hosts, origins, auth. Default: loopback
    /// only, no auth.
    pub server: ServerSettings,
    /// Local programs offered to scripts as tools (`commands`), by tool name. Default: none.
    pub commands: BTreeMap<String, CommandConfig>,
    /// Where waiting evals, pending approvals and legacy MCP sessions are kept (`durable`).
    /// Default: [`DurableConfig::default`].
    pub durable: DurableConfig,
    /// How log lines are written (`logging`). Default: text.
    pub logging: LoggingConfig,
    /// Where OpenTelemetry traces go (`telemetry`). Default: nowhere (no spans are made).
    pub telemetry: TelemetryConfig,
    /// What the file says that codemode accepts but ignores (a client-only key such as
    /// `autoApprove`, VS Code `inputs`), for the caller to show. Default: none.
    pub warnings: Vec<ConfigWarning>,
}

impl Settings {
    /// Reads every section of `doc`, handing `evaluation` and `outputs` to `policy`; `${VAR}`
    /// references are read from the process environment.
    ///
    /// # Errors
    ///
    /// Every problem found, `policy`'s included, each with its JSON path.
    pub fn read(doc: &Document, policy: &mut dyn PolicySections) -> Result<Settings, ConfigErrors> {
        read_root(doc, EnvLookup::default(), policy)
    }

    /// [`Settings::read`], reading `${VAR}` references through `env` (`None`: unset).
    ///
    /// # Errors
    ///
    /// As [`Settings::read`].
    pub fn read_with_env(
        doc: &Document,
        env: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
        policy: &mut dyn PolicySections,
    ) -> Result<Settings, ConfigErrors> {
        read_root(doc, EnvLookup::new(env), policy)
    }
}

fn read_root(
    doc: &Document,
    env: EnvLookup,
    policy: &mut dyn PolicySections,
) -> Result<Settings, ConfigErrors> {
    let mut r = Reader {
        key_order: doc.key_order.clone(),
        env,
        ..Reader::default()
    };
    let root = JsonPath::root();
    let mut out = Settings::default();
    if let Some(map) = r.object(
        &doc.value,
        &root,
        crate::schema::keys::of::<crate::schema::File>(),
    ) {
        let servers = match (map.get("mcpServers"), map.get("servers")) {
            (Some(_), Some(_)) => {
                r.error(
                    &root.key("servers"),
                    ConfigErrorKind::ConflictingKeys,
                    "`servers` is an alias of `mcpServers`; give only one of them",
                );
                None
            }
            (Some(v), None) => Some((v, root.key("mcpServers"))),
            (None, Some(v)) => Some((v, root.key("servers"))),
            (None, None) => None,
        };
        if let Some((v, path)) = servers {
            out.servers = read_servers(&mut r, v, &path);
        }
        if let Some(v) = map.get("inputs") {
            read_inputs(&mut r, v, &root.key("inputs"));
        }
        if let Some(v) = map.get("evaluation") {
            policy.evaluation(&mut r, v, &root.key("evaluation"));
        }
        if let Some(v) = map.get("limits") {
            out.limits = read_limits(&mut r, v, &root.key("limits"));
        }
        if let Some(v) = map.get("audit") {
            out.audit = read_audit(&mut r, v, &root.key("audit"));
        }
        if let Some(v) = map.get("approvals") {
            out.approvals = read_approvals(&mut r, v, &root.key("approvals"));
        }
        if let Some(v) = map.get("commands") {
            out.commands = read_commands(&mut r, v, &root.key("commands"));
        }
        if let Some(v) = map.get("server") {
            out.server = read_server_settings(&mut r, v, &root.key("server"));
        }
        if let Some(v) = map.get("durable") {
            out.durable = read_durable(&mut r, v, &root.key("durable"));
        }
        if let Some(v) = map.get("logging") {
            out.logging = read_logging(&mut r, v, &root.key("logging"));
        }
        if let Some(v) = map.get("telemetry") {
            out.telemetry = read_telemetry(&mut r, v, &root.key("telemetry"));
        }
        if let Some(v) = map.get("outputs") {
            policy.outputs(&mut r, v, &root.key("outputs"));
        }
    }
    if r.errors.is_empty() {
        out.warnings = r.warnings;
        Ok(out)
    } else {
        Err(ConfigErrors { errors: r.errors })
    }
}

/// VS Code's top-level `inputs` (values it prompts the user for): accepted so that its
/// `mcp.json` reads, with a warning when there are some, since codemode prompts nobody.
fn read_inputs(r: &mut Reader, v: &Value, path: &JsonPath) {
    match v {
        Value::Array(items) if items.is_empty() => {}
        Value::Array(_) => r.warn(
            path,
            "codemode does not prompt for VS Code inputs, and a `${input:…}` reference is an \
             error; put each value in an environment variable and write `${env:NAME}`",
        ),
        _ => r.expected(path, "an array", v),
    }
}

/// The unit tests' stand-in for `codemode_policies::Config` (which this crate cannot name):
/// the settings of a text whose policy sections are accepted unread.
#[cfg(test)]
pub(crate) mod for_tests {
    use super::*;

    struct Unread;

    impl PolicySections for Unread {
        fn evaluation(&mut self, _: &mut Reader, _: &Value, _: &JsonPath) {}
        fn outputs(&mut self, _: &mut Reader, _: &Value, _: &JsonPath) {}
    }

    impl Settings {
        pub(crate) fn from_json_str(json: &str) -> Result<Settings, ConfigErrors> {
            let doc = Document::parse(json)?;
            let settings = Settings::read(&doc, &mut Unread)?;
            assert_schema_accepts(&doc);
            Ok(settings)
        }

        pub(crate) fn from_json_str_with_env(
            json: &str,
            env: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
        ) -> Result<Settings, ConfigErrors> {
            let doc = Document::parse(json)?;
            let settings = Settings::read_with_env(&doc, env, &mut Unread)?;
            assert_schema_accepts(&doc);
            Ok(settings)
        }
    }

    /// The schema accepts what the reader accepted: checked on every config a test reads
    /// successfully, so that the tests of every section hold the schema to the reader.
    fn assert_schema_accepts(doc: &Document) {
        let problems = crate::schema_problems(doc.value());
        assert!(
            problems.is_empty(),
            "the reader accepts {} but the schema does not: {problems:?}",
            doc.value()
        );
    }
}
