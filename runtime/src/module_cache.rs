//! Compiles the guest once per machine: the artifact is cached on disk, keyed by the guest's
//! sha256 and the engine's compatibility hash (wasmtime version and every setting that changes
//! code generation).
//!
//! Every new guest build or engine setting adds an entry of ~5 MB, so the cache prunes itself
//! whenever it writes one: entries not used for [`MAX_UNUSED`] go, and only the
//! [`MAX_ENTRIES`] most recently used stay (a hit marks its entry used). A process that still
//! has a removed entry mapped keeps it until it exits.
//!
//! An entry is native code, so the cache is only used when no other user could have written
//! it ([`trust`]); the directory and entries the cache creates are private to the user.

use std::hash::{Hash, Hasher};
use std::path::Path;
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use wasmtime::{Engine, Module};

use crate::error::RuntimeError;
use crate::private_file::{self, Existing, Synced};

mod trust;

/// Loads the compiled guest from `cache_dir`, or compiles it and stores it there.
/// A cache that cannot be read or written, or is not trusted, only costs time: it never fails
/// the load. (The runtime calls [`load_prepared`] itself, to hear of a compile.)
#[cfg(test)]
pub fn load(
    engine: &Engine,
    wasm: &[u8],
    cache_dir: Option<&Path>,
) -> Result<Module, RuntimeError> {
    let prepared = load_prepared(engine, wasm, cache_dir, "", |wasm| {
        Some(std::borrow::Cow::Borrowed(wasm))
    })?;
    Ok(prepared.expect("the identity preparation never fails"))
}

/// Like [`load`] for a module derived from `wasm` by `prepare` (the snapshot): the cache entry
/// is keyed by `wasm`'s hash, the engine and `variant`, so a hit skips `prepare` entirely.
/// `Ok(None)` when `prepare` gave up (then nothing is cached).
pub(crate) fn load_prepared<'w>(
    engine: &Engine,
    wasm: &'w [u8],
    cache_dir: Option<&Path>,
    variant: &str,
    prepare: impl FnOnce(&'w [u8]) -> Option<std::borrow::Cow<'w, [u8]>>,
) -> Result<Option<Module>, RuntimeError> {
    let trusted = cache_dir.and_then(|dir| {
        let path = dir.join(format!("guest-{}{variant}.cwasm", cache_key(engine, wasm)));
        match trust::check_dir(dir).and_then(|()| trust::check_file(&path)) {
            Ok(()) => Some((dir, path)),
            Err(why) => {
                trust::warn_once(&why);
                None
            }
        }
    });
    let Some((dir, path)) = trusted else {
        return match prepare(wasm) {
            Some(prepared) => compile(engine, &prepared).map(Some),
            None => Ok(None),
        };
    };
    if path.exists() {
        // SAFETY: the file is trusted (owned by this user, writable by no one else, in a
        // directory likewise) and was written by `Module::serialize` of this same key (guest
        // hash, engine compatibility hash, variant); wasmtime checks the header and refuses
        // artifacts of another version or configuration.
        match unsafe { Module::deserialize_file(engine, &path) } {
            Ok(module) => {
                mark_used(&path);
                return Ok(Some(module));
            }
            Err(e) => tracing::warn!("ignoring unusable cached guest {}: {e:#}", path.display()),
        }
    }
    let Some(prepared) = prepare(wasm) else {
        return Ok(None);
    };
    let module = compile(engine, &prepared)?;
    match store(&module, dir, &path) {
        Ok(()) => prune(dir, &path, SystemTime::now()),
        Err(e) => tracing::warn!("cannot cache the compiled guest in {}: {e}", dir.display()),
    }
    Ok(Some(module))
}

/// Entries not used for this long are removed when the cache next writes one.
pub(crate) const MAX_UNUSED: Duration = Duration::from_secs(30 * 24 * 3600);

/// At most this many entries are kept (the most recently used).
pub const MAX_ENTRIES: usize = 16;

/// Temporary files older than this are left over from a writer that died.
const STALE_TMP: Duration = Duration::from_secs(24 * 3600);

/// Records that an entry was used (its modification time), for [`prune`]. Best effort.
fn mark_used(path: &Path) {
    if let Ok(file) = std::fs::File::options().append(true).open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

/// Removes cache entries unused for [`MAX_UNUSED`], all but the [`MAX_ENTRIES`] most recently
/// used, and stale temporary files, never `keep`. Best effort: a file that cannot be removed
/// (another user's, say) is left alone.
fn prune(dir: &Path, keep: &Path, now: SystemTime) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let age = |modified: SystemTime| now.duration_since(modified).unwrap_or_default();
    let mut cached: Vec<(SystemTime, std::path::PathBuf)> = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Some(modified) = entry.metadata().and_then(|m| m.modified()).ok() else {
            continue;
        };
        if name.starts_with(".guest-") && name.ends_with(".tmp") {
            if age(modified) > STALE_TMP {
                let _ = std::fs::remove_file(&path);
            }
        } else if name.starts_with("guest-") && name.ends_with(".cwasm") && path != keep {
            cached.push((modified, path));
        }
    }
    // Newest first; `keep` counts as one of the entries kept.
    cached.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
    for (index, (modified, path)) in cached.iter().enumerate() {
        let surplus = index + 1 >= MAX_ENTRIES;
        if (surplus || age(*modified) > MAX_UNUSED)
            && let Err(e) = std::fs::remove_file(path)
        {
            tracing::debug!("cannot prune {}: {e}", path.display());
        }
    }
}

