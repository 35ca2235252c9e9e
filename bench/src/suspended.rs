//! Evals suspended at once in tool calls: resident memory, and the latency of new evals beside
//! them (section `suspended`, targets ≤ 1 GiB with 1,000 and new evals at full speed).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use codemode_runtime::{
    CallContext, EvalOptions, NoTools, Runtime, RuntimeConfig, ToolError, ToolHost,
};
use serde::Serialize;
use serde_json::Value;

use crate::report::Figure;
use crate::{BATCH, BenchOptions, Samples, eval_options, runtime_config, tokio_current, workloads};

/// Trivial evals timed before and while evals are suspended, at most.
const MAX_SAMPLES: usize = 2000;

/// Resident memory of this process, from /proc (Linux).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Memory {
    /// VmRSS: every resident page mapped, shared ones counted in each mapping.
    pub rss_bytes: u64,
    /// Pss: shared pages divided among their mappers.
    pub pss_bytes: u64,
}

/// The current [`Memory`] of this process; zeros where /proc is unavailable.
pub fn memory() -> Memory {
    let field = |text: &str, name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kb| kb.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    Memory {
        rss_bytes: field(&status, "VmRSS:"),
        pss_bytes: field(&rollup, "Pss:"),
    }
}

/// What [`suspended`] found.
#[derive(Debug, Clone)]
pub struct Suspended {
    /// Evals suspended at once.
    pub count: usize,
    /// Memory with the runtime built and warmed up, nothing suspended.
    pub idle: Memory,
    /// Memory with `count` evals suspended in tool calls.
    pub suspended: Memory,
    /// Trivial-eval latency (µs) before any eval was suspended.
    pub latency_idle: Samples,
    /// Trivial-eval latency (µs) while `count` evals were suspended.
    pub latency_suspended: Samples,
}

/// A tool that parks every call until released.
struct Parking {
    arrived: AtomicUsize,
    gate: tokio::sync::Semaphore,
}

impl ToolHost for Parking {
    fn call<'a>(
        &'a self,
        _name: &'a str,
        _args: Value,
        _cx: &'a CallContext,
    ) -> codemode_runtime::BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            self.arrived.fetch_add(1, Ordering::SeqCst);
            let permit = self.gate.acquire().await;
            drop(permit);
            Ok(Value::Null)
        })
    }

    fn tool_names(&self) -> Vec<String> {
        vec!["wait".into()]
    }
}

/// Evals suspended in a tool call until [`Parked::release`].
pub struct Parked {
    tokio: tokio::runtime::Runtime,
    tools: Arc<Parking>,
    evals: Vec<tokio::task::JoinHandle<codemode_runtime::EvalOutcome>>,
}

impl Parked {
    /// Starts `count` evals of a script that awaits a tool call, on a 2-thread tokio runtime,
    /// and returns once every one of them is suspended in that call.
    pub fn start(runtime: &Runtime, count: usize) -> Self {
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let tools = Arc::new(Parking {
            arrived: AtomicUsize::new(0),
            gate: tokio::sync::Semaphore::new(0),
        });
        let options = eval_options();
        let evals = (0..count)
            .map(|_| {
                let (runtime, options, tools) = (runtime.clone(), options.clone(), tools.clone());
                tokio.spawn(async move { runtime.eval(workloads::SUSPEND, &options, &tools).await })
            })
            .collect();
        while tools.arrived.load(Ordering::SeqCst) < count {
            std::thread::sleep(Duration::from_millis(2));
        }
        Parked {
            tokio,
            tools,
            evals,
        }
    }

    /// Lets every suspended eval finish, and checks that each succeeded.
    ///
    /// # Panics
    /// When one failed.
    pub fn release(self) {
        self.tools.gate.add_permits(self.evals.len());
        self.tokio.block_on(async {
            for eval in self.evals {
                let outcome = eval.await.expect("a suspended eval panicked");
                assert!(outcome.ok, "a suspended eval failed: {:?}", outcome.error);
            }
        });
    }
}

/// Suspends `count` evals at once in a tool call on `runtime` (built with
/// [`suspension_config`]), measures memory, and measures the latency
/// of new trivial evals meanwhile (`samples` of them); then releases them all.
///
/// # Panics
/// When an eval fails.
pub fn suspended(runtime: &Runtime, count: usize, samples: usize) -> Suspended {
    let options = eval_options();
    let tokio = tokio_current();
    let latency_idle = tokio.block_on(latency_here(runtime, &options, samples));
    let idle = memory();
    let parked = Parked::start(runtime, count);
    let suspended = memory();
    let latency_suspended = tokio.block_on(latency_here(runtime, &options, samples));
    parked.release();
    Suspended {
        count,
        idle,
        suspended,
        latency_idle,
        latency_suspended,
    }
}

/// The runtime configuration for `count` suspended evals: a pool with room for them and for
/// new evals beside them.
pub fn suspension_config(count: usize) -> RuntimeConfig {
    runtime_config(u32::try_from(count + 64).unwrap_or(u32::MAX))
}

async fn latency_here(runtime: &Runtime, options: &EvalOptions, samples: usize) -> Samples {
    for _ in 0..BATCH {
        runtime.eval(workloads::TRIVIAL, options, &NoTools).await;
    }
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let started = Instant::now();
        let outcome = runtime.eval(workloads::TRIVIAL, options, &NoTools).await;
        times.push(started.elapsed());
        assert!(outcome.ok, "benchmark eval failed: {:?}", outcome.error);
    }
    Samples::micros(&times)
}

/// The section's figures: RSS with `options.suspended` evals suspended, and the trivial eval
/// meanwhile against idle.
///
/// # Errors
/// When the runtime cannot be built.
pub(crate) fn figures(options: &BenchOptions) -> Result<Vec<Figure>, String> {
    let runtime = options.runtime(suspension_config(options.suspended))?;
    let s = suspended(
        &runtime,
        options.suspended,
        options.eval_samples.min(MAX_SAMPLES),
    );
    let mib = |bytes: u64| bytes as f64 / (1 << 20) as f64;
    let per_eval =
        s.suspended.rss_bytes.saturating_sub(s.idle.rss_bytes) as f64 / s.count as f64 / 1024.0;
    let (idle, busy) = (s.latency_idle.median(), s.latency_suspended.median());
    Ok(vec![
        Figure::new(
            "suspended",
            format!("RSS with {} evals suspended in tool calls", s.count),
            mib(s.suspended.rss_bytes),
            "MiB",
        )
        .target(
            "≤ 1 GiB with 1,000",
            s.count < 1000 || s.suspended.rss_bytes <= 1 << 30,
        )
        .note(format!(
            "{per_eval:.0} KiB per suspended eval; PSS {:.0} MiB; before suspending: RSS {:.0} MiB",
            mib(s.suspended.pss_bytes),
            mib(s.idle.rss_bytes)
        )),
        Figure::new(
            "suspended",
            format!("trivial eval while {} are suspended", s.count),
            busy,
            "µs",
        )
        .p99(s.latency_suspended.percentile(99.0))
        .target("full speed (≤ 1.2× idle p50)", busy <= idle * 1.2)
        .note(format!(
            "idle: p50 {idle:.1} µs, p99 {:.1} µs",
            s.latency_idle.percentile(99.0)
        )),
    ])
}
