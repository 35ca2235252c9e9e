//! [`run`]: every measurement a `codemode bench` run asks for, gathered into figures.

use std::path::Path;
use std::time::Instant;

use codemode_runtime::{NoTools, Runtime, RuntimeConfig};

use super::report::{Figure, Report, machine};
use super::*;

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
    let wanted = |w: &&Workload| {
        options.workloads.is_empty() || options.workloads.iter().any(|n| n == w.name)
    };
    if options.wants("compute") {
        for (label, runtime) in &limit_sets {
            for workload in WORKLOADS.iter().filter(wanted) {
                progress(&format!("compute: {}, {label}", workload.name));
                let figure = compute_figure("compute", runtime, workload, options, label);
                figures.push(match figure.ratio {
                    Some(ratio) => figure.target("≤ 1.5× native QuickJS", ratio <= 1.5),
                    None => figure,
                });
            }
        }
    }
    drop(limit_sets);
    if options.engine_floor && options.wants("floor") {
        let runtime = options.runtime(cpu_bound_config(false, false))?;
        for workload in WORKLOADS.iter().filter(wanted) {
            progress(&format!("compute: {}, no CPU bound", workload.name));
            figures.push(compute_figure(
                "floor",
                &runtime,
                workload,
                options,
                "no CPU bound (neither fuel nor epoch; not a target)",
            ));
        }
    }
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

/// A compute workload in the sandbox against native QuickJS, interleaved: the sandbox's median
/// with the native median and the ratio, or a note saying why there is no native figure.
fn compute_figure(
    section: &str,
    runtime: &Runtime,
    workload: &Workload,
    options: &BenchOptions,
    label: &str,
) -> Figure {
    let c = compute(runtime, workload, options.compute_rounds);
    let mut figure = Figure::new(
        section,
        format!("{}: {}, {label}", workload.name, workload.what),
        c.sandbox.median(),
        "ms",
    );
    match (&c.native, &c.native_problem) {
        (Some(native), _) => {
            figure.native = Some(native.median());
            figure.ratio = Some(c.sandbox.median() / native.median());
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
            let options = BenchOptions {
                tweak: None,
                ..options.clone()
            };
            options.runtime(cpu_bound_config(*fuel, *epoch))
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
