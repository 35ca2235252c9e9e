//! Tool schemas, compiled once per tool list: a call's arguments are checked against the
//! tool's `inputSchema` before the call, its result against the `outputSchema`.
//!
//! Schemas are plain JSON (no MCP types). Without `$schema` they are read as JSON Schema
//! 2020-12 (the MCP default); a `$schema` naming draft 4, 6, 7 or 2019-09 is honoured. `$ref`s
//! resolve inside the schema only: nothing is fetched from the network or the disk. A schema
//! that does not compile is reported once ([`ToolSchemas::compile`]'s problems) and that tool's
//! calls are not checked.
//!
//! ```
//! use codemode_policies::{ToolSchemaSpec, ToolSchemas};
//! use serde_json::json;
//!
//! let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
//! let (schemas, problems) = ToolSchemas::compile([ToolSchemaSpec {
//!     name: "fs__read_file",
//!     input_schema: &schema,
//!     output_schema: None,
//!     signature: "function fs__read_file(args: { path: string }): Promise<unknown>;".into(),
//!     annotated: None,
//! }]);
//! assert!(problems.is_empty());
//! assert!(schemas.check_arguments("fs__read_file", &json!({"path": "/tmp/x"})).is_ok());
//! let invalid = schemas.check_arguments("fs__read_file", &json!({"path": 42})).unwrap_err();
//! assert_eq!(invalid.errors[0].path, "/path");
//! assert_eq!(invalid.errors[0].message, "expected string, got number (42)");
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use codemode_runtime::ToolError;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use serde_json::{Value, json};

use crate::display::neutralize;

/// The member of a tool result's structured content (an object) that holds the values of the
/// media blocks the upstream sent beside it: added by codemode, not part of the tool's
/// `outputSchema` (see `ToolSchemas::check_output`).
pub const MEDIA_KEY: &str = "_media";

/// The `reason` of a call refused for its arguments: the ledger's reason and the audit
/// record's start with `invalid_arguments:`.
pub const INVALID_ARGUMENTS: &str = "invalid_arguments";
/// At most this many violations are reported per call (the rest are counted).
pub const MAX_VIOLATIONS: usize = 20;
/// A violation's message is cut to this many characters (a given value can be large).
pub const MAX_VIOLATION_CHARS: usize = 200;

/// One tool's schemas, as [`ToolSchemas::compile`] takes them.
#[derive(Debug, Clone)]
pub struct ToolSchemaSpec<'a> {
    /// The name scripts call it by.
    pub name: &'a str,
    /// Its `inputSchema`.
    pub input_schema: &'a Value,
    /// Its `outputSchema`, if it declares one.
    pub output_schema: Option<&'a Value>,
    /// Its TypeScript declaration (what `get_tools` shows), quoted when arguments fail.
    pub signature: String,
    /// The class its annotations say ([`crate::Class::from_annotations`]); `None` when it has
    /// none (the tool is then write unless the config classifies it).
    pub annotated: Option<crate::Class>,
}

/// Which of a tool's schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchemaKind {
    /// `inputSchema`.
    Input,
    /// `outputSchema`.
    Output,
}

impl fmt::Display for SchemaKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SchemaKind::Input => "inputSchema",
            SchemaKind::Output => "outputSchema",
        })
    }
}

/// A schema that does not compile: not enforced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaProblem {
    /// The tool.
    pub tool: String,
    /// Which schema.
    pub kind: SchemaKind,
    /// The validator's reason.
    pub message: String,
}

impl fmt::Display for SchemaProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the {} of `{}` is not a valid JSON Schema, so it is not enforced: {}",
            self.kind, self.tool, self.message
        )
    }
}

struct Compiled {
    input: Option<Validator>,
    output: Option<Validator>,
    signature: Arc<str>,
    keys: Option<Arc<Keys>>,
    annotated: Option<crate::Class>,
}

/// The top-level argument keys an `inputSchema` names, for errors that say which key was wrong
/// and which were expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    /// `required`, in the schema's order.
    pub required: Vec<String>,
    /// The other `properties`, in the schema's order.
    pub optional: Vec<String>,
}

impl Keys {
    /// The keys of an object schema with `properties`; `None` for any other schema (its keys
    /// are not known, so none is called unknown).
    fn of(schema: &Value) -> Option<Keys> {
        let properties = schema.get("properties")?.as_object()?;
        let required: Vec<String> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        let optional = properties
            .keys()
            .filter(|k| !required.contains(k))
            .cloned()
            .collect();
        Some(Keys { required, optional })
    }

    fn knows(&self, key: &str) -> bool {
        self.required.iter().chain(&self.optional).any(|k| k == key)
    }
}

/// The compiled schemas of one tool list. Build with [`ToolSchemas::compile`]; a tool that is
/// not in it (or whose schema did not compile) is not checked.
#[derive(Default)]
pub struct ToolSchemas {
    tools: HashMap<String, Compiled>,
}

