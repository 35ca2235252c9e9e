//! [`LocalStore`]: records as files in one directory, for one process or the processes of one
//! machine sharing the directory.
//!
//! Each record is the file named by its key, `CMR1` ‖ expiry (u64 little-endian Unix
//! milliseconds) ‖ value. A write goes to a private temporary file first and is renamed over
//! the record (readers see the old record or the new one, never half of one); with `fsync` the
//! file and then the directory are synced before the write returns. `take` renames the record
//! to a claimed name first: the kernel lets exactly one of racing renames succeed, so exactly
//! one taker (thread or process) gets it. `put_if_absent` hard-links its temporary file to the
//! key, which fails when the key exists. Expired records are removed by [`LocalStore::sweep`]
//! (at open, and every [`SWEEP_INTERVAL`] while a [`super::Store`] holds the store); until then
//! reads treat them as absent.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use codemode_runtime::private_file::{self, Existing, Synced};

use super::error::{StoreError, StoreErrorKind};
use super::key::{sync_dir, temp_path};
use super::records::{RecordStore, check_key, check_prefix, check_ttl, now_ms};

const MAGIC: &[u8; 4] = b"CMR1";
const HEADER_LEN: usize = 12;
/// How often a [`super::Store`] sweeps its local store.
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(60);
/// Temporary and claimed files older than this are leftovers of a process that died mid-write
/// or mid-take, and are removed by a sweep.
const LEFTOVER_AGE: Duration = Duration::from_secs(60);
const TEMP_PREFIX: &str = ".tmp";
const CLAIMED_PREFIX: &str = ".claimed";

/// Records as files in one directory (see the module docs).
#[derive(Debug, Clone)]
pub struct LocalStore {
    dir: PathBuf,
    fsync: bool,
    describe: String,
}

/// What a [`LocalStore::sweep`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    /// Expired records removed.
    pub expired: usize,
    /// Leftover temporary or claimed files removed.
    pub leftovers: usize,
    /// Live records kept.
    pub kept: usize,
}

impl LocalStore {
    /// Opens (creating it `0700` when missing) the directory `dir` and sweeps it. `fsync`:
    /// whether writes are synced to disk before they return.
    ///
    /// # Errors
    ///
    /// [`StoreErrorKind::Unavailable`] when the directory cannot be created or read.
    pub fn open(dir: impl Into<PathBuf>, fsync: bool) -> Result<Self, StoreError> {
        let dir = dir.into();
        private_file::create_dir(&dir)
            .map_err(|e| StoreError::io("cannot create the local store", &dir, e))?;
        let store = LocalStore {
            describe: format!("local store {}", dir.display()),
            dir,
            fsync,
        };
        store.sweep()?;
        Ok(store)
    }

