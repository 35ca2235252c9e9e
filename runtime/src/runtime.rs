//! [`Runtime`]: one engine, the compiled guest, the instance pool, the epoch ticker.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::OwnedSemaphorePermit;
use wasmtime::{
    Enabled, Engine, InstanceAllocationStrategy, Module, OptLevel, PoolingAllocationConfig, Store,
};

use crate::config::RuntimeConfig;
use crate::error::RuntimeError;
use crate::guest::{Guest, GuestHash, guest_linker};
use crate::state::HostState;
use crate::tool::EvalId;
use crate::{abi, module_cache, snapshot};

/// Runs scripts in fresh, isolated sandboxes. Cheap to clone (`Arc` inside), `Send + Sync`:
/// build one per process and share it.
///
/// ```
/// use codemode_runtime::{EvalOptions, NoTools, Runtime, RuntimeConfig};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let runtime = Runtime::new(&RuntimeConfig::default())?;
/// let outcome = tokio::runtime::Runtime::new()?
///     .block_on(runtime.eval("1 + 2", &EvalOptions::default(), &NoTools));
/// assert_eq!(outcome.result, serde_json::json!(3));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) engine: Engine,
    /// The guests this runtime runs: the first for new evals, the others added for saved
    /// evals that name them ([`Runtime::add_guest`]).
    guests: RwLock<Vec<Arc<Guest>>>,
    /// Taken to instantiate a guest outside an eval (its memory image), in the one pool slot
    /// kept beyond `max_concurrent_evals` for that.
    pub(crate) reserve: Mutex<()>,
    pub(crate) slots: Arc<tokio::sync::Semaphore>,
    pub(crate) config: RuntimeConfig,
    next_eval_id: AtomicU64,
    ticker_stop: Arc<AtomicBool>,
    /// The thread that tears finished evals' stores down, when resets happen off the request
    /// path.
    reaper: Option<Reaper>,
}

impl Inner {
    /// The guest new evals run in.
    pub(crate) fn primary(&self) -> Arc<Guest> {
        self.guests.read().unwrap_or_else(|e| e.into_inner())[0].clone()
    }

    /// The guest whose hash is `hash`, if this runtime has it.
    pub(crate) fn guest(&self, hash: GuestHash) -> Option<Arc<Guest>> {
        self.guests
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|g| g.hash == hash)
            .cloned()
    }

    /// Tears down a finished eval's instance and frees its slot. Dropping a store resets its
    /// pool slot (several microseconds of page-table scanning and copying) which the caller
    /// need not wait for: with a [`Reaper`] that is idle, it happens on the reaper's thread.
    pub(crate) fn retire(&self, store: Store<HostState>, permit: OwnedSemaphorePermit) {
        let retired = (store, permit);
        let retired = match &self.reaper {
            Some(reaper) => match reaper.hand_over(retired) {
                Ok(()) => return,
                Err(retired) => retired,
            },
            None => retired,
        };
        drop(retired);
    }
}

/// A finished eval's store and the pool slot it holds.
type Retired = (Store<HostState>, OwnedSemaphorePermit);