impl fmt::Debug for ToolSchemas {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&String> = self.tools.keys().collect();
        names.sort();
        f.debug_struct("ToolSchemas")
            .field("tools", &names)
            .finish()
    }
}

/// One way the arguments (or a result) fail their schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Where, as a JSON Pointer into the arguments (`""`: the arguments as a whole).
    pub path: String,
    /// What was expected and what was given.
    pub message: String,
}

/// A call whose arguments fail the tool's `inputSchema`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidArguments {
    /// The tool.
    pub tool: String,
    /// The first `MAX_VIOLATIONS` (20) violations, in the validator's order.
    pub errors: Vec<Violation>,
    /// How many more there were.
    pub more: usize,
    /// Each violation's path and message with the given values left out (for audit logs that
    /// must not hold arguments).
    pub masked: Vec<Violation>,
    /// The tool's TypeScript declaration.
    pub signature: Arc<str>,
    /// The keys of `args` its schema does not name (when the schema names its keys).
    pub unknown: Vec<String>,
    /// The required keys `args` lacks.
    pub missing: Vec<String>,
    /// The keys its schema names.
    pub keys: Option<Arc<Keys>>,
}

impl InvalidArguments {
    /// `invalid_arguments: /path: expected string, got number (42); …` on one line.
    pub fn summary(&self) -> String {
        summary(&self.errors, self.more)
    }

    /// The same with the given values left out: for the audit log.
    pub(crate) fn masked_summary(&self) -> String {
        summary(&self.masked, self.more)
    }

    /// The error the script sees: a `ToolError` whose one-line message (at most
    /// [`MAX_ARGUMENTS_MESSAGE`] bytes) starts with `invalid_arguments:`, names each unknown key
    /// and the keys expected (`unknown key `filePath`; expected `path` (optional: `head`)`),
    /// then the other violations, and points to `get_tools` for the types. Its `.data` is
    /// `{"errors": [{"path", "message"}], "unknown": [..], "missing": [..]}`.
    pub(crate) fn to_tool_error(&self) -> ToolError {
        let mut parts: Vec<String> = Vec::new();
        if !self.unknown.is_empty() {
            let s = if self.unknown.len() == 1 { "" } else { "s" };
            parts.push(format!("unknown key{s} {}", quoted(&self.unknown)));
        }
        let keyed = !self.unknown.is_empty() || !self.missing.is_empty();
        if let Some(keys) = self.keys.as_deref().filter(|_| keyed) {
            let mut expected = match keys.required.as_slice() {
                [] => "expected no required key".to_string(),
                required => format!("expected {}", quoted(required)),
            };
            if !keys.optional.is_empty() {
                expected.push_str(&format!(" (optional: {})", quoted(&keys.optional)));
            }
            parts.push(expected);
        } else if !self.missing.is_empty() {
            parts.push(format!("missing {}", quoted(&self.missing)));
        }
        // The key problems are said above; the validator's own words for them would repeat them.
        let rest = self
            .errors
            .iter()
            .filter(|v| !(keyed && is_key_violation(v)));
        parts.extend(rest.map(|v| format!("{}: {}", display_path(&v.path), v.message)));
        let lead = format!("{INVALID_ARGUMENTS}: `{}` was not called: ", self.tool);
        let hint = format!(" (its types: get_tools({{names: [\"{}\"]}}))", self.tool);
        let message = fit_parts(&lead, &parts, self.more, &hint);
        let errors: Vec<Value> = self
            .errors
            .iter()
            .map(|v| json!({"path": v.path, "message": v.message}))
            .collect();
        ToolError::Failed {
            message,
            data: Some(
                json!({ "errors": errors, "unknown": self.unknown, "missing": self.missing }),
            ),
        }
    }
}

/// The most bytes of the message an invalid call's script error carries.
pub const MAX_ARGUMENTS_MESSAGE: usize = 400;

/// `lead` + `parts` joined by `; ` + `hint`, within [`MAX_ARGUMENTS_MESSAGE`] bytes: the parts
/// that do not fit are counted (`… and 3 more`), the hint left out when it does not fit.
fn fit_parts(lead: &str, parts: &[String], more: usize, hint: &str) -> String {
    let room = MAX_ARGUMENTS_MESSAGE.saturating_sub(lead.len() + " … and 999 more".len());
    let mut shown: Vec<String> = Vec::new();
    let mut used = 0;
    for part in parts {
        let part = cut_bytes(part, room.saturating_sub(used + 2));
        if part.is_empty() {
            break;
        }
        used += part.len() + 2;
        shown.push(part);
    }
    let left = parts.len() - shown.len() + more;
    let mut message = format!("{lead}{}", shown.join("; "));
    if left > 0 {
        message.push_str(&format!("; … and {left} more"));
    }
    if message.len() + hint.len() <= MAX_ARGUMENTS_MESSAGE {
        message.push_str(hint);
    }
    message
}

