//! Measurements of the sandbox against its performance targets: the library behind
//! `codemode bench` and the criterion benchmarks in `benches/`.
//!
//! Every function here measures one thing and returns plain numbers; [`run`] runs them all in
//! one process and gathers a [`Report`] (a table, or JSON). Machines are noisy: the things that
//! are compared (sandbox and native QuickJS, runtime variants) are interleaved A B A B, and
//! figures are medians or percentiles of many samples.

pub mod native;
mod report;
mod run;
mod stats;
pub mod workloads;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use codemode_runtime::{
    CallContext, EvalOptions, NoTools, Runtime, RuntimeConfig, ToolError, ToolHost,
};
use serde::Serialize;
use serde_json::Value;

pub use report::{Figure, Machine, Report};
pub use run::run;
pub use stats::Samples;
pub use workloads::{WORKLOADS, Workload};

/// The sections of a run, in the order measured: the names [`BenchOptions::only`] takes.
pub const SECTIONS: &[&str] = &[
    "eval",
    "tools",
    "compute",
    "floor",
    "suspended",
    "start-up",
    "limits",
    "techniques",
];

/// Evals per batch between switches of variant when variants are interleaved.
const BATCH: usize = 100;

/// What to measure, and how long.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Samples of the trivial eval (after as many warm-up evals).
    pub eval_samples: usize,
    /// Interleaved rounds of each compute workload (sandbox and native).
    pub compute_rounds: usize,
    /// Length of the throughput run.
    pub throughput_time: Duration,
    /// Threads of the throughput run.
    pub threads: usize,
    /// Evals suspended at once in the suspension run.
    pub suspended: usize,
    /// The `codemode` binary, for the whole-process start-up figures; `None` skips them.
    pub codemode_exe: Option<PathBuf>,
    /// Runs of `codemode run hello.js` with a warm cache.
    pub startup_runs: usize,
    /// Also time a first run ever (empty cache: compile and snapshot the guest).
    pub first_run: bool,
    /// Also measure what fuel and epoch interruption cost.
    pub limits_cost: bool,
    /// Also run every compute workload with neither fuel nor epoch interruption, against native:
    /// what wasm under Cranelift costs by itself, the floor no setting of the limits goes below
    /// (section `floor`; not a target, since nothing then bounds a busy script's CPU time).
    pub engine_floor: bool,
    /// Also measure each technique by switching it off (one runtime per variant).
    pub techniques: bool,
    /// Measure eval, tools and compute a second time with fuel off (epoch interruption alone
    /// bounds CPU time): the targets allow either. Ignored when `tweak` is set.
    pub epoch_only_too: bool,
    /// Measure another build of the guest (same ABI) instead of the embedded one: for
    /// experiments with guest build flags.
    pub guest: Option<Vec<u8>>,
    /// Settings applied to every runtime measured (e.g. fuel off), after the defaults.
    pub tweak: Option<fn(&mut RuntimeConfig)>,
    /// Only these sections (see [`SECTIONS`]); empty = all that are enabled.
    pub only: Vec<String>,
    /// Only these compute workloads (by name); empty = all.
    pub workloads: Vec<String>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            eval_samples: 5000,
            compute_rounds: 7,
            throughput_time: Duration::from_secs(3),
            threads: 2,
            suspended: 1000,
            codemode_exe: None,
            startup_runs: 20,
            first_run: true,
            limits_cost: true,
            engine_floor: true,
            techniques: false,
            epoch_only_too: true,
            guest: None,
            tweak: None,
            only: Vec::new(),
            workloads: Vec::new(),
        }
    }
}

impl BenchOptions {
    /// Fewer samples everywhere: a smoke run of every measurement in seconds.
    pub fn quick() -> Self {
        BenchOptions {
            eval_samples: 500,
            compute_rounds: 3,
            throughput_time: Duration::from_millis(500),
            threads: 2,
            suspended: 200,
            codemode_exe: None,
            startup_runs: 5,
            first_run: false,
            limits_cost: false,
            engine_floor: false,
            techniques: false,
            epoch_only_too: true,
            guest: None,
            tweak: None,
            only: Vec::new(),
            workloads: Vec::new(),
        }
    }

