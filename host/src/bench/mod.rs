//! Measurements of the sandbox against its performance targets: the library behind
//! `codemode bench` and the criterion benchmarks in `benches/`.
//!
//! Every function here measures one thing and returns plain numbers; [`run`] runs them all in
//! one process and gathers a [`Report`] (a table, or JSON). Machines are noisy: the things that
//! are compared (sandbox and native QuickJS, runtime variants) are interleaved A B A B, and
//! figures are medians or percentiles of many samples.

pub mod native;
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

pub use stats::Samples;
pub use workloads::{WORKLOADS, Workload};

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
    /// Only these sections (`eval`, `tools`, `compute`, `suspended`, `start-up`, `limits`,
    /// `techniques`); empty = all that are enabled.
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
        .map_err(|e| e.to_string())
    }
}

/// Everything one `codemode bench` run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Where it ran.
    pub machine: Machine,
    /// The figures, in the order measured.
    pub figures: Vec<Figure>,
}

/// The machine a report was measured on.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// CPU model (from /proc/cpuinfo).
    pub cpu: String,
    /// Logical CPUs available to this process.
    pub cpus: usize,
    /// Kernel release.
    pub kernel: String,
    /// The 1-minute load average when the run started (other work on the machine).
    pub load_average: Option<f64>,
    /// codemode's version.
    pub codemode: String,
    /// `true` when the native QuickJS baseline was built in.
    pub native_baseline: bool,
}

/// One measured figure.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    /// The group it belongs to (a target, or a study such as "limits cost").
    pub section: String,
    /// What was measured.
    pub name: String,
    /// The figure: a median or p50.
    pub value: f64,
    /// Its unit.
    pub unit: String,
    /// The 99th percentile, for latencies.
    pub p99: Option<f64>,
    /// The target, in words (e.g. "≤ 15 µs").
    pub target: Option<String>,
    /// Whether the target was met.
    pub met: Option<bool>,
    /// The native QuickJS figure measured in the same run, when there is one.
    pub native: Option<f64>,
    /// `value / native`.
    pub ratio: Option<f64>,
    /// Anything else worth knowing.
    pub note: Option<String>,
}

impl Figure {
    fn new(section: &str, name: impl Into<String>, value: f64, unit: &str) -> Self {
        Figure {
            section: section.into(),
            name: name.into(),
            value,
            unit: unit.into(),
            p99: None,
            target: None,
            met: None,
            native: None,
            ratio: None,
            note: None,
        }
    }

    fn p99(mut self, p99: f64) -> Self {
        self.p99 = Some(p99);
        self
    }

    /// A target "value ≤ limit" (or "≥" with `at_least`).
    fn target(mut self, text: &str, met: bool) -> Self {
        self.target = Some(text.into());
        self.met = Some(met);
        self
    }

    fn note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }
}

/// The runtime configuration measured: the defaults (snapshot, pooling, keep-resident,
/// pagemap_scan, fuel and epochs on), with a pool of `slots`.
pub fn runtime_config(slots: u32) -> RuntimeConfig {
    let mut config = RuntimeConfig::default();
    config.max_concurrent_evals(slots);
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
    let options = eval_options().max_tool_calls(Some(calls));
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

fn machine() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|rest| rest.split_once(':'))
        .map_or_else(|| "unknown".into(), |(_, m)| m.trim().to_string());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map_or_else(|_| std::env::consts::OS.into(), |k| k.trim().to_string());
    let load_average = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse().ok());
    Machine {
        cpu,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        kernel,
        load_average,
        codemode: env!("CARGO_PKG_VERSION").into(),
        native_baseline: native::AVAILABLE,
    }
}

