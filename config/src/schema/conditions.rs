//! A rule's conditions as the walk reads them: `when` (JSON Pointer → regex) and `whenPath`
//! (JSON Pointer → absolute path globs), each pointer, regex and glob checked at its path in
//! the order of the file.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};

use super::leaves::compile_glob;
use super::values::{array_of, schema_as};
use crate::de::{noted, refused};
use crate::error::ConfigErrorKind;

/// Compiles one `whenPath` glob: absolute (values are normalised to absolute paths), `*`
/// within one path component and `**` across them, `\` escapes, case-sensitive.
///
/// # Errors
///
/// A message naming the glob and what is wrong with it.
pub fn path_glob(glob: &str) -> Result<globset::Glob, String> {
    if !glob.starts_with('/') {
        return Err(format!(
            "`{glob}` is not an absolute path glob: values are normalised to absolute paths, so a glob must start with `/` (e.g. \"/{glob}\")"
        ));
    }
    compile_glob(glob, true)
}

/// RFC 6901: `""`, or `/`-separated tokens where `~` is only in `~0` and `~1`.
fn check_pointer(pointer: &str) -> Result<(), String> {
    if !(pointer.is_empty() || pointer.starts_with('/')) {
        return Err(format!(
            "`{pointer}` is not a JSON Pointer: it must be \"\" (the whole arguments) or start with `/` (e.g. \"/{pointer}\")"
        ));
    }
    let mut chars = pointer.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Err(format!(
                "`{pointer}` is not a JSON Pointer: `~` must be followed by 0 (for `~`) or 1 (for `/`)"
            ));
        }
    }
    Ok(())
}

/// The regex crate's message on one line, with the position when it is a syntax error.
fn regex_problem(pattern: &str, e: &regex::Error) -> String {
    let span = match regex_syntax::Parser::new().parse(pattern) {
        Err(regex_syntax::Error::Parse(e)) => Some((e.kind().to_string(), *e.span())),
        Err(regex_syntax::Error::Translate(e)) => Some((e.kind().to_string(), *e.span())),
        _ => None,
    };
    match (e, span) {
        (regex::Error::Syntax(_), Some((kind, span))) => {
            format!("{kind} (at character {})", span.start.column)
        }
        (regex::Error::CompiledTooBig(limit), _) => {
            format!("the compiled regex exceeds the size limit of {limit} bytes")
        }
        _ => e
            .to_string()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// A `when` regex, compiled as it is read; refused as [`ConfigErrorKind::InvalidRegex`].
#[derive(Debug, Clone)]
pub(crate) struct Pattern(pub(crate) regex::Regex);

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let pattern = String::deserialize(d)?;
        match regex::Regex::new(&pattern) {
            Ok(regex) => Ok(Pattern(regex)),
            Err(e) => Err(refused(
                ConfigErrorKind::InvalidRegex,
                format!("invalid regex `{pattern}`: {}", regex_problem(&pattern, &e)),
            )),
        }
    }
}

/// One absolute path glob ([`path_glob`]); refused as [`ConfigErrorKind::InvalidGlob`].
struct PathGlob(String);

impl<'de> Deserialize<'de> for PathGlob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let glob = String::deserialize(d)?;
        match path_glob(&glob) {
            Ok(_) => Ok(PathGlob(glob)),
            Err(message) => Err(refused(ConfigErrorKind::InvalidGlob, message)),
        }
    }
}

/// The path globs of one `whenPath` entry: at least one, each valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathGlobs(pub(crate) Vec<String>);

impl<'de> Deserialize<'de> for PathGlobs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let globs: Vec<PathGlob> = array_of(d, "an array of strings")?;
        if globs.is_empty() {
            return Err(de::Error::custom(
                "needs at least one path glob (e.g. [\"/etc/**\"])",
            ));
        }
        Ok(PathGlobs(globs.into_iter().map(|g| g.0).collect()))
    }
}

/// A rule's `when` or `whenPath`: JSON Pointer → `T`, in written order. A pointer that is
/// not one is an error at its entry, and its value is read all the same (its problems after).
#[derive(Debug, Clone)]
pub(crate) struct PointerMap<T>(pub(crate) Vec<(String, T)>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for PointerMap<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(PointerMapVisitor(PhantomData))
    }
}

struct PointerMapVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for PointerMapVisitor<T> {
    type Value = PointerMap<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PointerMap<T>, A::Error> {
        let mut out = Vec::new();
        while let Some(pointer) = map.next_key::<String>()? {
            let value = map.next_value_seed(AtPointer(&pointer, PhantomData))?;
            out.push((pointer, value));
        }
        Ok(PointerMap(out))
    }
}

/// The value of a [`PointerMap`] entry, its pointer checked first.
struct AtPointer<'p, T>(&'p str, PhantomData<T>);

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for AtPointer<'_, T> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        match check_pointer(self.0) {
            Ok(()) => T::deserialize(d),
            Err(message) => noted(d, ConfigErrorKind::InvalidPointer, message),
        }
    }
}

schema_as!(BTreeMap<String, String> => PointerMap<Pattern>);
schema_as!(BTreeMap<String, Vec<String>> => PointerMap<PathGlobs>);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers() {
        let ok = ["", "/", "/a", "/a/0/b", "/a~0b", "/a~1b", "/~01"];
        for p in ok {
            assert_eq!(check_pointer(p), Ok(()), "{p}");
        }
        let bad = [
            ("path", "start with `/`"),
            ("/a~2", "`~` must be followed"),
            ("/a~", "`~` must"),
        ];
        for (p, want) in bad {
            let err = check_pointer(p).unwrap_err();
            assert!(err.contains(want), "{p}: {err}");
        }
    }

    #[test]
    fn regex_messages_are_one_line_with_a_position() {
        let cases = [
            ("^/etc/(", "unclosed group (at character 7)"),
            ("a{2,1}", "invalid repetition count range"),
            ("\\p{Nope}", "Unicode property not found"),
        ];
        for (pattern, want) in cases {
            let e = regex::Regex::new(pattern).unwrap_err();
            let msg = regex_problem(pattern, &e);
            assert!(
                msg.contains(want) && !msg.contains('\n'),
                "{pattern}: {msg}"
            );
        }
    }
}