    fn wants(&self, section: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|s| s == section)
    }

    /// Builds a runtime of `config` with these options' guest and tweak.
    ///
    /// # Errors
    /// When the runtime cannot be built.
    pub fn runtime(&self, mut config: RuntimeConfig) -> Result<Runtime, String> {
        if let Some(tweak) = self.tweak {
            tweak(&mut config);
        }
        match &self.guest {
            Some(wasm) => Runtime::with_guest(&config, wasm),
            None => Runtime::new(&config),
        }
        .map_err(|e| format!("{:#}", anyhow::Error::new(e)))
    }
}

/// The runtime configuration measured: the defaults (snapshot, pooling, keep-resident,
/// pagemap_scan, fuel and epochs on), with a pool of `slots`.
pub fn runtime_config(slots: u32) -> RuntimeConfig {
    let mut config = RuntimeConfig::default();
    config.max_concurrent_evals(slots);
    config
}

/// The configuration of a runtime for compute workloads (a pool of 8) whose CPU time is bounded
/// by fuel, by epoch interruption, by both (the default) or by neither (the engine's floor).
pub fn cpu_bound_config(fuel: bool, epoch: bool) -> RuntimeConfig {
    let mut config = runtime_config(8);
    config.fuel(fuel).epoch_interruption(epoch);
    config
}

/// The eval options measured: every limit at its default (fuel, memory, timeout, output, tool
/// calls).
pub fn eval_options() -> EvalOptions {
    EvalOptions::default()
}

/// A current-thread tokio runtime for driving evals from a plain thread.
fn tokio_current() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread tokio runtime")
}

/// Latency of evaluating `code` without tools, one eval at a time: `warmup` evals, then
/// `samples` timed ones (µs).
///
/// # Panics
/// When an eval fails: a benchmark of failures would mislead.
pub fn eval_latency(
    runtime: &Runtime,
    code: &str,
    options: &EvalOptions,
    warmup: usize,
    samples: usize,
) -> Samples {
    let tokio = tokio_current();
    tokio.block_on(async {
        for _ in 0..warmup {
            let outcome = runtime.eval(code, options, &NoTools).await;
            assert!(outcome.ok, "benchmark eval failed: {:?}", outcome.error);
        }
        let mut times = Vec::with_capacity(samples);
        for _ in 0..samples {
            let started = Instant::now();
            let outcome = runtime.eval(code, options, &NoTools).await;
            times.push(started.elapsed());
            assert!(outcome.ok, "benchmark eval failed: {:?}", outcome.error);
        }
        Samples::micros(&times)
    })
}

/// Latency of the trivial eval on several runtimes, interleaved in batches so that a slow spell
/// of the machine hits every variant alike. One [`Samples`] (µs) per runtime.
pub fn interleaved_latency(runtimes: &[&Runtime], code: &str, samples: usize) -> Vec<Samples> {
    let options = eval_options();
    let tokio = tokio_current();
    tokio.block_on(async {
        let mut times = vec![Vec::with_capacity(samples); runtimes.len()];
        for runtime in runtimes {
            for _ in 0..BATCH {
                runtime.eval(code, &options, &NoTools).await;
            }
        }
        let mut done = 0;
        while done < samples {
            let n = BATCH.min(samples - done);
            for (runtime, times) in runtimes.iter().zip(&mut times) {
                for _ in 0..n {
                    let started = Instant::now();
                    let outcome = runtime.eval(code, &options, &NoTools).await;
                    times.push(started.elapsed());
                    assert!(outcome.ok, "benchmark eval failed: {:?}", outcome.error);
                }
            }
            done += n;
        }
        times.iter().map(|t| Samples::micros(t)).collect()
    })
}

