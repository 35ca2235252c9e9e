//! The value types several sections share, as the file writes them. The typed ones (sizes,
//! durations, counts) read their value with the reader's checks and wording; their schema is
//! the shape the file writes (a `Size` is a string or a number).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, Unexpected, Visitor};

use crate::units::{parse_duration, parse_size};

/// A size in bytes, never zero: a string with a unit (`"64MiB"`) or a whole number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Size(pub(crate) u64);

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match d.deserialize_any(SizeVisitor)? {
            0 => Err(de::Error::custom("must be greater than zero")),
            n => Ok(Size(n)),
        }
    }
}

/// A [`Size`] of at least `MIN` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SizeAtLeast<const MIN: u64>(pub(crate) u64);

impl<'de, const MIN: u64> Deserialize<'de> for SizeAtLeast<MIN> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Size::deserialize(d)? {
            Size(n) if n < MIN => Err(de::Error::custom(format!(
                "must be at least {MIN} bytes, found {n}"
            ))),
            Size(n) => Ok(SizeAtLeast(n)),
        }
    }
}

struct SizeVisitor;

impl Visitor<'_> for SizeVisitor {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a size such as \"64MiB\" or a number of bytes")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<u64, E> {
        parse_size(text).map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<u64, E> {
        Ok(n)
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<u64, E> {
        u64::try_from(n).map_err(|_| not_whole_bytes(&n.to_string()))
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<u64, E> {
        // Written as serde_json writes the number (`2.0`, `1e+20`), as in other messages.
        let written =
            serde_json::Number::from_f64(n).map_or_else(|| n.to_string(), |n| n.to_string());
        Err(not_whole_bytes(&written))
    }
}

fn not_whole_bytes<E: de::Error>(written: &str) -> E {
    E::invalid_value(Unexpected::Other(written), &"a whole number of bytes")
}

/// A duration greater than zero: a number with a unit, `"500ms"`, `"30s"`, `"2m"`, `"1h"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Duration(pub(crate) std::time::Duration);

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        positive_duration(d, "must be greater than zero").map(Duration)
    }
}

/// An eval's timeout: a [`Duration`] whose zero is refused as a timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timeout(pub(crate) std::time::Duration);

impl<'de> Deserialize<'de> for Timeout {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        positive_duration(d, "the timeout must be greater than zero").map(Timeout)
    }
}

fn positive_duration<'de, D: Deserializer<'de>>(
    d: D,
    zero: &str,
) -> Result<std::time::Duration, D::Error> {
    match d.deserialize_str(DurationVisitor)? {
        t if t.is_zero() => Err(de::Error::custom(zero)),
        t => Ok(t),
    }
}

struct DurationVisitor;

impl Visitor<'_> for DurationVisitor {
    type Value = std::time::Duration;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a duration such as \"30s\"")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        parse_duration(text).map_err(E::custom)
    }
}

/// A non-negative whole number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Whole(pub(crate) u64);

impl<'de> Deserialize<'de> for Whole {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_u64(WholeVisitor).map(Whole)
    }
}

struct WholeVisitor;

impl Visitor<'_> for WholeVisitor {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a non-negative whole number")
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<u64, E> {
        Ok(n)
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<u64, E> {
        u64::try_from(n).map_err(|_| E::invalid_type(Unexpected::Signed(n), &self))
    }
}

/// A number of seconds greater than zero (fractions allowed): a timeout. Anything else, of
/// whatever JSON type, is the one [`de::Error::invalid_value`] "expected a positive number of
/// seconds".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seconds(pub(crate) std::time::Duration);

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(d)?;
        let secs = value.as_f64().filter(|s| *s > 0.0);
        match secs.and_then(|s| std::time::Duration::try_from_secs_f64(s).ok()) {
            Some(d) => Ok(Seconds(d)),
            // Not `Other`: the value is described as it is written.
            None => Err(de::Error::invalid_value(
                Unexpected::Unit,
                &"a positive number of seconds",
            )),
        }
    }
}

/// A number of seconds of at least zero (fractions allowed): a wait that may be none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SecondsOrZero(pub(crate) std::time::Duration);

impl<'de> Deserialize<'de> for SecondsOrZero {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let expected = "a number of seconds";
        match serde_json::Value::deserialize(d)?.as_f64() {
            Some(s) if s >= 0.0 => std::time::Duration::try_from_secs_f64(s)
                .map(SecondsOrZero)
                .map_err(|_| de::Error::custom("too large")),
            Some(s) => Err(de::Error::invalid_value(
                Unexpected::Float(s),
                &"a number of seconds, at least 0",
            )),
            None => Err(de::Error::invalid_type(Unexpected::Unit, &expected)),
        }
    }
}

