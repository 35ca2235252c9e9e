//! Reading a section into the serde types that describe it, with the reader's guarantees:
//! every problem reported (not only the first), each at its JSON path, with the kind and
//! wording of [`Reader`]'s own checks.
//!
//! serde's derive stops at the first error. [`read`] keeps its types and gets every error by
//! reading again: each attempt walks the value with a [`Collecting`] deserializer, which records
//! the first problem it meets in the [`Reader`] and fails; the next attempt reads the failed
//! value as absent (a key left out, an element or entry skipped), so that it gets past it and
//! meets the next problem. The walk is the same up to each failure, so the errors come in the
//! order one pass would find them; one recorded again by a later attempt (an unknown key seen
//! before the failure) is kept once.
//!
//! The attempts are made by the nearest [`Retry`] holding the failure: the section itself, and
//! each element of the lists the types read with `array_of`. A wrong element is so left out
//! where it stands, without reading its list or section again: a section is read once plus
//! once per problem of its own (a few fields), and each element once plus once per problem in
//! it — linear in the document, however many of its elements are wrong.
//!
//! An error that only follows from parts read as absent is not recorded: a required field whose
//! value was wrong is not also missing, a list whose elements were all wrong not also empty.
//!
//! Objects are read as [`Reader::object`] reads them: its unknown-key errors (with their hint
//! and list of allowed keys), then the known keys in the order the type declares them, so
//! `deny_unknown_fields` (kept for the schema) never fires. A leaf value's error comes from its
//! `Visitor`: `invalid_type` is [`ConfigErrorKind::WrongType`] worded "expected X, found Y"
//! (Y as [`describe`] puts it), `invalid_value` is [`ConfigErrorKind::InvalidValue`] worded the
//! same (Y given by the visitor as [`Unexpected::Other`], else described), and `custom` is
//! [`ConfigErrorKind::InvalidValue`] with its message as it is.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use serde::Deserialize;
use serde::de::value::{BorrowedStrDeserializer, UnitDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, Expected, Unexpected, Visitor};
use serde_json::Value;

use crate::error::{ConfigError, ConfigErrorKind};

mod marks;

use crate::reader::{JsonPath, Reader, describe};
use crate::schema::values::{HOLES, RETRY, RetryWith};
use marks::{Marked, NOTE, unmark};
pub(crate) use marks::{missing, noted, refused};

/// Reads `v` (found at `path`) as a `T`, recording every problem in `r`: `None` when `v` itself
/// is unusable (then its error is recorded); otherwise a `T` without the values that were wrong
/// (an `Option` field left `None`, a list element or map entry left out).
pub(crate) fn read<'de, T: Deserialize<'de>>(
    r: &mut Reader,
    v: &'de Value,
    path: &JsonPath,
) -> Option<T> {
    read_with(r, v, path, std::marker::PhantomData::<T>)
}

/// [`read`] with a seed: for a type whose reading needs what the caller knows.
pub(crate) fn read_with<'de, S: DeserializeSeed<'de> + Clone>(
    r: &mut Reader,
    v: &'de Value,
    path: &JsonPath,
    seed: S,
) -> Option<S::Value> {
    let walk = Walk {
        reader: RefCell::new(std::mem::take(r)),
        recorded: RefCell::new(HashSet::new()),
        skipped: RefCell::new(HashSet::new()),
        holes: RefCell::new(HashSet::new()),
        failed_at: RefCell::new(None),
    };
    let read = RetryWith(seed).deserialize(Collecting::new(v, path.clone(), &walk));
    *r = walk.reader.into_inner();
    read.ok().flatten()
}

/// Reads `value` (at `path`) with `seed`, recording what goes wrong there: also what the
/// value's type refuses after its visitor accepted the JSON (a size of zero).
fn read_value<'de, S: DeserializeSeed<'de>>(
    seed: S,
    value: &'de Value,
    path: JsonPath,
    walk: &Walk,
) -> Result<S::Value, Error> {
    let at = Collecting::new(value, path.clone(), walk);
    at.settle(seed.deserialize(Collecting::new(value, path, walk)))
}

