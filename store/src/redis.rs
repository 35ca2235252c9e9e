//! [`RedisStore`]: records in Redis or Valkey (6.2 or later), shared by the nodes of a cluster.
//!
//! A record is the string `codemode:<key>` set with `SET … PX <ttl>` (Redis expires it);
//! `put_if_absent` is `SET … NX PX`, `exists` is `EXISTS`, `take` is `GETDEL` (atomic: one taker gets the value,
//! the others nil), `list` walks `SCAN MATCH codemode:<prefix>*` (never `KEYS`, which blocks
//! the server) and reads the values with `MGET`. The connection is redis-rs's
//! `ConnectionManager`: one multiplexed connection, re-established in the background after it
//! drops (a command sent while it is down fails with [`StoreErrorKind::Unavailable`]; later
//! ones succeed once Redis is back). Every command times out after [`REDIS_TIMEOUT`].

use std::time::Duration;

use codemode_config::RedisUrl;
use codemode_runtime::BoxFuture;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::error::{StoreError, StoreErrorKind};
use super::records::{RecordStore, check_key, check_prefix, check_ttl};

/// What every codemode key in Redis starts with.
pub const REDIS_KEY_PREFIX: &str = "codemode:";
/// How long connecting, and each command, may take.
pub(crate) const REDIS_TIMEOUT: Duration = Duration::from_secs(5);
/// Keys read per `MGET` when listing.
const MGET_BATCH: usize = 256;

/// Records in a Redis or Valkey server (see the module docs).
#[derive(Clone)]
pub struct RedisStore {
    connection: ConnectionManager,
    describe: String,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RedisStore({})", self.describe)
    }
}

impl RedisStore {
    /// Connects to `url` and checks that the server has `GETDEL` (Redis 6.2).
    ///
    /// # Errors
    ///
    /// [`StoreErrorKind::Unavailable`] naming the URL (without its password) when the server
    /// cannot be reached, refuses the credentials, or is older than 6.2.
    pub fn connect<'a>(url: &'a RedisUrl) -> BoxFuture<'a, Result<RedisStore, StoreError>> {
        Box::pin(async move {
            let describe = url.to_string();
            let fail = |what: &str, e: redis::RedisError| {
                StoreError::with_source(
                    StoreErrorKind::Unavailable,
                    format!("{describe}: {what}: {}", url.redact(&e.to_string())),
                    e,
                )
            };
            let client =
                redis::Client::open(url.as_secret_str()).map_err(|e| fail("not a Redis URL", e))?;
            let config = ConnectionManagerConfig::new()
                .set_connection_timeout(Some(REDIS_TIMEOUT))
                .set_response_timeout(Some(REDIS_TIMEOUT))
                .set_number_of_retries(3)
                .set_max_delay(Duration::from_secs(2));
            let connection = ConnectionManager::new_with_config(client, config)
                .await
                .map_err(|e| fail("cannot connect", e))?;
            let store = RedisStore {
                connection,
                describe,
            };
            let info: String = store
                .query(redis::cmd("INFO").arg("server"), "INFO")
                .await?;
            let version = info
                .lines()
                .find_map(|l| l.strip_prefix("redis_version:"))
                .map(str::trim)
                .unwrap_or("unknown");
            let parts: Vec<u32> = version
                .split('.')
                .take(2)
                .map(|p| p.parse().unwrap_or(0))
                .collect();
            if parts.len() == 2 && (parts[0], parts[1]) < (6, 2) {
                return Err(StoreError::new(
                    StoreErrorKind::Unavailable,
                    format!(
                        "{}: the server is Redis {version}; codemode needs 6.2 or later (GETDEL)",
                        store.describe
                    ),
                ));
            }
            Ok(store)
        })
    }

    async fn query<T: redis::FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
        name: &str,
    ) -> Result<T, StoreError> {
        let mut connection = self.connection.clone();
        cmd.query_async(&mut connection).await.map_err(|e| {
            StoreError::with_source(
                StoreErrorKind::Unavailable,
                format!("{}: {name} failed: {e}", self.describe),
                e,
            )
        })
    }
}

fn redis_key(key: &str) -> String {
    format!("{REDIS_KEY_PREFIX}{key}")
}

#[async_trait::async_trait]
impl RecordStore for RedisStore {
    fn describe(&self) -> &str {
        &self.describe
    }

    async fn put(&self, key: &str, value: Vec<u8>, ttl: Duration) -> Result<(), StoreError> {
        check_key(key)?;
        let ms = check_ttl(key, ttl)?;
        let mut cmd = redis::cmd("SET");
        cmd.arg(redis_key(key)).arg(value).arg("PX").arg(ms);
        self.query::<()>(&cmd, "SET").await
    }

    async fn put_if_absent(
        &self,
        key: &str,
        value: Vec<u8>,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        check_key(key)?;
        let ms = check_ttl(key, ttl)?;
        let mut cmd = redis::cmd("SET");
        cmd.arg(redis_key(key))
            .arg(value)
            .arg("NX")
            .arg("PX")
            .arg(ms);
        let reply: Option<String> = self.query(&cmd, "SET NX").await?;
        Ok(reply.is_some())
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        check_key(key)?;
        self.query(redis::cmd("GET").arg(redis_key(key)), "GET")
            .await
    }

    async fn exists(&self, key: &str) -> Result<bool, StoreError> {
        check_key(key)?;
        let found: u64 = self
            .query(redis::cmd("EXISTS").arg(redis_key(key)), "EXISTS")
            .await?;
        Ok(found > 0)
    }

    async fn take(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        check_key(key)?;
        self.query(redis::cmd("GETDEL").arg(redis_key(key)), "GETDEL")
            .await
    }

    async fn delete(&self, key: &str) -> Result<bool, StoreError> {
        check_key(key)?;
        let removed: u64 = self
            .query(redis::cmd("DEL").arg(redis_key(key)), "DEL")
            .await?;
        Ok(removed > 0)
    }

    async fn list(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        check_prefix(prefix)?;
        // The key syntax has none of MATCH's special characters (`*?[]\`).
        let pattern = format!("{REDIS_KEY_PREFIX}{prefix}*");
        let mut keys = std::collections::BTreeSet::new();
        let mut cursor = "0".to_string();
        loop {
            let (next, batch): (String, Vec<String>) = self
                .query(
                    redis::cmd("SCAN")
                        .arg(&cursor)
                        .arg("MATCH")
                        .arg(&pattern)
                        .arg("COUNT")
                        .arg(1000),
                    "SCAN",
                )
                .await?;
            // SCAN may return a key more than once; the set keeps one.
            keys.extend(batch);
            if next == "0" {
                break;
            }
            cursor = next;
        }
        let keys: Vec<String> = keys.into_iter().collect();
        let mut out = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(MGET_BATCH) {
            let values: Vec<Option<Vec<u8>>> =
                self.query(redis::cmd("MGET").arg(chunk), "MGET").await?;
            for (key, value) in chunk.iter().zip(values) {
                let name = key.strip_prefix(REDIS_KEY_PREFIX).unwrap_or(key);
                // Expired or taken since the scan: left out. Keys written by something
                // else under the prefix are skipped.
                if let Some(value) = value
                    && check_key(name).is_ok()
                {
                    out.push((name.to_string(), value));
                }
            }
        }
        Ok(out)
    }
}
