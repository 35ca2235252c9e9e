//! `whenPath` conditions of a rule: globs over an argument read as a filesystem path, after
//! lexical normalisation, so that `/tmp/../etc/hostname`, `//etc/hostname` and `/./etc/hostname`
//! are all `/etc/hostname` to a rule.
//!
//! Normalisation is lexical only: it never touches the filesystem, so a symlink (`/tmp/link` →
//! `/etc`) is not resolved and defeats it. A value that cannot be read as an absolute path (a
//! relative path without the rule's `base`, a number, a missing argument) fails closed: see
//! [`PathCondition::matches`]. So does a value the judged tool may expand before it opens it
//! (`~/x`, which server-filesystem reads as `$HOME/x`; `$HOME/x`; `file:///etc`; `C:\x`; a
//! backslash separator; a NUL): no rule can know what such a value names, so none judges it
//! as a path, with or without `base` (see `expandable`).

use globset::{GlobSet, GlobSetBuilder};
use serde_json::Value;

/// One `whenPath` entry: a JSON Pointer into the call's arguments and the path globs the
/// normalised value is tested against.
#[derive(Debug, Clone)]
pub struct PathCondition {
    pub(crate) pointer: String,
    pub(crate) globs: Vec<String>,
    set: GlobSet,
}

/// What a path argument is to a rule: a normalised absolute path, or not a path it can judge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathValue {
    /// The value, lexically normalised to an absolute path.
    Absolute(String),
    /// Missing, not a string, relative with no base to resolve it against, or in a form the
    /// judged tool may expand (`~/x`, `$HOME/x`, `file:///x`, a backslash…).
    Unjudgeable,
}

impl PathCondition {
    /// Compiles the globs ([`codemode_config::path_glob`]: globset syntax; `*` stays within
    /// one path component, `**` crosses them; case-sensitive). On error, the index of the bad
    /// glob and a message naming it.
    pub(crate) fn new(pointer: String, globs: Vec<String>) -> Result<Self, (usize, String)> {
        let mut builder = GlobSetBuilder::new();
        for (i, g) in globs.iter().enumerate() {
            builder.add(codemode_config::path_glob(g).map_err(|msg| (i, msg))?);
        }
        let set = builder
            .build()
            .map_err(|e| (0, format!("invalid globs: {e}")))?;
        Ok(PathCondition {
            pointer,
            globs,
            set,
        })
    }

    /// The JSON Pointer (RFC 6901) of the argument.
    pub fn pointer(&self) -> &str {
        &self.pointer
    }

    /// The globs as written.
    pub fn globs(&self) -> &[String] {
        &self.globs
    }

    /// Whether the argument at the pointer, normalised (relative paths resolved against `base`
    /// when the rule gives one), matches one of the globs. A value that is not an absolute path
    /// after that ([`PathValue::Unjudgeable`]) gives `fail_closed`: the caller passes `true` for
    /// a rule that denies or asks (the rule applies) and `false` for one that allows (it does
    /// not).
    pub fn matches(&self, args: &Value, base: Option<&str>, fail_closed: bool) -> bool {
        match path_value(args.pointer(&self.pointer), base) {
            PathValue::Absolute(path) => self.set.is_match(&path),
            PathValue::Unjudgeable => fail_closed,
        }
    }
}

/// The argument as a rule sees it: see [`PathValue`].
pub(crate) fn path_value(value: Option<&Value>, base: Option<&str>) -> PathValue {
    let Some(Value::String(s)) = value else {
        return PathValue::Unjudgeable;
    };
    if expandable(s) {
        return PathValue::Unjudgeable;
    }
    if s.starts_with('/') {
        return PathValue::Absolute(normalize(s));
    }
    match base {
        Some(base) => PathValue::Absolute(normalize(&format!("{base}/{s}"))),
        None => PathValue::Unjudgeable,
    }
}

/// Whether a tool may read the value as something other than the path it spells: a leading
/// `~` (home directory: `~`, `~/x`, `~user/x`), a `$` before a name, `{` or `(` anywhere (a
/// variable or command a shell or tool expands: `$HOME`, `${X}`, `$(id)`), a URI scheme or drive letter before the first
/// `/` (`file:///etc`, `C:`), a backslash (a separator on Windows, an escape elsewhere), a `%`
/// (Windows `%VAR%`, or percent-encoding a URL-reading tool decodes: `%2e%2e`) or a NUL (which
/// ends the path in C). Such a value is [`PathValue::Unjudgeable`] even with a `base`.
fn expandable(s: &str) -> bool {
    let head = s.split('/').next().unwrap_or_default();
    let variable = s.as_bytes().windows(2).any(|w| {
        w[0] == b'$' && (w[1].is_ascii_alphabetic() || matches!(w[1], b'_' | b'{' | b'('))
    });
    s.starts_with('~') || variable || head.contains(':') || s.contains(['\\', '%', '\0'])
}

