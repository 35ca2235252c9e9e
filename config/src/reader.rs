//! A checked walk over a `serde_json::Value`: type checks and unknown-key checks that record
//! every problem with its JSON path, so that one pass reports all of them.

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde_json::{Map, Value};

use crate::error::{ConfigError, ConfigErrorKind, ConfigWarning};
use crate::substitute::{EnvLookup, SubstituteError, substitute};

/// A path into the document: `evaluation.profiles.safe.allowlist[2]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JsonPath {
    text: String,
    /// How much of `text` is the path of the value holding this one.
    parent: usize,
}

impl JsonPath {
    /// The document itself, displayed `(root)`.
    pub fn root() -> Self {
        JsonPath::default()
    }

    /// The path of member `key`: `.key` for plain words, `["key"]` otherwise.
    pub fn key(&self, key: &str) -> Self {
        let plain = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '$');
        let mut s = self.text.clone();
        if plain {
            if !s.is_empty() {
                s.push('.');
            }
            s.push_str(key);
        } else {
            s.push('[');
            s.push_str(&Value::String(key.to_string()).to_string());
            s.push(']');
        }
        self.child(s)
    }

    /// The path of element `i`: `[i]`.
    pub fn index(&self, i: usize) -> Self {
        self.child(format!("{}[{i}]", self.text))
    }

    fn child(&self, text: String) -> Self {
        JsonPath {
            text,
            parent: self.text.len(),
        }
    }

    /// The path as text (`""` for the root).
    pub(crate) fn as_text(&self) -> &str {
        &self.text
    }

    /// The path of the value holding this one, as text (`""` for the root's members).
    pub(crate) fn parent_text(&self) -> &str {
        &self.text[..self.parent]
    }
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.text.is_empty() {
            f.write_str("(root)")
        } else {
            f.write_str(&self.text)
        }
    }
}

/// Describes a JSON value for "expected X, found Y" messages: its type and, for scalars, a
/// short form of the value.
pub fn describe(v: &Value) -> String {
    const MAX: usize = 40;
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Number(n) => format!("a number ({n})"),
        Value::String(s) if s.chars().count() > MAX => {
            format!(
                "a string (\"{}…\")",
                s.chars().take(MAX).collect::<String>()
            )
        }
        Value::String(s) => format!("a string ({v})", v = Value::String(s.clone())),
        Value::Array(_) => "an array".to_string(),
        Value::Object(_) => "an object".to_string(),
    }
}

/// The keys of each object of the document in written order, by the object's path
/// (`JsonPath` text).
pub(crate) type KeyOrder = HashMap<String, Vec<String>>;

/// Collects problems while the caller walks the document: each check records what is wrong
/// with its path and returns `None`, so that the walk goes on and one pass reports everything.
#[derive(Debug, Default)]
pub struct Reader {
    pub(crate) errors: Vec<ConfigError>,
    /// The path of each error and of each value holding one (see [`Reader::reported`]).
    pub(crate) reported: HashSet<String>,
    /// Each object's keys in written order (empty when the document came as a `Value`).
    pub(crate) key_order: KeyOrder,
    /// Things accepted but worth telling (a client-only key that codemode ignores).
    pub(crate) warnings: Vec<ConfigWarning>,
    /// Where `${VAR}` references are read.
    pub(crate) env: EnvLookup,
}

impl Reader {
    /// A reader with no problems yet, `${VAR}` references read from the process environment
    /// and no written key order (maps are walked in their own order).
    pub fn new() -> Self {
        Reader::default()
    }

    /// How many errors were recorded so far: a section compares it before and after a part
    /// to know whether that part was sound.
    pub fn error_count(&self) -> usize {
        self.errors.len()
    }

    /// Whether an error was recorded at `path` or inside it: a value read as absent because it
    /// was wrong (not missing), or a list read without its wrong elements (not empty).
    pub fn reported(&self, path: &JsonPath) -> bool {
        self.reported.contains(&path.to_string())
    }

    /// The errors recorded, in the order found.
    pub fn into_errors(self) -> Vec<ConfigError> {
        self.errors
    }

    /// An error of `kind` at `path`.
    pub fn error(&mut self, path: &JsonPath, kind: ConfigErrorKind, message: impl Into<String>) {
        self.push(ConfigError::new(path.to_string(), kind, message));
    }

    /// Records `error`.
    pub(crate) fn push(&mut self, error: ConfigError) {
        let path = error.path();
        // Every prefix ending before a member or an element; one cut inside a quoted key is
        // no path and never asked for.
        for (i, c) in path.char_indices() {
            if c == '.' || c == '[' {
                self.reported.insert(path[..i].to_string());
            }
        }
        self.reported.insert(path.to_string());
        self.errors.push(error);
    }

