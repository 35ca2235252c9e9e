//! What fuel metering and epoch interruption cost (section `limits`, a study): the loop and
//! Richards-style workloads and the trivial eval under each combination of the two,
//! interleaved, relative to neither.

use std::time::Instant;

use codemode_runtime::{NoTools, Runtime};

use crate::report::Figure;
use crate::{
    BenchOptions, Samples, cpu_bound_config, eval_options, interleaved_latency, tokio_current,
    workloads,
};

/// The four combinations: label, fuel, epoch. "neither" is last: the others are relative to it.
const VARIANTS: [(&str, bool, bool); 4] = [
    ("fuel + epoch (default)", true, true),
    ("epoch only", false, true),
    ("fuel only", true, false),
    ("neither", false, false),
];

/// The section's figures. The limits are this study's variable, so `options.tweak` is not
/// applied.
///
/// # Errors
/// When a runtime cannot be built.
///
/// # Panics
/// When an eval fails.
pub(crate) fn figures(options: &BenchOptions) -> Result<Vec<Figure>, String> {
    let untweaked = BenchOptions {
        tweak: None,
        ..options.clone()
    };
    let runtimes = VARIANTS
        .iter()
        .map(|(_, fuel, epoch)| untweaked.runtime(cpu_bound_config(*fuel, *epoch)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut figures = Vec::new();
    let eval_options = eval_options();
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
                    tokio.block_on(runtime.eval(workload.source, &eval_options, &NoTools));
                times.push(started.elapsed());
                assert!(outcome.ok, "{} failed: {:?}", workload.name, outcome.error);
            }
        }
        let medians: Vec<f64> = times.iter().map(|t| Samples::millis(t).median()).collect();
        let neither = medians[3];
        for ((name, _, _), median) in VARIANTS.iter().zip(&medians) {
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
    for ((name, _, _), l) in VARIANTS.iter().zip(&latencies) {
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
