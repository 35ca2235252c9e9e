//! Engine-wide settings: [`RuntimeConfig`].

use std::path::PathBuf;
use std::time::Duration;

use crate::error::InvalidConfig;

/// How a [`crate::Runtime`] is built: shared by every eval it runs.
///
/// Setters take and return `&mut Self`, so they chain; nothing is checked until
/// [`RuntimeConfig::validate`], which [`crate::Runtime::new`] calls.
///
/// ```
/// use codemode_runtime::RuntimeConfig;
/// let mut config = RuntimeConfig::default();
/// config.max_concurrent_evals(64).max_memory(128 << 20).cache_dir(None);
/// assert_eq!(config.get_max_concurrent_evals(), 64);
/// assert!(config.validate().is_ok());
///
/// config.max_concurrent_evals(0);
/// assert_eq!(config.validate().unwrap_err().field(), "max_concurrent_evals");
/// ```
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    pub(crate) max_concurrent_evals: u32,
    pub(crate) max_memory: u64,
    pub(crate) max_wasm_stack: usize,
    pub(crate) fuel: bool,
    pub(crate) pooling: bool,
    pub(crate) cache_dir: Option<PathBuf>,
    pub(crate) epoch_tick: Duration,
    pub(crate) epoch_interruption: bool,
    pub(crate) snapshot: bool,
    pub(crate) memory_keep_resident: usize,
    pub(crate) table_keep_resident: usize,
    pub(crate) pagemap_scan: bool,
    pub(crate) reset_off_request_path: bool,
    pub(crate) compile_notice: Option<CompileNotice>,
}

/// The function of [`RuntimeConfig::on_compile`].
#[derive(Clone)]
pub(crate) struct CompileNotice(pub(crate) std::sync::Arc<dyn Fn() + Send + Sync>);

impl std::fmt::Debug for CompileNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CompileNotice")
    }
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            max_concurrent_evals: 256,
            max_memory: 256 << 20,
            max_wasm_stack: 1 << 20,
            fuel: true,
            pooling: true,
            cache_dir: RuntimeConfig::default_cache_dir(),
            epoch_tick: Duration::from_millis(2),
            epoch_interruption: true,
            snapshot: true,
            memory_keep_resident: 16 << 20,
            table_keep_resident: 1 << 20,
            pagemap_scan: true,
            reset_off_request_path: false,
            compile_notice: None,
        }
    }
}

impl RuntimeConfig {
    /// The shortest [`RuntimeConfig::epoch_tick`]: a ticker waking more often costs a core
    /// noticeable time for no useful precision.
    pub const MIN_EPOCH_TICK: Duration = Duration::from_micros(100);

    /// The largest [`RuntimeConfig::max_memory`]: a 32-bit WebAssembly memory addresses 4 GiB.
    pub const MAX_MEMORY_LIMIT: u64 = 4 << 30;

    /// Where compiled modules are cached unless the config says: `$CODEMODE_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/codemode`, else `$HOME/.cache/codemode`.
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
}

impl RuntimeConfig {
    /// A config with the defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Evals that may hold an instance at once (suspended ones included); more wait for a slot.
    /// Sizes the pooling allocator. Default 256; at least 1.
    pub fn max_concurrent_evals(&mut self, n: u32) -> &mut Self {
        self.max_concurrent_evals = n;
        self
    }

    /// The largest linear memory any eval may ask for, in bytes. Default 256 MiB; at least 1,
    /// at most [`Self::MAX_MEMORY_LIMIT`] (4 GiB). An eval whose [`crate::EvalOptions::memory`] is
    /// larger fails with [`crate::ErrorKind::InvalidOptions`].
    pub fn max_memory(&mut self, bytes: u64) -> &mut Self {
        self.max_memory = bytes;
        self
    }