fn compile(engine: &Engine, wasm: &[u8]) -> Result<Module, RuntimeError> {
    Module::new(engine, wasm).map_err(RuntimeError::compile)
}

/// Writes the entry, creating the directory if need be; both private to the user, so that
/// the cache stays trusted whatever the umask.
fn store(module: &Module, dir: &Path, path: &Path) -> std::io::Result<()> {
    let bytes = module.serialize().map_err(std::io::Error::other)?;
    private_file::create_dir(dir)?;
    // Write then rename, so a concurrent reader never sees half a file. The temporary name is
    // per process, not per write: a leftover of a dead process with the same pid is
    // overwritten (truncated), not a reason to fail.
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("guest"),
        std::process::id()
    ));
    private_file::write(&tmp, Existing::Truncate, &[&bytes], Synced::No)?;
    std::fs::rename(&tmp, path)
}

fn cache_key(engine: &Engine, wasm: &[u8]) -> String {
    let digest = Sha256::digest(wasm);
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    format!("{hex}-{:016x}", hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory under the target dir, removed on drop.
    struct Scratch(std::path::PathBuf);
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn file(dir: &Path, name: &str, age: Duration, now: SystemTime) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, b"x").unwrap();
        let file = std::fs::File::options().append(true).open(&path).unwrap();
        file.set_modified(now - age).unwrap();
        path
    }

    #[test]
    fn prune_keeps_recent_entries_and_removes_old_stale_and_surplus_ones() {
        let dir = std::env::temp_dir().join(format!("codemode-cache-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let _scratch = Scratch(dir.clone());
        let now = SystemTime::now();
        let day = Duration::from_secs(24 * 3600);
        let keep = file(&dir, "guest-new.cwasm", Duration::ZERO, now);
        let recent = file(&dir, "guest-recent.cwasm", day, now);
        let unused = file(&dir, "guest-unused.cwasm", MAX_UNUSED + day, now);
        let fresh_tmp = file(&dir, ".guest-x.cwasm.1.tmp", Duration::ZERO, now);
        let stale_tmp = file(&dir, ".guest-y.cwasm.2.tmp", 2 * day, now);
        let other = file(&dir, "notes.txt", 400 * day, now);
        // More recent entries than the cache keeps: the oldest of them go.
        let surplus: Vec<_> = (0..MAX_ENTRIES)
            .map(|i| {
                file(
                    &dir,
                    &format!("guest-s{i:02}.cwasm"),
                    (2 + i as u32) * day,
                    now,
                )
            })
            .collect();

        prune(&dir, &keep, now);

        for (path, kept) in [
            (&keep, true),
            (&recent, true),
            (&unused, false),
            (&fresh_tmp, true),
            (&stale_tmp, false),
            (&other, true),
        ] {
            assert_eq!(path.exists(), kept, "{}", path.display());
        }
        let left = surplus.iter().filter(|p| p.exists()).count();
        // `keep` + `recent` + the newest surplus entries make MAX_ENTRIES.
        assert_eq!(left, MAX_ENTRIES - 2);
        assert!(surplus[0].exists() && !surplus[MAX_ENTRIES - 1].exists());
    }

    /// A world-writable cache directory is not used: the runtime still evaluates, compiling
    /// in memory, and writes nothing there.
    #[cfg(unix)]
    #[test]
    fn a_world_writable_cache_dir_is_left_alone() {
        use std::os::unix::fs::PermissionsExt;

        let dir =
            std::env::temp_dir().join(format!("codemode-shared-cache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let _scratch = Scratch(dir.clone());
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();

        let mut config = crate::RuntimeConfig::default();
        config.cache_dir(Some(dir.clone())).max_concurrent_evals(1);
        let runtime = crate::Runtime::new(&config).expect("building the runtime");
        let outcome = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(runtime.eval("1 + 1", &crate::EvalOptions::default(), &crate::NoTools));
        assert_eq!(outcome.result, serde_json::json!(2), "{outcome:?}");

        let written: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert!(written.is_empty(), "{written:?}");
    }

    /// The directory and entries the cache creates are private, so the next process trusts them
    /// whatever the umask.
    #[cfg(unix)]
    #[test]
    fn what_the_cache_writes_is_private() {
        use std::os::unix::fs::PermissionsExt;

        let root =
            std::env::temp_dir().join(format!("codemode-private-cache-{}", std::process::id()));
        let _scratch = Scratch(root.clone());
        let dir = root.join("nested").join("cache");
        let engine = Engine::default();
        let wasm = wat_module();
        let first = load(&engine, &wasm, Some(&dir)).expect("compiles and caches");
        drop(first);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        let entries: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(entries.len(), 1, "{entries:?}");
        assert_eq!(mode(&entries[0]), 0o600);
        assert_eq!(trust::check_file(&entries[0]), Ok(()));
        load(&engine, &wasm, Some(&dir)).expect("loads from the cache");
    }

    /// The smallest module: no imports, one memory.
    fn wat_module() -> Vec<u8> {
        // (module (memory 1))
        vec![
            0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x05, 0x03, 0x01, 0x00, 0x01,
        ]
    }
}
