//! The `durable` section: where evals waiting for a human, pending approvals and legacy MCP
//! sessions are kept so that they outlive the process and, with a shared store, can be picked
//! up by any node of a cluster.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::de;
use crate::error::ConfigErrorKind;
use crate::reader::{JsonPath, Reader, describe};
use crate::schema::sections;

/// The `durable` section. [`DurableConfig::default`] is a local store in
/// [`default_state_dir`], which needs no set-up.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DurableConfig {
    /// Where records are kept (`store`: `"local"` or `"redis://HOST:PORT/DB"`). Default:
    /// [`StoreLocation::Local`].
    pub store: StoreLocation,
    /// The state directory (`dir`): the local store's records are in its `records/`
    /// subdirectory, and a generated sealing key in its `state.key` file. Default:
    /// [`default_state_dir`] (`None` only when no environment variable names a home).
    pub dir: Option<PathBuf>,
    /// The environment variable holding the 32-byte key that seals every record (`keyEnv`): 64
    /// hex digits, or base64 (standard or URL-safe alphabet, padding optional). When it is not
    /// set, a local store uses a key generated in `dir/state.key` (mode `0600`); a Redis store
    /// refuses to start, since the nodes of a cluster must share one key. Default:
    /// [`DurableConfig::DEFAULT_KEY_ENV`]. Read when the store is opened, not when the file is
    /// loaded.
    pub key_env: String,
    /// How long an eval waits for a human in memory before it is saved to the store and its
    /// sandbox freed (`suspendToStoreAfterSeconds`, `0` = at once). Default:
    /// [`DurableConfig::DEFAULT_SUSPEND_TO_STORE_AFTER`] (5 s).
    pub suspend_to_store_after: Duration,
    /// Whether the local store makes each record durable on disk (`fsync` of the file and of
    /// its directory) before a write returns (`fsync`). Without it, a record written just
    /// before a power loss or kernel crash may be lost (a crash of codemode alone loses
    /// nothing). Ignored by Redis, whose own persistence settings apply. Default: `true`.
    pub fsync: bool,
    /// The bytes of the evals this node saved to the store and that are neither resumed nor
    /// expired, all clients together (`maxParkedBytes`). An eval whose save would pass it is
    /// not parked: it goes on in memory. Default: [`DEFAULT_MAX_PARKED_BYTES`] (4 GiB).
    pub max_parked_bytes: u64,
}

/// The default `durable.maxParkedBytes`: 4 GiB.
pub const DEFAULT_MAX_PARKED_BYTES: u64 = 4 << 30;

impl DurableConfig {
    /// The default of `durable.keyEnv`: `CODEMODE_STATE_KEY`.
    pub const DEFAULT_KEY_ENV: &str = "CODEMODE_STATE_KEY";

    /// The default of `durable.suspendToStoreAfterSeconds`: 5 seconds.
    pub const DEFAULT_SUSPEND_TO_STORE_AFTER: Duration = Duration::from_secs(5);
}

impl Default for DurableConfig {
    fn default() -> Self {
        DurableConfig {
            store: StoreLocation::Local,
            dir: default_state_dir(),
            key_env: Self::DEFAULT_KEY_ENV.to_string(),
            suspend_to_store_after: Self::DEFAULT_SUSPEND_TO_STORE_AFTER,
            fsync: true,
            max_parked_bytes: DEFAULT_MAX_PARKED_BYTES,
        }
    }
}

/// Where records are kept (`durable.store`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// Files in the state directory (`"local"`): one process, or processes of one machine
    /// sharing the directory.
    Local,
    /// A Redis or Valkey server shared by the nodes of a cluster (`"redis://…"`).
    Redis(RedisUrl),
}

/// A `redis://[USER[:PASSWORD]@]HOST[:PORT][/DB]` URL, checked. Its [`Display`](fmt::Display)
/// and [`Debug`] forms hide the password.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisUrl {
    url: String,
    redacted: String,
    password: Option<String>,
    db: u32,
}

impl RedisUrl {
    /// The port Redis listens on when a URL names none.
    pub const DEFAULT_PORT: u16 = 6379;

    /// Checks `text`: scheme `redis`, a host, an optional port, an optional database number as
    /// the path, nothing else.
    ///
    /// ```
    /// use codemode_config::RedisUrl;
    /// let url = RedisUrl::parse("redis://app:s3cret@10.0.0.5:6380/2").unwrap();
    /// assert_eq!(url.to_string(), "redis://app:***@10.0.0.5:6380/2");
    /// assert_eq!(url.db(), 2);
    /// assert_eq!(url.as_secret_str(), "redis://app:s3cret@10.0.0.5:6380/2");
    /// assert!(RedisUrl::parse("rediss://host").unwrap_err().to_string().contains("TLS"));
    /// ```
    ///
    /// # Errors
    ///
    /// What is wrong, never repeating the password.
    pub fn parse(text: &str) -> Result<RedisUrl, InvalidRedisUrl> {
        Self::parse_text(text).map_err(InvalidRedisUrl)
    }

