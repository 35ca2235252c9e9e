//! Paths into a tool result: RFC 6901 JSON Pointers whose `*` segments match any array index or
//! object key, and the concrete places they match in one value.

use std::cmp::Ordering;
use std::fmt;

use serde_json::Value;

/// One segment of a [`PathPattern`].
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    /// `*`: every element of an array, every member of an object.
    Any,
    /// A key (unescaped: `~1` is `/`, `~0` is `~`); on an array, a decimal index without
    /// leading zeros.
    Key(String),
}

/// A JSON Pointer with `*` wildcards, such as `/items/*/token`. `""` is the whole value.
///
/// A segment that is exactly `*` is always the wildcard (JSON Pointer has no escape for it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathPattern {
    text: String,
    segments: Vec<Segment>,
}

impl PathPattern {
    /// Parses `text`.
    ///
    /// # Errors
    /// A message naming the problem when `text` is neither `""` nor starts with `/`, or has a
    /// `~` not followed by `0` or `1`.
    pub fn parse(text: &str) -> Result<Self, InvalidPathPattern> {
        Self::parse_text(text).map_err(InvalidPathPattern)
    }

    fn parse_text(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Ok(PathPattern {
                text: String::new(),
                segments: Vec::new(),
            });
        }
        let Some(rest) = text.strip_prefix('/') else {
            return Err(format!(
                "`{text}` is not a JSON Pointer: it must be \"\" (the whole result) or start with `/` (e.g. \"/{text}\")"
            ));
        };
        let mut segments = Vec::new();
        for raw in rest.split('/') {
            if raw == "*" {
                segments.push(Segment::Any);
                continue;
            }
            let mut key = String::with_capacity(raw.len());
            let mut chars = raw.chars();
            while let Some(c) = chars.next() {
                if c != '~' {
                    key.push(c);
                    continue;
                }
                match chars.next() {
                    Some('0') => key.push('~'),
                    Some('1') => key.push('/'),
                    _ => {
                        return Err(format!(
                            "`{text}` is not a JSON Pointer: `~` must be followed by 0 (for `~`) or 1 (for `/`)"
                        ));
                    }
                }
            }
            segments.push(Segment::Key(key));
        }
        Ok(PathPattern {
            text: text.to_string(),
            segments,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Where `path` stands to the pattern: the pattern covers it (it matches `path` or an
    /// ancestor of it), or leads below it (it matches deeper places under `path`), or neither.
    pub(crate) fn relation(&self, path: &[Step]) -> Relation {
        let prefix = self
            .segments
            .iter()
            .zip(path)
            .all(|(segment, step)| segment.accepts(step));
        if !prefix {
            Relation::Apart
        } else if self.segments.len() <= path.len() {
            Relation::Covers
        } else {
            Relation::LeadsBelow
        }
    }

    /// Every place in `value` the pattern matches, in document order.
    pub(crate) fn matches(&self, value: &Value) -> Vec<Path> {
        let mut out = Vec::new();
        walk(value, &self.segments, &mut Vec::new(), &mut out);
        out
    }
}

impl fmt::Display for PathPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// How a [`PathPattern`] relates to one concrete [`Path`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Relation {
    /// The pattern matches the path or one of its ancestors.
    Covers,
    /// The pattern matches places below the path.
    LeadsBelow,
    /// Neither.
    Apart,
}

impl Segment {
    /// Whether this segment matches `step`: `*` any, a key that key or (a decimal index) that
    /// array index.
    fn accepts(&self, step: &Step) -> bool {
        match (self, step) {
            (Segment::Any, _) => true,
            (Segment::Key(k), Step::Key(s)) => k == s,
            (Segment::Key(k), Step::Index(i)) => array_index(k) == Some(*i),
        }
    }
}

/// One step of a concrete [`Path`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Step {
    Key(String),
    Index(usize),
}

impl PartialOrd for Step {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Step {
    /// Indexes by number (so `/2` comes before `/10`), keys by text.
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Step::Index(a), Step::Index(b)) => a.cmp(b),
            (Step::Key(a), Step::Key(b)) => a.cmp(b),
            (Step::Index(_), Step::Key(_)) => Ordering::Less,
            (Step::Key(_), Step::Index(_)) => Ordering::Greater,
        }
    }
}

/// A place in one value: the steps from its root.
pub(crate) type Path = Vec<Step>;

/// `path` as a JSON Pointer (`/items/0/token`, keys escaped).
pub(crate) fn pointer(path: &[Step]) -> String {
    let mut s = String::new();
    for step in path {
        s.push('/');
        match step {
            Step::Key(k) => s.push_str(&k.replace('~', "~0").replace('/', "~1")),
            Step::Index(i) => s.push_str(&i.to_string()),
        }
    }
    s
}

