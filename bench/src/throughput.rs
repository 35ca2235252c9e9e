//! Evals per second of the trivial eval on several threads (section `eval`, target ≥ 100,000
//! evals/s on 2 cores).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use codemode_runtime::{NoTools, Runtime};

use crate::report::Figure;
use crate::{BATCH, BenchOptions, Samples, eval_options, tokio_current, workloads};

/// Windows of the throughput measurement.
const WINDOWS: usize = 5;

/// Evals per second of `code` on `threads` threads (each evaluating one script after another)
/// for `time`.
///
/// # Panics
/// When an eval fails.
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
///
/// # Panics
/// When an eval fails.
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

/// The trivial eval's throughput on each runtime of `limit_sets`: several short windows, the
/// runtimes alternating, and the median of each. One long window would report whichever slow or
/// fast spell of the machine it happened to fall in.
pub(crate) fn figures(limit_sets: &[(String, Runtime)], options: &BenchOptions) -> Vec<Figure> {
    let window = options.throughput_time / WINDOWS as u32;
    let mut rates = vec![Vec::with_capacity(WINDOWS); limit_sets.len()];
    for _ in 0..WINDOWS {
        for ((_, runtime), rates) in limit_sets.iter().zip(&mut rates) {
            rates.push(throughput(
                runtime,
                workloads::TRIVIAL,
                options.threads,
                window,
            ));
        }
    }
    let mut figures = Vec::new();
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
                "median of {WINDOWS} windows of {} ms, alternating with the other runtimes; range {:.0}–{:.0}",
                window.as_millis(),
                rates.percentile(0.0),
                rates.percentile(100.0)
            )),
        );
    }
    figures
}