/// What the attempts of one [`read`] share.
struct Walk {
    /// Where the errors go (taken out of the caller's `&mut Reader` while reading).
    reader: RefCell<Reader>,
    /// The errors this read recorded (path, kind, message), so that an attempt that meets one
    /// again (an unknown key before the value that failed) does not record it twice.
    recorded: RefCell<HashSet<(String, ConfigErrorKind, String)>>,
    /// The values read as absent: those that failed in earlier attempts, by path.
    skipped: RefCell<HashSet<String>>,
    /// The values some of whose parts are read as absent, by path.
    holes: RefCell<HashSet<String>>,
    /// Where the current attempt failed.
    failed_at: RefCell<Option<JsonPath>>,
}

impl Walk {
    /// Records `error` unless an earlier attempt of this read recorded it.
    fn record(&self, error: ConfigError) {
        let key = (
            error.path().to_string(),
            error.kind(),
            error.message().to_string(),
        );
        if self.recorded.borrow_mut().insert(key) {
            self.reader.borrow_mut().push(error);
        }
    }

    fn skips(&self, path: &JsonPath) -> bool {
        self.skipped.borrow().contains(&path.to_string())
    }

    /// After an attempt at the value at `path` failed: whether another attempt can get further
    /// (it failed inside the value, at a part not read as absent yet, which the next attempt
    /// will). When not, the value itself is read as absent.
    fn another_attempt(&self, path: &JsonPath) -> bool {
        let failed = self.failed_at.borrow_mut().take();
        let again = failed
            .filter(|failed| failed != path)
            .is_some_and(|failed| self.skip(&failed));
        if !again {
            self.skip(path);
        }
        again
    }

    /// Reads the value at `path` as absent from now on: false when it already was.
    fn skip(&self, path: &JsonPath) -> bool {
        let holes = path.parent_text().to_string();
        self.holes.borrow_mut().insert(holes);
        self.skipped.borrow_mut().insert(path.to_string())
    }
}

/// The error of a [`Collecting`] read. What a visitor returns is recorded by the deserializer
/// that called it (it knows the value and its path) and becomes [`Error::Reported`], which
/// travels up to [`read`].
#[derive(Debug)]
pub(crate) enum Error {
    /// Recorded already.
    Reported,
    /// A value of the wrong JSON type; `expected` says what was wanted.
    WrongType { expected: String },
    /// A value of the right type that is not allowed; `found` names it when the visitor words
    /// it (else it is described).
    Invalid {
        expected: String,
        found: Option<String>,
    },
    /// A message of its own.
    Message(ConfigErrorKind, String),
    /// A struct's required field was not given.
    Missing(&'static str),
    /// Required fields not given, each `(field, message)` (see [`missing`]).
    MissingFields(Vec<(String, String)>),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Reported => f.write_str("the problem is recorded in the reader"),
            Error::WrongType { expected } => write!(f, "expected {expected}"),
            Error::Invalid { expected, .. } => write!(f, "expected {expected}"),
            Error::Message(_, message) => f.write_str(message),
            Error::Missing(field) => write!(f, "`{field}` is required"),
            Error::MissingFields(fields) => {
                let messages: Vec<&str> = fields.iter().map(|(_, m)| m.as_str()).collect();
                f.write_str(&messages.join("; "))
            }
        }
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(message: T) -> Self {
        let text = message.to_string();
        match unmark(&text) {
            Some(Marked::Problem(kind, message)) => Error::Message(kind, message),
            Some(Marked::Missing(fields)) => Error::MissingFields(fields),
            None => Error::Message(ConfigErrorKind::InvalidValue, text),
        }
    }

    fn invalid_type(_: Unexpected<'_>, expected: &dyn Expected) -> Self {
        Error::WrongType {
            expected: expected.to_string(),
        }
    }

    fn invalid_value(found: Unexpected<'_>, expected: &dyn Expected) -> Self {
        Error::Invalid {
            expected: expected.to_string(),
            found: match found {
                Unexpected::Other(text) => Some(text.to_string()),
                _ => None,
            },
        }
    }

    fn missing_field(field: &'static str) -> Self {
        Error::Missing(field)
    }
}

/// A deserializer of one value of the document, which records what goes wrong with it.
pub(crate) struct Collecting<'de, 'w> {
    value: &'de Value,
    path: JsonPath,
    walk: &'w Walk,
}

impl<'de, 'w> Collecting<'de, 'w> {
    fn new(value: &'de Value, path: JsonPath, walk: &'w Walk) -> Self {
        Collecting { value, path, walk }
    }