/// Evals per second of `code` on `threads` threads (each evaluating one script after another)
/// for `time`.
pub fn throughput(runtime: &Runtime, code: &str, threads: usize, time: Duration) -> f64 {
    let options = eval_options();
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let barrier = Arc::new(std::sync::Barrier::new(threads + 1));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (runtime, options, code) = (runtime.clone(), options.clone(), code.to_string());
            let (done, stop, barrier) = (done.clone(), stop.clone(), barrier.clone());
            std::thread::spawn(move || {
                let tokio = tokio_current();
                tokio.block_on(async {
                    for _ in 0..BATCH {
                        runtime.eval(&code, &options, &NoTools).await;
                    }
                    barrier.wait();
                    while !stop.load(Ordering::Relaxed) {
                        let outcome = runtime.eval(&code, &options, &NoTools).await;
                        assert!(outcome.ok, "benchmark eval failed: {:?}", outcome.error);
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                });
            })
        })
        .collect();
    barrier.wait();
    let started = Instant::now();
    let before = done.load(Ordering::Relaxed);
    std::thread::sleep(time);
    let after = done.load(Ordering::Relaxed);
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.join().expect("a throughput worker panicked");
    }
    (after - before) as f64 / elapsed.as_secs_f64()
}

/// Wall time of `total` evals of `code` spread over `threads` threads (for criterion's
/// `iter_custom`).
pub fn evals_on_threads(runtime: &Runtime, code: &str, threads: usize, total: u64) -> Duration {
    let options = eval_options();
    let barrier = Arc::new(std::sync::Barrier::new(threads + 1));
    let workers: Vec<_> = (0..threads as u64)
        .map(|i| {
            let n = total / threads as u64 + u64::from(i < total % threads as u64);
            let (runtime, options, code) = (runtime.clone(), options.clone(), code.to_string());
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let tokio = tokio_current();
                barrier.wait();
                tokio.block_on(async {
                    for _ in 0..n {
                        let outcome = runtime.eval(&code, &options, &NoTools).await;
                        assert!(outcome.ok, "benchmark eval failed: {:?}", outcome.error);
                    }
                });
            })
        })
        .collect();
    barrier.wait();
    let started = Instant::now();
    for worker in workers {
        worker.join().expect("a benchmark thread panicked");
    }
    started.elapsed()
}

/// Cost of one host tool-call round trip (guest → no-op Rust tool → guest), in µs per call:
/// each sample is one eval making `calls` sequential calls, divided by `calls`.
pub fn tool_round_trip(runtime: &Runtime, calls: u64, samples: usize) -> Samples {
    let mut options = eval_options();
    options.max_tool_calls(Some(calls));
    let tools = workloads::noop_tools();
    let code = workloads::tool_loop(calls);
    let tokio = tokio_current();
    tokio.block_on(async {
        let outcome = runtime.eval(&code, &options, &tools).await;
        assert!(outcome.ok, "tool-call eval failed: {:?}", outcome.error);
        let mut per_call = Vec::with_capacity(samples);
        for _ in 0..samples {
            let started = Instant::now();
            let outcome = runtime.eval(&code, &options, &tools).await;
            per_call.push(started.elapsed() / calls as u32);
            assert!(outcome.ok, "tool-call eval failed: {:?}", outcome.error);
            assert_eq!(outcome.tool_calls.len() as u64, calls);
        }
        Samples::micros(&per_call)
    })
}

/// One compute workload, in the sandbox and natively, interleaved.
#[derive(Debug, Clone)]
pub struct Compute {
    /// Sandbox times (ms).
    pub sandbox: Samples,
    /// Native times (ms), when the baseline is built in.
    pub native: Option<Samples>,
    /// The sandbox's result (JSON).
    pub result: Value,
    /// Why there is no native figure, or why it disagrees with the sandbox.
    pub native_problem: Option<String>,
}

