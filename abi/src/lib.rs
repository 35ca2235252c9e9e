//! # codemode-abi
//!
//! The constants of the codemode guest ABI (version [`ABI_VERSION`], described in
//! `guest/ABI.md`), in the one place both sides read them from: the guest
//! (`guest/src/abi.rs`, built for wasm32-wasip1 by `guest/build.sh`) and the runtime
//! (`runtime/src/abi.rs`) depend on this crate, so they cannot disagree on a value.
//!
//! It holds only what both sides must agree on and what crosses the boundary as a number or a
//! name: no code, no dependencies, `no_std`. The constants are inlined where they are used, so
//! the guest module holds nothing of this crate but the values themselves.
//!
//! - [`ABI_VERSION`]: what the guest's `cm_abi_version` returns and the host requires.
//! - [`STATUS_DONE`], [`STATUS_PENDING`]: what `cm_run` and `cm_resume` return.
//! - [`MAX_TOOL_NAME_BYTES`], [`MAX_TOOL_ARGS_BYTES`]: the host refuses a `call_start` past
//!   either; the guest rejects such a call itself, catchably, before calling the host.
//! - [`imports`] and [`exports`]: the names the two sides link by. Rust attributes take a
//!   literal or a macro call, not a constant, so the guest spells them with [`name!`], which
//!   gives each as a string literal; the constants are defined from the same macro.
//!
//! Not here, because the guest does not spell them in Rust: the log levels (the order of
//! `console`'s methods in `guest/src/prelude.js`), the error objects passed to `cm_resume` and
//! the `finish` envelope (JSON, written and read by the prelude). Nor the host's own limits
//! (the output, tool-call and warning caps), which the guest does not know.
//!
//! Any change to a signature, a status value, the envelope or the error objects bumps
//! [`ABI_VERSION`].
//!
//! ```
//! assert_eq!(codemode_abi::exports::RUN, "cm_run");
//! assert_eq!(codemode_abi::name!(cm_run), codemode_abi::exports::RUN);
//! ```

#![no_std]

/// Bumped on every incompatible change; the host refuses a guest of another version.
pub const ABI_VERSION: u32 = 2;

/// `cm_run`/`cm_resume`: the script finished, and the guest has called `finish`.
pub const STATUS_DONE: u32 = 0;
/// `cm_run`/`cm_resume`: the script waits on tool calls (at least one is in flight and no
/// JavaScript job is runnable); the host calls `cm_resume` when one settles.
pub const STATUS_PENDING: u32 = 1;

/// The longest tool name `call_start` accepts: 1 KiB. No tool has a longer name; the guest
/// rejects a call with one itself (an `UnknownToolError`) without calling the host.
pub const MAX_TOOL_NAME_BYTES: usize = 1024;
/// The largest tool-call argument document `call_start` accepts: 8 MiB. Bigger payloads are
/// almost certainly a runaway script, and the host holds a copy per call in flight; the guest
/// rejects a call with one itself (a `ToolError`) without calling the host.
pub const MAX_TOOL_ARGS_BYTES: usize = 8 << 20;

/// The ABI's names as string literals, for the places Rust wants a literal:
/// `#[link_name = codemode_abi::name!(call_start)]`,
/// `#[unsafe(export_name = codemode_abi::name!(cm_run))]`. The constants of [`imports`] and
/// [`exports`] are defined with it, so each name is spelled once.
///
/// `#[link(wasm_import_module = ...)]` takes no macro call: the guest writes
/// [`imports::MODULE`]'s literal there and checks it against the constant at compile time.
///
/// ```
/// assert_eq!(codemode_abi::name!(wizer_initialize), "wizer-initialize");
/// ```
#[macro_export]
macro_rules! name {
    (import_module) => {
        "codemode"
    };
    (call_start) => {
        "call_start"
    };
    (log) => {
        "log"
    };
    (finish) => {
        "finish"
    };
    (memory) => {
        "memory"
    };
    (_initialize) => {
        "_initialize"
    };
    (cm_abi_version) => {
        "cm_abi_version"
    };
    (cm_init) => {
        "cm_init"
    };
    (wizer_initialize) => {
        "wizer-initialize"
    };
    (cm_alloc) => {
        "cm_alloc"
    };
    (cm_run) => {
        "cm_run"
    };
    (cm_resume) => {
        "cm_resume"
    };
}

/// What the guest imports from the host: the functions of module [`MODULE`](imports::MODULE).
pub mod imports {
    /// The import module of the host functions.
    pub const MODULE: &str = crate::name!(import_module);
    /// `(name_ptr, name_len, args_ptr, args_len, line, column) -> call_id`: starts a tool call.
    pub const CALL_START: &str = crate::name!(call_start);
    /// `(level, ptr, len) -> ()`: one console line.
    pub const LOG: &str = crate::name!(log);
    /// `(ptr, len) -> ()`: the outcome envelope, exactly once.
    pub const FINISH: &str = crate::name!(finish);
}

/// What the guest exports to the host.
pub mod exports {
    /// The guest's linear memory. The guest does not name it (its linker does).
    pub const MEMORY: &str = crate::name!(memory);
    /// WASI's reactor constructor, `() -> ()`. The guest does not name it (wasi-libc's
    /// `crt1-reactor.o` does); absent in a snapshotted module.
    pub const INITIALIZE: &str = crate::name!(_initialize);
    /// `() -> version`: returns [`ABI_VERSION`](crate::ABI_VERSION).
    pub const ABI_VERSION: &str = crate::name!(cm_abi_version);
    /// `() -> ()`: creates the QuickJS runtime and evaluates the prelude; idempotent.
    pub const INIT: &str = crate::name!(cm_init);
    /// `() -> ()`: [`INIT`] and what a snapshot should hold besides (Wizer's conventional
    /// name). The host snapshots the module by running it.
    pub const SNAPSHOT_INIT: &str = crate::name!(wizer_initialize);
    /// `(len) -> ptr`: a buffer for the host to write an input into.
    pub const ALLOC: &str = crate::name!(cm_alloc);
    /// `(code_ptr, code_len, heap_limit) -> status`: runs the user's code.
    pub const RUN: &str = crate::name!(cm_run);
    /// `(call_id, ok, ptr, len) -> status`: settles a tool call.
    pub const RESUME: &str = crate::name!(cm_resume);
}