/// An array of strings: `Vec<String>`, refused as "an array of strings" when it is not one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Strings(pub(crate) Vec<String>);

impl<'de> Deserialize<'de> for Strings {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        array_of(d, "an array of strings").map(Strings)
    }
}

/// An array of strings none of which is empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct NonEmptyStrings(pub(crate) Vec<String>);

impl<'de> Deserialize<'de> for NonEmptyStrings {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let strings: Vec<NonEmpty> = array_of(d, "an array of strings")?;
        Ok(NonEmptyStrings(strings.into_iter().map(|s| s.0).collect()))
    }
}

/// A string that is not empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NonEmpty(pub(crate) String);

impl<'de> Deserialize<'de> for NonEmpty {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match String::deserialize(d)? {
            s if s.is_empty() => Err(de::Error::custom("an empty string")),
            s => Ok(NonEmpty(s)),
        }
    }
}

/// The name by which a [`Retry`] asks `codemode_config`'s reader for its attempts.
pub(crate) const RETRY: &str = "$codemode::Retry";

/// A value read again until it reads, each attempt reading its parts that failed before as
/// absent: `None` when it cannot be read. The config reader then reports every problem of the
/// value, each once, without failing what holds it: an array of these is read once however many
/// of its elements are wrong. Any other deserializer reads the value once, as a `T`.
#[derive(Debug)]
pub(crate) struct Retry<T>(pub(crate) Option<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Retry<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        RetryWith(std::marker::PhantomData::<T>)
            .deserialize(d)
            .map(Retry)
    }
}

/// A [`Retry`] of a value read with a seed (each attempt with a copy of it): `None` when it
/// cannot be read.
pub(crate) struct RetryWith<S>(pub(crate) S);

impl<'de, S: DeserializeSeed<'de> + Clone> DeserializeSeed<'de> for RetryWith<S> {
    type Value = Option<S::Value>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_newtype_struct(RETRY, RetryVisitor(self.0))
    }
}

struct RetryVisitor<S>(S);

impl<'de, S: DeserializeSeed<'de> + Clone> Visitor<'de> for RetryVisitor<S> {
    type Value = Option<S::Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value")
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(d).map(Some)
    }

    /// The reader's attempts: one key per attempt, the value under it read anew.
    fn visit_map<A: de::MapAccess<'de>>(self, mut attempts: A) -> Result<Self::Value, A::Error> {
        while attempts.next_key::<()>()?.is_some() {
            // A failed attempt is recorded by the reader, which says whether another helps.
            if let Ok(value) = attempts.next_value_seed(self.0.clone()) {
                return Ok(Some(value));
            }
        }
        Ok(None)
    }
}

/// Reads an array of `T`, refused as `expecting` when the value is no array; an element that
/// cannot be read is left out (its problems reported), so the others are read all the same.
pub(crate) fn array_of<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
    expecting: &'static str,
) -> Result<Vec<T>, D::Error> {
    let elements = elements_of(d, expecting)?;
    Ok(elements.into_iter().flatten().collect())
}

/// The name by which a list asks `codemode_config`'s reader for every element, those read as
/// absent included (as `None`): each element keeps its index.
pub(crate) const HOLES: &str = "$codemode::Holes";

/// Reads an array of `T`, refused as `expecting` when the value is no array; an element that
/// cannot be read is a `None` where it stood (its problems reported).
pub(crate) fn elements_of<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
    expecting: &'static str,
) -> Result<Vec<Option<T>>, D::Error> {
    let visitor = ArrayVisitor {
        expecting,
        element: std::marker::PhantomData,
    };
    d.deserialize_tuple_struct(HOLES, 0, visitor)
}

/// An array of strings read as `T`s, an element that cannot be read a `None` where it stood:
/// the conversion names each other element by its index (`args[2]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Indexed<T>(pub(crate) Vec<Option<T>>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Indexed<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        elements_of(d, "an array of strings").map(Indexed)
    }
}

impl<T> JsonSchema for Indexed<T> {
    fn schema_name() -> Cow<'static, str> {
        Vec::<String>::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        Vec::<String>::schema_id()
    }

    fn inline_schema() -> bool {
        Vec::<String>::inline_schema()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        Vec::<String>::json_schema(generator)
    }
}

struct ArrayVisitor<T> {
    expecting: &'static str,
    element: std::marker::PhantomData<T>,
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for ArrayVisitor<T> {
    type Value = Vec<Option<T>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(Retry(item)) = seq.next_element()? {
            out.push(item);
        }
        Ok(out)
    }
}

