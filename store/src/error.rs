//! What can go wrong with a store, as a kind callers match on and a message that names the
//! store and the record (never a password or a key).

use std::fmt;

/// What kind of problem a [`StoreError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// A record key outside `[A-Za-z0-9_.:-]{1,200}` (or starting with `.`), or a TTL of zero.
    InvalidArgument,
    /// The store could not be reached or written: Redis down or refusing the command, a file
    /// system error (the [`source`](std::error::Error::source) has the cause).
    Unavailable,
    /// A record is there but cannot be read: altered, truncated, moved to another key name,
    /// sealed under another key, or not a codemode record at all. The record is left as it is.
    Unreadable,
    /// The sealing key could not be had: `keyEnv`'s variable malformed, a Redis store without
    /// it, a key file that is unsafe or unreadable.
    SealingKey,
    /// The configuration gives no state directory and none can be derived (no `HOME`).
    NoStateDir,
}

/// A store operation that failed.
#[derive(Debug)]
pub struct StoreError {
    kind: StoreErrorKind,
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl StoreError {
    /// An error of `kind` saying `message` (also for the store's users, whose records may not
    /// encode or decode).
    pub fn new(kind: StoreErrorKind, message: impl Into<String>) -> Self {
        StoreError {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// An error with its cause kept as the source; `message` should already say it (the
    /// Display form is the message alone).
    pub(crate) fn with_source(
        kind: StoreErrorKind,
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        StoreError {
            kind,
            message: message.into(),
            source: Some(Box::new(source)),
        }
    }

    /// A file-system error on `path` while doing `what`.
    pub(crate) fn io(what: &str, path: &std::path::Path, e: std::io::Error) -> Self {
        StoreError::with_source(
            StoreErrorKind::Unavailable,
            format!("{what} {}: {e}", path.display()),
            e,
        )
    }

    /// What kind of problem it is.
    pub fn kind(&self) -> StoreErrorKind {
        self.kind
    }

    /// What went wrong, naming the store and the record.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}