/// `text` within `max` bytes, at a character boundary, with `…` when cut (empty when not even
/// a few characters fit).
fn cut_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    if max < 16 {
        return String::new();
    }
    let mut end = max - '…'.len_utf8();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// `` `a`, `b` `` (at most 12 names, the rest counted).
fn quoted(keys: &[String]) -> String {
    let mut out: Vec<String> = keys
        .iter()
        .take(12)
        .map(|k| format!("`{}`", neutralize(k)))
        .collect();
    if keys.len() > 12 {
        out.push(format!("{} more", keys.len() - 12));
    }
    out.join(", ")
}

/// Whether a root violation is about a missing or an unexpected key (said by the key part).
fn is_key_violation(v: &Violation) -> bool {
    v.path.is_empty()
        && (v.message.ends_with("is a required property")
            || v.message
                .starts_with("Additional properties are not allowed"))
}

fn summary(errors: &[Violation], more: usize) -> String {
    let mut parts: Vec<String> = errors
        .iter()
        .map(|v| format!("{}: {}", display_path(&v.path), v.message))
        .collect();
    if more > 0 {
        parts.push(format!("… and {more} more"));
    }
    format!("{INVALID_ARGUMENTS}: {}", parts.join("; "))
}

fn display_path(path: &str) -> &str {
    if path.is_empty() { "(root)" } else { path }
}

