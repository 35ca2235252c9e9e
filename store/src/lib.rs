//! Durable records: where evals waiting for a human, pending approvals and legacy MCP sessions
//! are kept so that they outlive the process and, with a shared store, can be taken up by any
//! node of a cluster (the `durable` config section, [`DurableConfig`]).
//!
//! - [`Store`] is what the server uses: records under a key, each with a time to live, sealed
//!   ([`Seal`]: XChaCha20-Poly1305 under a [`StateKey`], the key name authenticated) before they
//!   reach a backend and checked when they come back.
//! - [`RecordStore`] is what a backend does with the sealed bytes: [`LocalStore`] (files in the
//!   state directory, the default) or [`RedisStore`] (Redis or Valkey, for clusters).
//!
//! The server keeps rmcp's legacy-session state in the same store (its `SealedSessionStore`), so
//! a legacy session continues on another node after its own one died.
//!
//! ```no_run
//! # async fn demo() -> Result<(), codemode_store::StoreError> {
//! use std::time::Duration;
//! use codemode_store::Store;
//! let store = Store::open(&codemode_config::DurableConfig::default()).await?;
//! store.put("eval:7f3a-1", b"saved state", Duration::from_secs(120)).await?;
//! // Any node: exactly one taker gets it.
//! let record = store.take("eval:7f3a-1").await?.expect("still there");
//! assert_eq!(record.value, b"saved state");
//! # Ok(()) }
//! ```

mod error;
mod key;
mod local;
mod records;
mod redis;
mod seal;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use codemode_config::{DurableConfig, StoreLocation};
use codemode_runtime::BoxFuture;

pub use error::{StoreError, StoreErrorKind};
pub use key::{InvalidStateKey, KEY_FILE, StateKey, hex};
pub use local::{LocalStore, SWEEP_INTERVAL, Swept};
pub use records::{MAX_KEY_LEN, RecordStore, check_key, check_prefix, now_ms};
pub use redis::{REDIS_KEY_PREFIX, RedisStore};
pub use seal::{MIN_SEALED_LEN, SEAL_OVERHEAD, Seal, SealError};

/// The local store's directory inside the state directory.
pub(crate) const RECORDS_DIR: &str = "records";

/// One live record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Its key.
    pub key: String,
    /// Its value, opened.
    pub value: Vec<u8>,
    /// When it expires (as sealed: a store cannot extend it).
    pub expires_at: SystemTime,
}

impl Record {
    /// The time it has left (zero once past).
    pub fn remaining(&self) -> Duration {
        self.expires_at
            .duration_since(SystemTime::now())
            .unwrap_or_default()
    }
}

/// What [`Store::list`] found.
#[derive(Debug, Default)]
pub struct Listing {
    /// The live records that opened.
    pub records: Vec<Record>,
    /// Records that are there but did not open (altered, another key …): each error names its
    /// record. They are left in the store.
    pub unreadable: Vec<StoreError>,
}

/// Sealed records with a time to live in a [`RecordStore`] (see the module docs). Cheap to
/// clone; clones share the backend and, for a local store, its periodic sweep (which stops when
/// the last clone is dropped).
#[derive(Debug, Clone)]
pub struct Store {
    records: Arc<dyn RecordStore>,
    seal: Seal,
    _sweeper: Option<Arc<AbortOnDrop>>,
}

