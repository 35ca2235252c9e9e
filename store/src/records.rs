//! [`RecordStore`]: what a store backend does with opaque bytes — records under a key, each
//! with a time to live — and the rules every backend shares (key syntax, clock).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::error::{StoreError, StoreErrorKind};

/// The longest record key.
pub const MAX_KEY_LEN: usize = 200;

/// Records with a time to live, under keys of `[A-Za-z0-9_.:-]{1,200}` not starting with `.`
/// (see [`check_key`]). Values are opaque bytes: [`super::Store`] seals them before they get
/// here, so a backend never sees plaintext.
///
/// A record whose time to live has passed is never returned, whether or not the backend has
/// removed it yet. Every operation is atomic with respect to the others, across processes
/// sharing the backend: in particular, of many concurrent [`take`](RecordStore::take)s of one
/// record exactly one gets it.
#[async_trait::async_trait]
pub trait RecordStore: Send + Sync + std::fmt::Debug {
    /// What the store is, for messages: `local store /var/lib/codemode/records`,
    /// `redis://10.0.0.5:6379/0` (never with a password).
    fn describe(&self) -> &str;

    /// Writes `value` under `key` for `ttl`, replacing any record there.
    async fn put(&self, key: &str, value: Vec<u8>, ttl: Duration) -> Result<(), StoreError>;

    /// Writes `value` under `key` for `ttl` unless a live record is there; `true` when it was
    /// written. Two nodes racing for one key: exactly one gets `true`.
    async fn put_if_absent(
        &self,
        key: &str,
        value: Vec<u8>,
        ttl: Duration,
    ) -> Result<bool, StoreError>;

    /// The record under `key`, if there is a live one.
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// Whether there is a live record under `key`, read without its value (a file's header, a
    /// Redis `EXISTS`): a cheap look for a record that may be large.
    async fn exists(&self, key: &str) -> Result<bool, StoreError>;

    /// Removes and returns the record under `key` in one step: of concurrent takers (on any
    /// node) exactly one gets it.
    async fn take(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// Removes the record under `key`; `true` when there was one.
    async fn delete(&self, key: &str) -> Result<bool, StoreError>;

    /// Every live record whose key starts with `prefix` (which follows the key syntax, or is
    /// empty), in no particular order. A record removed meanwhile is left out.
    async fn list(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError>;
}

/// Checks a record key: 1 to [`MAX_KEY_LEN`] ASCII letters, digits, `_`, `.`, `:` or `-`, not
/// starting with `.` (the local store's own files do). Keys become file names and Redis keys
/// as they are, so nothing in them needs escaping.
///
/// # Errors
///
/// [`StoreErrorKind::InvalidArgument`], naming the key and what is wrong.
pub fn check_key(key: &str) -> Result<(), StoreError> {
    check_prefix(key)?;
    if key.is_empty() {
        return Err(StoreError::new(
            StoreErrorKind::InvalidArgument,
            "a record key cannot be empty",
        ));
    }
    Ok(())
}

/// [`check_key`] for a [`RecordStore::list`] prefix, which may be empty.
///
/// # Errors
///
/// As [`check_key`].
pub fn check_prefix(prefix: &str) -> Result<(), StoreError> {
    let bad = |reason: &str| {
        Err(StoreError::new(
            StoreErrorKind::InvalidArgument,
            // `{:?}` escapes control characters: what a human reads is what was given.
            format!("invalid record key {prefix:?}: {reason}"),
        ))
    };
    if prefix.len() > MAX_KEY_LEN {
        return bad(&format!("longer than {MAX_KEY_LEN} bytes"));
    }
    if prefix.starts_with('.') {
        return bad("starts with `.`");
    }
    if let Some(c) = prefix
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-')))
    {
        return bad(&format!(
            "holds {c:?}; keys are ASCII letters, digits, `_`, `.`, `:` and `-`"
        ));
    }
    Ok(())
}

/// Checks a time to live: at least one millisecond (the stores' granularity).
///
/// # Errors
///
/// [`StoreErrorKind::InvalidArgument`].
pub(crate) fn check_ttl(key: &str, ttl: Duration) -> Result<u64, StoreError> {
    match u64::try_from(ttl.as_millis()) {
        Ok(0) => Err(StoreError::new(
            StoreErrorKind::InvalidArgument,
            format!("record `{key}`: a time to live must be at least 1 ms, found {ttl:?}"),
        )),
        Ok(ms) => Ok(ms),
        Err(_) => Err(StoreError::new(
            StoreErrorKind::InvalidArgument,
            format!("record `{key}`: the time to live {ttl:?} is too long"),
        )),
    }
}

/// Milliseconds since the Unix epoch, the clock of every expiry (nodes sharing a store must
/// have synchronised clocks; a skew shortens or lengthens records' lives by as much).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        for ok in ["eval:7f3a-1", "a", "approval.x_y-z", &"k".repeat(200)] {
            check_key(ok).unwrap();
        }
        let cases = [
            ("", "a record key cannot be empty"),
            (".tmp-1", "invalid record key \".tmp-1\": starts with `.`"),
            (
                "a/b",
                "invalid record key \"a/b\": holds '/'; keys are ASCII letters, digits, `_`, `.`, `:` and `-`",
            ),
            (
                "a*",
                "invalid record key \"a*\": holds '*'; keys are ASCII letters, digits, `_`, `.`, `:` and `-`",
            ),
            (
                "é",
                "invalid record key \"é\": holds 'é'; keys are ASCII letters, digits, `_`, `.`, `:` and `-`",
            ),
            (
                "a\u{1b}[2J",
                "invalid record key \"a\\u{1b}[2J\": holds '\\u{1b}'; keys are ASCII letters, digits, `_`, `.`, `:` and `-`",
            ),
        ];
        for (key, message) in cases {
            let e = check_key(key).unwrap_err();
            assert_eq!(
                (e.kind(), e.message()),
                (StoreErrorKind::InvalidArgument, message)
            );
        }
        let long = "k".repeat(201);
        assert_eq!(
            check_key(&long).unwrap_err().message(),
            format!("invalid record key \"{long}\": longer than 200 bytes")
        );
        check_prefix("").unwrap();
    }

    #[test]
    fn ttls() {
        assert_eq!(check_ttl("k", Duration::from_micros(1500)).unwrap(), 1);
        let e = check_ttl("k", Duration::from_micros(999)).unwrap_err();
        assert_eq!(
            (e.kind(), e.message()),
            (
                StoreErrorKind::InvalidArgument,
                "record `k`: a time to live must be at least 1 ms, found 999µs"
            )
        );
        assert_eq!(
            check_ttl("k", Duration::MAX).unwrap_err().kind(),
            StoreErrorKind::InvalidArgument
        );
    }
}
