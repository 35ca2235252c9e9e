//! The output policy (`outputs` in the config): parts of tool results masked or removed before
//! the script sees them.
//!
//! Each rule names tools by glob and lists [`PathPattern`]s (JSON Pointers where a `*` segment
//! matches any array index or object key):
//!
//! - `mask`: the value there becomes `"***"`; a string longer than 12 characters keeps its last
//!   4 (`"***abcd"`), so that a human can still tell two secrets apart. Any other value (a
//!   number, an object, …) becomes `"***"` as a whole.
//! - `redact`: the value is removed: an object member loses its key; an array element is
//!   taken out of the array (the elements after it move up one place). `""` (the whole
//!   result) becomes `null`.
//! - `allow`: deny by default. A tool matched by any rule with `allow` keeps only the values
//!   at those paths (with everything below them, and the objects and arrays that lead to
//!   them); every other value is removed as by `redact`. Several rules' `allow` lists add up.
//!   `mask` and `redact` apply within what is allowed.
//!
//! Every rule whose globs match the tool applies. All paths are matched against the result as
//! the tool returned it, so rules do not depend on each other's order; masks go first, then
//! removals (from the last array element backwards, so that each path still means the element
//! it matched). A result that is text, not JSON, is a string: only `""` reaches it, so under
//! an `allow` list without `""` a text result is withheld whole (it becomes `null`, `""` is
//! listed, and the enforcement layer warns the script why).
//!
//! ```
//! use codemode_policies::Config;
//! use serde_json::json;
//!
//! let config = Config::from_json_str(r#"{"outputs": [
//!     {"tools": ["db__*"], "mask": ["/password", "/items/*/token"], "redact": ["/ssn"]}
//! ]}"#)?;
//! let mut result = json!({
//!     "password": "hunter2",
//!     "ssn": "078-05-1120",
//!     "items": [{"token": "tok_live_1234567890abcd"}, {"name": "no token"}]
//! });
//! let paths = config.outputs.apply("db__get_user", &mut result);
//! assert_eq!(result, json!({"password": "***", "items": [{"token": "***abcd"}, {"name": "no token"}]}));
//! assert_eq!(paths, ["/items/0/token", "/password", "/ssn"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod pointer;

pub use pointer::{InvalidPathPattern, PathPattern};

use serde_json::Value;

use crate::profile::GlobList;
use pointer::{Path, Relation, Step, get_mut};

/// What a masked value becomes (before the kept tail of a long string).
pub const MASK: &str = "***";
/// Strings longer than this many characters keep their last [`MASK_KEEP_TAIL`] when masked.
pub const MASK_KEEP_TAIL_ABOVE: usize = 12;
/// How many trailing characters a long masked string keeps.
pub const MASK_KEEP_TAIL: usize = 4;

/// The `outputs` rules, in configuration order. The default has none: results pass unchanged.
#[derive(Debug, Clone, Default)]
pub struct OutputPolicy {
    rules: Vec<OutputRule>,
}

/// One entry of `outputs`.
#[derive(Debug, Clone)]
pub struct OutputRule {
    tools: GlobList,
    mask: Vec<PathPattern>,
    redact: Vec<PathPattern>,
    allow: Option<Vec<PathPattern>>,
    strict_schema: bool,
}

impl OutputRule {
    pub(crate) fn new(
        tools: GlobList,
        mask: Vec<PathPattern>,
        redact: Vec<PathPattern>,
        allow: Option<Vec<PathPattern>>,
    ) -> Self {
        OutputRule {
            tools,
            mask,
            redact,
            allow,
            strict_schema: false,
        }
    }

    /// With `strictSchema`: a result of its tools that breaks the tool's `outputSchema` fails
    /// the call.
    pub(crate) fn strict_schema(mut self, strict: bool) -> Self {
        self.strict_schema = strict;
        self
    }

    /// Whether a result of its tools that breaks the `outputSchema` fails the call.
    pub fn is_strict_schema(&self) -> bool {
        self.strict_schema
    }

    /// The only paths kept (`allow`), when the rule has the list: deny by default.
    pub fn allow(&self) -> Option<&[PathPattern]> {
        self.allow.as_deref()
    }

    /// The tool-name globs, as written.
    pub fn tools(&self) -> &[String] {
        self.tools.globs()
    }

    /// The paths masked.
    pub fn mask(&self) -> &[PathPattern] {
        &self.mask
    }

    /// The paths removed.
    pub fn redact(&self) -> &[PathPattern] {
        &self.redact
    }
}

impl OutputPolicy {
    pub(crate) fn new(rules: Vec<OutputRule>) -> Self {
        OutputPolicy { rules }
    }

    /// The rules, in configuration order.
    pub fn rules(&self) -> &[OutputRule] {
        &self.rules
    }

