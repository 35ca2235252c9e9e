//! Pre-initialisation of the guest with Wizer: the QuickJS runtime, its intrinsics and the
//! codemode prelude are created once (the guest's `cm_init` export) and the resulting memory and
//! globals become the data of a new module. Every eval then starts from that state through a
//! copy-on-write memory image, instead of spending about a millisecond building it.
//!
//! The snapshot is taken at the first start on a machine (see [`crate::module_cache`]), not at
//! build time: the committed guest stays the reproducible output of `guest/build.sh`, and
//! nothing but the host toolchain is needed. Only Wizer's module rewriting is used here; the
//! guest runs with the runtime's own imports (so WASI behaves as in an eval), in an engine of
//! its own that compiles without optimisation.

use std::sync::{Arc, Mutex};

use codemode_abi::exports;
use sha2::{Digest, Sha256};
use wasmtime::{Engine, Instance, Module, OptLevel, Store};
use wasmtime_wizer::{InstanceState, SnapshotVal, ValType, Wizer};

use crate::state::HostState;

/// Bumped when the way snapshots are made changes, so that cached ones are not reused.
pub(crate) const RECIPE: u32 = 2;

/// Snapshots made in this process, by guest hash: runtimes built without a cache directory
/// (tests, mostly) take the snapshot once per process, not once per runtime.
static MADE: Mutex<Vec<Made>> = Mutex::new(Vec::new());

/// A snapshot made in this process: the guest's sha256 and the pre-initialised module.
type Made = ([u8; 32], Arc<[u8]>);

/// Returns the pre-initialised guest, or `Ok(None)` when `wasm` has no `cm_init` export (it is
/// then used as it is). Errors say why a guest that asked for initialisation cannot be
/// snapshotted.
pub(crate) fn wizen(wasm: &[u8], memory_limit: usize) -> Result<Option<Arc<[u8]>>, String> {
    let digest: [u8; 32] = Sha256::digest(wasm).into();
    if let Some((_, made)) = lock_made().iter().find(|(d, _)| *d == digest) {
        return Ok(Some(made.clone()));
    }
    // The module runs once, for a few milliseconds: compiling it unoptimised saves more time
    // than its code then loses. No fuel, no epochs, no pool: only this instance lives here.
    let mut config = wasmtime::Config::new();
    config.cranelift_opt_level(OptLevel::None);
    let engine = &Engine::new(&config).map_err(|e| format!("an engine to initialise in: {e:#}"))?;
    let linker = crate::guest::guest_linker(engine).map_err(|e| format!("linking: {e:#}"))?;
    let mut wizer = Wizer::new();
    let (cx, instrumented) = wizer
        .instrument(wasm)
        .map_err(|e| format!("preparing the guest: {e:#}"))?;
    let module =
        Module::new(engine, &instrumented).map_err(|e| format!("compiling the guest: {e:#}"))?;
    let init = match [exports::SNAPSHOT_INIT, exports::INIT]
        .into_iter()
        .find(|name| module.get_export(name).is_some())
    {
        Some(init) => init,
        None => return Ok(None),
    };
    wizer.init_func(init);
    if init != exports::INIT && module.get_export(exports::INIT).is_some() {
        // Renaming the (removed) init export onto `cm_init` removes `cm_init` too: the snapshot
        // is initialised, and without the export the host does not call it in every eval.
        wizer.func_rename(exports::INIT, init);
    }

    let mut store = Store::new(engine, HostState::new(memory_limit, None, u64::MAX));
    store.limiter(|s| &mut s.memory);
    let instance = linker
        .instantiate(&mut store, &module)
        .map_err(|e| format!("instantiating the guest: {e:#}"))?;
    for name in [exports::INITIALIZE, init] {
        if let Ok(init) = instance.get_typed_func::<(), ()>(&mut store, name) {
            init.call(&mut store, ())
                .map_err(|e| format!("running `{name}`: {e:#}"))?;
        }
    }
    let mut state = Snapshotted {
        store: &mut store,
        instance,
    };
    // Wizer's interface is async for embedders whose instances live elsewhere; ours answers at
    // once, so the future completes on its first poll.
    let wizened = futures::executor::block_on(wizer.snapshot(&cx, &mut state))
        .map_err(|e| format!("snapshotting the guest: {e:#}"))?;
    let wizened: Arc<[u8]> = wizened.into();
    lock_made().push((digest, wizened.clone()));
    Ok(Some(wizened))
}

fn lock_made() -> std::sync::MutexGuard<'static, Vec<Made>> {
    // The vector is only ever pushed to: a panic elsewhere cannot leave it inconsistent.
    MADE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The initialised instance, as Wizer reads it.
struct Snapshotted<'a> {
    store: &'a mut Store<HostState>,
    instance: Instance,
}

impl InstanceState for Snapshotted<'_> {
    async fn global_get(&mut self, name: &str, _type_hint: ValType) -> SnapshotVal {
        // Wizer asks only for the globals its instrumentation exported, with their types.
        let global = self
            .instance
            .get_global(&mut *self.store, name)
            .expect("wizer asks for exported globals");
        match global.get(&mut *self.store) {
            wasmtime::Val::I32(x) => SnapshotVal::I32(x),
            wasmtime::Val::I64(x) => SnapshotVal::I64(x),
            wasmtime::Val::F32(x) => SnapshotVal::F32(x),
            wasmtime::Val::F64(x) => SnapshotVal::F64(x),
            wasmtime::Val::V128(x) => SnapshotVal::V128(x.as_u128()),
            _ => panic!("wizer rejects modules with reference-typed mutable globals"),
        }
    }

    async fn memory_contents(&mut self, name: &str, contents: impl FnOnce(&[u8]) + Send) {
        let memory = self
            .instance
            .get_memory(&mut *self.store, name)
            .expect("wizer asks for exported memories");
        contents(memory.data(&*self.store))
    }
}
