//! The host↔guest ABI, version 2: every raw import and export lives here (see ../ABI.md), by the
//! names and constants of `codemode-abi` (../../abi), which the host is built with too.
//!
//! The guest trusts the host (the host owns the sandbox); the host validates everything the guest
//! passes. Pointers are offsets into this module's exported `memory`.

use crate::engine;

// The constants both sides agree on, from the crate the host is built with too.
pub use codemode_abi::{
    ABI_VERSION, MAX_TOOL_ARGS_BYTES, MAX_TOOL_NAME_BYTES, STATUS_DONE, STATUS_PENDING,
};

// `wasm_import_module` takes only a literal (the other names come from `codemode_abi::name!`):
// this one is checked against the shared constant instead.
const _: () = assert!(
    matches!(codemode_abi::imports::MODULE.as_bytes(), b"codemode"),
    "the import module below is not codemode_abi::imports::MODULE"
);

#[link(wasm_import_module = "codemode")]
unsafe extern "C" {
    /// Starts tool call `name(args_json)` made at `line`:`column` of the user's code (0 when
    /// unknown); returns its id (≥ 1). Never blocks.
    #[link_name = codemode_abi::name!(call_start)]
    fn host_call_start(
        name_ptr: *const u8,
        name_len: usize,
        args_ptr: *const u8,
        args_len: usize,
        line: u32,
        column: u32,
    ) -> u32;
    /// One console line at `level` (0 log, 1 info, 2 warn, 3 error, 4 debug).
    #[link_name = codemode_abi::name!(log)]
    fn host_log(level: u32, ptr: *const u8, len: usize);
    /// The final outcome envelope (JSON), called exactly once per run.
    #[link_name = codemode_abi::name!(finish)]
    fn host_finish(ptr: *const u8, len: usize);
}

#[link(wasm_import_module = "wasi_snapshot_preview1")]
unsafe extern "C" {
    /// WASI's random source (the host's), already imported by the C library.
    #[link_name = "random_get"]
    fn wasi_random_get(buf: *mut u8, len: usize) -> u16;
}

/// Eight bytes from the host's random source (0 if it fails, which the caller treats as unseeded).
pub fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    // SAFETY: `bytes` is valid for writes of its length for the duration of the call.
    let errno = unsafe { wasi_random_get(bytes.as_mut_ptr(), bytes.len()) };
    if errno == 0 {
        u64::from_le_bytes(bytes)
    } else {
        0
    }
}

/// Starts a call; `site` is its line and column in the user's code (0 when unknown).
pub fn call_start(name: &[u8], args_json: &[u8], site: (u32, u32)) -> u32 {
    // SAFETY: both slices are valid for their lengths for the duration of the call.
    unsafe {
        host_call_start(
            name.as_ptr(),
            name.len(),
            args_json.as_ptr(),
            args_json.len(),
            site.0,
            site.1,
        )
    }
}

pub fn log(level: u32, message: &str) {
    // SAFETY: as above.
    unsafe { host_log(level, message.as_ptr(), message.len()) }
}

pub fn finish(envelope: &str) {
    // SAFETY: as above.
    unsafe { host_finish(envelope.as_ptr(), envelope.len()) }
}

/// The ABI version this guest speaks.
#[unsafe(export_name = codemode_abi::name!(cm_abi_version))]
pub extern "C" fn cm_abi_version() -> u32 {
    ABI_VERSION
}

/// Creates the JS runtime and evaluates the prelude. Idempotent. Snapshotting tools run it at
/// build time; otherwise the host calls it once per instance before `cm_run`.
#[unsafe(export_name = codemode_abi::name!(cm_init))]
pub extern "C" fn cm_init() {
    engine::init();
}

/// [`cm_init`] plus what is only worth doing once for a snapshot (the built-ins QuickJS creates
/// lazily, a garbage collection). Wizer's conventional name: the host snapshots the module by
/// running it, and the snapshot exports neither it nor `cm_init`.
#[unsafe(export_name = codemode_abi::name!(wizer_initialize))]
pub extern "C" fn cm_snapshot_init() {
    engine::init_for_snapshot();
}

/// Allocates `len` bytes for the host to write an input into; the next `cm_run`/`cm_resume` that
/// receives the pointer takes ownership and frees it.
#[unsafe(export_name = codemode_abi::name!(cm_alloc))]
pub extern "C" fn cm_alloc(len: usize) -> *mut u8 {
    // One byte more than asked: the guest NUL-terminates what it receives (QuickJS's parsers
    // need it) without growing the buffer.
    let mut buf = Vec::<u8>::with_capacity(len + 1);
    let ptr = buf.as_mut_ptr();
    std::mem::forget(buf);
    ptr
}

/// Takes back a buffer handed out by `cm_alloc`.
///
/// # Safety
/// `ptr`/`len` must come from one `cm_alloc(len)` call, written by the host, not yet taken.
unsafe fn take(ptr: *mut u8, len: usize) -> Vec<u8> {
    // SAFETY: per the function contract; capacity was `len + 1`.
    unsafe {
        let mut v = Vec::from_raw_parts(ptr, 0, len + 1);
        v.set_len(len);
        v
    }
}

/// Runs the user's code (UTF-8, in a `cm_alloc` buffer) with a QuickJS heap limit in bytes
/// (0 = none). Returns [`STATUS_DONE`] or [`STATUS_PENDING`].
///
/// # Safety
/// See [`take`].
#[unsafe(export_name = codemode_abi::name!(cm_run))]
pub unsafe extern "C" fn cm_run(code_ptr: *mut u8, code_len: usize, heap_limit: usize) -> u32 {
    // SAFETY: forwarded contract.
    let code = unsafe { take(code_ptr, code_len) };
    engine::run(code, heap_limit)
}

/// Settles tool call `id`: `ok` = 1 resolves with the JSON value in the buffer, `ok` = 0 rejects
/// with the error object described by the JSON in the buffer. Returns like `cm_run`.
///
/// # Safety
/// See [`take`].
#[unsafe(export_name = codemode_abi::name!(cm_resume))]
pub unsafe extern "C" fn cm_resume(id: u32, ok: u32, ptr: *mut u8, len: usize) -> u32 {
    // SAFETY: forwarded contract.
    let payload = unsafe { take(ptr, len) };
    engine::resume(id, ok != 0, payload)
}