impl ToolSchemas {
    /// Compiles each tool's schemas. Returns the schemas and the problems: one per schema that
    /// does not compile (that schema is then not enforced).
    pub fn compile<'a>(
        tools: impl IntoIterator<Item = ToolSchemaSpec<'a>>,
    ) -> (ToolSchemas, Vec<SchemaProblem>) {
        let mut problems = Vec::new();
        let mut out = HashMap::new();
        for spec in tools {
            // `validator_for`, not `options().build`: the builder is generic, so each crate calling
            // it compiled jsonschema's whole schema compiler again.
            let mut build = |schema: &Value, kind| match jsonschema::validator_for(schema) {
                Ok(v) => Some(v),
                Err(e) => {
                    problems.push(SchemaProblem {
                        tool: spec.name.to_string(),
                        kind,
                        message: cut(&neutralize(&e.to_string())),
                    });
                    None
                }
            };
            let input = build(spec.input_schema, SchemaKind::Input);
            let keys = Keys::of(spec.input_schema).map(Arc::new);
            let output = spec
                .output_schema
                .and_then(|s| build(s, SchemaKind::Output));
            out.insert(
                spec.name.to_string(),
                Compiled {
                    input,
                    output,
                    signature: spec.signature.into(),
                    keys,
                    annotated: spec.annotated,
                },
            );
        }
        (ToolSchemas { tools: out }, problems)
    }

    /// The class `tool`'s annotations say, if it is listed and has annotations.
    pub fn annotated_class(&self, tool: &str) -> Option<crate::Class> {
        self.tools.get(tool).and_then(|c| c.annotated)
    }

    /// Whether `tool` has an `inputSchema` that is enforced.
    pub fn checks_arguments_of(&self, tool: &str) -> bool {
        self.tools.get(tool).is_some_and(|c| c.input.is_some())
    }

    /// Checks `args` against `tool`'s `inputSchema`. A tool without one (unknown, or whose
    /// schema did not compile) passes.
    ///
    /// # Errors
    /// [`InvalidArguments`] listing each violation.
    pub fn check_arguments(&self, tool: &str, args: &Value) -> Result<(), Box<InvalidArguments>> {
        let Some(compiled) = self.tools.get(tool) else {
            return Ok(());
        };
        let Some(validator) = &compiled.input else {
            return Ok(());
        };
        let (errors, masked, more) = violations(validator, args);
        if errors.is_empty() {
            return Ok(());
        }
        let keys = compiled.keys.clone();
        let given = args.as_object();
        let unknown = match (&keys, given) {
            (Some(keys), Some(given)) => given.keys().filter(|k| !keys.knows(k)).cloned().collect(),
            _ => Vec::new(),
        };
        let missing = match (&keys, given) {
            (Some(keys), Some(given)) => keys
                .required
                .iter()
                .filter(|k| !given.contains_key(*k))
                .cloned()
                .collect(),
            _ => Vec::new(),
        };
        Err(Box::new(InvalidArguments {
            tool: tool.to_string(),
            errors,
            more,
            masked,
            signature: compiled.signature.clone(),
            unknown,
            missing,
            keys,
        }))
    }

    /// Whether `tool` has an `outputSchema` that [`check_output`](Self::check_output) checks.
    pub(crate) fn checks_output_of(&self, tool: &str) -> bool {
        self.tools.get(tool).is_some_and(|c| c.output.is_some())
    }

    /// Checks a result of `tool` against its `outputSchema`: `None` when it matches (or the
    /// tool declares none), else a warning naming the tool and each failing path. The result
    /// is checked as returned, before the output policy masks or removes anything, so the
    /// warning names no value and no key of the result (masked messages: "expected string,
    /// got number", "2 unexpected properties"), and no path at or below one of `hidden` (the
    /// JSON Pointers the policy will mask or remove: [`crate::OutputPolicy::hidden`]) — those
    /// are only counted.
    ///
    /// A [`MEDIA_KEY`] member of an object result is left out: codemode adds it (the media
    /// blocks an upstream sent beside its structured content), the tool's schema does not
    /// describe it.
    pub(crate) fn check_output(
        &self,
        tool: &str,
        result: &Value,
        hidden: &[String],
    ) -> Option<String> {
        let validator = self.tools.get(tool)?.output.as_ref()?;
        let without_media;
        let result = match result {
            Value::Object(fields) if fields.contains_key(MEDIA_KEY) => {
                let mut fields = fields.clone();
                fields.remove(MEDIA_KEY);
                without_media = Value::Object(fields);
                &without_media
            }
            _ => result,
        };
        let (_, errors, more) = violations(validator, result);
        if errors.is_empty() {
            return None;
        }
        let under_hidden = |path: &str| {
            hidden.iter().any(|h| {
                path.strip_prefix(h.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
        };
        let (concealed, shown): (Vec<&Violation>, Vec<&Violation>) =
            errors.iter().partition(|v| under_hidden(&v.path));
        let mut parts: Vec<String> = shown
            .iter()
            .map(|v| format!("{}: {}", display_path(&v.path), v.message))
            .collect();
        if !concealed.is_empty() {
            parts.push(format!(
                "{} at fields the output policy hides",
                concealed.len()
            ));
        }
        if more > 0 {
            parts.push(format!("… and {more} more"));
        }
        Some(format!(
            "the result of `{tool}` does not match its outputSchema: {}",
            parts.join("; ")
        ))
    }
}

/// The violations (full and masked) and how many more there were past [`MAX_VIOLATIONS`].
fn violations(validator: &Validator, instance: &Value) -> (Vec<Violation>, Vec<Violation>, usize) {
    let mut errors = Vec::new();
    let mut masked = Vec::new();
    let mut more = 0;
    for e in validator.iter_errors(instance) {
        if errors.len() == MAX_VIOLATIONS {
            more += 1;
            continue;
        }
        let path = e.instance_path().to_string();
        masked.push(Violation {
            path: path.clone(),
            message: cut(&neutralize(&describe_masked(&e))),
        });
        errors.push(Violation {
            path,
            message: cut(&neutralize(&describe(&e))),
        });
    }
    (errors, masked, more)
}

/// [`describe`] without the value, nor the keys of the instance: "expected string, got
/// number", "2 unexpected properties".
fn describe_masked(e: &ValidationError<'_>) -> String {
    let properties =
        |n: usize| format!("{n} unexpected propert{}", if n == 1 { "y" } else { "ies" });
    match e.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => properties(unexpected.len()),
        ValidationErrorKind::PropertyNames { .. } => {
            "a property name does not match `propertyNames`".to_string()
        }
        ValidationErrorKind::Type { .. } => {
            let full = describe(e);
            match full.rfind(" (") {
                Some(i) => full[..i].to_string(),
                None => full,
            }
        }
        _ => e.masked().to_string(),
    }
}

/// The validator's message, except for type errors: "expected string, got number (42)".
fn describe(e: &ValidationError<'_>) -> String {
    match e.kind() {
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(ts) => ts
                    .into_iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(" or "),
            };
            let given = e.instance();
            format!("expected {expected}, got {} ({given})", kind_of(given))
        }
        _ => e.to_string(),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `text` cut to [`MAX_VIOLATION_CHARS`] characters, with `…` when cut.
fn cut(text: &str) -> String {
    if text.chars().count() <= MAX_VIOLATION_CHARS {
        return text.to_string();
    }
    let mut s: String = text.chars().take(MAX_VIOLATION_CHARS - 1).collect();
    s.push('…');
    s
}

/// Where a [`crate::PolicyToolHost`] gets the schemas of the tools it calls, at each call (the
/// tool list may change during an eval).
pub trait SchemaSource: Send + Sync {
    /// The schemas of the current tool list.
    fn schemas(&self) -> Arc<ToolSchemas>;
}

impl SchemaSource for Arc<ToolSchemas> {
    fn schemas(&self) -> Arc<ToolSchemas> {
        self.clone()
    }
}

#[cfg(test)]
mod tests;
