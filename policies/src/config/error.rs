//! Configuration errors: every problem found, each naming where it is.

use std::fmt;

/// One problem in a configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Where: a path into the JSON document such as
    /// `evaluation.profiles.supervised.asklist[1]` (keys that are not plain words are quoted:
    /// `rules[0].when["/path"]`), `(root)` for the document itself, or the file name for an
    /// I/O error.
    pub path: String,
    /// What is wrong, naming the offending value and, where useful, what is allowed.
    pub message: String,
}

impl fmt::Display for ConfigError {
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
    pub(crate) fn single(path: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigErrors {
            errors: vec![ConfigError {
                path: path.into(),
                message: message.into(),
            }],
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