/// Runs every measurement `options` asks for and gathers the report. `progress` receives a line
/// before each measurement (for stderr).
///
/// # Errors
/// When a runtime cannot be built.
pub fn run(options: &BenchOptions, progress: &mut dyn FnMut(&str)) -> Result<Report, String> {
    let mut figures = Vec::new();
    let machine = machine();

    progress("building the runtimes");
    let started = Instant::now();
    let runtime = options.runtime(runtime_config(64))?;
    figures.push(
        Figure::new(
            "start-up",
            "Runtime::new (cache warm unless first use)",
            started.elapsed().as_secs_f64() * 1e3,
            "ms",
        )
        .note("engine, pool, compiled snapshot from the cache"),
    );
    let mut limit_sets = vec![(limits_label(options, true), runtime)];
    if options.epoch_only_too && options.tweak.is_none() {
        let mut config = runtime_config(64);
        config.fuel(false);
        limit_sets.push((limits_label(options, false), options.runtime(config)?));
    }
    if options.wants("eval") {
        progress("trivial eval latency and throughput");
        figures.extend(eval_figures(&limit_sets, options));
    }
    if options.wants("tools") {
        for (label, runtime) in &limit_sets {
            progress(&format!("tool-call round trip, {label}"));
            let per_call = tool_round_trip(runtime, 10_000, 7);
            figures.push(
                Figure::new(
                    "tools",
                    format!(
                        "tool-call round trip, no-op Rust tool (10k calls in one eval), {label}"
                    ),
                    per_call.median(),
                    "µs/call",
                )
                .target("≤ 2 µs per call", per_call.median() <= 2.0),
            );
        }
    }
    if options.wants("compute") {
        let wanted = |w: &&Workload| {
            options.workloads.is_empty() || options.workloads.iter().any(|n| n == w.name)
        };
        for (label, runtime) in &limit_sets {
            for workload in WORKLOADS.iter().filter(wanted) {
                progress(&format!("compute: {}, {label}", workload.name));
                figures.push(compute_figure(
                    runtime,
                    workload,
                    options.compute_rounds,
                    label,
                ));
            }
        }
    }
    drop(limit_sets);
    if options.wants("suspended") {
        progress(&format!("{} suspended evals", options.suspended));
        figures.extend(suspended_figures(options)?);
    }
    if let Some(exe) = options
        .codemode_exe
        .as_deref()
        .filter(|_| options.wants("start-up"))
    {
        progress("process start-up");
        figures.extend(startup_figures(exe, options));
    }
    if options.limits_cost && options.wants("limits") {
        progress("cost of fuel and epoch interruption");
        figures.extend(limits_cost(options)?);
    }
    if options.techniques && options.wants("techniques") {
        progress("techniques, one at a time");
        figures.extend(techniques(options)?);
    }
    Ok(Report { machine, figures })
}

/// How CPU time is bounded in a measured runtime: `fuel` on or off (epoch interruption is always
/// on in the figures); "as configured" when `--no-fuel` or another tweak decides.
fn limits_label(options: &BenchOptions, fuel: bool) -> String {
    match (options.tweak.is_some(), fuel) {
        (true, _) => "limits as tweaked".into(),
        (false, true) => "fuel + epoch (default)".into(),
        (false, false) => "epoch only (fuel off)".into(),
    }
}

fn eval_figures(limit_sets: &[(String, Runtime)], options: &BenchOptions) -> Vec<Figure> {
    let runtimes: Vec<&Runtime> = limit_sets.iter().map(|(_, r)| r).collect();
    let latencies = interleaved_latency(&runtimes, workloads::TRIVIAL, options.eval_samples);
    let mut figures = Vec::new();
    for ((label, _), latency) in limit_sets.iter().zip(&latencies) {
        let (p50, p99) = (latency.median(), latency.percentile(99.0));
        figures.push(
            Figure::new("eval", format!("trivial eval `1 + 2`, {label}"), p50, "µs")
                .p99(p99)
                .target("p50 ≤ 15 µs, p99 ≤ 40 µs", p50 <= 15.0 && p99 <= 40.0)
                .note(format!(
                    "fresh instance; {label}, memory and output limits; outcome with ledger and stats"
                )),
        );
    }
    // Several short windows, the runtimes alternating, and the median of each: one long window
    // would report whichever slow or fast spell of the machine it happened to fall in.
    let window = options.throughput_time / THROUGHPUT_WINDOWS as u32;
    let mut rates = vec![Vec::with_capacity(THROUGHPUT_WINDOWS); limit_sets.len()];
    for _ in 0..THROUGHPUT_WINDOWS {
        for ((_, runtime), rates) in limit_sets.iter().zip(&mut rates) {
            rates.push(throughput(
                runtime,
                workloads::TRIVIAL,
                options.threads,
                window,
            ));
        }
    }
    for ((label, _), rates) in limit_sets.iter().zip(rates) {
        let rates = Samples::new(rates);
        let rate = rates.median();
        figures.push(
            Figure::new(
                "eval",
                format!("throughput, {} threads, {label}", options.threads),
                rate,
                "evals/s",
            )
            .target("≥ 100,000 evals/s on 2 cores", rate >= 100_000.0)
            .note(format!(
                "median of {THROUGHPUT_WINDOWS} windows of {} ms, alternating with the other runtimes; range {:.0}–{:.0}",
                window.as_millis(),
                rates.percentile(0.0),
                rates.percentile(100.0)
            )),
        );
    }
    figures
}

/// Windows of the throughput measurement.
const THROUGHPUT_WINDOWS: usize = 5;

