//! Compiles the guest once per machine: the artifact is cached on disk, keyed by the guest's
//! sha256 and the engine's compatibility hash (wasmtime version and every setting that changes
//! code generation).

use std::hash::{Hash, Hasher};
use std::path::Path;

use sha2::{Digest, Sha256};
use wasmtime::{Engine, Module};

use crate::error::RuntimeError;

/// Loads the compiled guest from `cache_dir`, or compiles it and stores it there.
/// A cache that cannot be read or written only costs time: it never fails the load.
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
pub fn load_prepared<'w>(
    engine: &Engine,
    wasm: &'w [u8],
    cache_dir: Option<&Path>,
    variant: &str,
    prepare: impl FnOnce(&'w [u8]) -> Option<std::borrow::Cow<'w, [u8]>>,
) -> Result<Option<Module>, RuntimeError> {
    let Some(dir) = cache_dir else {
        return match prepare(wasm) {
            Some(prepared) => compile(engine, &prepared).map(Some),
            None => Ok(None),
        };
    };
    let path = dir.join(format!("guest-{}{variant}.cwasm", cache_key(engine, wasm)));
    if path.exists() {
        // SAFETY: the file was written by `Module::serialize` of this same key (guest hash,
        // engine compatibility hash, variant) into a directory of the user's; wasmtime checks
        // the header and refuses artifacts of another version or configuration.
        match unsafe { Module::deserialize_file(engine, &path) } {
            Ok(module) => return Ok(Some(module)),
            Err(e) => tracing::warn!("ignoring unusable cached guest {}: {e:#}", path.display()),
        }
    }
    let Some(prepared) = prepare(wasm) else {
        return Ok(None);
    };
    let module = compile(engine, &prepared)?;
    if let Err(e) = store(&module, dir, &path) {
        tracing::warn!("cannot cache the compiled guest in {}: {e}", dir.display());
    }
    Ok(Some(module))
}

fn compile(engine: &Engine, wasm: &[u8]) -> Result<Module, RuntimeError> {
    Module::new(engine, wasm).map_err(|e| RuntimeError::Compile(format!("{e:#}")))
}

fn store(module: &Module, dir: &Path, path: &Path) -> std::io::Result<()> {
    let bytes = module.serialize().map_err(std::io::Error::other)?;
    std::fs::create_dir_all(dir)?;
    // Write then rename, so a concurrent reader never sees half a file.
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("guest"),
        std::process::id()
    ));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

fn cache_key(engine: &Engine, wasm: &[u8]) -> String {
    let digest = Sha256::digest(wasm);
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    format!("{hex}-{:016x}", hasher.finish())
}