    /// `result`, its error recorded at this value (unless recorded already).
    fn settle<T>(&self, result: Result<T, Error>) -> Result<T, Error> {
        result.map_err(|e| self.report(e))
    }

    fn report(&self, error: Error) -> Error {
        if matches!(error, Error::Reported) {
            return Error::Reported;
        }
        if let Error::MissingFields(fields) = error {
            // Each unless its field was given with a wrong value (reported already).
            for (field, message) in fields {
                if !self.walk.skips(&self.path.key(&field)) {
                    let error = ConfigError::new(
                        self.path.to_string(),
                        ConfigErrorKind::MissingField,
                        message,
                    );
                    self.walk.record(error);
                }
            }
            return self.fail();
        }
        if self.consequence(&error) {
            return self.fail();
        }
        let (kind, message) = match error {
            Error::Reported | Error::MissingFields(_) => return Error::Reported,
            Error::Missing(field) => (
                ConfigErrorKind::MissingField,
                format!("`{field}` is required"),
            ),
            Error::WrongType { expected } => (
                ConfigErrorKind::WrongType,
                format!("expected {expected}, found {}", describe(self.value)),
            ),
            Error::Invalid { expected, found } => (
                ConfigErrorKind::InvalidValue,
                format!(
                    "expected {expected}, found {}",
                    found.unwrap_or_else(|| describe(self.value))
                ),
            ),
            Error::Message(kind, message) => (kind, message),
        };
        self.walk
            .record(ConfigError::new(self.path.to_string(), kind, message));
        self.fail()
    }

    /// Whether `error` only follows from parts of this value read as absent, reported
    /// already: a required field whose value was wrong is not also missing, and a list whose
    /// elements were all wrong is not also empty.
    fn consequence(&self, error: &Error) -> bool {
        if let Error::Missing(field) = error {
            return self.walk.skips(&self.path.key(field));
        }
        self.walk.holes.borrow().contains(self.path.as_text())
    }

    /// Marks this value as where the attempt failed.
    fn fail(&self) -> Error {
        *self.walk.failed_at.borrow_mut() = Some(self.path.clone());
        Error::Reported
    }
}

impl<'de> Deserializer<'de> for Collecting<'de, '_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let result = match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => visitor.visit_u64(u),
                (None, Some(i), _) => visitor.visit_i64(i),
                (None, None, f) => visitor.visit_f64(f.unwrap_or(f64::NAN)),
            },
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => {
                let elements = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| (self.path.index(i), item))
                    .filter(|(path, _)| !self.walk.skips(path))
                    .collect::<Vec<_>>();
                visitor.visit_seq(Elements {
                    items: elements.into_iter(),
                    walk: self.walk,
                })
            }
            Value::Object(map) => {
                let entries = self
                    .walk
                    .reader
                    .borrow()
                    .in_written_order(map, &self.path)
                    .into_iter()
                    .map(|(k, v)| (k.as_str(), v))
                    .collect();
                visitor.visit_map(self.entries(entries))
            }
        };
        self.settle(result)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        // A key given is a value: `null` is refused as the value's type refuses it (a key left
        // out is the default).
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        if name == RETRY && self.walk.skips(&self.path) {
            // A hole of a list read with its holes: absent.
            return visitor.visit_map(Absent);
        }
        if name == RETRY {
            // A [`Retry`]: its visitor reads the value once per attempt.
            return visitor.visit_map(Attempts {
                at: self,
                started: false,
            });
        }
        if name == NOTE {
            // A [`noted`] problem, carried as the visitor's `expecting`.
            let problem = (&visitor as &dyn Expected).to_string();
            if let Error::Message(kind, message) = <Error as de::Error>::custom(problem) {
                let error = ConfigError::new(self.path.to_string(), kind, message);
                self.walk.record(error);
            }
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let mut reader = self.walk.reader.borrow_mut();
        let before = reader.errors.len();
        let map = reader.object(self.value, &self.path, fields);
        // `object` recorded its errors directly; keep those an earlier attempt did not.
        let new: Vec<ConfigError> = reader.errors.drain(before..).collect();
        drop(reader);
        for error in new {
            self.walk.record(error);
        }
        let Some(map) = map else {
            return Err(self.fail());
        };
        let entries = fields
            .iter()
            .filter_map(|field| map.get_key_value(*field))
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        let result = visitor.visit_map(self.entries(entries));
        self.settle(result)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        let Value::Array(items) = self.value else {
            return self.deserialize_any(visitor);
        };
        if name != HOLES {
            return self.deserialize_any(visitor);
        }
        // Every element, those read as absent too (each a `Retry` that reads as `None`), so
        // that each keeps its index however often the list is read again.
        let elements = items
            .iter()
            .enumerate()
            .map(|(i, item)| (self.path.index(i), item))
            .collect::<Vec<_>>();
        let result = visitor.visit_seq(Elements {
            items: elements.into_iter(),
            walk: self.walk,
        });
        self.settle(result)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple map enum identifier ignored_any
    }
}

