//! The configuration text parsed into a `serde_json::Value`, refusing keys given twice.
//!
//! The text is JSON with comments (`//`, `/* */`) and trailing commas allowed (JSONC, what VS
//! Code's `mcp.json` and many clients' configs are), read by `serde_json_lenient`, a fork of
//! `serde_json` with the same `Deserializer`: comments are skipped, not removed, so an error's
//! line and column are those of the text as written.
//!
//! `serde_json` keeps the last of two equal keys in an object and drops the first without a
//! word. In a policy file that is a rule lost in silence: a profile with two `deny` lists
//! denies only what the second one names. So the document is built here, by a visitor that
//! records every repeated key with the path of its object, and [`parse`] fails with all of them.
//!
//! `serde_json`'s maps are sorted by key, so the visitor also records each object's keys in
//! written order ([`KeyOrder`]), for the maps whose order means something (a profile's `risk`
//! globs: the first that matches wins).

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::error::{ConfigError, ConfigErrorKind, ConfigErrors};
use crate::reader::{JsonPath, KeyOrder};

/// Parses `json`, failing on invalid JSON (with line and column) or on any key that an object
/// holds more than once (every such key, each with its path).
#[cfg(test)]
pub(crate) fn parse(json: &str) -> Result<Value, ConfigErrors> {
    parse_ordered(json).map(|(value, _)| value)
}

/// [`parse`], also returning each object's keys in written order.
pub(crate) fn parse_ordered(json: &str) -> Result<(Value, KeyOrder), ConfigErrors> {
    let repeated = RefCell::new(Vec::new());
    let order = RefCell::new(KeyOrder::new());
    let mut deserializer = serde_json_lenient::Deserializer::from_str(json);
    deserializer.set_allow_comments(true);
    deserializer.set_ignore_trailing_commas(true);
    let node = Node {
        path: JsonPath::root(),
        repeated: &repeated,
        order: &order,
    };
    let value = node
        .deserialize(&mut deserializer)
        .and_then(|value| deserializer.end().map(|()| value))
        .map_err(invalid_json)?;
    let repeated = repeated.into_inner();
    if repeated.is_empty() {
        Ok((value, order.into_inner()))
    } else {
        Err(ConfigErrors { errors: repeated })
    }
}

fn invalid_json(e: serde_json_lenient::Error) -> ConfigErrors {
    let text = e.to_string();
    let what = text
        .rfind(" at line ")
        .map_or(text.as_str(), |i| &text[..i]);
    ConfigErrors::single(ConfigError::new(
        "(root)",
        ConfigErrorKind::Syntax,
        format!(
            "invalid JSON at line {}, column {}: {what}",
            e.line(),
            e.column()
        ),
    ))
}

/// One value of the document, at `path`.
struct Node<'r> {
    path: JsonPath,
    repeated: &'r RefCell<Vec<ConfigError>>,
    order: &'r RefCell<KeyOrder>,
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        // JSON text has no NaN or infinity, so `from_f64` cannot fail here; null if it did.
        Ok(serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Node {
            path: self.path.index(items.len()),
            repeated: self.repeated,
            order: self.order,
        })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        let mut keys = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(Node {
                path: self.path.key(&key),
                repeated: self.repeated,
                order: self.order,
            })?;
            if object.contains_key(&key) {
                self.repeated.borrow_mut().push(ConfigError::new(
                    self.path.key(&key).to_string(),
                    ConfigErrorKind::DuplicateKey,
                    format!(
                        "the key `{key}` is given more than once in this object; give it \
                         once (JSON readers keep only the last and drop the others silently)"
                    ),
                ));
            } else {
                keys.push(key.clone());
                object.insert(key, value);
            }
        }
        self.order.borrow_mut().insert(self.path.to_string(), keys);
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kind_of_value_as_serde_json_does() {
        let json = r#"{"a": [1, -2, 3.5, 18446744073709551615, "s\u00e9", true, false, null],
                       "b": {"c": {}}, "d": []}"#;
        let ours = parse(json).unwrap();
        let theirs: Value = serde_json::from_str(json).unwrap();
        assert_eq!(ours, theirs);
    }

    #[test]
    fn every_repeated_key_is_reported_with_its_path() {
        let json = r#"{
          "limits": {"timeout": "1s", "timeout": "2s"},
          "evaluation": {"profiles": {"p": {"deny": ["a"], "deny": ["b"], "deny": ["c"]}}},
          "list": [{"x": 1, "x": 1}]
        }"#;
        let errors = parse(json).unwrap_err().errors;
        let paths: Vec<&str> = errors.iter().map(ConfigError::path).collect();
        assert!(
            errors
                .iter()
                .all(|e| e.kind() == ConfigErrorKind::DuplicateKey)
        );
        assert_eq!(
            paths,
            [
                "limits.timeout",
                "evaluation.profiles.p.deny",
                "evaluation.profiles.p.deny",
                "list[0].x",
            ]
        );
        assert!(
            errors[0]
                .message()
                .contains("`timeout` is given more than once")
        );
    }

    #[test]
    fn keys_are_kept_in_written_order() {
        let (_, order) = parse_ordered(r#"{"z": {"b*": 1, "a*": 2, "c": {}}, "a": []}"#).unwrap();
        assert_eq!(order["(root)"], ["z", "a"]);
        assert_eq!(order["z"], ["b*", "a*", "c"]);
        assert_eq!(order["z.c"], Vec::<String>::new());
    }

    #[test]
    fn comments_and_trailing_commas_are_accepted() {
        let jsonc = "{\n  // line comment\n  \"a\": [1, 2,], /* block */\n  \"b\": {\"c\": \"// not a comment\",},\n}\n";
        let value = parse(jsonc).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"a": [1, 2], "b": {"c": "// not a comment"}})
        );
        let errors = parse("{\"a\": 1, // first\n \"a\": 2,}")
            .unwrap_err()
            .errors;
        assert_eq!(errors[0].kind(), ConfigErrorKind::DuplicateKey);
    }

    #[test]
    fn equal_keys_in_different_objects_are_fine() {
        let json = r#"{"a": {"k": 1}, "b": {"k": 2}, "k": [{"k": 3}, {"k": 4}]}"#;
        assert!(parse(json).is_ok());
    }

    #[test]
    fn invalid_json_and_trailing_text_name_line_and_column() {
        for (json, want) in [
            (
                "{\n  \"a\": ,\n}",
                "invalid JSON at line 2, column 8: expected value",
            ),
            (
                "{} x",
                "invalid JSON at line 1, column 4: trailing characters",
            ),
            // Comments and trailing commas are skipped in place: positions stay the written ones.
            (
                "// a comment\n{\n  /* two\n lines */ \"a\": [1,],\n  \"b\": x\n}",
                "invalid JSON at line 5, column 8: expected value",
            ),
            (
                "{\"a\": 1,,}",
                "invalid JSON at line 1, column 9: key must be a string",
            ),
            (
                "{\"a\": 1} /* open",
                "invalid JSON at line 1, column 16: EOF while parsing a block comment",
            ),
        ] {
            let errors = parse(json).unwrap_err().errors;
            assert_eq!(errors.len(), 1);
            assert_eq!(errors[0].path(), "(root)");
            assert_eq!(errors[0].kind(), ConfigErrorKind::Syntax);
            assert_eq!(errors[0].message(), want, "for {json:?}");
        }
    }
}