    /// Native stack for guest code, in bytes: bounds recursion depth. Default 1 MiB; at
    /// least 1.
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
    /// Default [`Self::default_cache_dir`]. The cache prunes itself when it writes an entry:
    /// entries unused for 30 days go, and at most the 16 most recently used stay.
    ///
    /// A cache entry is native code that the runtime loads and runs, so on Unix the cache is
    /// only used when it can be trusted: the directory, and the entry when it exists, must be
    /// owned by the effective user and writable by no one else (no group or other write
    /// permission). Otherwise another user could plant code in it, so the guest is compiled
    /// in memory instead, the cache is neither read nor written, and a warning is logged
    /// (once per process). Elsewhere the cache is always used.
    pub fn cache_dir(&mut self, dir: Option<PathBuf>) -> &mut Self {
        self.cache_dir = dir;
        self
    }

    /// A function [`crate::Runtime::new`] calls once, before it compiles the guest because its
    /// compiled form is not in the [cache](Self::cache_dir) (a cold cache: the first start
    /// after installing, or with another engine configuration), so that a command line can
    /// say why this start takes seconds. Default: none. Not called on a cache hit.
    pub fn on_compile(&mut self, notice: impl Fn() + Send + Sync + 'static) -> &mut Self {
        self.compile_notice = Some(CompileNotice(std::sync::Arc::new(notice)));
        self
    }

    /// Granularity of wall-clock timeouts while guest code runs: a thread advances the
    /// engine's epoch this often. Default 2 ms; at least [`Self::MIN_EPOCH_TICK`] (100 µs).
    pub fn epoch_tick(&mut self, tick: Duration) -> &mut Self {
        self.epoch_tick = tick;
        self
    }

    /// Interrupt running guest code at its wall-clock deadline (epoch interruption). Default on.
    ///
    /// Off, the timeout only holds while a script waits on tools, and only fuel bounds its
    /// compute: saves the few percent of compute the deadline checks cost (see
    /// docs/PERFORMANCE.md). Meant for benchmarks and trusted code.
    pub fn epoch_interruption(&mut self, on: bool) -> &mut Self {
        self.epoch_interruption = on;
        self
    }

    /// Pre-initialise the guest once (QuickJS runtime, intrinsics and prelude, snapshotted with
    /// Wizer) instead of in every eval. Default on.
    ///
    /// The snapshot is taken the first time a runtime is built on a machine and cached with the
    /// compiled guest in [`RuntimeConfig::cache_dir`] (without a cache directory, once per
    /// process). A guest without a `wizer-initialize` or `cm_init` export, or one that cannot be
    /// snapshotted, is used as it is. `Math.random` is reseeded in every eval, so instances of one snapshot do not
    /// share its sequence.
    pub fn snapshot(&mut self, on: bool) -> &mut Self {
        self.snapshot = on;
        self
    }

    /// Bytes of each pooled linear memory that stay mapped when an eval ends and are reset in
    /// place (`memset` of what the eval changed) rather than returned to the kernel. Default
    /// 16 MiB. With [`RuntimeConfig::pooling`] only, and Linux only.
    ///
    /// Higher means fewer page faults in the next eval of that slot; the price is resident
    /// memory held by idle slots (at most this much per slot, and only what an eval touched).
    pub fn memory_keep_resident(&mut self, bytes: usize) -> &mut Self {
        self.memory_keep_resident = bytes;
        self
    }

    /// Like [`RuntimeConfig::memory_keep_resident`] for the guest's function table. Default
    /// 1 MiB (the guest's table is far smaller, so it is never unmapped).
    pub fn table_keep_resident(&mut self, bytes: usize) -> &mut Self {
        self.table_keep_resident = bytes;
        self
    }

    /// Find the pages an eval changed with Linux's `PAGEMAP_SCAN` ioctl, so that resetting a
    /// slot touches only those. Default on; ignored where unavailable (Linux before 6.7, other
    /// systems) or without [`RuntimeConfig::pooling`].
    pub fn pagemap_scan(&mut self, on: bool) -> &mut Self {
        self.pagemap_scan = on;
        self
    }