impl Store {
    /// The store `config` describes, with its sealing key: for `"local"`, the directory
    /// `dir/records` (swept now and every [`SWEEP_INTERVAL`]; needs a tokio runtime); for
    /// `"redis://…"`, a connection to that server (reconnecting by itself later). The key is
    /// `keyEnv`'s variable, else (local store only) `dir/state.key`, generated on first use.
    ///
    /// # Errors
    ///
    /// [`StoreErrorKind::NoStateDir`] when a directory is needed and there is none;
    /// [`StoreErrorKind::SealingKey`] (see [`StateKey::resolve`]);
    /// [`StoreErrorKind::Unavailable`] when the directory cannot be created or Redis cannot be
    /// reached.
    pub fn open<'a>(config: &'a DurableConfig) -> BoxFuture<'a, Result<Store, StoreError>> {
        Box::pin(async move {
            let no_dir = || {
                StoreError::new(
                    StoreErrorKind::NoStateDir,
                    "no state directory for the local store: set `durable.dir`, \
                 CODEMODE_STATE_DIR, XDG_STATE_HOME or HOME",
                )
            };
            match &config.store {
                StoreLocation::Local => {
                    let dir = config.dir.as_deref().ok_or_else(no_dir)?;
                    let key = StateKey::resolve(&config.key_env, Some(dir))?;
                    let local = {
                        let dir = dir.join(RECORDS_DIR);
                        let fsync = config.fsync;
                        tokio::task::spawn_blocking(move || LocalStore::open(dir, fsync))
                            .await
                            .map_err(|e| {
                                StoreError::new(
                                    StoreErrorKind::Unavailable,
                                    format!("opening the local store failed: {e}"),
                                )
                            })??
                    };
                    Ok(Store::local(local, &key))
                }
                StoreLocation::Redis(url) => {
                    // No generated key: every node must hold the same one.
                    let key = StateKey::resolve(&config.key_env, None)?;
                    let redis = RedisStore::connect(url).await?;
                    Ok(Store::new(Arc::new(redis), &key))
                }
            }
        })
    }

    /// A store over any backend, sealing with `key`.
    pub fn new(records: Arc<dyn RecordStore>, key: &StateKey) -> Store {
        Store {
            records,
            seal: Seal::new(key),
            _sweeper: None,
        }
    }

    /// A store over a local directory, swept every [`SWEEP_INTERVAL`] while a clone of the
    /// store lives (needs a tokio runtime).
    pub fn local(local: LocalStore, key: &StateKey) -> Store {
        let sweeping = local.clone();
        let task = tokio::spawn(async move {
            let mut every = tokio::time::interval(SWEEP_INTERVAL);
            every.tick().await; // the first tick is immediate; `open` has just swept
            loop {
                every.tick().await;
                let store = sweeping.clone();
                match tokio::task::spawn_blocking(move || store.sweep()).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => tracing::warn!("sweeping the durable store: {e}"),
                    Err(e) => tracing::warn!("sweeping the durable store: {e}"),
                }
            }
        });
        Store {
            records: Arc::new(local),
            seal: Seal::new(key),
            _sweeper: Some(Arc::new(AbortOnDrop(task))),
        }
    }

    /// What the store is, for messages (never with a password).
    pub fn describe(&self) -> &str {
        self.records.describe()
    }

    /// The sealing key's id (hex; safe to show): nodes sharing a store must show the same.
    pub fn key_id(&self) -> String {
        self.seal.key_id()
    }

    /// Writes `value` under `key` for `ttl`, replacing any record there.
    ///
    /// # Errors
    ///
    /// [`StoreErrorKind::InvalidArgument`] for a bad key or a TTL under 1 ms;
    /// [`StoreErrorKind::Unavailable`] when the store cannot be written.
    pub fn put<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let sealed = self.seal_for(key, value, ttl)?;
            self.records.put(key, sealed, ttl).await
        })
    }

    /// Writes `value` under `key` for `ttl` unless a live record is there (a claim); `true`
    /// when it was written. Of racing writers, on any nodes, exactly one gets `true`.
    ///
    /// # Errors
    ///
    /// As [`Store::put`].
    pub fn put_if_absent<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let sealed = self.seal_for(key, value, ttl)?;
            self.records.put_if_absent(key, sealed, ttl).await
        })
    }

    /// The live record under `key`.
    ///
    /// # Errors
    ///
    /// [`StoreErrorKind::Unreadable`] when the record does not open (it is left there);
    /// [`StoreErrorKind::Unavailable`]; [`StoreErrorKind::InvalidArgument`] for a bad key.
    pub fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Record>, StoreError>> {
        Box::pin(async move {
            match self.records.get(key).await? {
                Some(sealed) => self.open_record(key, &sealed),
                None => Ok(None),
            }
        })
    }

    /// Whether a live record is under `key`, without reading or opening its value: for a look
    /// at a large record (a saved eval) that must stay cheap. Existence is not authenticated: a
    /// record that would not open (altered, sealed under another key) counts as there, and
    /// its life is as the backend keeps it, which a store writer can extend; [`Store::get`]
    /// says whether it opens, and until when it lives.
    ///
    /// # Errors
    ///
    /// [`StoreErrorKind::Unavailable`]; [`StoreErrorKind::Unreadable`] when a local store's
    /// file under `key` is not a record; [`StoreErrorKind::InvalidArgument`] for a bad key.
    pub fn exists<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move { self.records.exists(key).await })
    }

    /// Removes and returns the live record under `key` in one step: of concurrent takers on
    /// any nodes, exactly one gets it (how one node claims a saved eval to resume it).
    ///
    /// # Errors
    ///
    /// As [`Store::get`]; a record that does not open is removed all the same (it was taken).
    pub fn take<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Record>, StoreError>> {
        Box::pin(async move {
            match self.records.take(key).await? {
                Some(sealed) => self.open_record(key, &sealed),
                None => Ok(None),
            }
        })
    }

    /// Removes the record under `key`; `true` when there was one.
    ///
    /// # Errors
    ///
    /// [`StoreErrorKind::Unavailable`]; [`StoreErrorKind::InvalidArgument`] for a bad key.
    pub fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move { self.records.delete(key).await })
    }

    /// The live records whose keys start with `prefix` (e.g. every pending approval of the
    /// cluster), ordered by key; those that do not open are reported apart.
    ///
    /// # Errors
    ///
    /// [`StoreErrorKind::Unavailable`]; [`StoreErrorKind::InvalidArgument`] for a bad prefix.
    pub fn list<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Listing, StoreError>> {
        Box::pin(async move {
            let mut listing = Listing::default();
            for (key, sealed) in self.records.list(prefix).await? {
                match self.open_record(&key, &sealed) {
                    Ok(Some(record)) => listing.records.push(record),
                    Ok(None) => {}
                    Err(e) => listing.unreadable.push(e),
                }
            }
            listing.records.sort_by(|a, b| a.key.cmp(&b.key));
            Ok(listing)
        })
    }

    fn seal_for(&self, key: &str, value: &[u8], ttl: Duration) -> Result<Vec<u8>, StoreError> {
        check_key(key)?;
        let deadline = now_ms().saturating_add(records::check_ttl(key, ttl)?);
        self.seal.seal(key, deadline, value).map_err(|e| {
            StoreError::new(
                StoreErrorKind::Unavailable,
                format!("record `{key}` cannot be sealed: {e}"),
            )
        })
    }

    /// Opens a sealed record; `None` when its sealed deadline has passed.
    fn open_record(&self, key: &str, sealed: &[u8]) -> Result<Option<Record>, StoreError> {
        let (deadline, value) = self.seal.open(key, sealed).map_err(|e| {
            StoreError::with_source(
                StoreErrorKind::Unreadable,
                format!(
                    "record `{key}` in {} cannot be opened: {e}",
                    self.describe()
                ),
                e,
            )
        })?;
        if deadline <= now_ms() {
            return Ok(None);
        }
        Ok(Some(Record {
            key: key.to_string(),
            value,
            expires_at: UNIX_EPOCH + Duration::from_millis(deadline),
        }))
    }
}

/// Aborts a task when dropped.
#[derive(Debug)]
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests;