/// Lexically normalises an absolute path: repeated `/` and `.` components are dropped, `..`
/// removes the component before it (and stays at the root above it), and no trailing `/` is
/// kept (`/` itself excepted).
pub fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    let mut out = String::with_capacity(path.len());
    for part in &parts {
        out.push('/');
        out.push_str(part);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn normalisation_resolves_every_spelling_lexically() {
        let cases = [
            ("/etc/hostname", "/etc/hostname"),
            ("/tmp/../etc/hostname", "/etc/hostname"),
            ("//etc/hostname", "/etc/hostname"),
            ("/./etc", "/etc"),
            ("/etc/", "/etc"),
            ("/../../etc/x", "/etc/x"),
            ("/a/b/../../..", "/"),
            ("/", "/"),
            ("/a/./b/.//c/..", "/a/b"),
            ("/a/...b", "/a/...b"),
        ];
        for (input, want) in cases {
            assert_eq!(normalize(input), want, "{input}");
        }
    }

    #[test]
    fn relative_and_non_string_values_are_unjudgeable_without_a_base() {
        assert_eq!(
            path_value(Some(&json!("etc/x")), None),
            PathValue::Unjudgeable
        );
        assert_eq!(
            path_value(Some(&json!("etc/x")), Some("/")),
            PathValue::Absolute("/etc/x".into())
        );
        assert_eq!(
            path_value(Some(&json!("../../etc/x")), Some("/srv/app")),
            PathValue::Absolute("/etc/x".into())
        );
        assert_eq!(
            path_value(Some(&json!(7)), Some("/")),
            PathValue::Unjudgeable
        );
        assert_eq!(
            path_value(Some(&json!(["/etc"])), None),
            PathValue::Unjudgeable
        );
        assert_eq!(path_value(None, Some("/")), PathValue::Unjudgeable);
    }

    #[test]
    fn values_the_tool_may_expand_are_unjudgeable_even_with_a_base() {
        let expandable = [
            "~",
            "~/x",
            "~/../../etc/passwd",
            "~root/.ssh/id_rsa",
            "$HOME/x",
            "a/${HOME}/x",
            "a/$(id)/x",
            "a/$HOME/x",
            "/srv/${X}",
            "file:///etc/passwd",
            "C:/Windows",
            "c:x",
            "..\\..\\etc\\passwd",
            "/srv/a\\..\\..\\etc",
            "%USERPROFILE%/x",
            "/srv/%2e%2e/etc",
            "/etc/passwd\0.txt",
        ];
        for s in expandable {
            assert_eq!(
                path_value(Some(&json!(s)), Some("/srv/app")),
                PathValue::Unjudgeable,
                "{s}"
            );
            assert_eq!(
                path_value(Some(&json!(s)), None),
                PathValue::Unjudgeable,
                "{s}"
            );
        }
        // Forms no tool expands stay paths: `~`, `$` and `:` past the first component.
        let plain = [
            ("/home/u/~/x", "/home/u/~/x"),
            ("x~/y", "/srv/app/x~/y"),
            ("a/b:c", "/srv/app/a/b:c"),
            ("price$5", "/srv/app/price$5"),
        ];
        for (s, want) in plain {
            assert_eq!(
                path_value(Some(&json!(s)), Some("/srv/app")),
                PathValue::Absolute(want.into()),
                "{s}"
            );
        }
        // A deny rule over the home directory's tree applies; an allow rule for the base does not.
        let home = PathCondition::new("/path".into(), vec!["/**".into()]).unwrap();
        assert!(home.matches(&json!({"path": "~/x"}), Some("/srv/app"), true));
        let tree = PathCondition::new("/path".into(), vec!["/srv/app/**".into()]).unwrap();
        assert!(!tree.matches(&json!({"path": "~/x"}), Some("/srv/app"), false));
    }

    #[test]
    fn globs_match_the_normalised_value_and_unjudgeable_values_fail_closed() {
        let c = PathCondition::new("/path".into(), vec!["/etc".into(), "/etc/**".into()])
            .expect("globs");
        let cases: &[(Value, Option<&str>, bool, bool)] = &[
            (json!({"path": "/etc/hostname"}), None, false, true),
            (json!({"path": "/tmp/../etc/hostname"}), None, false, true),
            (json!({"path": "//etc/hostname"}), None, false, true),
            (json!({"path": "/./etc"}), None, false, true),
            (json!({"path": "/etcetera"}), None, false, false),
            (json!({"path": "/tmp/etc/x"}), None, false, false),
            (json!({"path": "etc/x"}), None, true, true),
            (json!({"path": "etc/x"}), None, false, false),
            (json!({"path": "etc/x"}), Some("/"), false, true),
            (json!({"path": "etc/x"}), Some("/srv"), true, false),
            (json!({"path": 5}), None, true, true),
            (json!({}), None, true, true),
        ];
        for (args, base, fail_closed, want) in cases {
            assert_eq!(
                c.matches(args, *base, *fail_closed),
                *want,
                "{args} {base:?}"
            );
        }
        let star = PathCondition::new("/p".into(), vec!["/etc/*".into()]).unwrap();
        assert!(star.matches(&json!({"p": "/etc/x"}), None, false));
        assert!(!star.matches(&json!({"p": "/etc/x/y"}), None, false));
    }

    #[test]
    fn a_relative_or_invalid_glob_is_refused_with_its_index() {
        let (i, msg) =
            PathCondition::new("/p".into(), vec!["/ok".into(), "etc/**".into()]).unwrap_err();
        assert_eq!(i, 1);
        assert!(
            msg.contains("`etc/**` is not an absolute path glob"),
            "{msg}"
        );
        let (i, msg) = PathCondition::new("/p".into(), vec!["/a[".into()]).unwrap_err();
        assert_eq!(i, 0);
        assert!(msg.contains("invalid glob `/a[`"), "{msg}");
    }
}
