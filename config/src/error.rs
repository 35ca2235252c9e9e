//! Configuration errors: every problem found, each naming where it is and what kind it is.

use std::fmt;
use std::sync::Arc;

/// What kind of problem a [`ConfigError`] is, for callers that react to some kinds (an editor
/// integration underlining unknown keys, a test asserting a rule is refused for its regex).
/// The message says the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigErrorKind {
    /// The file could not be read (the error's [`source`](std::error::Error::source) is the
    /// I/O error).
    Io,
    /// The text is not JSON, or has text after the document (the message has line and column).
    Syntax,
    /// An object gives the same key twice (JSON readers would keep only the last).
    DuplicateKey,
    /// A key the section does not know (the message lists the allowed ones).
    UnknownKey,
    /// A required key is absent (a server's `command` or `url`, a rule's `tools` or
    /// `disposition`).
    MissingField,
    /// Two keys that exclude each other, or a key that does not apply to this kind of entry
    /// (`mcpServers` and `servers`; `command` and `url`; `headers` on a stdio server).
    ConflictingKeys,
    /// A value of the wrong JSON type (a number where a string is expected, …).
    WrongType,
    /// A value of the right type that is not allowed: out of range, zero where it must be
    /// positive, an unknown unit or choice, an empty command, a URL that is not HTTP(S).
    InvalidValue,
    /// A server or profile name outside its allowed characters or length.
    InvalidName,
    /// A tool-name glob that does not compile (or is empty).
    InvalidGlob,
    /// A rule's `when` key that is not an RFC 6901 JSON Pointer.
    InvalidPointer,
    /// A rule's `when` regex that does not compile.
    InvalidRegex,
    /// `defaultProfile` names no profile of the file.
    UnknownProfile,
    /// An environment variable the file names (`audit.keyEnv`, a `${VAR}` reference without a
    /// default in a server's `args`, `env`, `headers` or `url`) is not set, or not UTF-8.
    MissingEnv,
}

/// One problem in a configuration file.
///
/// ```
/// use codemode_config::{ConfigErrorKind, Document, JsonPath, PolicySections, Reader, Settings};
/// # struct Unread;
/// # impl PolicySections for Unread {
/// #     fn evaluation(&mut self, _: &mut Reader, _: &serde_json::Value, _: &JsonPath) {}
/// #     fn outputs(&mut self, _: &mut Reader, _: &serde_json::Value, _: &JsonPath) {}
/// # }
/// let doc = Document::parse(r#"{"limts": {}}"#)?;
/// let errors = Settings::read(&doc, &mut Unread).unwrap_err();
/// let error = &errors.errors[0];
/// assert_eq!(error.kind(), ConfigErrorKind::UnknownKey);
/// assert_eq!(error.path(), "limts");
/// assert!(error.message().starts_with("unknown key `limts` (did you mean `limits`?)"));
/// # Ok::<(), codemode_config::ConfigErrors>(())
/// ```
#[derive(Debug, Clone)]
pub struct ConfigError {
    path: String,
    kind: ConfigErrorKind,
    message: String,
    source: Option<Arc<std::io::Error>>,
}

impl ConfigError {
    pub(crate) fn new(
        path: impl Into<String>,
        kind: ConfigErrorKind,
        message: impl Into<String>,
    ) -> Self {
        ConfigError {
            path: path.into(),
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// A file that could not be read: `path` is the file name; `error` is kept as the source
    /// (callers may look for [`std::io::ErrorKind::NotFound`]).
    pub(crate) fn io(path: impl Into<String>, error: std::io::Error) -> Self {
        let mut e = ConfigError::new(
            path,
            ConfigErrorKind::Io,
            format!("cannot read the file: {error}"),
        );
        e.source = Some(Arc::new(error));
        e
    }

    /// Where: a path into the JSON document such as
    /// `evaluation.profiles.supervised.asklist[1]` (keys that are not plain words are quoted:
    /// `rules[0].when["/path"]`), `(root)` for the document itself, or the file name for an
    /// I/O error.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What kind of problem it is.
    pub fn kind(&self) -> ConfigErrorKind {
        self.kind
    }

    /// What is wrong, naming the offending value and, where useful, what is allowed.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Equal when path, kind and message are (an I/O source is described by the message).
impl PartialEq for ConfigError {
    fn eq(&self, other: &Self) -> bool {
        (&self.path, self.kind, &self.message) == (&other.path, other.kind, &other.message)
    }
}

impl Eq for ConfigError {}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// Something a configuration says that codemode accepts but does not act on, such as a
/// client-only key (`autoApprove`): displayed as `path: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigWarning {
    path: String,
    message: String,
}

impl ConfigWarning {
    pub(crate) fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigWarning {
            path: path.into(),
            message: message.into(),
        }
    }

    /// Where, as in [`ConfigError::path`].
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What was accepted and what to do instead.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// All the problems found in a configuration (never empty when returned as an error).
///
/// Displays one problem per line, as `path: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors {
    /// The problems, in document order as far as the JSON map order allows.
    pub errors: Vec<ConfigError>,
}

impl ConfigErrors {
    pub(crate) fn single(error: ConfigError) -> Self {
        ConfigErrors {
            errors: vec![error],
        }
    }

    /// The problems.
    pub fn iter(&self) -> std::slice::Iter<'_, ConfigError> {
        self.errors.iter()
    }
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.errors.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

impl<'a> IntoIterator for &'a ConfigErrors {
    type Item = &'a ConfigError;
    type IntoIter = std::slice::Iter<'a, ConfigError>;
    fn into_iter(self) -> Self::IntoIter {
        self.errors.iter()
    }
}
