//! The 32-byte key that seals every record: from the environment variable `durable.keyEnv`
//! names, or generated once and kept in `<state dir>/state.key` (mode `0600`).

use std::fmt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use codemode_runtime::private_file::{self, Existing, Synced};

use super::error::{StoreError, StoreErrorKind};

/// The key file's name in the state directory.
pub const KEY_FILE: &str = "state.key";

/// A sealing key. Its `Debug` form does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct StateKey([u8; 32]);

impl fmt::Debug for StateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StateKey(..)")
    }
}

impl StateKey {
    /// A key from its bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        StateKey(bytes)
    }

    /// A new random key (the operating system's generator).
    ///
    /// # Errors
    ///
    /// [`StoreErrorKind::SealingKey`] when the generator fails.
    pub fn generate() -> Result<Self, StoreError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| {
            StoreError::new(
                StoreErrorKind::SealingKey,
                format!("cannot generate a sealing key: {e}"),
            )
        })?;
        Ok(StateKey(bytes))
    }

    pub(crate) fn bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The key as 64 lowercase hex digits (the key file's form).
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// Reads a key written as 64 hex digits, or as base64 of 32 bytes (standard or URL-safe
    /// alphabet, with or without padding); surrounding whitespace is ignored.
    ///
    /// ```
    /// use codemode_store::StateKey;
    /// let hex = StateKey::parse(&"ab".repeat(32)).unwrap();
    /// let b64 = StateKey::parse("q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s=").unwrap();
    /// assert_eq!(hex, b64);
    /// assert!(StateKey::parse("short").unwrap_err().to_string().contains("64 hex digits"));
    /// ```
    ///
    /// # Errors
    ///
    /// What the text is not (it is never repeated: it may be a key).
    pub fn parse(text: &str) -> Result<Self, InvalidStateKey> {
        Self::parse_text(text).map_err(InvalidStateKey)
    }

    fn parse_text(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            let mut bytes = [0u8; 32];
            for (i, pair) in text.as_bytes().chunks(2).enumerate() {
                let digits = std::str::from_utf8(pair).unwrap_or("00");
                bytes[i] = u8::from_str_radix(digits, 16).unwrap_or(0);
            }
            return Ok(StateKey(bytes));
        }
        for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
            if let Ok(decoded) = engine.decode(text) {
                return match <[u8; 32]>::try_from(decoded.as_slice()) {
                    Ok(bytes) => Ok(StateKey(bytes)),
                    Err(_) => Err(format!(
                        "is base64 of {} bytes; a key is 32 bytes",
                        decoded.len()
                    )),
                };
            }
        }
        Err(format!(
            "is neither 64 hex digits nor base64 of 32 bytes ({} characters); generate one with \
             `openssl rand -hex 32`",
            text.chars().count()
        ))
    }

    /// The key of `env_var` when it is set; else, when `key_dir` is given, the key in
    /// `key_dir/state.key`, created on first use.
    ///
    /// # Errors
    ///
    /// [`StoreErrorKind::SealingKey`]: the variable is set but empty, not UTF-8 or not a key;
    /// it is unset and `key_dir` is `None`; the key file is unsafe or unreadable (see
    /// `StateKey::load_or_create`).
    pub fn resolve(env_var: &str, key_dir: Option<&Path>) -> Result<Self, StoreError> {
        Self::resolve_from(env_var, std::env::var(env_var), key_dir)
    }

    /// [`StateKey::resolve`] with the variable's value given.
    fn resolve_from(
        env_var: &str,
        value: Result<String, std::env::VarError>,
        key_dir: Option<&Path>,
    ) -> Result<Self, StoreError> {
        let bad = |what: String| StoreError::new(StoreErrorKind::SealingKey, what);
        match value {
            Ok(text) if text.trim().is_empty() => Err(bad(format!(
                "the environment variable `{env_var}` (the sealing key) is empty"
            ))),
            Ok(text) => StateKey::parse(&text).map_err(|e| {
                bad(format!(
                    "the environment variable `{env_var}` (the sealing key) {e}"
                ))
            }),
            Err(std::env::VarError::NotUnicode(_)) => Err(bad(format!(
                "the environment variable `{env_var}` (the sealing key) is not UTF-8"
            ))),
            Err(std::env::VarError::NotPresent) => match key_dir {
                Some(dir) => StateKey::load_or_create(&dir.join(KEY_FILE)),
                None => Err(bad(format!(
                    "the environment variable `{env_var}` is not set: the nodes sharing a Redis \
                     store must share one sealing key (32 bytes as 64 hex digits or base64, \
                     e.g. from `openssl rand -hex 32`)"
                ))),
            },
        }
    }

    /// The key in the file `path`, generated and written there (mode `0600`, atomically: of
    /// processes racing to create it, all end up with the same key) when the file does not
    /// exist. The directory is created `0700` when missing.
    ///
    /// # Errors
    ///
    /// [`StoreErrorKind::SealingKey`] when the file is not a regular file of the effective
    /// user, is readable or writable by group or others, does not hold a key, or cannot be
    /// read or written.
    pub(crate) fn load_or_create(path: &Path) -> Result<Self, StoreError> {
        match read_key_file(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => create_key_file(path),
            other => other.map_err(|e| key_error(path, e)),
        }
    }
}

