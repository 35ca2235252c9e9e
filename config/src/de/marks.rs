//! What a typed value's `Deserialize` tells the reader beyond serde's errors, carried in the
//! text of [`de::Error::custom`] (serde's errors have no kind of their own): a refusal of
//! another kind than [`ConfigErrorKind::InvalidValue`] (a bad glob, regex or JSON Pointer),
//! required fields missing in their own words, and a problem noted without failing the value.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

use crate::error::ConfigErrorKind;

/// Marks a [`de::Error::custom`] message that carries its kind (see [`refused`]): serde's errors
/// have no kind of their own, and a typed value refused as a bad glob, regex or JSON Pointer
/// must be reported as one.
const KIND_MARK: char = '\u{1}';

/// The kinds a typed value may give its refusal besides [`ConfigErrorKind::InvalidValue`], by
/// their tag in a marked message.
const KINDS: [ConfigErrorKind; 5] = [
    ConfigErrorKind::InvalidGlob,
    ConfigErrorKind::InvalidRegex,
    ConfigErrorKind::InvalidPointer,
    ConfigErrorKind::InvalidName,
    ConfigErrorKind::UnknownProfile,
];

/// `message` marked with `kind` (one of [`KINDS`]).
fn marked(kind: ConfigErrorKind, message: impl fmt::Display) -> String {
    let tag = KINDS.iter().position(|k| *k == kind).unwrap_or(usize::MAX);
    format!("{KIND_MARK}{tag}{KIND_MARK}{message}")
}

/// The error a typed value's `Deserialize` returns to refuse its value as a problem of `kind`
/// (one of [`KINDS`]), worded `message`. Read by [`read`](super::read); another deserializer
/// would show the marks, but only [`read`](super::read) reads the types that use it.
pub(crate) fn refused<E: de::Error>(kind: ConfigErrorKind, message: impl fmt::Display) -> E {
    E::custom(marked(kind, message))
}

/// The error a struct's `Deserialize` returns when required fields are missing, each
/// `(field, message)` in its own words: [`read`](super::read) records each at the struct's
/// path, but not one whose field was given with a wrong value (that error is reported already).
pub(crate) fn missing<E: de::Error>(fields: &[(&str, String)]) -> E {
    let text: String = fields
        .iter()
        .map(|(field, message)| format!("{KIND_MARK}m{field}{KIND_MARK}{message}"))
        .collect();
    E::custom(text)
}

/// The name by which a value asks [`read`](super::read) to record a problem at its path and
/// to read it all the same (see [`noted`]).
pub(super) const NOTE: &str = "$codemode::Note";

/// Reads a `T` from `d` after recording a problem of `kind` (one of [`KINDS`]) at its path: a
/// problem of what names the value (its key, a JSON Pointer) that does not keep the value from
/// being read, reported before the value's own. Another deserializer reads the `T` without it.
pub(crate) fn noted<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
    kind: ConfigErrorKind,
    message: impl fmt::Display,
) -> Result<T, D::Error> {
    let visitor = Noted {
        problem: marked(kind, message),
        value: std::marker::PhantomData,
    };
    d.deserialize_newtype_struct(NOTE, visitor)
}

/// Carries a [`noted`] problem (as its `expecting`) to the reader's deserializer, then reads
/// the value.
struct Noted<T> {
    problem: String,
    value: std::marker::PhantomData<T>,
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for Noted<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.problem)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        T::deserialize(d)
    }
}

/// What a marked message says.
pub(super) enum Marked {
    /// A problem of its kind.
    Problem(ConfigErrorKind, String),
    /// Required fields missing, each `(field, message)`.
    Missing(Vec<(String, String)>),
}

/// What `text` says, when it is marked (made by [`refused`] or [`missing`]).
pub(super) fn unmark(text: &str) -> Option<Marked> {
    let marked = text.strip_prefix(KIND_MARK)?;
    let parts: Vec<&str> = marked.split(KIND_MARK).collect();
    let mut missing = Vec::new();
    for pair in parts.chunks(2) {
        let [tag, message] = pair else { break };
        if let Some(field) = tag.strip_prefix('m') {
            missing.push((field.to_string(), message.to_string()));
        } else if let Some(kind) = tag.parse::<usize>().ok().and_then(|i| KINDS.get(i)) {
            return Some(Marked::Problem(*kind, message.to_string()));
        }
    }
    (!missing.is_empty()).then_some(Marked::Missing(missing))
}