    /// Tear down an eval's instance (and reset its pool slot) on a thread of its own, after the
    /// outcome is returned, whenever that thread is idle. Default off.
    ///
    /// It pays only with an idle core: then the reset leaves the eval's latency, but when the
    /// other cores are busy it competes with them, making evals slower and lowering throughput
    /// when every core evaluates (measurements in docs/PERFORMANCE.md). The thread spins
    /// briefly after each reset, waiting for the next. The slot counts against
    /// [`RuntimeConfig::max_concurrent_evals`] until the reset is done.
    pub fn reset_off_request_path(&mut self, on: bool) -> &mut Self {
        self.reset_off_request_path = on;
        self
    }

    /// The configured [`RuntimeConfig::max_concurrent_evals`].
    pub fn get_max_concurrent_evals(&self) -> u32 {
        self.max_concurrent_evals
    }

    /// The configured [`RuntimeConfig::max_memory`].
    pub fn get_max_memory(&self) -> u64 {
        self.max_memory
    }

    /// Checks every setting against its documented range; [`crate::Runtime::new`] calls it.
    ///
    /// # Errors
    /// [`InvalidConfig`] naming the first setting out of range.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        if self.max_concurrent_evals == 0 {
            return Err(InvalidConfig::new(
                "max_concurrent_evals",
                "must be at least 1 (it is 0)",
            ));
        }
        if self.max_memory == 0 || self.max_memory > RuntimeConfig::MAX_MEMORY_LIMIT {
            return Err(InvalidConfig::new(
                "max_memory",
                format!(
                    "must be between 1 and {} bytes (it is {})",
                    RuntimeConfig::MAX_MEMORY_LIMIT,
                    self.max_memory
                ),
            ));
        }
        if self.max_wasm_stack == 0 {
            return Err(InvalidConfig::new(
                "max_wasm_stack",
                "must be at least 1 byte (it is 0)",
            ));
        }
        if self.epoch_tick < RuntimeConfig::MIN_EPOCH_TICK {
            return Err(InvalidConfig::new(
                "epoch_tick",
                format!(
                    "must be at least {:?} (it is {:?})",
                    RuntimeConfig::MIN_EPOCH_TICK,
                    self.epoch_tick
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(configure: impl FnOnce(&mut RuntimeConfig)) -> InvalidConfig {
        let mut config = RuntimeConfig::default();
        configure(&mut config);
        config.validate().expect_err("invalid")
    }

    #[test]
    fn the_defaults_are_valid() {
        assert_eq!(RuntimeConfig::default().validate(), Ok(()));
    }

    /// A change to the defaults that puts one setting out of range.
    type Misconfigure = fn(&mut RuntimeConfig);

    #[test]
    fn each_setting_out_of_range_is_named() {
        let cases: [(Misconfigure, &str, &str); 5] = [
            (
                |c| {
                    c.max_concurrent_evals(0);
                },
                "max_concurrent_evals",
                "must be at least 1 (it is 0)",
            ),
            (
                |c| {
                    c.max_memory(0);
                },
                "max_memory",
                "must be between 1 and 4294967296 bytes (it is 0)",
            ),
            (
                |c| {
                    c.max_memory(RuntimeConfig::MAX_MEMORY_LIMIT + 1);
                },
                "max_memory",
                "must be between 1 and 4294967296 bytes (it is 4294967297)",
            ),
            (
                |c| {
                    c.max_wasm_stack(0);
                },
                "max_wasm_stack",
                "must be at least 1 byte (it is 0)",
            ),
            (
                |c| {
                    c.epoch_tick(Duration::from_micros(99));
                },
                "epoch_tick",
                "must be at least 100µs (it is 99µs)",
            ),
        ];
        for (configure, field, reason) in cases {
            let error = invalid(configure);
            assert_eq!((error.field(), error.reason()), (field, reason));
        }
    }

    #[test]
    fn the_limits_themselves_are_valid() {
        let mut config = RuntimeConfig::default();
        config
            .max_concurrent_evals(1)
            .max_memory(RuntimeConfig::MAX_MEMORY_LIMIT)
            .max_wasm_stack(1)
            .epoch_tick(RuntimeConfig::MIN_EPOCH_TICK);
        assert_eq!(config.validate(), Ok(()));
    }
}