    /// The records' directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Removes expired records and the leftovers of processes that died mid-write or
    /// mid-take. A record replaced by a live one while it was being removed is kept.
    ///
    /// # Errors
    ///
    /// [`StoreErrorKind::Unavailable`] when the directory cannot be read.
    pub fn sweep(&self) -> Result<Swept, StoreError> {
        let mut swept = Swept::default();
        let now = now_ms();
        for entry in self.read_dir()? {
            let Ok(entry) = entry else { continue };
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let path = entry.path();
            if name.starts_with(TEMP_PREFIX) || name.starts_with(CLAIMED_PREFIX) {
                let old = entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age > LEFTOVER_AGE);
                if old && std::fs::remove_file(&path).is_ok() {
                    swept.leftovers += 1;
                }
                continue;
            }
            if check_key(name).is_err() {
                continue;
            }
            match read_expiry(&path) {
                Ok(Some(expires)) if expires <= now => {
                    if self.remove_expired(name, now) {
                        swept.expired += 1;
                    }
                }
                Ok(Some(_)) => swept.kept += 1,
                // Gone meanwhile, or not a record: left alone.
                Ok(None) | Err(_) => {}
            }
        }
        Ok(swept)
    }

    /// Moves an expired record aside and removes it; when the moved file turns out to be live
    /// (a `put` replaced the record in between), links it back unless yet another record took
    /// the name. `true` when an expired record was removed.
    fn remove_expired(&self, name: &str, now: u64) -> bool {
        let path = self.dir.join(name);
        let aside = temp_path(&self.dir, CLAIMED_PREFIX);
        if std::fs::rename(&path, &aside).is_err() {
            return false;
        }
        let expired = matches!(read_expiry(&aside), Ok(Some(e)) if e <= now);
        if !expired {
            let _ = std::fs::hard_link(&aside, &path);
        }
        let _ = std::fs::remove_file(&aside);
        expired
    }

    fn read_dir(&self) -> Result<std::fs::ReadDir, StoreError> {
        std::fs::read_dir(&self.dir)
            .map_err(|e| StoreError::io("cannot read the local store", &self.dir, e))
    }

    fn path(&self, key: &str) -> Result<PathBuf, StoreError> {
        check_key(key)?;
        Ok(self.dir.join(key))
    }

    /// Writes a record to a new temporary file (synced when `fsync`).
    fn write_temp(&self, value: &[u8], expires: u64) -> Result<PathBuf, StoreError> {
        let temp = temp_path(&self.dir, TEMP_PREFIX);
        let mut header = [0u8; HEADER_LEN];
        header[..4].copy_from_slice(MAGIC);
        header[4..].copy_from_slice(&expires.to_le_bytes());
        let sync = if self.fsync { Synced::Data } else { Synced::No };
        let written = private_file::write(&temp, Existing::Fail, &[&header, value], sync);
        match written {
            Ok(()) => Ok(temp),
            Err(e) => {
                let _ = std::fs::remove_file(&temp);
                Err(StoreError::io("cannot write", &temp, e))
            }
        }
    }

    fn put_blocking(&self, key: &str, value: &[u8], ttl: Duration) -> Result<(), StoreError> {
        let path = self.path(key)?;
        let expires = now_ms().saturating_add(check_ttl(key, ttl)?);
        let temp = self.write_temp(value, expires)?;
        if let Err(e) = std::fs::rename(&temp, &path) {
            let _ = std::fs::remove_file(&temp);
            return Err(StoreError::io("cannot write", &path, e));
        }
        if self.fsync {
            sync_dir(&self.dir);
        }
        Ok(())
    }

    fn put_if_absent_blocking(
        &self,
        key: &str,
        value: &[u8],
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let path = self.path(key)?;
        let expires = now_ms().saturating_add(check_ttl(key, ttl)?);
        let temp = self.write_temp(value, expires)?;
        let mut linked = std::fs::hard_link(&temp, &path);
        let now = now_ms();
        // Only a record seen expired is moved aside: moving a live one, even briefly, would
        // let another claimer in while it is away.
        if matches!(&linked, Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists)
            && matches!(read_expiry(&path), Ok(Some(expires)) if expires <= now)
            && self.remove_expired(key, now)
        {
            // The record there had expired: it counts as absent. Another racer may still win.
            linked = std::fs::hard_link(&temp, &path);
        }
        let _ = std::fs::remove_file(&temp);
        match linked {
            Ok(()) => {
                if self.fsync {
                    sync_dir(&self.dir);
                }
                Ok(true)
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(StoreError::io("cannot write", &path, e)),
        }
    }

    fn get_blocking(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.path(key)?;
        read_record(&path, key, &self.describe)
    }

    fn exists_blocking(&self, key: &str) -> Result<bool, StoreError> {
        let path = self.path(key)?;
        match read_expiry(&path) {
            Ok(expires) => Ok(expires.is_some_and(|e| e > now_ms())),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof
                ) =>
            {
                Err(StoreError::new(
                    StoreErrorKind::Unreadable,
                    format!(
                        "record `{key}` in {} is not a record file (no `CMR1` header)",
                        self.describe
                    ),
                ))
            }
            Err(e) => Err(StoreError::io("cannot read", &path, e)),
        }
    }

    fn take_blocking(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.path(key)?;
        let claimed = temp_path(&self.dir, CLAIMED_PREFIX);
        match std::fs::rename(&path, &claimed) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::io("cannot take", &path, e)),
        }
        let record = read_record(&claimed, key, &self.describe);
        let _ = std::fs::remove_file(&claimed);
        if self.fsync {
            sync_dir(&self.dir);
        }
        record
    }

    fn delete_blocking(&self, key: &str) -> Result<bool, StoreError> {
        let path = self.path(key)?;
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(StoreError::io("cannot delete", &path, e)),
        }
    }

    fn list_blocking(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        check_prefix(prefix)?;
        let mut out = Vec::new();
        for entry in self.read_dir()? {
            let Ok(entry) = entry else { continue };
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if !name.starts_with(prefix) || check_key(&name).is_err() {
                continue;
            }
            if let Some(value) = read_record(&entry.path(), &name, &self.describe)? {
                out.push((name, value));
            }
        }
        Ok(out)
    }

    /// Runs `f` on this store on tokio's blocking pool (file I/O, possibly fsync, must not
    /// hold up the async workers).
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&LocalStore) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let store = self.clone();
        tokio::task::spawn_blocking(move || f(&store))
            .await
            .map_err(|e| {
                StoreError::new(
                    StoreErrorKind::Unavailable,
                    format!("{}: the I/O task failed: {e}", self.describe),
                )
            })?
    }
}

