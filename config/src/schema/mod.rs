//! The file's shape as types, and the JSON Schema (draft 2020-12) generated from them.
//!
//! The types here describe what the file may say — every key of every object, with the doc
//! comments as descriptions — and nothing else: the reader builds the settings and policies,
//! with their finer checks (names, globs, regexes, units, conflicting keys). The schema is a
//! superset of what the reader accepts in values, and exactly its keys: an unknown key at any
//! level is refused (`additionalProperties: false`), as the reader refuses it. Editors use it
//! through `"$schema"`; the reader ignores that key.
//!
//! The policy sections' types (`policies`, with the typed values of `leaves` and `conditions`)
//! are also what those sections are read into (`de::read`): each of their values is checked as
//! the walk reads it, with the kind and wording the reader has always given.

#![expect(
    dead_code,
    reason = "most types exist for their shape (the schema, and the key lists `keys` reads from their `Deserialize`), not to hold a file's values: their fields are never read (the policy sections' are)"
)]

pub(crate) mod command;
pub(crate) mod conditions;
pub(crate) mod keys;
pub(crate) mod leaves;
pub(crate) mod policies;
pub(crate) mod sections;
pub(crate) mod server;
pub(crate) mod servers;
pub(crate) mod values;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// The draft the schema is written in.
pub const SCHEMA_DRAFT: &str = "https://json-schema.org/draft/2020-12/schema";

/// codemode's configuration file. Every key is optional; an unknown key is an error.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "codemode configuration")]
pub(crate) struct File {
    /// This schema, for editors (a URL or a path relative to the file); codemode ignores it.
    #[serde(rename = "$schema")]
    pub(crate) schema: Option<String>,
    /// The upstream MCP servers, by name (1 to 64 ASCII letters, digits, `_` or `-`, no `__`).
    pub(crate) mcp_servers: Option<BTreeMap<String, servers::ServerEntry>>,
    /// An alias of `mcpServers` (VS Code's name); give only one of them.
    pub(crate) servers: Option<BTreeMap<String, servers::ServerEntry>>,
    /// Profiles and which one evals run under.
    pub(crate) evaluation: Option<policies::Evaluation>,
    /// What one eval may use.
    pub(crate) limits: Option<sections::Limits>,
    /// The audit log.
    pub(crate) audit: Option<sections::Audit>,
    /// Where approvals can be answered besides the MCP client.
    pub(crate) approvals: Option<sections::Approvals>,
    /// How `codemode serve --http` accepts requests: hosts, origins, auth.
    pub(crate) server: Option<server::Server>,
    /// Local programs offered to scripts as tools, by tool name.
    pub(crate) commands: Option<BTreeMap<String, command::Command>>,
    /// What is masked or removed from tool results before scripts see them.
    pub(crate) outputs: Option<Vec<policies::OutputRule>>,
    /// Where waiting evals, pending approvals and legacy MCP sessions are kept.
    pub(crate) durable: Option<sections::Durable>,
    /// The log lines on stderr.
    pub(crate) logging: Option<sections::Logging>,
    /// Where OpenTelemetry traces are sent.
    pub(crate) telemetry: Option<sections::Telemetry>,
    /// VS Code's prompted inputs: accepted, with a warning when there are some (codemode
    /// prompts nobody; use `${env:NAME}`).
    pub(crate) inputs: Option<Vec<Value>>,
}

/// The JSON Schema of the configuration file (draft 2020-12), as `codemode config schema`
/// prints it.
///
/// ```
/// let schema = codemode_config::json_schema();
/// assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
/// assert_eq!(schema["additionalProperties"], false);
/// assert!(schema["properties"]["limits"].is_object());
/// ```
pub fn json_schema() -> Value {
    let mut schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<File>()
        .to_value();
    tidy(&mut schema);
    if let Value::Object(map) = &mut schema {
        map.insert(
            "$schema".to_string(),
            Value::String(SCHEMA_DRAFT.to_string()),
        );
    }
    schema
}

/// Two touches to what schemars derives. An optional key (`Option`) is derived as "this or
/// `null`", but the reader refuses `null` (a key left out is its default), so `null` goes.
/// And the lines of each `description`, which the doc comments wrap at 100 columns, are
/// joined (a blank line, a paragraph break, stays), so that editors show them as sentences.
fn tidy(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if let [only] = types.as_slice() {
                    let only = only.clone();
                    map.insert("type".to_string(), only);
                }
            }
            if let Some(Value::Array(alternatives)) = map.get_mut("anyOf") {
                alternatives.retain(|a| a.get("type").is_none_or(|t| t != "null"));
                if let [Value::Object(only)] = alternatives.as_slice() {
                    let only = only.clone();
                    map.remove("anyOf");
                    for (k, v) in only {
                        map.entry(k).or_insert(v);
                    }
                }
            }
            for (key, v) in map.iter_mut() {
                match v {
                    Value::String(text) if key == "description" => {
                        *text = text
                            .split("\n\n")
                            .map(|p| p.split('\n').map(str::trim).collect::<Vec<_>>().join(" "))
                            .collect::<Vec<_>>()
                            .join("\n\n");
                    }
                    _ => tidy(v),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

/// What the schema says of a configuration value: each problem as `instance path: message`
/// (`/limits: Additional properties are not allowed ('memroy' was unexpected)`), none when it
/// accepts the value. The reader checks more (names, globs, regexes, units); this is what an
/// editor naming the schema sees.
pub fn schema_problems(config: &Value) -> Vec<String> {
    match jsonschema::validator_for(&json_schema()) {
        Ok(validator) => validator
            .iter_errors(config)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect(),
        // The schema is generated from this crate's types; a test compiles it.
        Err(e) => vec![format!("the schema does not compile: {e}")],
    }
}

/// [`json_schema`] as the text `codemode config schema` prints and `docs/codemode.schema.json`
/// holds: pretty-printed, with a final newline.
pub fn json_schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&json_schema()).unwrap_or_default();
    text.push('\n');
    text
}
