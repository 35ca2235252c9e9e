//! The `commands` section: local programs offered to scripts as tools (`codemode.<name>(args)`),
//! each with a fixed argv template, an `inputSchema` for its arguments and bounds on time and
//! output. What is checked here is everything that can be known from the file: names, the argv
//! template against the schema, the program's existence, `cwd`. Running them is the host's
//! (`upstream/src/commands/`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::error::ConfigErrorKind;
use crate::reader::{JsonPath, Reader, describe};
use crate::schema::sections;
use crate::values::{positive_seconds, size};

/// The names of the built-in script tools, which a command may not take (the host checks that
/// this list is its own).
pub const BUILTIN_TOOL_NAMES: &[&str] = &[
    "search_tools",
    "get_tools",
    "hitl_request",
    "human_intervention_request",
    "read_resource",
];

/// Where a relative `command` is looked up: this fixed list, never the caller's `PATH`.
pub const COMMAND_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// A command's `timeoutSeconds` when not given: 10 seconds.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// A command's `maxOutput` when not given: 1 MiB.
pub const DEFAULT_COMMAND_MAX_OUTPUT: u64 = 1 << 20;

/// One command tool (`commands.<name>`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CommandConfig {
    /// The program (`command`, required): an absolute path, or a bare name looked up in
    /// [`COMMAND_PATH`]. Checked to exist when the file is loaded.
    pub command: String,
    /// The argv after the program (`args`), each element one argument. Default: none.
    pub args: Vec<CommandArg>,
    /// The JSON Schema of the tool's arguments (`inputSchema`, an object schema). Default, only
    /// when `args` has no placeholder: no arguments (`{"type": "object", "properties": {},
    /// "additionalProperties": false}`).
    pub input_schema: Value,
    /// What the tool does, for `search_tools` and the declarations (`description`). Default:
    /// "Runs `<command> <args>`." .
    pub description: String,
    /// The working directory (`cwd`; must be an existing directory). Default: codemode's own.
    pub cwd: Option<PathBuf>,
    /// The program's whole environment (`env`): nothing else is inherited, not even `PATH`.
    /// Default: empty.
    pub env: BTreeMap<String, String>,
    /// How long one run may take before its whole process group is killed
    /// (`timeoutSeconds`). Default: [`DEFAULT_COMMAND_TIMEOUT`].
    pub timeout: Duration,
    /// The most bytes of standard output one run may write (`maxOutput`, a size such as
    /// `"1MiB"`); beyond it the run is killed and the call fails. Default:
    /// [`DEFAULT_COMMAND_MAX_OUTPUT`].
    pub max_output: u64,
    /// What the script gets from the standard output (`output`). Default: text.
    pub output: CommandOutput,
    validator: Arc<jsonschema::Validator>,
}

/// One element of a command's `args`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandArg {
    /// Passed as written.
    Literal(String),
    /// `{name}` (required) or `{name?}` (dropped when the argument is absent or null): the
    /// argument's value, as exactly one argv element.
    Param {
        /// The argument's name (a property of the `inputSchema`).
        name: String,
        /// Written `{name?}`.
        optional: bool,
        /// The schema property sets `"x-allowOption": true`: the value may start with `-`.
        allow_option: bool,
    },
}

/// How a command's standard output becomes the tool's result (`output`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CommandOutput {
    /// `"text"`: one string.
    #[default]
    Text,
    /// `"lines"`: an array of strings, one per line (no final empty line).
    Lines,
    /// `"json"`: the output parsed as one JSON value.
    Json,
    /// `"jsonl"`: an array of JSON values, one per non-empty line.
    Jsonl,
}