    /// A warning at `path`.
    pub fn warn(&mut self, path: &JsonPath, message: impl Into<String>) {
        self.warnings
            .push(ConfigWarning::new(path.to_string(), message));
    }

    /// `text` (found at `path`) with its `${VAR}` references replaced (see `substitute`); an
    /// unset variable is a [`ConfigErrorKind::MissingEnv`] error, a malformed reference an
    /// [`ConfigErrorKind::InvalidValue`] one.
    pub fn substituted(&mut self, text: &str, path: &JsonPath) -> Option<String> {
        match substitute(text, &self.env) {
            Ok(value) => Some(value),
            Err(e) => {
                let kind = match e {
                    SubstituteError::Unset(_) => ConfigErrorKind::MissingEnv,
                    SubstituteError::Malformed(_) => ConfigErrorKind::InvalidValue,
                };
                self.error(path, kind, e.to_string());
                None
            }
        }
    }

    /// A [`ConfigErrorKind::WrongType`] error: "expected `what`, found …".
    pub fn expected(&mut self, path: &JsonPath, what: &str, v: &Value) {
        self.error(
            path,
            ConfigErrorKind::WrongType,
            format!("expected {what}, found {}", describe(v)),
        );
    }

    /// An object whose keys are all in `allowed`; each other key is an error (the object is
    /// still returned so that the known keys get checked too).
    pub fn object<'v>(
        &mut self,
        v: &'v Value,
        path: &JsonPath,
        allowed: &[&str],
    ) -> Option<&'v Map<String, Value>> {
        let Value::Object(map) = v else {
            self.expected(path, "an object", v);
            return None;
        };
        for key in map.keys() {
            if !allowed.contains(&key.as_str()) {
                let list = allowed
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let hint = did_you_mean(key, allowed)
                    .map(|k| format!(" (did you mean `{k}`?)"))
                    .unwrap_or_default();
                self.error(
                    &path.key(key),
                    ConfigErrorKind::UnknownKey,
                    format!("unknown key `{key}`{hint}; allowed keys: {list}"),
                );
            }
        }
        Some(map)
    }

    /// Any object (free-form keys, such as the profile or server names).
    pub fn any_object<'v>(
        &mut self,
        v: &'v Value,
        path: &JsonPath,
    ) -> Option<&'v Map<String, Value>> {
        match v {
            Value::Object(map) => Some(map),
            _ => {
                self.expected(path, "an object", v);
                None
            }
        }
    }

    /// The members of `map` (the object at `path`) in written order when the document's text
    /// was read, else in the map's own (sorted) order.
    pub fn in_written_order<'v>(
        &self,
        map: &'v Map<String, Value>,
        path: &JsonPath,
    ) -> Vec<(&'v String, &'v Value)> {
        match self.key_order.get(&path.to_string()) {
            Some(keys) => keys
                .iter()
                .filter_map(|k| map.get_key_value(k.as_str()))
                .collect(),
            None => map.iter().collect(),
        }
    }
}

/// The allowed key closest to `key` (Levenshtein distance, ignoring ASCII case), if it is close
/// enough to be a likely typo.
fn did_you_mean<'k>(key: &str, allowed: &[&'k str]) -> Option<&'k str> {
    let key_lower = key.to_ascii_lowercase();
    allowed
        .iter()
        .map(|k| (strsim::levenshtein(&key_lower, &k.to_ascii_lowercase()), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths() {
        let root = JsonPath::root();
        let cases: &[(JsonPath, &str)] = &[
            (root.clone(), "(root)"),
            (root.key("limits"), "limits"),
            (root.key("a").key("b-c").index(2), "a.b-c[2]"),
            (
                root.key("rules").index(0).key("when").key("/path"),
                "rules[0].when[\"/path\"]",
            ),
            (root.key("a.b"), "[\"a.b\"]"),
            (root.key(""), "[\"\"]"),
        ];
        for (path, want) in cases {
            assert_eq!(path.to_string(), *want);
        }
    }

    #[test]
    fn unknown_keys_are_listed_with_a_hint() {
        let mut r = Reader::default();
        let v = json!({"allowlist": [], "asklst": [], "zzz": 1});
        r.object(&v, &JsonPath::root().key("p"), &["allowlist", "asklist"]);
        let msgs: Vec<String> = r.errors.iter().map(ToString::to_string).collect();
        assert!(
            r.errors
                .iter()
                .all(|e| e.kind() == ConfigErrorKind::UnknownKey)
        );
        assert_eq!(
            msgs,
            vec![
                "p.asklst: unknown key `asklst` (did you mean `asklist`?); allowed keys: `allowlist`, `asklist`",
                "p.zzz: unknown key `zzz`; allowed keys: `allowlist`, `asklist`",
            ]
        );
    }
}
