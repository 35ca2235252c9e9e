//! The typed values of the policy sections (`evaluation`): globs, permission names, risk
//! levels. Each checks its value as the walk reads it ([`crate::de::read`]), so that its error
//! comes at its path and in the order of the file, with the kind and wording the section's
//! readers have always given it; its schema is the shape the file writes.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Unexpected, Visitor};
use serde_json::Value;

use super::values::{Disposition, Risk, array_of, schema_as};
use crate::de::refused;
use crate::error::ConfigErrorKind;

/// Compiles one tool-name glob with explicit options, so that matching is the same on every
/// platform: `*` crosses everything (tool names have no `/`), `\` escapes, case-sensitive. An
/// empty glob is refused: it matches nothing, which is never what was meant.
///
/// # Errors
///
/// A message naming the glob and what is wrong with it.
pub fn tool_glob(glob: &str) -> Result<globset::Glob, String> {
    if glob.is_empty() {
        return Err("empty glob (matches nothing); use `*` to match every tool".to_string());
    }
    compile_glob(glob, false)
}

/// Compiles `glob` in globset syntax, `\` escaping and case-sensitive, `*` crossing `/` unless
/// `literal_separator`: a message naming the glob when it does not compile.
pub(crate) fn compile_glob(glob: &str, literal_separator: bool) -> Result<globset::Glob, String> {
    globset::GlobBuilder::new(glob)
        .literal_separator(literal_separator)
        .backslash_escape(true)
        .case_insensitive(false)
        .build()
        .map_err(|e| format!("invalid glob `{glob}`: {}", e.kind()))
}

/// A tool-name glob ([`tool_glob`]), refused as [`ConfigErrorKind::InvalidGlob`] when it does
/// not compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Glob(pub(crate) String);

impl<'de> Deserialize<'de> for Glob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let glob = String::deserialize(d)?;
        match tool_glob(&glob) {
            Ok(_) => Ok(Glob(glob)),
            Err(message) => Err(refused(ConfigErrorKind::InvalidGlob, message)),
        }
    }
}

/// Tool-name globs (`fs__*`, `time__now`); `*` matches across `__`. A wrong element is left
/// out (its error reported at its index), so that the others are checked too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Globs(pub(crate) Vec<String>);

impl<'de> Deserialize<'de> for Globs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let globs: Vec<Glob> = array_of(d, "an array of strings")?;
        Ok(Globs(globs.into_iter().map(|g| g.0).collect()))
    }
}

/// A permission name: any string but a blank one.
struct Permission(String);

impl<'de> Deserialize<'de> for Permission {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match String::deserialize(d)? {
            name if name.trim().is_empty() => {
                Err(de::Error::custom("a permission name cannot be empty"))
            }
            name => Ok(Permission(name)),
        }
    }
}

/// Permission names (`requirePermissions`, `evalRequiresPermissions`): each once, in written
/// order (a name given twice asks for nothing more).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Permissions(pub(crate) Vec<String>);

impl<'de> Deserialize<'de> for Permissions {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let names: Vec<Permission> = array_of(d, "an array of strings")?;
        let mut out: Vec<String> = Vec::with_capacity(names.len());
        for Permission(name) in names {
            if !out.contains(&name) {
                out.push(name);
            }
        }
        Ok(Permissions(out))
    }
}

/// A risk policy's `approvers`: [`Permissions`], at least one (an empty list would let nobody
/// decide, which `requireApproval` or an ask then turns into a denial nobody can lift).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Approvers(pub(crate) Vec<String>);

impl<'de> Deserialize<'de> for Approvers {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Permissions::deserialize(d)? {
            Permissions(names) if names.is_empty() => Err(de::Error::custom(
                "an empty list lets nobody decide: name at least one permission (such as \"approve:critical\"), or remove the key for the default (any approver)",
            )),
            Permissions(names) => Ok(Approvers(names)),
        }
    }
}

