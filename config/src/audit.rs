//! The `audit` section: where the audit log goes, what its records hold, and the key of its
//! HMAC chains.

use std::path::PathBuf;

use serde_json::Value;

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

pub(crate) fn read_audit(r: &mut Reader, v: &Value, path: &JsonPath) -> AuditConfig {
    let mut audit = AuditConfig::default();
    let Some(map) = r.object(v, path, crate::schema::keys::of::<sections::Audit>()) else {
        return audit;
    };
    if let Some(v) = map.get("dir") {
        let p = path.key("dir");
        match r.string(v, &p) {
            Some("") => r.error(
                &p,
                ConfigErrorKind::InvalidValue,
                "the directory is empty; leave `dir` out to disable the audit log",
            ),
            Some(s) => audit.dir = Some(PathBuf::from(s)),
            None => {}
        }
    }
    if let Some(v) = map.get("includeArgs")
        && let Some(b) = r.bool(v, &path.key("includeArgs"))
    {
        audit.include_args = b;
    }
    if let Some(v) = map.get("keyEnv") {
        let p = path.key("keyEnv");
        match r.string(v, &p) {
            Some("") => r.error(
                &p,
                ConfigErrorKind::InvalidValue,
                "the variable name is empty; leave `keyEnv` out for plain SHA-256 chains",
            ),
            // The key is read now, so that a missing one is a load error, not a surprise at
            // the first record; its value is never part of a message.
            Some(name) => match std::env::var(name) {
                Ok(key) if !key.is_empty() => {
                    audit.key_env = Some(name.to_string());
                    audit.key = Some(AuditKey::new(key));
                }
                Ok(_) => r.error(
                    &p,
                    ConfigErrorKind::MissingEnv,
                    format!("the environment variable `{name}` (the audit key) is empty"),
                ),
                Err(std::env::VarError::NotPresent) => r.error(
                    &p,
                    ConfigErrorKind::MissingEnv,
                    format!("the environment variable `{name}` (the audit key) is not set"),
                ),
                Err(std::env::VarError::NotUnicode(_)) => r.error(
                    &p,
                    ConfigErrorKind::MissingEnv,
                    format!("the environment variable `{name}` (the audit key) is not UTF-8"),
                ),
            },
            None => {}
        }
    }
    audit
}
