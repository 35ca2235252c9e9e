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
    let Some(dir) = cache_dir else {
        return compile(engine, wasm);
    };
    let path = dir.join(format!("guest-{}.cwasm", cache_key(engine, wasm)));
    if path.exists() {
        // SAFETY: the file was written by `Module::serialize` of this same key (guest hash and
        // engine compatibility hash) into a directory of the user's; wasmtime checks the header
        // and refuses artifacts of another version or configuration.
        match unsafe { Module::deserialize_file(engine, &path) } {
            Ok(module) => return Ok(module),
            Err(e) => tracing::warn!("ignoring unusable cached guest {}: {e:#}", path.display()),
        }
    }
    let module = compile(engine, wasm)?;
    if let Err(e) = store(&module, dir, &path) {
        tracing::warn!("cannot cache the compiled guest in {}: {e}", dir.display());
    }
    Ok(module)
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
