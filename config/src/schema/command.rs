//! `commands.<name>`: a local program offered to scripts as a tool. The values with checks of
//! their own (the program found, `cwd` a directory, each `args` element a literal or a whole
//! placeholder, the output's name) are typed here, so that their errors come in the document's
//! order; what concerns several keys (placeholders against `inputSchema`) is the conversion's.

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::{self, Deserializer};
use serde_json::Value;

use super::values::{Indexed, Seconds, Size, StringMap, schema_as};

/// A local program offered to scripts as a tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Command {
    /// The program: a path, or a name looked up in a fixed `PATH`.
    #[schemars(required)]
    pub(crate) command: Option<Program>,
    /// Argument templates: literal, `{param}` (one argument) or `{param...}` (an array).
    pub(crate) args: Option<Indexed<Template>>,
    /// The JSON Schema of the tool's arguments (an object schema declaring every placeholder).
    pub(crate) input_schema: Option<Value>,
    /// The tool's description. Default: "Runs `command args…`."
    pub(crate) description: Option<String>,
    /// The program's working directory.
    pub(crate) cwd: Option<Directory>,
    /// The program's environment variables (nothing else is inherited but a fixed set).
    pub(crate) env: Option<StringMap>,
    /// How long a run may take. Default: 10.
    pub(crate) timeout_seconds: Option<Seconds>,
    /// Most bytes of output read. Default: `"1MiB"`.
    pub(crate) max_output: Option<Size>,
    /// How the output is returned. Default: `"text"`.
    pub(crate) output: Option<CommandOutput>,
}

/// How a command's output is returned to the script.
// (Read by its name with the reader's message; the schema is the names' enum.)
#[derive(Debug, Clone, Copy, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum CommandOutput {
    /// One string.
    Text,
    /// An array of lines.
    Lines,
    /// Parsed JSON.
    Json,
    /// An array of parsed JSON lines.
    Jsonl,
}

impl<'de> Deserialize<'de> for CommandOutput {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match String::deserialize(d)?.as_str() {
            "text" => Ok(CommandOutput::Text),
            "lines" => Ok(CommandOutput::Lines),
            "json" => Ok(CommandOutput::Json),
            "jsonl" => Ok(CommandOutput::Jsonl),
            other => Err(de::Error::custom(format!(
                "unknown output `{other}`; expected \"text\", \"lines\", \"json\" or \"jsonl\""
            ))),
        }
    }
}

/// The program, found: an executable absolute path or a bare name in the fixed `PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Program(pub(crate) String);

impl<'de> Deserialize<'de> for Program {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Not empty, as a server's.
        let super::servers::Program(command) = super::servers::Program::deserialize(d)?;
        crate::program::resolve_command(&command).map_err(de::Error::custom)?;
        Ok(Program(command))
    }
}

/// An existing directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Directory(pub(crate) String);

impl<'de> Deserialize<'de> for Directory {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let dir = String::deserialize(d)?;
        if !std::path::Path::new(&dir).is_dir() {
            return Err(de::Error::custom(format!(
                "`{dir}` is not an existing directory"
            )));
        }
        Ok(Directory(dir))
    }
}

schema_as!(String => Program, Directory);

/// An `args` element as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Template {
    /// Passed as written.
    Literal(String),
    /// `{name}`, or `{name?}` (optional).
    Param { name: String, optional: bool },
}

impl<'de> Deserialize<'de> for Template {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        parse_template(&String::deserialize(d)?).map_err(de::Error::custom)
    }
}

/// `{name}` / `{name?}` when the whole element is one placeholder; a placeholder inside a
/// longer string is refused (it would have to be spliced into one argument with other text);
/// other braces (`HEAD@{1}`, find's `{}`) are literal.
fn parse_template(s: &str) -> Result<Template, String> {
    if let Some(inner) = s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
        let (name, optional) = match inner.strip_suffix('?') {
            Some(n) => (n, true),
            None => (inner, false),
        };
        if is_param_name(name) {
            return Ok(Template::Param {
                name: name.to_string(),
                optional,
            });
        }
    }
    if let Some(found) = embedded_placeholder(s) {
        return Err(format!(
            "the placeholder `{found}` is part of the longer argument \"{s}\"; a placeholder must \
             be a whole `args` element (it becomes exactly one argument): split it, e.g. \
             [\"--format\", \"{{format}}\"]"
        ));
    }
    Ok(Template::Literal(s.to_string()))
}

fn is_param_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The first `{name}` or `{name?}` inside `s`.
fn embedded_placeholder(s: &str) -> Option<&str> {
    let mut rest = s;
    let mut offset = 0;
    while let Some(open) = rest.find('{') {
        let start = offset + open;
        let after = &s[start + 1..];
        if let Some(close) = after.find('}') {
            let inner = &after[..close];
            let name = inner.strip_suffix('?').unwrap_or(inner);
            if is_param_name(name) {
                return Some(&s[start..start + close + 2]);
            }
        }
        offset = start + 1;
        rest = &s[offset..];
    }
    None
}