fn compute_figure(runtime: &Runtime, workload: &Workload, rounds: usize, label: &str) -> Figure {
    let c = compute(runtime, workload, rounds);
    let figure = Figure::new(
        "compute",
        format!("{}: {}, {label}", workload.name, workload.what),
        c.sandbox.median(),
        "ms",
    );
    match (&c.native, &c.native_problem) {
        (Some(native), _) => {
            let ratio = c.sandbox.median() / native.median();
            let mut figure = figure.target("≤ 1.5× native QuickJS", ratio <= 1.5);
            figure.native = Some(native.median());
            figure.ratio = Some(ratio);
            figure
        }
        (None, problem) => figure.note(format!(
            "native baseline: {}",
            problem.as_deref().unwrap_or("unavailable")
        )),
    }
}

fn suspended_figures(options: &BenchOptions) -> Result<Vec<Figure>, String> {
    let runtime = options.runtime(suspension_config(options.suspended))?;
    let s = suspended(&runtime, options.suspended, options.eval_samples.min(2000));
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

fn startup_figures(exe: &Path, options: &BenchOptions) -> Vec<Figure> {
    match process_start(exe, options.startup_runs, options.first_run) {
        Ok((warm, first)) => {
            let mut figures = vec![
                Figure::new(
                    "start-up",
                    "`codemode run hello.js`, whole process, warm cache",
                    warm.median(),
                    "ms",
                )
                .p99(warm.percentile(99.0))
                .target("≤ 20 ms", warm.median() <= 20.0),
            ];
            if let Some(first) = first {
                figures.push(
                    Figure::new(
                        "start-up",
                        "`codemode run hello.js`, first run ever (empty cache)",
                        first.as_secs_f64() * 1e3,
                        "ms",
                    )
                    .note("compiles the guest, snapshots it, compiles the snapshot, caches it"),
                );
            }
            figures
        }
        Err(e) => {
            vec![Figure::new("start-up", "`codemode run hello.js`", f64::NAN, "ms").note(e)]
        }
    }
}

/// The compute workloads and the trivial eval under each combination of fuel metering and
/// epoch interruption, interleaved; relative to neither.
fn limits_cost(options: &BenchOptions) -> Result<Vec<Figure>, String> {
    let variants = [
        ("fuel + epoch (default)", true, true),
        ("epoch only", false, true),
        ("fuel only", true, false),
        ("neither", false, false),
    ];
    let runtimes = variants
        .iter()
        .map(|(_, fuel, epoch)| {
            let mut config = runtime_config(8);
            config.fuel(*fuel).epoch_interruption(*epoch);
            let options = BenchOptions {
                tweak: None,
                ..options.clone()
            };
            options.runtime(config)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut figures = Vec::new();
    let options_eval = eval_options();
    let tokio = tokio_current();
    for workload in [workloads::workload("loop"), workloads::workload("richards")]
        .into_iter()
        .flatten()
    {
        let mut times = vec![Vec::new(); runtimes.len()];
        for _ in 0..options.compute_rounds.max(3) {
            for (runtime, times) in runtimes.iter().zip(&mut times) {
                let started = Instant::now();
                let outcome =
                    tokio.block_on(runtime.eval(workload.source, &options_eval, &NoTools));
                times.push(started.elapsed());
                assert!(outcome.ok, "{} failed: {:?}", workload.name, outcome.error);
            }
        }
        let medians: Vec<f64> = times.iter().map(|t| Samples::millis(t).median()).collect();
        let neither = medians[3];
        for ((name, _, _), median) in variants.iter().zip(&medians) {
            figures.push(
                Figure::new(
                    "limits cost",
                    format!("{}: {name}", workload.name),
                    *median,
                    "ms",
                )
                .note(format!(
                    "{:+.1}% vs neither",
                    (median / neither - 1.0) * 100.0
                )),
            );
        }
    }
    let refs: Vec<&Runtime> = runtimes.iter().collect();
    let latencies = interleaved_latency(&refs, workloads::TRIVIAL, options.eval_samples);
    for ((name, _, _), l) in variants.iter().zip(&latencies) {
        figures.push(
            Figure::new(
                "limits cost",
                format!("trivial eval: {name}"),
                l.median(),
                "µs",
            )
            .p99(l.percentile(99.0)),
        );
    }
    Ok(figures)
}

/// The trivial eval with each technique switched off in turn (and the opt-in one on),
/// interleaved.
fn techniques(options: &BenchOptions) -> Result<Vec<Figure>, String> {
    type Tweak = fn(&mut RuntimeConfig);
    let variants: [(&str, Tweak); 7] = [
        ("defaults", |_| {}),
        ("with reset off the request path (opt-in)", |c| {
            c.reset_off_request_path(true);
        }),
        ("without pagemap_scan", |c| {
            c.pagemap_scan(false);
        }),
        ("without keep-resident (memory and table)", |c| {
            c.memory_keep_resident(0).table_keep_resident(0);
        }),
        ("without pooling", |c| {
            c.pooling(false);
        }),
        ("without snapshot", |c| {
            c.snapshot(false);
        }),
        ("none of them (no snapshot, no pooling)", |c| {
            c.snapshot(false).pooling(false);
        }),
    ];
    let runtimes = variants
        .iter()
        .map(|(_, tweak)| {
            let mut config = runtime_config(8);
            tweak(&mut config);
            options.runtime(config)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let refs: Vec<&Runtime> = runtimes.iter().collect();
    let latencies = interleaved_latency(&refs, workloads::TRIVIAL, options.eval_samples / 2);
    let mut figures = Vec::new();
    for ((name, _), l) in variants.iter().zip(&latencies) {
        figures.push(
            Figure::new(
                "techniques",
                format!("trivial eval: {name}"),
                l.median(),
                "µs",
            )
            .p99(l.percentile(99.0)),
        );
    }
    for (i, (name, _)) in variants.iter().enumerate().take(2) {
        let rate = throughput(
            &runtimes[i],
            workloads::TRIVIAL,
            options.threads,
            options.throughput_time,
        );
        figures.push(Figure::new(
            "techniques",
            format!("throughput, {} threads: {name}", options.threads),
            rate,
            "evals/s",
        ));
    }
    Ok(figures)
}

impl Report {
    /// The report as an aligned text table.
    pub fn table(&self) -> String {
        let m = &self.machine;
        let mut out = format!(
            "codemode {} — {} × {} — Linux {}{}\n\n",
            m.codemode,
            m.cpus,
            m.cpu,
            m.kernel,
            m.load_average
                .map(|l| format!(" — load {l:.2}"))
                .unwrap_or_default()
        );
        let header = [
            "section", "figure", "value", "p99", "native", "ratio", "target", "",
        ];
        let mut rows: Vec<[String; 8]> = vec![header.map(String::from)];
        for f in &self.figures {
            rows.push([
                f.section.clone(),
                f.name.clone(),
                format!("{} {}", number(f.value), f.unit),
                f.p99.map(number).unwrap_or_default(),
                f.native.map(number).unwrap_or_default(),
                f.ratio.map(|r| format!("{r:.2}×")).unwrap_or_default(),
                f.target.clone().unwrap_or_default(),
                match f.met {
                    Some(true) => "ok".into(),
                    Some(false) => "MISSED".into(),
                    None => String::new(),
                },
            ]);
        }
        let widths: Vec<usize> = (0..8)
            .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
            .collect();
        for row in &rows {
            let line: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, w)| format!("{cell:<w$}"))
                .collect();
            out.push_str(line.join("  ").trim_end());
            out.push('\n');
        }
        let notes: Vec<String> = self
            .figures
            .iter()
            .filter_map(|f| f.note.as_ref().map(|n| format!("- {}: {n}", f.name)))
            .collect();
        if !notes.is_empty() {
            out.push_str("\nnotes:\n");
            out.push_str(&notes.join("\n"));
            out.push('\n');
        }
        out
    }
}

fn number(v: f64) -> String {
    if v.is_nan() {
        "–".into()
    } else if v >= 10_000.0 {
        format!("{v:.0}")
    } else if v >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
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
            threads: 2,
            suspended: 8,
            codemode_exe: None,
            startup_runs: 0,
            first_run: false,
            limits_cost: false,
            techniques: false,
            epoch_only_too: true,
            guest: None,
            tweak: None,
            only: Vec::new(),
            workloads: vec!["loop".into()],
        };
        let report = run(&options, &mut |_| {}).expect("the bench runs");
        let sections: Vec<&str> = report.figures.iter().map(|f| f.section.as_str()).collect();
        for section in ["start-up", "eval", "tools", "compute", "suspended"] {
            assert!(
                sections.contains(&section),
                "no {section} figure: {sections:?}"
            );
        }
        for figure in &report.figures {
            assert!(figure.value.is_finite(), "{figure:?}");
        }
        let table = report.table();
        assert!(table.contains("trivial eval"));
        // Both ways of bounding CPU time are measured.
        assert!(table.contains("fuel + epoch (default)"), "{table}");
        assert!(table.contains("epoch only (fuel off)"), "{table}");
        serde_json::to_string(&report).expect("the report serialises");
    }
}
