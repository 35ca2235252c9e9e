//! The `commands` section: local programs offered to scripts as tools (`codemode.<name>(args)`),
//! each with a fixed argv template, an `inputSchema` for its arguments and bounds on time and
//! output. What is checked here is everything that can be known from the file: names, the argv
//! template against the schema, the program's existence, `cwd`. Running them is the host's
//! (`upstream/src/commands/`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::de;
use crate::error::ConfigErrorKind;
pub use crate::program::{COMMAND_PATH, UnresolvedCommand, resolve_command};
use crate::reader::{JsonPath, Reader, describe};
use crate::schema::command::{self, Template};
use crate::schema::values::Indexed;

/// The names of the built-in script tools, which a command may not take (the host checks that
/// this list is its own).
pub const BUILTIN_TOOL_NAMES: &[&str] = &[
    "search_tools",
    "get_tools",
    "hitl_request",
    "human_intervention_request",
    "read_resource",
];

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

/// Reads one command through its serde type (each value's own checks in document order), then
/// checks its placeholders against `inputSchema`; `None` when anything in it was wrong.
fn read_command(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<CommandConfig> {
    let errors_before = r.error_count();
    let read = de::read::<command::Command>(r, v, path)?;
    let command_path = path.key("command");
    if read.command.is_none() && !r.reported(&command_path) {
        r.error(path, ConfigErrorKind::MissingField, "missing `command`");
    }
    let (input_schema, validator, args) = read_args(r, read.args, read.input_schema, path);
    let env = read.env.unwrap_or_default().0;
    check_env(r, &env, &path.key("env"));
    if r.error_count() > errors_before {
        return None;
    }
    let command = read.command?.0;
    let description = read
        .description
        .unwrap_or_else(|| default_description(&command, &args));
    let output = match read.output {
        None | Some(command::CommandOutput::Text) => CommandOutput::Text,
        Some(command::CommandOutput::Lines) => CommandOutput::Lines,
        Some(command::CommandOutput::Json) => CommandOutput::Json,
        Some(command::CommandOutput::Jsonl) => CommandOutput::Jsonl,
    };
    Some(CommandConfig {
        command,
        args,
        input_schema,
        description,
        cwd: read.cwd.map(|dir| PathBuf::from(dir.0)),
        env,
        timeout: read
            .timeout_seconds
            .map_or(DEFAULT_COMMAND_TIMEOUT, |t| t.0),
        max_output: read.max_output.map_or(DEFAULT_COMMAND_MAX_OUTPUT, |s| s.0),
        output,
        validator: validator?,
    })
}

/// `args`, each placeholder checked against `inputSchema` (which may then be left out when
/// there are none): the schema, its compiled validator (`None` when it is wrong) and the
/// arguments that are right (the errors are in `r`).
fn read_args(
    r: &mut Reader,
    templates: Option<Indexed<Template>>,
    input_schema: Option<Value>,
    path: &JsonPath,
) -> (Value, Option<Arc<jsonschema::Validator>>, Vec<CommandArg>) {
    let args_path = path.key("args");
    let parsed: Vec<(JsonPath, Template)> = templates
        .map(|t| t.0)
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .filter_map(|(i, t)| Some((args_path.index(i), t?)))
        .collect();
    let schema_path = path.key("inputSchema");
    let input_schema = match input_schema {
        Some(s) => s,
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
        Some(v) => {
            let at = schema_path
                .key("properties")
                .key(&name)
                .key("x-allowOption");
            de::read::<bool>(r, v, &at)?
        }
    };
    Some(CommandArg::Param {
        name,
        optional,
        allow_option,
    })
}

/// The names and values of `env` (at `path`) that no environment can hold.
fn check_env(r: &mut Reader, env: &BTreeMap<String, String>, path: &JsonPath) {
    for (k, v) in env {
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

#[cfg(test)]
#[path = "commands_tests.rs"]
mod tests;