fn key_error(path: &Path, e: std::io::Error) -> StoreError {
    StoreError::with_source(
        StoreErrorKind::SealingKey,
        format!("the sealing key file {}: {e}", path.display()),
        e,
    )
}

fn invalid(message: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, message)
}

/// Reads and checks an existing key file (`NotFound` when there is none).
fn read_key_file(path: &Path) -> std::io::Result<StateKey> {
    let meta = std::fs::symlink_metadata(path)?;
    if !meta.file_type().is_file() {
        return Err(invalid(
            "is not a regular file (a symbolic link or a directory)".to_string(),
        ));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if meta.uid() != euid {
        return Err(invalid(format!(
            "belongs to user {} while codemode runs as user {euid}; the key must be its own",
            meta.uid()
        )));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(invalid(format!(
            "is readable or writable by group or others (mode {mode:04o}): the key seals every \
             record; run `chmod 600` on it"
        )));
    }
    let text = std::fs::read_to_string(path)?;
    let text = text.trim();
    if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(invalid(
            "does not hold a key (expected 64 hex digits)".to_string(),
        ));
    }
    StateKey::parse(text).map_err(|e| invalid(e.to_string()))
}

/// Writes a new key to a private temporary file, then links it to `path`: the link fails when
/// another process created the file first, whose key is then read instead.
fn create_key_file(path: &Path) -> Result<StateKey, StoreError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    private_file::create_dir(dir).map_err(|e| key_error(path, e))?;
    let key = StateKey::generate()?;
    let temp = temp_path(dir, ".state.key");
    let line = format!("{}\n", key.to_hex());
    let written = private_file::write(&temp, Existing::Fail, &[line.as_bytes()], Synced::All)
        .and_then(|()| std::fs::hard_link(&temp, path));
    let _ = std::fs::remove_file(&temp);
    match written {
        Ok(()) => {
            sync_dir(dir);
            Ok(key)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            read_key_file(path).map_err(|e| key_error(path, e))
        }
        Err(e) => Err(key_error(path, e)),
    }
}

/// `dir/<prefix>-<pid>-<n>-<random hex>`: a name no other process or thread picks.
pub(crate) fn temp_path(dir: &Path, prefix: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut random = [0u8; 4];
    // The pid and the counter already make the name unique on this machine.
    let _ = getrandom::fill(&mut random);
    dir.join(format!(
        "{prefix}-{}-{n}-{}",
        std::process::id(),
        hex(&random)
    ))
}

/// Makes a directory's entries (a rename, a link) durable; errors are ignored (some file
/// systems cannot sync a directory, and the data itself is already synced).
pub(crate) fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// `bytes` as lowercase hex (record keys derived from digests are written so).
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(2 * bytes.len());
    for b in bytes {
        text.push(char::from(DIGITS[usize::from(b >> 4)]));
        text.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    text
}

