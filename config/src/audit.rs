//! The `audit` section: where the audit log goes, what its records hold, and the key of its
//! HMAC chains.

use std::path::PathBuf;

use serde_json::Value;

use crate::de;
use crate::error::ConfigErrorKind;
use crate::reader::{JsonPath, Reader};
use crate::schema::sections;

/// The secret of HMAC-SHA-256 audit chains: the bytes of the environment variable named by
/// `audit.keyEnv`. Its `Debug` never shows the bytes.
///
/// It lives with the configuration that reads it; the audit writer and verifier
/// (`codemode_policies`) take it from here.
#[derive(Clone, PartialEq, Eq)]
pub struct AuditKey(Vec<u8>);

impl AuditKey {
    /// A key of these bytes (any length; HMAC hashes a long key down).
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        AuditKey(bytes.into())
    }

    /// The key's bytes, for the HMAC.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuditKey(<redacted>)")
    }
}

/// The `audit` section.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditConfig {
    /// Where the JSON Lines files go (`dir`). Default: `None`, no audit log.
    pub dir: Option<PathBuf>,
    /// Whether tool-call records include the arguments themselves (`includeArgs`), not just
    /// their SHA-256. Default: `false`.
    pub include_args: bool,
    /// The environment variable holding the key of HMAC-SHA-256 chains (`keyEnv`). Default:
    /// `None`, plain SHA-256 chains.
    pub key_env: Option<String>,
    /// The key itself, read from `key_env` when the file is loaded.
    pub key: Option<AuditKey>,
}

/// Reads `audit` at `path`, and the HMAC key its `keyEnv` names.
pub(crate) fn read_audit(r: &mut Reader, v: &Value, path: &JsonPath) -> AuditConfig {
    let mut audit = AuditConfig::default();
    let Some(read) = de::read::<sections::Audit>(r, v, path) else {
        return audit;
    };
    audit.include_args = read.include_args.unwrap_or_default();
    match read.dir.as_deref() {
        Some("") => r.error(
            &path.key("dir"),
            ConfigErrorKind::InvalidValue,
            "the directory is empty; leave `dir` out to disable the audit log",
        ),
        Some(dir) => audit.dir = Some(PathBuf::from(dir)),
        None => {}
    }
    if let Some(name) = read.key_env {
        let p = path.key("keyEnv");
        match audit_key(&name) {
            Ok(key) => {
                audit.key_env = Some(name);
                audit.key = Some(key);
            }
            Err((kind, message)) => r.error(&p, kind, message),
        }
    }
    audit
}

/// The audit key held by the environment variable `name`. It is read when the file is, so
/// that a missing one is a load error, not a surprise at the first record; its value is never
/// part of a message.
fn audit_key(name: &str) -> Result<AuditKey, (ConfigErrorKind, String)> {
    let missing = |why: &str| {
        let message = format!("the environment variable `{name}` (the audit key) {why}");
        Err((ConfigErrorKind::MissingEnv, message))
    };
    if name.is_empty() {
        return Err((
            ConfigErrorKind::InvalidValue,
            "the variable name is empty; leave `keyEnv` out for plain SHA-256 chains".into(),
        ));
    }
    match std::env::var(name) {
        Ok(key) if !key.is_empty() => Ok(AuditKey::new(key)),
        Ok(_) => missing("is empty"),
        Err(std::env::VarError::NotPresent) => missing("is not set"),
        Err(std::env::VarError::NotUnicode(_)) => missing("is not UTF-8"),
    }
}
