//! The guest modules a runtime can run: the one new evals use, and any other that saved evals
//! name ([`crate::Runtime::add_guest`]), each compiled once and kept with what saving and
//! restoring its sandboxes needs.

use std::fmt;
use std::sync::{Arc, OnceLock};

use sha2::{Digest, Sha256};
use wasmtime::{Engine, InstancePre, Linker, Store};

use crate::state::HostState;
use crate::{abi, wasi};

/// The sha256 of a guest module's bytes (the module as given, before any snapshot): what a
/// saved eval names to say which guest it needs.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GuestHash(pub [u8; 32]);

impl GuestHash {
    /// The hash of `wasm`.
    pub fn of(wasm: &[u8]) -> Self {
        GuestHash(Sha256::digest(wasm).into())
    }
}

impl fmt::Display for GuestHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for GuestHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GuestHash({self})")
    }
}

/// One compiled guest.
pub(crate) struct Guest {
    pub(crate) hash: GuestHash,
    /// The module as given (what the embedder keeps to resume saved evals after a deploy).
    pub(crate) wasm: Arc<[u8]>,
    pub(crate) pre: InstancePre<HostState>,
    pub(crate) layout: abi::GuestLayout,
    /// Why a sandbox of this guest cannot be saved, when it cannot ([`check_saveable`]).
    pub(crate) unsaveable: Option<String>,
    /// The memory a fresh instance starts with, made on first use ([`Guest::reference`]).
    reference: OnceLock<Arc<[u8]>>,
}

impl Guest {
    pub(crate) fn new(
        wasm: Arc<[u8]>,
        pre: InstancePre<HostState>,
        layout: abi::GuestLayout,
    ) -> Self {
        Guest {
            hash: GuestHash::of(&wasm),
            unsaveable: check_saveable(&wasm).err(),
            wasm,
            pre,
            layout,
            reference: OnceLock::new(),
        }
    }

    /// The linear memory of a fresh instance of this guest (its snapshot image): what saved
    /// states are the difference from. Made once, in a store of its own; `reserve` serialises
    /// the instantiations so that one spare pool slot suffices for every guest.
    pub(crate) fn reference(
        &self,
        engine: &wasmtime::Engine,
        reserve: &std::sync::Mutex<()>,
    ) -> Result<Arc<[u8]>, String> {
        if let Some(image) = self.reference.get() {
            return Ok(image.clone());
        }
        let _slot = reserve.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(image) = self.reference.get() {
            return Ok(image.clone());
        }
        let mut store = Store::new(engine, HostState::new(usize::MAX, None, 0));
        store.limiter(|s| &mut s.memory);
        let instance = self
            .pre
            .instantiate(&mut store)
            .map_err(|e| format!("instantiating the guest for its memory image: {e:#}"))?;
        let memory = instance
            .get_memory(&mut store, codemode_abi::exports::MEMORY)
            .ok_or("the guest exports no memory")?;
        let image: Arc<[u8]> = memory.data(&store).into();
        Ok(self.reference.get_or_init(|| image).clone())
    }
}