/// An object whose values are strings (`env`, `headers`), refused as "an object" when it is
/// not one; an entry whose value is no string is left out (its error reported).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct StringMap(pub(crate) BTreeMap<String, String>);

impl<'de> Deserialize<'de> for StringMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(StringMapVisitor)
    }
}

struct StringMapVisitor;

impl<'de> Visitor<'de> for StringMapVisitor {
    type Value = StringMap;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<StringMap, A::Error> {
        let mut out = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            if let Retry(Some(value)) = map.next_value::<Retry<String>>()? {
                out.insert(key, value);
            }
        }
        Ok(StringMap(out))
    }
}

/// Why `url` is not an absolute `https` URL (`http` only on a loopback host) without a fragment
/// or credentials, in words naming `what`; `None` when it is one.
pub(crate) fn https_url_problem(url: &str, what: &str) -> Option<String> {
    match url::Url::parse(url) {
        Err(e) => Some(format!("expected {what}: {e}")),
        Ok(u) if u.fragment().is_some() => Some(format!("{what} has no `#fragment`")),
        Ok(u) if !u.username().is_empty() || u.password().is_some() => {
            Some(format!("{what} carries no credentials"))
        }
        Ok(u) if u.scheme() == "https" => None,
        Ok(u) if u.scheme() == "http" && is_loopback(&u) => None,
        Ok(_) => Some(format!(
            "expected {what} with `https://` (`http://` only on a loopback host)"
        )),
    }
}

fn is_loopback(u: &url::Url) -> bool {
    match u.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// A whole number of at least 1 (a count of things in memory: a `usize`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Positive(pub(crate) usize);

impl<'de> Deserialize<'de> for Positive {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match usize::try_from(Whole::deserialize(d)?.0) {
            Ok(0) => Err(de::Error::custom("must be at least 1")),
            Ok(n) => Ok(Positive(n)),
            Err(_) => Err(de::Error::custom("too large")),
        }
    }
}

impl<const MIN: u64> JsonSchema for SizeAtLeast<MIN> {
    fn schema_name() -> Cow<'static, str> {
        Size::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        Size::schema_id()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        Size::json_schema(generator)
    }
}

/// Implements `JsonSchema` for a typed value as the schema of the shape the file writes.
macro_rules! schema_as {
    ($shape:ty => $($typed:ty),+) => {$(
        impl ::schemars::JsonSchema for $typed {
            fn inline_schema() -> bool {
                <$shape as ::schemars::JsonSchema>::inline_schema()
            }

            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                <$shape as ::schemars::JsonSchema>::schema_name()
            }

            fn schema_id() -> ::std::borrow::Cow<'static, str> {
                <$shape as ::schemars::JsonSchema>::schema_id()
            }

            fn json_schema(generator: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                <$shape as ::schemars::JsonSchema>::json_schema(generator)
            }
        }
    )+};
}

pub(crate) use schema_as;

schema_as!(SizeShape => Size);
schema_as!(String => Duration, Timeout);
schema_as!(SecondsShape => Seconds, SecondsOrZero);
schema_as!(u64 => Whole, Positive);
schema_as!(Vec<String> => Strings, NonEmptyStrings);
schema_as!(BTreeMap<String, String> => StringMap);

/// A size: a string with a unit (`"64MiB"`, `"512KiB"`, `"10MB"`, `"1000"`) or a whole number
/// of bytes. Never zero.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
#[schemars(rename = "Size")]
pub(crate) enum SizeShape {
    /// With a unit: `B`, `KB`/`KiB`, `MB`/`MiB`, `GB`/`GiB` (or none: bytes).
    Text(String),
    /// Bytes.
    Bytes(#[schemars(range(min = 1))] u64),
}

/// A number of seconds (fractions allowed), greater than zero.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(rename = "Seconds")]
pub(crate) struct SecondsShape(#[schemars(range(min = 0))] pub(crate) f64);

/// One of the risk levels, lowest first.
// Read with the wording of its own `Deserialize`, in `leaves`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    /// Reads, harmless calls.
    Low,
    /// The default level.
    Medium,
    /// Writes and other calls with effects.
    High,
    /// Calls a human must look at closely.
    Critical,
}

/// What a call gets: `"allow"`, `"deny"` or `"ask"` (a human decides).
// Read with the wording of its own `Deserialize`, in `leaves`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Disposition {
    /// It runs.
    Allow,
    /// It fails with a denial the script can catch.
    Deny,
    /// A human approves or declines it.
    Ask,
}
