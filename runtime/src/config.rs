//! Engine-wide settings: [`RuntimeConfig`].

use std::path::PathBuf;

/// How a [`crate::Runtime`] is built: shared by every eval it runs.
///
/// ```
/// use codemode_runtime::RuntimeConfig;
/// let mut config = RuntimeConfig::default();
/// config.max_concurrent_evals(64).max_memory(128 << 20).cache_dir(None);
/// assert_eq!(config.get_max_concurrent_evals(), 64);
/// ```
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    pub(crate) max_concurrent_evals: u32,
    pub(crate) max_memory: u64,
    pub(crate) max_wasm_stack: usize,
    pub(crate) fuel: bool,
    pub(crate) pooling: bool,
    pub(crate) cache_dir: Option<PathBuf>,
    pub(crate) epoch_tick: std::time::Duration,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            max_concurrent_evals: 256,
            max_memory: 256 << 20,
            max_wasm_stack: 1 << 20,
            fuel: true,
            pooling: true,
            cache_dir: default_cache_dir(),
            epoch_tick: std::time::Duration::from_millis(2),
        }
    }
}

/// `$CODEMODE_CACHE_DIR`, else `$XDG_CACHE_HOME/codemode`, else `$HOME/.cache/codemode`.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CODEMODE_CACHE_DIR") {
        return (!dir.is_empty()).then(|| PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("codemode"));
    }
    std::env::var_os("HOME")
        .filter(|d| !d.is_empty())
        .map(|h| PathBuf::from(h).join(".cache").join("codemode"))
}

impl RuntimeConfig {
    /// A config with the defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Evals that may hold an instance at once (suspended ones included); more wait for a slot.
    /// Sizes the pooling allocator. Default 256.
    pub fn max_concurrent_evals(&mut self, n: u32) -> &mut Self {
        self.max_concurrent_evals = n.max(1);
        self
    }

    /// The largest linear memory any eval may ask for, in bytes. Default 256 MiB.
    /// [`crate::EvalOptions::memory`] above it is clamped to it.
    pub fn max_memory(&mut self, bytes: u64) -> &mut Self {
        self.max_memory = bytes;
        self
    }

    /// Native stack for guest code, in bytes: bounds recursion depth. Default 1 MiB.
    pub fn max_wasm_stack(&mut self, bytes: usize) -> &mut Self {
        self.max_wasm_stack = bytes;
        self
    }

    /// Meter fuel (WebAssembly instructions). Default on; off saves a few percent of compute
    /// and makes [`crate::EvalOptions::fuel`] ignored (timeouts still hold, by epochs).
    pub fn fuel(&mut self, on: bool) -> &mut Self {
        self.fuel = on;
        self
    }

    /// Use the pooling instance allocator (fast, fresh instances). Default on.
    pub fn pooling(&mut self, on: bool) -> &mut Self {
        self.pooling = on;
        self
    }

    /// Where the compiled guest is cached between processes; `None` compiles at every start.
    /// Default [`default_cache_dir`].
    pub fn cache_dir(&mut self, dir: Option<PathBuf>) -> &mut Self {
        self.cache_dir = dir;
        self
    }

    /// Granularity of wall-clock timeouts while guest code runs. Default 2 ms.
    pub fn epoch_tick(&mut self, tick: std::time::Duration) -> &mut Self {
        self.epoch_tick = tick.max(std::time::Duration::from_micros(100));
        self
    }

    /// The configured [`RuntimeConfig::max_concurrent_evals`].
    pub fn get_max_concurrent_evals(&self) -> u32 {
        self.max_concurrent_evals
    }
}
