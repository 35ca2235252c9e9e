//! # codemode-runtime
//!
//! The sandbox at the heart of codemode: JavaScript (QuickJS, built with javy) running in a
//! fresh WebAssembly instance (wasmtime) per eval, with fuel, memory, wall-clock, output and
//! tool-call limits, no ambient authority (no files, network, environment or clock beyond
//! `Date`), and tool calls that cross into the host concurrently.
//!
//! ```rust
#![doc = include_str!("../examples/embedding.rs")]
//! ```
//!
//! ## Core concepts
//! - [`Runtime`]: one engine, the compiled guest (cached on disk), a pool of instance slots.
//!   Clone it freely; run many evals at once on tokio.
//! - [`Runtime::eval`] takes the code, [`EvalOptions`] (the limits) and a [`ToolHost`] (what
//!   `codemode.<name>(args)` reaches) and returns an [`EvalOutcome`]: result or error, logs,
//!   the ledger of tool calls, stats. It never panics on guest input.
//! - A [`ToolHost`] receives a [`CallContext`] with the eval and call ids; layers (policies,
//!   audit, approval) wrap one `ToolHost` in another.
//!
//! ## Code forms
//! The code is either one expression — typically `async () => { ... }`, which is called and
//! awaited — or a script body that may use top-level `await` and `return`; without `return`,
//! the value of the last expression statement is the result. Line and column numbers in errors
//! refer to the user's code.
//!
//! ## Limits
//! See [`EvalOptions`] for each limit and its default, and [`ErrorKind`] for what each produces.
//! Options out of range end an eval with [`ErrorKind::InvalidOptions`] before it runs; a
//! [`RuntimeConfig`] out of range is an error from [`Runtime::new`].

mod abi;
mod clock;
mod config;
mod error;
mod eval;
mod guest;
mod limits;
mod module_cache;
mod outcome;
mod park;
mod runtime;
mod snapshot;
mod state;
mod suggest;
mod suspend;
mod tool;
mod wasi;

pub use abi::{ABI_VERSION, MAX_TOOL_ARGS_BYTES, MAX_TOOL_NAME_BYTES};
pub use clock::TimeoutPause;
pub use config::{MAX_MEMORY_LIMIT, MIN_EPOCH_TICK, RuntimeConfig, default_cache_dir};
pub use error::{InvalidConfig, RuntimeError};
pub use guest::GuestHash;
pub use limits::*;
pub use outcome::*;
pub use park::{EvalControl, HumanWait, ParkRequest};
pub use runtime::{GUEST_WASM, Runtime};
pub use suggest::closest;
pub use suspend::{
    Answer, EvalStep, FORMAT_VERSION as SAVE_FORMAT_VERSION, LoadError, PendingCall,
    ResumeError, Suspended,
};
/// Cancels an eval started with [`Runtime::eval_cancellable`].
pub use tokio_util::sync::CancellationToken;
pub use tool::*;

// `Runtime` is shared across tasks and threads; an eval's future can be spawned.
const _: () = {
    const fn send_sync<T: Send + Sync + Clone>() {}
    send_sync::<Runtime>();
    send_sync::<EvalOptions>();
};

#[expect(dead_code, reason = "compile-time check that eval futures are Send")]
fn eval_futures_are_send<'a>(
    runtime: &'a Runtime,
    options: &'a EvalOptions,
    tools: &'a FnTools,
) -> impl std::future::Future<Output = EvalOutcome> + Send + 'a {
    runtime.eval("1", options, tools)
}