fn walk(value: &Value, rest: &[Segment], at: &mut Path, out: &mut Vec<Path>) {
    let Some((first, rest)) = rest.split_first() else {
        out.push(at.clone());
        return;
    };
    match (value, first) {
        (Value::Object(map), Segment::Any) => {
            for (k, v) in map {
                at.push(Step::Key(k.clone()));
                walk(v, rest, at, out);
                at.pop();
            }
        }
        (Value::Array(items), Segment::Any) => {
            for (i, v) in items.iter().enumerate() {
                at.push(Step::Index(i));
                walk(v, rest, at, out);
                at.pop();
            }
        }
        (Value::Object(map), Segment::Key(k)) => {
            if let Some(v) = map.get(k) {
                at.push(Step::Key(k.clone()));
                walk(v, rest, at, out);
                at.pop();
            }
        }
        (Value::Array(items), Segment::Key(k)) => {
            if let Some(i) = array_index(k)
                && let Some(v) = items.get(i)
            {
                at.push(Step::Index(i));
                walk(v, rest, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

/// RFC 6901 array index: `0`, or digits without a leading zero.
fn array_index(token: &str) -> Option<usize> {
    let digits = !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit());
    if !digits || (token.len() > 1 && token.starts_with('0')) {
        return None;
    }
    token.parse().ok()
}

/// The value at `path`, if it is there.
pub(crate) fn get_mut<'v>(value: &'v mut Value, path: &[Step]) -> Option<&'v mut Value> {
    path.iter().try_fold(value, |v, step| match (v, step) {
        (Value::Object(map), Step::Key(k)) => map.get_mut(k),
        (Value::Array(items), Step::Index(i)) => items.get_mut(*i),
        _ => None,
    })
}

/// Why a text is not a [`PathPattern`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidPathPattern(String);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn found(pattern: &str, value: &Value) -> Vec<String> {
        PathPattern::parse(pattern)
            .unwrap()
            .matches(value)
            .iter()
            .map(|p| pointer(p))
            .collect()
    }

    #[test]
    fn wildcards_match_every_index_and_key() {
        let v = json!({
            "items": [{"token": "a"}, {"name": "no token"}, {"token": "c"}],
            "by": {"x": {"token": 1}, "y": {"token": 2}},
            "a/b": {"~": 3},
            "list": [10, 11]
        });
        let cases: &[(&str, &[&str])] = &[
            ("", &[""]),
            ("/items/*/token", &["/items/0/token", "/items/2/token"]),
            ("/by/*/token", &["/by/x/token", "/by/y/token"]),
            ("/*/x", &["/by/x"]),
            ("/a~1b/~0", &["/a~1b/~0"]),
            ("/list/1", &["/list/1"]),
            ("/list/01", &[]),
            ("/list/2", &[]),
            ("/list/-", &[]),
            ("/items/0/token/more", &[]),
            ("/missing", &[]),
            ("/list/*", &["/list/0", "/list/1"]),
        ];
        for (pattern, want) in cases {
            assert_eq!(found(pattern, &v), *want, "{pattern}");
        }
        // A digit key on an object is a key.
        assert_eq!(found("/0", &json!({"0": true})), vec!["/0"]);
        // Nothing below a string, even for `*`.
        assert_eq!(found("/*", &json!("text")), Vec::<String>::new());
    }

    #[test]
    fn bad_pointers_are_refused_with_the_reason() {
        assert_eq!(
            PathPattern::parse("password").unwrap_err().to_string(),
            "`password` is not a JSON Pointer: it must be \"\" (the whole result) or start with `/` (e.g. \"/password\")"
        );
        assert_eq!(
            PathPattern::parse("/a~2").unwrap_err().to_string(),
            "`/a~2` is not a JSON Pointer: `~` must be followed by 0 (for `~`) or 1 (for `/`)"
        );
        assert!(
            PathPattern::parse("/a~")
                .unwrap_err()
                .to_string()
                .contains("`~`")
        );
    }

    #[test]
    fn paths_order_indexes_by_number() {
        let mut paths = [
            vec![Step::Key("a".into()), Step::Index(10)],
            vec![Step::Key("a".into()), Step::Index(2)],
            vec![Step::Key("a".into())],
        ];
        paths.sort();
        let text: Vec<String> = paths.iter().map(|p| pointer(p)).collect();
        assert_eq!(text, vec!["/a", "/a/2", "/a/10"]);
    }
}
