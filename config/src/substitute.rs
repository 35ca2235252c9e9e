//! Environment variables in a server entry's `args`, `env`, `headers` and `url`, written the
//! ways MCP clients write them: `${VAR}`, `${env:VAR}` (VS Code, Cursor) and `${VAR:-default}`
//! (Claude Code; the default is used when `VAR` is unset or empty).
//!
//! A `$` not followed by `{` is kept as it is. An unset variable without a default is an error
//! naming the variable and where it is referenced; a value never appears in a message (it may
//! be a token). VS Code's `${input:id}` prompts are an error: codemode has nobody to prompt.

use std::fmt;
use std::sync::Arc;

/// A variable's value by name (`None`: unset).
type LookupFn = dyn Fn(&str) -> Option<String> + Send + Sync;

/// Where variables are read: the process environment, or a function (tests, embedders).
#[derive(Clone)]
pub(crate) struct EnvLookup(Arc<LookupFn>);

impl EnvLookup {
    pub(crate) fn new(lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        EnvLookup(Arc::new(lookup))
    }

    fn get(&self, name: &str) -> Option<String> {
        (self.0)(name)
    }
}

impl Default for EnvLookup {
    /// The process environment (a variable that is not UTF-8 counts as unset).
    fn default() -> Self {
        EnvLookup::new(|name| std::env::var(name).ok())
    }
}

impl fmt::Debug for EnvLookup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EnvLookup")
    }
}

/// Why a text could not be substituted; the message names the variable, never a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SubstituteError {
    /// `${NAME}` with `NAME` unset and no default.
    Unset(String),
    /// Not a reference codemode understands (unclosed, bad name, `${input:…}`).
    Malformed(String),
}

impl fmt::Display for SubstituteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubstituteError::Unset(name) => write!(
                f,
                "the environment variable `{name}` is not set (referenced as `${{{name}}}`); \
                 set it, or give a default: `${{{name}:-value}}`"
            ),
            SubstituteError::Malformed(message) => f.write_str(message),
        }
    }
}

/// `text` with every `${…}` reference replaced by its variable's value.
pub(crate) fn substitute(text: &str, env: &EnvLookup) -> Result<String, SubstituteError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(SubstituteError::Malformed(format!(
                "`${{` without a closing `}}` in `{}`",
                shorten(&rest[start..])
            )));
        };
        out.push_str(&resolve(&after[..end], env)?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The value of one reference, given its inside: `NAME`, `env:NAME`, `NAME:-default`.
fn resolve(inner: &str, env: &EnvLookup) -> Result<String, SubstituteError> {
    if let Some(id) = inner.strip_prefix("input:") {
        return Err(SubstituteError::Malformed(format!(
            "`${{input:{id}}}` is a VS Code input, which codemode cannot prompt for; put the \
             value in an environment variable and write `${{env:NAME}}`"
        )));
    }
    let reference = inner.strip_prefix("env:").unwrap_or(inner);
    let (name, default) = match reference.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (reference, None),
    };
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(SubstituteError::Malformed(format!(
            "`${{{}}}`: `{}` is not an environment variable name (ASCII letters, digits and `_`); \
             write `${{VAR}}`, `${{env:VAR}}` or `${{VAR:-default}}`",
            shorten(inner),
            shorten(name)
        )));
    }
    match (env.get(name), default) {
        (Some(value), Some(default)) if value.is_empty() => Ok(default.to_string()),
        (Some(value), _) => Ok(value),
        (None, Some(default)) => Ok(default.to_string()),
        (None, None) => Err(SubstituteError::Unset(name.to_string())),
    }
}

/// At most 40 characters of written config text, for messages.
fn shorten(text: &str) -> String {
    const MAX: usize = 40;
    if text.chars().count() > MAX {
        format!("{}…", text.chars().take(MAX).collect::<String>())
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> EnvLookup {
        EnvLookup::new(|name| match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            "HOME" => Some("/home/u".into()),
            _ => None,
        })
    }

    #[test]
    fn every_form_is_replaced() {
        let cases = [
            ("plain", "plain"),
            ("Bearer ${TOKEN}", "Bearer s3cret"),
            ("Bearer ${env:TOKEN}", "Bearer s3cret"),
            ("${HOME}/x:${TOKEN}", "/home/u/x:s3cret"),
            ("${UNSET:-fallback}", "fallback"),
            ("${env:UNSET:-a b:c}", "a b:c"),
            ("${UNSET:-}", ""),
            ("${EMPTY:-used}", "used"),
            ("[${EMPTY}]", "[]"),
            ("${TOKEN:-unused}", "s3cret"),
            ("$HOME and $ and $$", "$HOME and $ and $$"),
        ];
        for (text, want) in cases {
            assert_eq!(substitute(text, &env()).as_deref(), Ok(want), "{text}");
        }
    }

    #[test]
    fn errors_name_the_variable_and_never_a_value() {
        let cases = [
            (
                "x ${MISSING} y",
                "the environment variable `MISSING` is not set (referenced as `${MISSING}`); set it, or give a default: `${MISSING:-value}`",
            ),
            (
                "${env:MISSING}",
                "the environment variable `MISSING` is not set (referenced as `${MISSING}`); set it, or give a default: `${MISSING:-value}`",
            ),
            ("${TOKEN", "`${` without a closing `}` in `${TOKEN`"),
            (
                "${1X}",
                "`${1X}`: `1X` is not an environment variable name (ASCII letters, digits and `_`); write `${VAR}`, `${env:VAR}` or `${VAR:-default}`",
            ),
            (
                "${}",
                "`${}`: `` is not an environment variable name (ASCII letters, digits and `_`); write `${VAR}`, `${env:VAR}` or `${VAR:-default}`",
            ),
            (
                "${input:api-key}",
                "`${input:api-key}` is a VS Code input, which codemode cannot prompt for; put the value in an environment variable and write `${env:NAME}`",
            ),
        ];
        for (text, want) in cases {
            let message = substitute(text, &env()).unwrap_err().to_string();
            assert_eq!(message, want, "{text}");
            assert!(!message.contains("s3cret"));
        }
    }
}