    fn parse_text(text: &str) -> Result<RedisUrl, String> {
        let url = url::Url::parse(text).map_err(|e| format!("not a URL: {e}"))?;
        match url.scheme() {
            "redis" => {}
            "rediss" => {
                return Err(
                    "TLS (`rediss://`) is not supported; reach Redis over a private \
                            network or a TLS tunnel and write `redis://`"
                        .to_string(),
                );
            }
            other => {
                return Err(format!(
                    "the scheme is `{other}`; expected `redis://HOST:PORT/DB` (or \"local\")"
                ));
            }
        }
        let host = match url.host_str() {
            Some(h) if !h.is_empty() => h.to_string(),
            _ => return Err("the URL names no host".to_string()),
        };
        if url.query().is_some() || url.fragment().is_some() {
            return Err("query parameters and fragments are not supported".to_string());
        }
        let db = match url.path().trim_start_matches('/') {
            "" => 0,
            n => n.parse::<u32>().map_err(|_| {
                format!("the path must be a database number such as `/0`, found `/{n}`")
            })?,
        };
        let port = url.port().unwrap_or(Self::DEFAULT_PORT);
        let user = match (url.username(), url.password()) {
            ("", None) => String::new(),
            (user, None) => format!("{user}@"),
            (user, Some(_)) => format!("{user}:***@"),
        };
        let password = url.password().filter(|p| !p.is_empty()).map(|p| {
            percent_encoding::percent_decode_str(p)
                .decode_utf8_lossy()
                .into_owned()
        });
        Ok(RedisUrl {
            url: text.to_string(),
            redacted: format!("redis://{user}{host}:{port}/{db}"),
            password,
            db,
        })
    }

    /// The URL as written, password included: for the client library only, never for a
    /// message.
    pub fn as_secret_str(&self) -> &str {
        &self.url
    }

    /// `text` with the URL's password (as written and decoded) replaced by `***`: for messages
    /// of a client library that might quote it.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        if let Some(password) = &self.password {
            out = out.replace(password.as_str(), "***");
            let written = url::Url::parse(&self.url)
                .ok()
                .and_then(|u| u.password().map(str::to_string));
            if let Some(written) = written {
                out = out.replace(&written, "***");
            }
        }
        out
    }

    /// The database number (`0` when the URL has no path).
    pub fn db(&self) -> u32 {
        self.db
    }
}

impl fmt::Display for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted)
    }
}

impl fmt::Debug for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RedisUrl({})", self.redacted)
    }
}

/// The default state directory: `$CODEMODE_STATE_DIR`, else `$XDG_STATE_HOME/codemode`, else
/// `$HOME/.local/state/codemode` (empty variables count as unset).
pub fn default_state_dir() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("CODEMODE_STATE_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = var("XDG_STATE_HOME") {
        return Some(PathBuf::from(dir).join("codemode"));
    }
    var("HOME").map(|h| {
        PathBuf::from(h)
            .join(".local")
            .join("state")
            .join("codemode")
    })
}

/// Reads `durable` at `path`: its values through its serde type, then the store's location
/// (with its `${VAR}` references replaced from the reader's environment) and the names checked.
pub(crate) fn read_durable(r: &mut Reader, v: &Value, path: &JsonPath) -> DurableConfig {
    let mut out = DurableConfig::default();
    let Some(read) = de::read::<sections::Durable>(r, v, path) else {
        return out;
    };
    if let Some(secs) = read.suspend_to_store_after_seconds {
        out.suspend_to_store_after = secs.0;
    }
    out.fsync = read.fsync.unwrap_or(out.fsync);
    if let Some(bytes) = read.max_parked_bytes {
        out.max_parked_bytes = bytes.0;
    }
    if let Some(written) = read.store
        && let Some(store) = store_location(r, &written, &path.key("store"))
    {
        out.store = store;
    }
    match read.dir.as_deref() {
        Some("") => r.error(
            &path.key("dir"),
            ConfigErrorKind::InvalidValue,
            "the directory is empty; leave `dir` out for the default state directory",
        ),
        Some(dir) => out.dir = Some(PathBuf::from(dir)),
        None => {}
    }
    if let Some(name) = read.key_env {
        match key_env_problem(&name) {
            Some(problem) => r.error(&path.key("keyEnv"), ConfigErrorKind::InvalidValue, problem),
            None => out.key_env = name,
        }
    }
    out
}

/// `durable.store` as written (at `path`): `"local"` or a Redis URL, whose `${VAR}` references
/// let the password stay out of the file.
fn store_location(r: &mut Reader, written: &str, path: &JsonPath) -> Option<StoreLocation> {
    if written == "local" {
        return Some(StoreLocation::Local);
    }
    if !written.contains("://") {
        let found = describe(&Value::String(written.to_string()));
        let message =
            format!("expected \"local\" or a URL such as \"redis://HOST:PORT/DB\", found {found}");
        r.error(path, ConfigErrorKind::InvalidValue, message);
        return None;
    }
    let text = r.substituted(written, path)?;
    match RedisUrl::parse(&text) {
        Ok(url) => Some(StoreLocation::Redis(url)),
        // The written text, not the value: a variable may hold a secret.
        Err(e) => {
            let message = format!("`{written}`: {e}");
            r.error(path, ConfigErrorKind::InvalidValue, message);
            None
        }
    }
}

/// What is wrong with `name` as `durable.keyEnv`, if anything.
fn key_env_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        Some(format!(
            "the variable name is empty; leave `keyEnv` out for `{}`",
            DurableConfig::DEFAULT_KEY_ENV
        ))
    } else if name.contains('=') || name.contains('\0') {
        Some(format!(
            "`{name}` cannot be an environment variable's name (it holds `=` or NUL)"
        ))
    } else {
        None
    }
}

/// Why a text is not a [`RedisUrl`] (never repeating a password).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidRedisUrl(String);

#[cfg(test)]
#[path = "durable_tests.rs"]
mod tests;