/// Runs `workload` `rounds` times in the sandbox and natively, alternating.
///
/// # Panics
/// When the sandboxed eval fails.
pub fn compute(runtime: &Runtime, workload: &Workload, rounds: usize) -> Compute {
    let options = eval_options();
    let tokio = tokio_current();
    let mut sandbox = Vec::with_capacity(rounds);
    let mut native = Vec::with_capacity(rounds);
    let mut native_problem = None;
    let mut result = Value::Null;
    // One untimed round of each first (caches, lazy compilation of host code).
    for round in 0..=rounds {
        let started = Instant::now();
        let outcome = tokio.block_on(runtime.eval(workload.source, &options, &NoTools));
        let elapsed = started.elapsed();
        assert!(
            outcome.ok,
            "workload {} failed in the sandbox: {:?}",
            workload.name, outcome.error
        );
        result = outcome.result;
        if round > 0 {
            sandbox.push(elapsed);
        }
        if native_problem.is_some() {
            continue;
        }
        match native::eval(workload.source) {
            Ok((elapsed, json)) => {
                if serde_json::from_str::<Value>(&json).ok().as_ref() != Some(&result) {
                    native_problem = Some(format!(
                        "native result {json} differs from the sandbox's {result}"
                    ));
                } else if round > 0 {
                    native.push(elapsed);
                }
            }
            Err(e) => native_problem = Some(e),
        }
    }
    Compute {
        sandbox: Samples::millis(&sandbox),
        native: (native_problem.is_none()).then(|| Samples::millis(&native)),
        result,
        native_problem,
    }
}

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
/// When the runtime cannot be built or an eval fails.
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

/// A scratch directory, removed on drop.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new(what: &str) -> std::io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "codemode-bench-{what}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        Ok(ScratchDir(dir))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `codemode run <script>` once; `cache_dir` overrides `CODEMODE_CACHE_DIR`.
fn run_process(exe: &Path, script: &Path, cache_dir: Option<&Path>) -> Result<Duration, String> {
    let mut command = std::process::Command::new(exe);
    command
        .arg("run")
        .arg(script)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if let Some(dir) = cache_dir {
        command.env("CODEMODE_CACHE_DIR", dir);
    }
    let started = Instant::now();
    let status = command
        .status()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    let elapsed = started.elapsed();
    if !status.success() {
        return Err(format!("`{} run` failed: {status}", exe.display()));
    }
    Ok(elapsed)
}

/// Whole-process time of `codemode run hello.js` with a warm cache (ms), `runs` times after one
/// warm-up run; and, with `first_run`, the time of a run with an empty cache.
///
/// # Errors
/// When the binary cannot be run or the script fails.
pub fn process_start(
    exe: &Path,
    runs: usize,
    first_run: bool,
) -> Result<(Samples, Option<Duration>), String> {
    let scratch = ScratchDir::new("start").map_err(|e| e.to_string())?;
    let script = scratch.0.join("hello.js");
    std::fs::write(&script, workloads::HELLO).map_err(|e| e.to_string())?;
    let first = if first_run {
        let cache = scratch.0.join("empty-cache");
        Some(run_process(exe, &script, Some(&cache))?)
    } else {
        None
    };
    run_process(exe, &script, None)?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        times.push(run_process(exe, &script, None)?);
    }
    Ok((Samples::millis(&times), first))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every section runs and reports finite figures (no timing is asserted: machines vary).
    #[test]
    fn a_tiny_run_of_every_section_reports_its_figures() {
        let options = BenchOptions {
            eval_samples: 20,
            compute_rounds: 1,
            throughput_time: Duration::from_millis(50),
            suspended: 8,
            startup_runs: 0,
            workloads: vec!["loop".into()],
            engine_floor: true,
            ..BenchOptions::quick()
        };
        let report = run(&options, &mut |_| {}).expect("the bench runs");
        let sections: Vec<&str> = report.figures.iter().map(|f| f.section.as_str()).collect();
        for section in ["start-up", "eval", "tools", "compute", "floor", "suspended"] {
            assert!(
                sections.contains(&section),
                "no {section} figure: {sections:?}"
            );
        }
        for figure in &report.figures {
            assert!(figure.value.is_finite(), "{figure:?}");
        }
        // The floor is a study, not a target: it never reads as met or missed.
        let floor: Vec<&Figure> = report
            .figures
            .iter()
            .filter(|f| f.section == "floor")
            .collect();
        assert_eq!(floor.len(), 1, "one floor figure per workload asked for");
        assert!(floor[0].met.is_none() && floor[0].name.starts_with("loop: "));
        let table = report.table();
        assert!(table.contains("trivial eval"));
        // Both ways of bounding CPU time are measured.
        assert!(table.contains("fuel + epoch (default)"), "{table}");
        assert!(table.contains("epoch only (fuel off)"), "{table}");
        serde_json::to_string(&report).expect("the report serialises");
    }
}