/// The expiry in a record file's header; `None` when the file is gone.
fn read_expiry(path: &Path) -> std::io::Result<Option<u64>> {
    let mut header = [0u8; HEADER_LEN];
    match std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut header)) {
        Ok(()) if &header[..4] == MAGIC => {
            let mut expires = [0u8; 8];
            expires.copy_from_slice(&header[4..]);
            Ok(Some(u64::from_le_bytes(expires)))
        }
        Ok(()) => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not a record file",
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// A record file's value when it is live; `None` when the file is gone or expired.
fn read_record(path: &Path, key: &str, store: &str) -> Result<Option<Vec<u8>>, StoreError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::io("cannot read", path, e)),
    };
    if bytes.len() < HEADER_LEN || &bytes[..4] != MAGIC {
        return Err(StoreError::new(
            StoreErrorKind::Unreadable,
            format!(
                "record `{key}` in {store} is not a record file ({} bytes without the `CMR1` \
                 header)",
                bytes.len()
            ),
        ));
    }
    let mut expires = [0u8; 8];
    expires.copy_from_slice(&bytes[4..HEADER_LEN]);
    if u64::from_le_bytes(expires) <= now_ms() {
        return Ok(None);
    }
    Ok(Some(bytes[HEADER_LEN..].to_vec()))
}

#[async_trait::async_trait]
impl RecordStore for LocalStore {
    fn describe(&self) -> &str {
        &self.describe
    }

    async fn put(&self, key: &str, value: Vec<u8>, ttl: Duration) -> Result<(), StoreError> {
        let key = key.to_string();
        self.blocking(move |s| s.put_blocking(&key, &value, ttl))
            .await
    }

    async fn put_if_absent(
        &self,
        key: &str,
        value: Vec<u8>,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let key = key.to_string();
        self.blocking(move |s| s.put_if_absent_blocking(&key, &value, ttl))
            .await
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let key = key.to_string();
        self.blocking(move |s| s.get_blocking(&key)).await
    }

    async fn exists(&self, key: &str) -> Result<bool, StoreError> {
        let key = key.to_string();
        self.blocking(move |s| s.exists_blocking(&key)).await
    }

    async fn take(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let key = key.to_string();
        self.blocking(move |s| s.take_blocking(&key)).await
    }

    async fn delete(&self, key: &str) -> Result<bool, StoreError> {
        let key = key.to_string();
        self.blocking(move |s| s.delete_blocking(&key)).await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let prefix = prefix.to_string();
        self.blocking(move |s| s.list_blocking(&prefix)).await
    }
}