impl CommandConfig {
    /// Checks `args` against the `inputSchema`.
    ///
    /// # Errors
    /// [`InvalidCommandArgs`]: at most 10 problems, each `/pointer: message` (`(root)` for the
    /// arguments object itself).
    pub fn validate_args(&self, args: &Value) -> Result<(), InvalidCommandArgs> {
        let problems: Vec<String> = self
            .validator
            .iter_errors(args)
            .take(10)
            .map(|e| {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() { "(root)".into() } else { at };
                format!("{at}: {e}")
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(InvalidCommandArgs { problems })
        }
    }
}

/// Arguments a command tool's `inputSchema` refuses: each problem with the JSON Pointer of the
/// value it is about, shown as one line joined by `; `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", problems.join("; "))]
pub struct InvalidCommandArgs {
    /// `/pointer: message` per problem (`(root)` for the arguments object), at most 10.
    pub problems: Vec<String>,
}

/// The program `command` names: itself when absolute, else the first executable file of that
/// name in [`COMMAND_PATH`].
///
/// # Errors
/// A message saying what was not found, or why the name is not allowed (a relative path with
/// `/`).
pub fn resolve_command(command: &str) -> Result<PathBuf, UnresolvedCommand> {
    resolve_command_text(command).map_err(UnresolvedCommand)
}

fn resolve_command_text(command: &str) -> Result<PathBuf, String> {
    let path = Path::new(command);
    if path.is_absolute() {
        return if is_executable(path) {
            Ok(path.to_path_buf())
        } else {
            Err(format!("`{command}` is not an executable file"))
        };
    }
    if command.contains('/') {
        return Err(format!(
            "`{command}` is a relative path; give an absolute path or a bare program name \
             (looked up in {COMMAND_PATH})"
        ));
    }
    COMMAND_PATH
        .split(':')
        .map(|dir| Path::new(dir).join(command))
        .find(|p| is_executable(p))
        .ok_or_else(|| format!("`{command}` was not found in {COMMAND_PATH}"))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Reads `commands` at `path`.
pub(crate) fn read_commands(
    r: &mut Reader,
    v: &Value,
    path: &JsonPath,
) -> BTreeMap<String, CommandConfig> {
    let mut out = BTreeMap::new();
    let Some(map) = r.any_object(v, path) else {
        return out;
    };
    for (name, entry) in map {
        let p = path.key(name);
        if let Err(msg) = check_command_name(name) {
            r.error(&p, ConfigErrorKind::InvalidName, msg);
        }
        if let Some(command) = read_command(r, entry, &p) {
            out.insert(name.clone(), command);
        }
    }
    out
}

/// `^[A-Za-z0-9_-]{1,64}$`, without `__` (upstream tools are `server__tool`, so a command can
/// never take an upstream tool's name) and not a built-in tool's name.
fn check_command_name(name: &str) -> Result<(), String> {
    let chars_ok = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if name.is_empty() || name.len() > 64 || !chars_ok {
        return Err(format!(
            "invalid command tool name `{name}`: use 1 to 64 ASCII letters, digits, `_` or `-`"
        ));
    }
    if name.contains("__") {
        return Err(format!(
            "invalid command tool name `{name}`: `__` is reserved for upstream tools \
             (`server__tool`)"
        ));
    }
    if BUILTIN_TOOL_NAMES.contains(&name) {
        return Err(format!(
            "the command tool name `{name}` is taken by a built-in tool; choose another"
        ));
    }
    Ok(())
}

fn read_command(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<CommandConfig> {
    let map = r.object(v, path, crate::schema::keys::of::<sections::Command>())?;
    let errors_before = r.errors.len();
    let command = match map.get("command") {
        Some(c) => read_program(r, c, &path.key("command")),
        None => {
            r.error(path, ConfigErrorKind::MissingField, "missing `command`");
            None
        }
    };
    let (input_schema, validator, args) = read_args(r, map, path);
    let description = match map.get("description") {
        Some(v) => r.string(v, &path.key("description")).map(str::to_string),
        None => None,
    };
    let cwd = map
        .get("cwd")
        .and_then(|v| read_cwd(r, v, &path.key("cwd")));
    let env = match map.get("env") {
        Some(v) => read_env(r, v, &path.key("env")),
        None => BTreeMap::new(),
    };
    let timeout = match map.get("timeoutSeconds") {
        Some(t) => positive_seconds(r, t, &path.key("timeoutSeconds")),
        None => Some(DEFAULT_COMMAND_TIMEOUT),
    };
    let max_output = match map.get("maxOutput") {
        Some(v) => size(r, v, &path.key("maxOutput")),
        None => Some(DEFAULT_COMMAND_MAX_OUTPUT),
    };
    let output = match map.get("output") {
        Some(v) => read_output(r, v, &path.key("output")),
        None => Some(CommandOutput::Text),
    };
    if r.errors.len() > errors_before {
        return None;
    }
    let command = command?;
    let description = description.unwrap_or_else(|| default_description(&command, &args));
    Some(CommandConfig {
        command,
        args,
        input_schema,
        description,
        cwd,
        env,
        timeout: timeout?,
        max_output: max_output?,
        output: output?,
        validator: validator?,
    })
}

/// `args`, each placeholder checked against `inputSchema` (which may then be left out when
/// there are none): the schema, its compiled validator (`None` when it is wrong) and the
/// arguments that are right (the errors are in `r`).
fn read_args(
    r: &mut Reader,
    map: &Map<String, Value>,
    path: &JsonPath,
) -> (Value, Option<Arc<jsonschema::Validator>>, Vec<CommandArg>) {
    let templates = match map.get("args") {
        Some(v) => r.strings(v, &path.key("args")).unwrap_or_default(),
        None => Vec::new(),
    };
    let parsed: Vec<(JsonPath, Template)> = templates
        .into_iter()
        .filter_map(|(p, s)| match parse_template(&s) {
            Ok(t) => Some((p, t)),
            Err(msg) => {
                r.error(&p, ConfigErrorKind::InvalidValue, msg);
                None
            }
        })
        .collect();
    let schema_path = path.key("inputSchema");
    let input_schema = match map.get("inputSchema") {
        Some(s) => s.clone(),
        None if parsed
            .iter()
            .any(|(_, t)| matches!(t, Template::Param { .. })) =>
        {
            r.error(
                path,
                ConfigErrorKind::MissingField,
                "missing `inputSchema`: `args` has placeholders, so the schema must declare them",
            );
            Value::Null
        }
        None => {
            serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false})
        }
    };
    let validator = compile_schema(r, &input_schema, &schema_path);
    let properties = input_schema.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut args = Vec::new();
    for (p, t) in parsed {
        match t {
            Template::Literal(s) => args.push(CommandArg::Literal(s)),
            // Without a schema (already an error) the placeholders cannot be checked.
            Template::Param { .. } if input_schema.is_null() => {}
            Template::Param { name, optional } => {
                if let Some(arg) =
                    check_param(r, &p, &schema_path, properties, &required, name, optional)
                {
                    args.push(arg);
                }
            }
        }
    }
    (input_schema, validator, args)
}

fn read_program(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<String> {
    let command = r.string(v, path)?;
    if command.is_empty() {
        r.error(path, ConfigErrorKind::InvalidValue, "the command is empty");
        return None;
    }
    if let Err(msg) = resolve_command(command) {
        r.error(path, ConfigErrorKind::InvalidValue, msg.to_string());
        return None;
    }
    Some(command.to_string())
}

/// An `args` element as written.
enum Template {
    Literal(String),
    Param { name: String, optional: bool },
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

fn compile_schema(
    r: &mut Reader,
    schema: &Value,
    path: &JsonPath,
) -> Option<Arc<jsonschema::Validator>> {
    if schema.is_null() {
        return None;
    }
    if schema.get("type") != Some(&Value::String("object".into())) {
        r.error(
            path,
            ConfigErrorKind::InvalidValue,
            format!(
                "expected an object schema (`\"type\": \"object\"`), found {}",
                describe(schema)
            ),
        );
        return None;
    }
    match jsonschema::validator_for(schema) {
        Ok(v) => Some(Arc::new(v)),
        Err(e) => {
            let at = e.schema_path().to_string();
            r.error(
                path,
                ConfigErrorKind::InvalidValue,
                format!("not a valid JSON Schema (at `{at}`): {e}"),
            );
            None
        }
    }
}

/// A placeholder checked against the schema: declared, required unless optional, of a type
/// that fits in one argument, with a boolean `x-allowOption`; warned about when it may be any
/// string (no `pattern`, `enum` or `const`).
fn check_param(
    r: &mut Reader,
    path: &JsonPath,
    schema_path: &JsonPath,
    properties: Option<&Map<String, Value>>,
    required: &[&str],
    name: String,
    optional: bool,
) -> Option<CommandArg> {
    let Some(property) = properties.and_then(|p| p.get(&name)) else {
        r.error(
            path,
            ConfigErrorKind::InvalidValue,
            format!("`{{{name}}}` is not a property of `inputSchema`; declare it there"),
        );
        return None;
    };
    if !optional && !required.contains(&name.as_str()) {
        r.error(
            path,
            ConfigErrorKind::InvalidValue,
            format!(
                "`{{{name}}}` is required here but `inputSchema` does not list `{name}` in \
                 `required`; add it there, or write `{{{name}?}}` to drop the argument when absent"
            ),
        );
    }
    let types: Vec<&str> = match property.get("type") {
        Some(Value::String(t)) => vec![t],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if let Some(t) = types.iter().find(|t| matches!(**t, "array" | "object")) {
        r.error(
            &schema_path.key("properties").key(&name),
            ConfigErrorKind::InvalidValue,
            format!(
                "`{name}` is used as one argument, so it cannot be of type `{t}`; use a string, \
                 number, integer or boolean"
            ),
        );
    }
    // A free string as a whole argument is read by the program as it pleases: not only as an
    // option (`-` is refused at call time) but as an operand it gives meaning to
    // (`ps -o pid,args {pid}` with `pid: "axe"` lists every process's environment).
    let string = types.is_empty() || types.contains(&"string");
    if string
        && !["pattern", "enum", "const"]
            .iter()
            .any(|k| property.get(*k).is_some())
    {
        r.warn(
            &schema_path.key("properties").key(&name),
            format!(
                "`{{{name}}}` is a whole argument that may be any string, which the program may \
                 read as an option or a keyword of its own (`ps -o pid,args {{pid}}` with \
                 `pid: \"axe\"`); bound it with `\"type\": \"integer\"`, `enum` or `pattern`"
            ),
        );
    }
    let allow_option = match property.get("x-allowOption") {
        None => false,
        Some(v) => r.bool(
            v,
            &schema_path
                .key("properties")
                .key(&name)
                .key("x-allowOption"),
        )?,
    };
    Some(CommandArg::Param {
        name,
        optional,
        allow_option,
    })
}

fn read_cwd(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<PathBuf> {
    let dir = r.string(v, path)?;
    if !Path::new(dir).is_dir() {
        r.error(
            path,
            ConfigErrorKind::InvalidValue,
            format!("`{dir}` is not an existing directory"),
        );
        return None;
    }
    Some(PathBuf::from(dir))
}

fn read_env(r: &mut Reader, v: &Value, path: &JsonPath) -> BTreeMap<String, String> {
    let env = r.string_map(v, path).unwrap_or_default();
    for (k, v) in &env {
        if k.is_empty() || k.contains('=') || k.contains('\0') {
            r.error(
                &path.key(k),
                ConfigErrorKind::InvalidName,
                format!("`{k}` is not an environment variable name (empty, `=` or NUL)"),
            );
        } else if v.contains('\0') {
            r.error(
                &path.key(k),
                ConfigErrorKind::InvalidValue,
                "an environment value cannot contain a NUL character",
            );
        }
    }
    env
}

fn read_output(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<CommandOutput> {
    match r.string(v, path)? {
        "text" => Some(CommandOutput::Text),
        "lines" => Some(CommandOutput::Lines),
        "json" => Some(CommandOutput::Json),
        "jsonl" => Some(CommandOutput::Jsonl),
        other => {
            r.error(
                path,
                ConfigErrorKind::InvalidValue,
                format!(
                    "unknown output `{other}`; expected \"text\", \"lines\", \"json\" or \"jsonl\""
                ),
            );
            None
        }
    }
}

fn default_description(command: &str, args: &[CommandArg]) -> String {
    let mut line = command.to_string();
    for arg in args {
        line.push(' ');
        match arg {
            CommandArg::Literal(s) => line.push_str(s),
            CommandArg::Param { name, optional, .. } => {
                line.push_str(&format!("{{{name}{}}}", if *optional { "?" } else { "" }))
            }
        }
    }
    format!("Runs `{line}`.")
}

/// Why a command tool's program was not found, or why its name is not allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnresolvedCommand(String);

#[cfg(test)]
#[path = "commands_tests.rs"]
mod tests;