/// The value named one of `names` (`(name, value)`, as the file writes them), for the
/// enums of names: anything else, of whatever JSON type, is the one `invalid_value`
/// "expected `expected`" (not `Other`: the value is described as it is written).
pub(crate) fn one_of<'de, D: Deserializer<'de>, T: Copy>(
    d: D,
    names: &[(&str, T)],
    expected: &'static str,
) -> Result<T, D::Error> {
    let value = Value::deserialize(d)?;
    let name = value.as_str();
    match names.iter().find(|(n, _)| Some(*n) == name) {
        Some((_, value)) => Ok(*value),
        None => Err(de::Error::invalid_value(Unexpected::Unit, &expected)),
    }
}

/// The risk levels by name.
const RISK_LEVELS: [(&str, Risk); 4] = [
    ("low", Risk::Low),
    ("medium", Risk::Medium),
    ("high", Risk::High),
    ("critical", Risk::Critical),
];

impl<'de> Deserialize<'de> for Risk {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let expected = "\"low\", \"medium\", \"high\" or \"critical\"";
        one_of(d, &RISK_LEVELS, expected)
    }
}

impl Risk {
    /// The level written `name`.
    fn named(name: &str) -> Option<Risk> {
        RISK_LEVELS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, r)| *r)
    }
}

impl<'de> Deserialize<'de> for Disposition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let names = [
            ("allow", Disposition::Allow),
            ("deny", Disposition::Deny),
            ("ask", Disposition::Ask),
        ];
        one_of(d, &names, "\"allow\", \"deny\" or \"ask\"")
    }
}

/// The longest profile `description`, in characters: it goes into a tool description.
const MAX_DESCRIPTION_CHARS: usize = 500;

/// A profile's `description`: a string of at most [`MAX_DESCRIPTION_CHARS`] characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Description(pub(crate) String);

impl<'de> Deserialize<'de> for Description {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        match text.chars().count() {
            n if n > MAX_DESCRIPTION_CHARS => Err(de::Error::custom(format!(
                "at most {MAX_DESCRIPTION_CHARS} characters (it goes into a tool description), found {n}"
            ))),
            _ => Ok(Description(text)),
        }
    }
}

/// A string that must not be empty (an `approvalDiffs` entry's tool and arguments).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Filled(pub(crate) String);

impl<'de> Deserialize<'de> for Filled {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match String::deserialize(d)? {
            text if text.is_empty() => Err(de::Error::custom("must not be empty")),
            text => Ok(Filled(text)),
        }
    }
}

/// A profile's `risk`: tool-name globs → risk level, in written order (the first match wins).
/// An entry whose level is wrong is refused for its level, one whose glob is wrong for its
/// glob, at the entry's path; the others are kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RiskMap(pub(crate) Vec<(String, Risk)>);

impl<'de> Deserialize<'de> for RiskMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(RiskMapVisitor)
    }
}

struct RiskMapVisitor;

impl<'de> Visitor<'de> for RiskMapVisitor {
    type Value = RiskMap;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RiskMap, A::Error> {
        let mut out = Vec::new();
        while let Some(glob) = map.next_key::<String>()? {
            let level = map.next_value_seed(LevelOfGlob(&glob))?;
            out.push((glob, level));
        }
        Ok(RiskMap(out))
    }
}

/// The level of a `risk` entry, then its glob: a glob is checked only when its level is right.
struct LevelOfGlob<'g>(&'g str);

impl<'de> DeserializeSeed<'de> for LevelOfGlob<'_> {
    type Value = Risk;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Risk, D::Error> {
        let level = Risk::deserialize(d)?;
        match tool_glob(self.0) {
            Ok(_) => Ok(level),
            Err(message) => Err(refused(ConfigErrorKind::InvalidGlob, message)),
        }
    }
}

/// A key of `riskPolicies`: a risk level's name.
pub(crate) struct RiskKey(pub(crate) Risk);

impl<'de> Deserialize<'de> for RiskKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let level = String::deserialize(d)?;
        match Risk::named(&level) {
            Some(risk) => Ok(RiskKey(risk)),
            None => Err(de::Error::custom(format!(
                "unknown risk level `{level}`; expected `low`, `medium`, `high` or `critical`"
            ))),
        }
    }
}

schema_as!(Vec<String> => Globs, Permissions, Approvers);
schema_as!(String => Description);
schema_as!(std::collections::BTreeMap<String, Risk> => RiskMap);