impl<'de, 'w> Collecting<'de, 'w> {
    /// The members `entries` of this object, less those read as absent.
    fn entries(&self, entries: Vec<(&'de str, &'de Value)>) -> Entries<'de, 'w> {
        let members = entries
            .into_iter()
            .map(|(k, v)| (k, self.path.key(k), v))
            .filter(|(_, path, _)| !self.walk.skips(path))
            .collect::<Vec<_>>();
        Entries {
            members: members.into_iter(),
            value: None,
            walk: self.walk,
        }
    }
}

/// An object's members, each value read at its path.
struct Entries<'de, 'w> {
    members: std::vec::IntoIter<(&'de str, JsonPath, &'de Value)>,
    value: Option<(JsonPath, &'de Value)>,
    walk: &'w Walk,
}

impl<'de> de::MapAccess<'de> for Entries<'de, '_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((key, path, value)) = self.members.next() else {
            return Ok(None);
        };
        // A key its type refuses (a malformed name) is that entry's error: its value is not
        // read.
        let key = seed
            .deserialize(BorrowedStrDeserializer::new(key))
            .map_err(|e| Collecting::new(value, path.clone(), self.walk).report(e))?;
        self.value = Some((path, value));
        Ok(Some(key))
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Error> {
        match self.value.take() {
            Some((path, value)) => read_value(seed, value, path, self.walk),
            // serde asks for a value only after its key.
            None => Err(de::Error::custom("a value asked for before its key")),
        }
    }
}

/// The attempts at reading one value, offered to a [`Retry`]'s visitor as the entries of a
/// map: a key for each attempt worth making, the value read anew each time.
struct Attempts<'de, 'w> {
    at: Collecting<'de, 'w>,
    started: bool,
}

impl<'de> de::MapAccess<'de> for Attempts<'de, '_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        if self.started && !self.at.walk.another_attempt(&self.at.path) {
            return Ok(None);
        }
        self.started = true;
        seed.deserialize(UnitDeserializer::new()).map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Error> {
        let at = &self.at;
        read_value(seed, at.value, at.path.clone(), at.walk)
    }
}

/// No attempt: a [`Retry`] of a value read as absent.
struct Absent;

impl<'de> de::MapAccess<'de> for Absent {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, _: K) -> Result<Option<K::Value>, Error> {
        Ok(None)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, _: S) -> Result<S::Value, Error> {
        Err(de::Error::custom("no value to read"))
    }
}

