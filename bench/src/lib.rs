//! # codemode-bench
//!
//! Measurements of the codemode sandbox against its performance targets (docs/PERFORMANCE.md):
//! the latency and throughput of a trivial eval, the host tool-call round trip, compute
//! workloads against the same QuickJS built natively, load over MCP's streamable HTTP (`--http`, [`http`]), the engine's floor (compute with no CPU
//! bound at all), evals suspended in tool calls, saving and resuming parked evals, whole-process start-up, and two studies (what
//! fuel and epoch interruption cost; what each technique of the runtime buys).
//!
//! `codemode bench` (src/cli/bench.rs: argument parsing only) fills [`BenchOptions`] and
//! calls [`run`], which runs every section asked for in one process and gathers a [`Report`]
//! (a table, or JSON). The criterion benchmarks in the workspace's `benches/` call the single
//! measurements below directly.
//!
//! Every measurement function measures one thing and returns plain numbers. Machines are noisy:
//! the things that are compared (sandbox and native QuickJS, runtime variants) are interleaved
//! A B A B, and figures are medians or percentiles of many samples. A measurement panics when an
//! eval it times fails: a benchmark of failures would mislead.
//!
//! The native baseline needs the `native-baseline` feature (javy's QuickJS built for the host,
//! which needs a C compiler); without it [`native::AVAILABLE`] is `false` and compute figures
//! carry a note instead of a ratio.
//!
//! ```no_run
//! use codemode_bench::{BenchOptions, run};
//!
//! let mut options = BenchOptions::quick();
//! options.only = vec!["eval".into()];
//! let report = run(&options, &mut |step| eprintln!("{step}…")).expect("the runtimes build");
//! eprintln!("{}", report.table());
//! ```

mod compute;
mod floor;
pub mod http;
mod limits;
pub mod native;
mod options;
mod report;
mod run;
mod startup;
mod stats;
mod suspend;
mod suspended;
mod techniques;
mod throughput;
mod tool_calls;
mod trivial;
pub mod workloads;

pub use compute::{Compute, compute};

/// Why a benchmark could not run: what was being set up or measured, and what failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BenchError(String);

impl From<String> for BenchError {
    fn from(message: String) -> Self {
        BenchError(message)
    }
}

impl From<&str> for BenchError {
    fn from(message: &str) -> Self {
        BenchError(message.to_string())
    }
}

impl From<BenchError> for String {
    fn from(error: BenchError) -> Self {
        error.0
    }
}
pub use options::{BenchOptions, SECTIONS, cpu_bound_config, eval_options, runtime_config};
pub use report::{Figure, Machine, Report};
pub use run::run;
pub use startup::process_start;
pub use stats::Samples;
pub use suspend::{Human, Suspend, park_typical, resume_typical, suspend, write_file};
pub use suspended::{Memory, Parked, Suspended, memory, suspended, suspension_config};
pub use throughput::{evals_on_threads, throughput};
pub use tool_calls::tool_round_trip;
pub use trivial::{eval_latency, interleaved_latency};
pub use workloads::{WORKLOADS, Workload};

/// Evals per batch: the warm-up of a latency or throughput measurement, and the evals run on one
/// variant before switching to the next when variants are interleaved.
const BATCH: usize = 100;

/// A current-thread tokio runtime for driving evals from a plain thread.
fn tokio_current() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread tokio runtime")
}
