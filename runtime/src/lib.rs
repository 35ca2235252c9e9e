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
//! - Guest code runs on the thread that polls the eval's future, without yielding until it
//!   waits on a tool: run evals off the async workers, on a [`ThreadPool`] (see
//!   [`Runtime::eval`], "Blocking").
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
//! See [`EvalOptions`] for each limit and its default (`EvalOptions::DEFAULT_*`), and
//! [`ErrorKind`] for what each produces. A tool call's name and arguments have limits of
//! their own ([`Runtime::MAX_TOOL_NAME_BYTES`], [`Runtime::MAX_TOOL_ARGS_BYTES`]).
//! Options out of range end an eval with [`ErrorKind::InvalidOptions`] before it runs; a
//! [`RuntimeConfig`] out of range is an error from [`Runtime::new`].
//!
//! ## Shared with the host
//! What codemode's own crates use beside the sandbox, offered so that an embedder gets the same
//! behaviour: [`ThreadPool`] (threads to run evals on, off the async workers),
//! [`private_file`] (files and directories created readable by their owner only) and
//! [`LargestUnit::spell`] (a limit's duration as messages spell it).
//!
//! ## Durable suspension
//! A script waiting inside a tool call for a human need not stay in memory. A tool call says it
//! only waits for a human with [`CallContext::awaiting_human`] (a guard holding a `note` — an
//! approval id, say — and pausing the timeout). An eval run with [`Runtime::eval_parkable`]
//! whose [`EvalControl::park`] is requested parks as soon as every call it has in flight holds
//! such a guard (until then it runs on; it may finish first): the calls' futures are dropped,
//! the sandbox slot is freed, and [`EvalStep::Suspended`] holds everything needed to go on.
//! [`Suspended::save`] turns it into bytes (versioned, checksummed, naming its guest's sha256;
//! the memory as the pages that differ from the guest's image, compressed);
//! [`Suspended::load`] reads them back, with a typed [`LoadError`] for any damage.
//!
//! [`Runtime::resume`] continues it in a fresh sandbox — in this process or another, after a
//! restart or a deploy — with answers for some pending calls; every other pending call is made
//! again with [`CallContext::resumed_note`] (granted: make the real call; still undecided: wait
//! again, which may park again). No call that finished before parking is made again, and fuel,
//! wall time, output, tool calls, logs, warnings, the ledger and the memory peak carry over: the
//! outcome is the one an uninterrupted run would give. Time spent parked counts in `wall_ms`
//! and the calls' durations, not against the timeout.
//!
//! Several guests: a saved eval names its guest; keep [`Runtime::guest_wasm`] beside the saved
//! states and give a new runtime the old guest with [`Runtime::add_guest`], and each eval
//! resumes in the guest it was saved with. The embedder owns the rest: sealing the bytes
//! against a store others can write, and resuming each saved eval once (resuming the same
//! bytes twice runs the rest of the script twice). What is saved, exactly, and why that is the
//! whole sandbox: [`Suspended`]'s module (`runtime/src/suspend`).
//!
//! ```rust
#![doc = include_str!("../examples/durable.rs")]
//! ```

mod abi;
mod clock;
mod config;
mod error;
mod eval;
mod evals;
mod guest;
mod limits;
mod module_cache;
mod outcome;
mod park;
pub mod private_file;
mod runtime;
mod snapshot;
mod state;
mod suggest;
mod suspend;
mod threads;
mod tool;
mod wasi;

pub use clock::TimeoutPause;
pub use config::RuntimeConfig;
pub use error::{InvalidConfig, RuntimeError};
pub use guest::GuestHash;
pub use limits::*;
pub use outcome::*;
pub use park::{EvalControl, HumanWait, ParkRequest};
pub use runtime::Runtime;
pub use suggest::closest;
pub use suspend::{Answer, EvalStep, LoadError, PendingCall, ResumeError, Suspended};
pub use threads::{ThreadPool, ThreadPoolBuilder};
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