/// Why a text is not a [`StateKey`] (never repeating the text: it may be a key).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidStateKey(String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_two_lowercase_digits_per_byte() {
        assert_eq!(hex(&[]), "");
        assert_eq!(hex(&[0x00, 0x0f, 0xa0, 0xff, 0x5c]), "000fa0ff5c");
    }

    fn scratch(name: &str) -> PathBuf {
        codemode_test_support::scratch_dir("store-key", name)
    }

    #[test]
    fn encodings() {
        let bytes: [u8; 32] = std::array::from_fn(|i| i as u8 * 7);
        let key = StateKey::from_bytes(bytes);
        for text in [
            key.to_hex(),
            key.to_hex().to_uppercase(),
            format!("  {}\n", key.to_hex()),
            STANDARD.encode(bytes),
            STANDARD_NO_PAD.encode(bytes),
            URL_SAFE.encode(bytes),
            URL_SAFE_NO_PAD.encode(bytes),
        ] {
            assert_eq!(StateKey::parse(&text).unwrap(), key, "{text}");
        }
        assert_eq!(
            StateKey::parse(&STANDARD.encode([1u8; 16]))
                .unwrap_err()
                .to_string(),
            "is base64 of 16 bytes; a key is 32 bytes"
        );
        assert_eq!(
            StateKey::parse("not a key!").unwrap_err().to_string(),
            "is neither 64 hex digits nor base64 of 32 bytes (10 characters); generate one with \
             `openssl rand -hex 32`"
        );
        assert_eq!(format!("{key:?}"), "StateKey(..)");
    }

    #[test]
    fn a_generated_key_is_private_and_stays() {
        let dir = scratch("generated").join("state");
        let path = dir.join(KEY_FILE);
        let key = StateKey::load_or_create(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(dir_mode, 0o700);
        assert_eq!(StateKey::load_or_create(&path).unwrap(), key);
        // No temporary file is left behind.
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, [KEY_FILE]);
    }

    #[test]
    fn racing_creators_agree_on_one_key() {
        let path = scratch("race").join(KEY_FILE);
        let keys: Vec<StateKey> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| StateKey::load_or_create(&path).unwrap()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(keys.iter().all(|k| *k == keys[0]));
        assert_eq!(StateKey::load_or_create(&path).unwrap(), keys[0]);
    }

    #[test]
    fn unsafe_or_broken_key_files_are_refused() {
        let dir = scratch("unsafe");
        let path = dir.join(KEY_FILE);
        StateKey::load_or_create(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let e = StateKey::load_or_create(&path).unwrap_err();
        assert_eq!(e.kind(), StoreErrorKind::SealingKey);
        assert_eq!(
            e.message(),
            format!(
                "the sealing key file {}: is readable or writable by group or others (mode \
                 0640): the key seals every record; run `chmod 600` on it",
                path.display()
            )
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&path, "secret but not a key\n").unwrap();
        assert_eq!(
            StateKey::load_or_create(&path).unwrap_err().message(),
            format!(
                "the sealing key file {}: does not hold a key (expected 64 hex digits)",
                path.display()
            )
        );
        let link = dir.join("link.key");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert_eq!(
            StateKey::load_or_create(&link).unwrap_err().message(),
            format!(
                "the sealing key file {}: is not a regular file (a symbolic link or a directory)",
                link.display()
            )
        );
    }

    #[test]
    fn the_environment_wins_and_a_redis_store_needs_it() {
        let var = "CODEMODE_STATE_KEY";
        let dir = scratch("env");
        let hex_key = "11".repeat(32);
        let resolve = |value: Option<&str>, dir: Option<&Path>| {
            let value = value
                .map(str::to_string)
                .ok_or(std::env::VarError::NotPresent);
            StateKey::resolve_from(var, value, dir)
        };
        let key = resolve(Some(&hex_key), Some(&dir)).unwrap();
        assert_eq!(key.to_hex(), hex_key);
        assert!(
            !dir.join(KEY_FILE).exists(),
            "no key file when the variable is set"
        );
        assert_eq!(
            resolve(Some("  "), Some(&dir)).unwrap_err().message(),
            "the environment variable `CODEMODE_STATE_KEY` (the sealing key) is empty"
        );
        assert_eq!(
            resolve(Some("zz"), Some(&dir)).unwrap_err().message(),
            "the environment variable `CODEMODE_STATE_KEY` (the sealing key) is neither 64 hex \
             digits nor base64 of 32 bytes (2 characters); generate one with `openssl rand -hex 32`"
        );
        let e = resolve(None, None).unwrap_err();
        assert_eq!(e.kind(), StoreErrorKind::SealingKey);
        assert_eq!(
            e.message(),
            "the environment variable `CODEMODE_STATE_KEY` is not set: the nodes sharing a Redis \
             store must share one sealing key (32 bytes as 64 hex digits or base64, e.g. from \
             `openssl rand -hex 32`)"
        );
        let generated = resolve(None, Some(&dir)).unwrap();
        assert_eq!(
            StateKey::load_or_create(&dir.join(KEY_FILE)).unwrap(),
            generated
        );
    }
}