/// Checks that a sandbox of `wasm` is fully described, between two turns of its guest, by its
/// linear memory: one memory (exported as `memory`, not imported), at most one table, and no
/// global but one mutable `i32` that is not exported — the shadow-stack pointer, which is back
/// at its initial value whenever `cm_run`/`cm_resume` has returned. Such state is what a fresh
/// instance plus the saved memory restores. The error says what else the module has.
pub(crate) fn check_saveable(wasm: &[u8]) -> Result<(), String> {
    use wasmparser::{ExternalKind, Parser, Payload, TypeRef, ValType};

    let (mut memories, mut tables, mut globals) = (0u32, 0u32, Vec::new());
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.map_err(|e| format!("the guest does not parse: {e}"))? {
            Payload::ImportSection(imports) => {
                for import in imports.into_imports() {
                    let import = import.map_err(|e| format!("the guest does not parse: {e}"))?;
                    match import.ty {
                        TypeRef::Func(_) | TypeRef::FuncExact(_) => {}
                        other => {
                            return Err(format!(
                                "the guest imports `{}::{}` ({other:?}), state the runtime cannot save",
                                import.module, import.name
                            ));
                        }
                    }
                }
            }
            Payload::MemorySection(section) => {
                for memory in section {
                    let memory = memory.map_err(|e| format!("the guest does not parse: {e}"))?;
                    // Shared pages are not told apart from the image's by the page tables
                    // (suspend::resident), and other threads could write them meanwhile.
                    if memory.shared {
                        return Err(
                            "the guest's memory is shared, state the runtime cannot save".into(),
                        );
                    }
                    memories += 1;
                }
            }
            Payload::TableSection(section) => tables += section.count(),
            Payload::GlobalSection(section) => {
                for global in section {
                    let global = global.map_err(|e| format!("the guest does not parse: {e}"))?;
                    globals.push(global.ty);
                }
            }
            Payload::ExportSection(exports) => {
                for export in exports {
                    let export = export.map_err(|e| format!("the guest does not parse: {e}"))?;
                    if export.kind == ExternalKind::Global {
                        return Err(format!(
                            "the guest exports the global `{}`, state the runtime does not save",
                            export.name
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    if memories != 1 {
        return Err(format!("the guest has {memories} memories (1 expected)"));
    }
    if tables > 1 {
        return Err(format!(
            "the guest has {tables} tables (at most 1 expected)"
        ));
    }
    let mutable: Vec<_> = globals.iter().filter(|g| g.mutable).collect();
    match mutable.as_slice() {
        [] => Ok(()),
        [g] if g.content_type == ValType::I32 => Ok(()),
        _ => Err(format!(
            "the guest has {} mutable globals ({:?}); only one i32 (the shadow-stack pointer) can be restored",
            mutable.len(),
            mutable.iter().map(|g| g.content_type).collect::<Vec<_>>()
        )),
    }
}

/// A linker with everything the guest imports: the sandbox's WASI ([`crate::wasi`]) and the
/// `codemode` ABI. A guest importing anything else fails to link, naming the import.
pub(crate) fn guest_linker(engine: &Engine) -> wasmtime::Result<Linker<HostState>> {
    let mut linker: Linker<HostState> = Linker::new(engine);
    wasi::add_to_linker(&mut linker)?;
    abi::add_to_linker(&mut linker)?;
    Ok(linker)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_guest_can_be_saved() {
        assert_eq!(check_saveable(crate::Runtime::GUEST_WASM), Ok(()));
    }

    #[test]
    fn state_beyond_memory_and_one_stack_pointer_is_refused() {
        let cases = [
            (
                r#"(module (memory 1) (global (mut i32) (i32.const 0)) (global (mut i32) (i32.const 0)))"#,
                "the guest has 2 mutable globals ([I32, I32]); only one i32 (the shadow-stack pointer) can be restored",
            ),
            (
                r#"(module (memory 1) (global (export "g") (mut i32) (i32.const 0)))"#,
                "the guest exports the global `g`, state the runtime does not save",
            ),
            (
                r#"(module (import "env" "m" (memory 1)))"#,
                "the guest imports `env::m` (Memory(MemoryType { memory64: false, shared: false, initial: 1, maximum: None, page_size_log2: None })), state the runtime cannot save",
            ),
            (r#"(module)"#, "the guest has 0 memories (1 expected)"),
            (
                r#"(module (memory 1 1 shared))"#,
                "the guest's memory is shared, state the runtime cannot save",
            ),
            (
                r#"(module (memory 1) (global (mut i64) (i64.const 0)))"#,
                "the guest has 1 mutable globals ([I64]); only one i32 (the shadow-stack pointer) can be restored",
            ),
        ];
        for (wat, why) in cases {
            let wasm = wat::parse_str(wat).unwrap();
            assert_eq!(check_saveable(&wasm), Err(why.to_string()), "{wat}");
        }
        let fine = wat::parse_str(
            r#"(module (memory (export "memory") 1) (table 1 funcref) (global (mut i32) (i32.const 8)) (global i32 (i32.const 1)))"#,
        )
        .unwrap();
        assert_eq!(check_saveable(&fine), Ok(()));
    }

    #[test]
    fn hashes_print_as_hex() {
        let hash = GuestHash::of(b"");
        assert_eq!(
            hash.to_string(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