    /// Whether no rule is configured.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// A digest of the rules that apply to `tool` (the same while those rules are): what a
    /// script receives from `tool` depends on them, so what was learned from its results under
    /// one set of rules (an observed result type) does not carry over to another.
    pub fn fingerprint(&self, tool: &str) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        for rule in self
            .rules
            .iter()
            .filter(|r| r.tools.first_index(tool).is_some())
        {
            format!(
                "{:?}{:?}{:?}{}",
                rule.mask, rule.redact, rule.allow, rule.strict_schema
            )
            .hash(&mut hasher);
        }
        hasher.finish()
    }

    /// Whether any rule applies to `tool`.
    pub fn applies_to(&self, tool: &str) -> bool {
        self.rules
            .iter()
            .any(|r| r.tools.first_index(tool).is_some())
    }

    /// Masks and removes, in `value` (the result of `tool`), what the rules for `tool` name;
    /// returns the concrete paths that were masked or removed, as JSON Pointers, each once, in
    /// document order (array indexes by number). See the module docs for the rules.
    pub fn apply(&self, tool: &str, value: &mut Value) -> Vec<String> {
        let (masked, redacted) = self.paths(tool, value);
        if masked.is_empty() && redacted.is_empty() {
            return Vec::new();
        }
        // Deepest and last first: a masked or removed value never hides a later path.
        for path in masked.iter().rev() {
            if let Some(v) = get_mut(value, path) {
                *v = mask_value(v);
            }
        }
        for path in redacted.iter().rev() {
            remove(value, path);
        }
        pointers(masked, redacted)
    }

    /// Whether a rule with `allow` names `tool`: its results keep only the allowed fields.
    pub(crate) fn allows_only(&self, tool: &str) -> bool {
        self.rules
            .iter()
            .any(|r| r.allow.is_some() && r.tools.first_index(tool).is_some())
    }

    /// Whether a rule with `strictSchema` names `tool`: its results that break its
    /// `outputSchema` fail the call.
    pub fn strict_schema(&self, tool: &str) -> bool {
        self.rules
            .iter()
            .any(|r| r.strict_schema && r.tools.first_index(tool).is_some())
    }

    /// The paths [`apply`](OutputPolicy::apply) would mask or remove in `value`, without
    /// touching it: what a message about the result as returned must not name.
    pub fn hidden(&self, tool: &str, value: &Value) -> Vec<String> {
        let (masked, redacted) = self.paths(tool, value);
        pointers(masked, redacted)
    }

    /// The concrete paths the rules for `tool` mask and remove in `value`, each sorted and once.
    fn paths(&self, tool: &str, value: &Value) -> (Vec<Path>, Vec<Path>) {
        let mut masked: Vec<Path> = Vec::new();
        let mut redacted: Vec<Path> = Vec::new();
        let mut allowed: Option<Vec<&PathPattern>> = None;
        for rule in self
            .rules
            .iter()
            .filter(|r| r.tools.first_index(tool).is_some())
        {
            for p in &rule.mask {
                masked.extend(p.matches(value));
            }
            for p in &rule.redact {
                redacted.extend(p.matches(value));
            }
            if let Some(allow) = &rule.allow {
                allowed.get_or_insert_with(Vec::new).extend(allow);
            }
        }
        if let Some(allowed) = allowed {
            let mut outside = Vec::new();
            not_allowed(value, &allowed, &mut Vec::new(), &mut outside);
            // A path inside one removed anyway is neither masked nor listed again.
            outside.retain(|o| !redacted.iter().any(|r| o.starts_with(r)));
            let under = |p: &Path| outside.iter().any(|o| p.starts_with(o));
            masked.retain(|p| !under(p));
            redacted.retain(|p| !under(p));
            redacted.extend(outside);
        }
        masked.sort();
        masked.dedup();
        redacted.sort();
        redacted.dedup();
        (masked, redacted)
    }
}

/// The topmost places in `value` (at `at`) that no `allowed` pattern covers or leads to: a
/// value a pattern covers is kept whole; one a pattern leads below is kept as structure and
/// its members or elements are looked at in turn (a scalar there is not allowed: what the
/// pattern names is not in it).
fn not_allowed(value: &Value, allowed: &[&PathPattern], at: &mut Path, out: &mut Vec<Path>) {
    let mut leads = false;
    for p in allowed {
        match p.relation(at) {
            Relation::Covers => return,
            Relation::LeadsBelow => leads = true,
            Relation::Apart => {}
        }
    }
    match value {
        _ if !leads => out.push(at.clone()),
        Value::Object(map) => {
            for (k, v) in map {
                at.push(Step::Key(k.clone()));
                not_allowed(v, allowed, at, out);
                at.pop();
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                at.push(Step::Index(i));
                not_allowed(v, allowed, at, out);
                at.pop();
            }
        }
        _ => out.push(at.clone()),
    }
}

/// Both lists of paths as JSON Pointers, in document order, each once.
fn pointers(masked: Vec<Path>, redacted: Vec<Path>) -> Vec<String> {
    let mut all: Vec<Path> = masked.into_iter().chain(redacted).collect();
    all.sort();
    all.dedup();
    all.iter().map(|p| pointer::pointer(p)).collect()
}

/// The masked form of `v`: `"***"`, or `"***"` and the last 4 characters of a string longer
/// than 12.
pub fn mask_value(v: &Value) -> Value {
    match v {
        Value::String(s) if s.chars().count() > MASK_KEEP_TAIL_ABOVE => {
            let tail: String = s.chars().skip(s.chars().count() - MASK_KEEP_TAIL).collect();
            Value::String(format!("{MASK}{tail}"))
        }
        _ => Value::String(MASK.to_string()),
    }
}

/// Removes the value at `path`: an object member, an array element, or (the root) everything.
fn remove(value: &mut Value, path: &[Step]) {
    let Some((last, parent)) = path.split_last() else {
        *value = Value::Null;
        return;
    };
    match (get_mut(value, parent), last) {
        (Some(Value::Object(map)), Step::Key(k)) => {
            map.remove(k);
        }
        (Some(Value::Array(items)), Step::Index(i)) if *i < items.len() => {
            items.remove(*i);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