/// An array's elements, each read at its path.
struct Elements<'de, 'w> {
    items: std::vec::IntoIter<(JsonPath, &'de Value)>,
    walk: &'w Walk,
}

impl<'de> de::SeqAccess<'de> for Elements<'de, '_> {
    type Error = Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Error> {
        let Some((path, value)) = self.items.next() else {
            return Ok(None);
        };
        read_value(seed, value, path, self.walk).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;
    use crate::schema::values::{Duration, Positive, Size, Strings, Whole};

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Probe {
        sizes: Option<Vec<Size>>,
        inner: Option<Inner>,
        names: Option<BTreeMap<String, Positive>>,
        count: Option<Positive>,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        timeout: Option<Duration>,
        flag: Option<bool>,
        whole: Option<Whole>,
    }

    /// What reading `v` as a `T` at `probe` gives, and each error as (path, kind, message).
    fn read_probe<'de, T: Deserialize<'de>>(
        v: &'de Value,
    ) -> (Option<T>, Vec<(String, ConfigErrorKind, String)>) {
        let mut r = Reader::new();
        let read = read::<T>(&mut r, v, &JsonPath::root().key("probe"));
        let errors = r
            .into_errors()
            .iter()
            .map(|e| (e.path().to_string(), e.kind(), e.message().to_string()))
            .collect();
        (read, errors)
    }

    fn error(
        path: &str,
        kind: ConfigErrorKind,
        message: &str,
    ) -> (String, ConfigErrorKind, String) {
        (path.to_string(), kind, message.to_string())
    }

    #[test]
    fn every_error_across_nested_objects_and_lists_is_reported_in_document_order() {
        let v = json!({
            "sizes": ["1MiB", 0, "x", 5, true],
            "inner": {"timeout": 5, "flag": "yes", "extra": 1, "whole": -1},
            "count": 0,
            "bogus": true
        });
        let (read, errors) = read_probe::<Probe>(&v);
        use ConfigErrorKind::*;
        assert_eq!(
            errors,
            [
                error(
                    "probe.bogus",
                    UnknownKey,
                    "unknown key `bogus`; allowed keys: `sizes`, `inner`, `names`, `count`"
                ),
                error("probe.sizes[1]", InvalidValue, "must be greater than zero"),
                error(
                    "probe.sizes[2]",
                    InvalidValue,
                    "`x` does not start with a whole number (e.g. 64MiB)"
                ),
                error(
                    "probe.sizes[4]",
                    WrongType,
                    "expected a size such as \"64MiB\" or a number of bytes, found a boolean (true)"
                ),
                error(
                    "probe.inner.extra",
                    UnknownKey,
                    "unknown key `extra`; allowed keys: `timeout`, `flag`, `whole`"
                ),
                error(
                    "probe.inner.timeout",
                    WrongType,
                    "expected a duration such as \"30s\", found a number (5)"
                ),
                error(
                    "probe.inner.flag",
                    WrongType,
                    "expected a boolean, found a string (\"yes\")"
                ),
                error(
                    "probe.inner.whole",
                    WrongType,
                    "expected a non-negative whole number, found a number (-1)"
                ),
                error("probe.count", InvalidValue, "must be at least 1"),
            ]
        );
        // What was right is kept; what was wrong is left out.
        let inner = Inner {
            timeout: None,
            flag: None,
            whole: None,
        };
        let want = Probe {
            sizes: Some(vec![Size(1 << 20), Size(5)]),
            inner: Some(inner),
            names: None,
            count: None,
        };
        assert_eq!(read, Some(want));
    }

    #[test]
    fn a_maps_wrong_entries_are_reported_and_left_out() {
        let v = json!({"names": {"b": 2, "a": "x", "c": 0}});
        let (read, errors) = read_probe::<Probe>(&v);
        let wrong_type = "expected a non-negative whole number, found a string (\"x\")";
        assert_eq!(
            errors,
            [
                error("probe.names.a", ConfigErrorKind::WrongType, wrong_type),
                error(
                    "probe.names.c",
                    ConfigErrorKind::InvalidValue,
                    "must be at least 1"
                ),
            ]
        );
        let names = read.and_then(|p| p.names).expect("the map is read");
        assert_eq!(names, BTreeMap::from([("b".to_string(), Positive(2))]));
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Named {
        name: String,
        count: Option<Positive>,
    }

    #[test]
    fn a_required_field_whose_value_is_wrong_is_not_also_missing() {
        let v = json!({"name": 5, "count": 0});
        let (read, errors) = read_probe::<Named>(&v);
        assert_eq!(read, None);
        assert_eq!(
            errors,
            [
                error(
                    "probe.name",
                    ConfigErrorKind::WrongType,
                    "expected a string, found a number (5)"
                ),
                error(
                    "probe.count",
                    ConfigErrorKind::InvalidValue,
                    "must be at least 1"
                ),
            ]
        );
        let v = json!({"count": 2});
        let (read, errors) = read_probe::<Named>(&v);
        assert_eq!(read, None);
        assert_eq!(
            errors,
            [error(
                "probe",
                ConfigErrorKind::MissingField,
                "`name` is required"
            )]
        );
    }

    /// A list that refuses to be empty, for the test below.
    #[derive(Debug, PartialEq)]
    struct Some1(Vec<Positive>);

    impl<'de> Deserialize<'de> for Some1 {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            match Vec::<Positive>::deserialize(d)? {
                list if list.is_empty() => Err(de::Error::custom("give at least one")),
                list => Ok(Some1(list)),
            }
        }
    }

    #[test]
    fn a_list_whose_elements_were_all_wrong_is_not_also_empty() {
        let v = json!([0, "x"]);
        let (read, errors) = read_probe::<Some1>(&v);
        assert_eq!(read, None);
        let wrong_type = "expected a non-negative whole number, found a string (\"x\")";
        assert_eq!(
            errors,
            [
                error(
                    "probe[0]",
                    ConfigErrorKind::InvalidValue,
                    "must be at least 1"
                ),
                error("probe[1]", ConfigErrorKind::WrongType, wrong_type),
            ]
        );
        let v = json!([]);
        let (_, errors) = read_probe::<Some1>(&v);
        let empty = error("probe", ConfigErrorKind::InvalidValue, "give at least one");
        assert_eq!(errors, [empty]);
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Listed {
        names: Option<Strings>,
        flag: Option<bool>,
    }

    #[test]
    fn a_wrong_element_of_an_array_is_left_out_where_it_stands() {
        let v = json!({"names": ["a", 1, "b", true], "flag": "x"});
        let (read, errors) = read_probe::<Listed>(&v);
        use ConfigErrorKind::WrongType;
        assert_eq!(
            errors,
            [
                error(
                    "probe.names[1]",
                    WrongType,
                    "expected a string, found a number (1)"
                ),
                error(
                    "probe.names[3]",
                    WrongType,
                    "expected a string, found a boolean (true)"
                ),
                error(
                    "probe.flag",
                    WrongType,
                    "expected a boolean, found a string (\"x\")"
                ),
            ]
        );
        let names = Strings(vec!["a".to_string(), "b".to_string()]);
        let want = Listed {
            names: Some(names),
            flag: None,
        };
        assert_eq!(read, Some(want));
    }

    #[test]
    fn a_value_that_is_not_an_object_is_one_error_and_no_value() {
        let v = json!([1]);
        let (read, errors) = read_probe::<Probe>(&v);
        assert_eq!(read, None);
        assert_eq!(
            errors,
            [error(
                "probe",
                ConfigErrorKind::WrongType,
                "expected an object, found an array"
            )]
        );
    }

    #[test]
    fn a_number_of_bytes_is_named_as_written() {
        for (written, found) in [
            (json!(-1), "-1"),
            (json!(2.0), "2.0"),
            (json!(1e20), "1e+20"),
        ] {
            let (read, errors) = read_probe::<Size>(&written);
            assert_eq!(read, None);
            let message = format!("expected a whole number of bytes, found {found}");
            assert_eq!(
                errors,
                [error("probe", ConfigErrorKind::InvalidValue, &message)]
            );
        }
    }

    #[test]
    fn an_error_recorded_before_the_read_stays_and_is_not_deduplicated_away() {
        let mut r = Reader::new();
        let path = JsonPath::root().key("probe");
        r.error(
            &path.key("count"),
            ConfigErrorKind::InvalidValue,
            "must be at least 1",
        );
        let v = json!({"count": 0});
        let read = read::<Probe>(&mut r, &v, &path);
        assert_eq!(read.map(|p| p.count), Some(None));
        assert_eq!(r.error_count(), 2);
    }

    /// The leaf types' wrong-type errors describe the value as the reader's own checks did
    /// (moved here from `reader.rs` with those checks, which these types replace).
    #[test]
    fn type_errors_describe_the_value() {
        let mut r = Reader::default();
        let p = JsonPath::root().key("x");
        let (three, minus_one, yes, list) = (json!(3), json!(-1), json!("yes"), json!(["a", 1]));
        assert_eq!(read::<String>(&mut r, &three, &p), None);
        assert_eq!(read::<Whole>(&mut r, &minus_one, &p), None);
        assert_eq!(read::<bool>(&mut r, &yes, &p), None);
        assert!(read::<Strings>(&mut r, &list, &p).is_some());
        let errors = r.into_errors();
        let msgs: Vec<&str> = errors.iter().map(ConfigError::message).collect();
        assert_eq!(
            msgs,
            vec![
                "expected a string, found a number (3)",
                "expected a non-negative whole number, found a number (-1)",
                "expected a boolean, found a string (\"yes\")",
                "expected a string, found a number (1)",
            ]
        );
        assert_eq!(errors[3].path(), "x[1]");
        assert!(
            errors
                .iter()
                .all(|e| e.kind() == ConfigErrorKind::WrongType)
        );
    }
}
