//! Latency of the trivial eval (`1 + 2`): a fresh isolated instance with every limit on (section
//! `eval`, target p50 ≤ 15 µs, p99 ≤ 40 µs).

use std::time::Instant;

use codemode_runtime::{EvalOptions, NoTools, Runtime};

use crate::report::Figure;
use crate::{BATCH, BenchOptions, Samples, eval_options, tokio_current, workloads};

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

/// Latency of `code` on several runtimes, interleaved in batches so that a slow spell of the
/// machine hits every variant alike. One [`Samples`] (µs) per runtime.
///
/// # Panics
/// When a timed eval fails.
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

/// The trivial eval's p50 and p99 on each runtime of `limit_sets` (labelled by how CPU time is
/// bounded), interleaved.
pub(crate) fn figures(limit_sets: &[(String, Runtime)], options: &BenchOptions) -> Vec<Figure> {
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
    figures
}