/// The next store for the reaper: spins for [`REAPER_SPIN`], then sleeps until one comes.
/// `None` once the runtime is gone.
fn next_retired(rx: &std::sync::mpsc::Receiver<Retired>) -> Option<Retired> {
    let started = std::time::Instant::now();
    while started.elapsed() < REAPER_SPIN {
        match rx.try_recv() {
            Ok(retired) => return Some(retired),
            Err(std::sync::mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
            Err(std::sync::mpsc::TryRecvError::Disconnected) => return None,
        }
    }
    rx.recv().ok()
}

/// How long the reaper waits for the next store, spinning, before it sleeps: waking a sleeping
/// thread costs the caller more than the reset it hands over.
const REAPER_SPIN: std::time::Duration = std::time::Duration::from_micros(50);

/// A thread that drops retired stores, one at a time.
///
/// It only takes a store when it has nothing else to do; otherwise the caller drops it itself.
/// So when every core is busy evaluating (the reaper could only steal time from evals) resets
/// stay inline, and when a core is idle the reset moves there. After each store it spins for
/// [`REAPER_SPIN`] before sleeping, so that back-to-back evals never pay for waking it.
struct Reaper {
    queue: std::sync::mpsc::SyncSender<Retired>,
    busy: Arc<AtomicBool>,
}

impl Reaper {
    fn start() -> Option<Reaper> {
        let (queue, rx) = std::sync::mpsc::sync_channel::<Retired>(1);
        let busy = Arc::new(AtomicBool::new(false));
        let flag = busy.clone();
        let spawned = std::thread::Builder::new()
            .name("codemode-reset".into())
            // Ends when the runtime (the only sender) is dropped.
            .spawn(move || {
                while let Some(retired) = next_retired(&rx) {
                    drop(retired);
                    flag.store(false, Ordering::Release);
                }
            });
        match spawned {
            Ok(_) => Some(Reaper { queue, busy }),
            Err(e) => {
                tracing::warn!(
                    "cannot start the slot-reset thread ({e}): resetting on the request path"
                );
                None
            }
        }
    }

    /// Hands `retired` to the reaper if it is idle; gives it back otherwise.
    fn hand_over(&self, retired: Retired) -> Result<(), Retired> {
        if self.busy.swap(true, Ordering::Acquire) {
            return Err(retired);
        }
        self.queue.try_send(retired).map_err(|e| {
            self.busy.store(false, Ordering::Release);
            match e {
                std::sync::mpsc::TrySendError::Full(r)
                | std::sync::mpsc::TrySendError::Disconnected(r) => r,
            }
        })
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// The committed guest module (built by guest/build.sh). Read through `runtime/`'s link to
    /// it, so that the packaged crate (`cargo package`) carries the module as a file of its own.
    pub const GUEST_WASM: &[u8] = include_bytes!("../codemode_guest.wasm");

    /// The longest tool name a script may call: 1 KiB. No tool has a longer name; the guest
    /// rejects a call with one itself (an `UnknownToolError`) without calling the host.
    pub const MAX_TOOL_NAME_BYTES: usize = codemode_abi::MAX_TOOL_NAME_BYTES;

    /// The largest arguments of one tool call, as JSON: 8 MiB. The guest rejects a call with
    /// bigger ones itself (a `ToolError`) without calling the host.
    pub const MAX_TOOL_ARGS_BYTES: usize = codemode_abi::MAX_TOOL_ARGS_BYTES;

    /// Validates `config`, builds the engine and compiles (or loads from the cache) the guest.
    ///
    /// # Errors
    /// [`RuntimeError::InvalidConfig`] naming a setting out of range
    /// ([`RuntimeConfig::validate`]); [`RuntimeError::Engine`] when the engine cannot be
    /// configured (e.g. the pool cannot reserve its address space); [`RuntimeError::Compile`]
    /// or [`RuntimeError::Link`] when the guest does not compile or link;
    /// [`RuntimeError::EpochTicker`] when the thread behind wall-clock timeouts cannot start.
    pub fn new(config: &RuntimeConfig) -> Result<Self, RuntimeError> {
        Self::with_guest(config, Runtime::GUEST_WASM)
    }

    /// Like [`Runtime::new`] with another guest module (same ABI), in the binary format (a test
    /// that writes one as text converts it first, e.g. with the `wat` crate). For tests and
    /// experiments.
    ///
    /// # Errors
    /// As [`Runtime::new`].
    pub fn with_guest(config: &RuntimeConfig, wasm: &[u8]) -> Result<Self, RuntimeError> {
        config.validate().map_err(RuntimeError::InvalidConfig)?;
        let engine = Engine::new(&engine_config(config)).map_err(RuntimeError::engine)?;
        let guest = compile_guest(config, &engine, wasm)?;

        let ticker_stop = Arc::new(AtomicBool::new(false));
        spawn_epoch_ticker(engine.clone(), config.epoch_tick, ticker_stop.clone())
            .map_err(RuntimeError::EpochTicker)?;
        Ok(Runtime {
            inner: Arc::new(Inner {
                engine,
                guests: RwLock::new(vec![Arc::new(guest)]),
                reserve: Mutex::new(()),
                slots: Arc::new(tokio::sync::Semaphore::new(
                    config.max_concurrent_evals as usize,
                )),
                config: config.clone(),
                next_eval_id: AtomicU64::new(1),
                ticker_stop,
                reaper: config.reset_off_request_path.then(Reaper::start).flatten(),
            }),
        })
    }

    /// The hash of the guest new evals run in: what their saved states name.
    pub fn guest_hash(&self) -> GuestHash {
        self.inner.primary().hash
    }

    /// The bytes of the guest new evals run in. An embedder that saves evals keeps them
    /// beside the saved states (keyed by [`Runtime::guest_hash`]), so that after a deploy that
    /// changes the guest, [`Runtime::add_guest`] lets the new runtime resume the old evals.
    pub fn guest_wasm(&self) -> Arc<[u8]> {
        self.inner.primary().wasm.clone()
    }

    /// The hashes of every guest this runtime has, the one new evals run in first.
    pub fn guests(&self) -> Vec<GuestHash> {
        let guests = self.inner.guests.read().unwrap_or_else(|e| e.into_inner());
        guests.iter().map(|g| g.hash).collect()
    }

    /// Compiles (or loads from the cache) another guest module of the same ABI, so that evals
    /// saved with it can be resumed here ([`Runtime::resume`] picks each saved eval's own
    /// guest). New evals keep running in this runtime's guest. Adding a guest it already has
    /// does nothing. Returns the module's hash.
    ///
    /// # Errors
    /// [`RuntimeError::Compile`] or [`RuntimeError::Link`] when the module does not compile or
    /// link.
    pub fn add_guest(&self, wasm: &[u8]) -> Result<GuestHash, RuntimeError> {
        let hash = GuestHash::of(wasm);
        if self.inner.guest(hash).is_some() {
            return Ok(hash);
        }
        let guest = compile_guest(&self.inner.config, &self.inner.engine, wasm)?;
        let mut guests = self.inner.guests.write().unwrap_or_else(|e| e.into_inner());
        if !guests.iter().any(|g| g.hash == hash) {
            guests.push(Arc::new(guest));
        }
        Ok(hash)
    }

    /// A fresh eval id, for callers that must know it before the eval starts (audit, approvals).
    pub fn allocate_eval_id(&self) -> EvalId {
        EvalId(self.inner.next_eval_id.fetch_add(1, Ordering::Relaxed))
    }

    /// How many of the `max_concurrent_evals` instance slots running evals hold now.
    pub fn slots_in_use(&self) -> usize {
        (self.inner.config.max_concurrent_evals as usize)
            .saturating_sub(self.inner.slots.available_permits())
    }

    /// The configuration this runtime was built with.
    pub fn config(&self) -> &RuntimeConfig {
        &self.inner.config
    }
}

/// Compiles `wasm` (through the cache, snapshotted when configured) and links it.
fn compile_guest(
    config: &RuntimeConfig,
    engine: &Engine,
    wasm: &[u8],
) -> Result<Guest, RuntimeError> {
    let linker = guest_linker(engine).map_err(RuntimeError::link)?;
    let module = load_guest(config, engine, wasm)?;
    let layout = abi::GuestLayout::new(&module);
    let pre = linker
        .instantiate_pre(&module)
        .map_err(RuntimeError::link)?;
    Ok(Guest::new(Arc::from(wasm), pre, layout))
}

/// The compiled guest: its pre-initialised snapshot when asked for and possible, else the
/// module as it is.
fn load_guest(
    config: &RuntimeConfig,
    engine: &Engine,
    wasm: &[u8],
) -> Result<Module, RuntimeError> {
    let cache_dir = config.cache_dir.as_deref();
    // Called where a compile is about to happen (the preparations run on a cache miss only).
    let notified = std::cell::Cell::new(false);
    let notice = || {
        if let Some(notice) = &config.compile_notice
            && !notified.replace(true)
        {
            (notice.0)();
        }
    };
    if config.snapshot {
        let variant = format!("-snapshot{}", snapshot::RECIPE);
        let memory = usize::try_from(config.max_memory).unwrap_or(usize::MAX);
        let prepared = module_cache::load_prepared(engine, wasm, cache_dir, &variant, |wasm| {
            notice();
            match snapshot::wizen(wasm, memory) {
                Ok(Some(wizened)) => Some(Cow::Owned(wizened.to_vec())),
                Ok(None) => Some(Cow::Borrowed(wasm)),
                Err(e) => {
                    tracing::warn!("running the guest without a snapshot: {e}");
                    None
                }
            }
        })?;
        if let Some(module) = prepared {
            return Ok(module);
        }
    }
    let module = module_cache::load_prepared(engine, wasm, cache_dir, "", |wasm| {
        notice();
        Some(Cow::Borrowed(wasm))
    })?;
    Ok(module.expect("the identity preparation never fails"))
}

fn engine_config(config: &RuntimeConfig) -> wasmtime::Config {
    let mut cfg = wasmtime::Config::new();
    cfg.epoch_interruption(config.epoch_interruption)
        .consume_fuel(config.fuel)
        .max_wasm_stack(config.max_wasm_stack)
        .cranelift_opt_level(OptLevel::Speed)
        .memory_init_cow(true);
    if config.pooling {
        // One slot more than evals may hold: for a guest's memory image (`Inner::reserve`).
        let n = config.max_concurrent_evals.saturating_add(1);
        let mut pool = PoolingAllocationConfig::default();
        // One core instance, memory and table per eval; nothing else is ever instantiated (the
        // store is synchronous and wasmtime is built without `async`, so there are no fiber
        // stacks to pool; no components; no GC heaps).
        pool.total_core_instances(n)
            .total_memories(n)
            .total_tables(n)
            .total_component_instances(0)
            .max_memories_per_module(1)
            .max_tables_per_module(1)
            .max_memory_size(usize::try_from(config.max_memory).unwrap_or(usize::MAX))
            .linear_memory_keep_resident(config.memory_keep_resident)
            .table_keep_resident(config.table_keep_resident)
            .pagemap_scan(if config.pagemap_scan {
                Enabled::Auto
            } else {
                Enabled::No
            });
        cfg.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    cfg
}

/// Advances the engine's epoch every `tick` so that running guest code notices its deadline,
/// until `stop` is set. Without it a timeout would only hold while a script waits on tools.
fn spawn_epoch_ticker(
    engine: Engine,
    tick: std::time::Duration,
    stop: Arc<AtomicBool>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("codemode-epoch".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(tick);
                engine.increment_epoch();
            }
        })
        .map(drop)
}
