//! What each technique of the runtime buys (section `techniques`, a study, with `--techniques`):
//! the trivial eval with each switched off in turn (and the opt-in off-path reset on),
//! interleaved, and the throughput of the first two variants.

use codemode_runtime::{Runtime, RuntimeConfig};

use crate::report::Figure;
use crate::{BenchOptions, interleaved_latency, runtime_config, throughput, workloads};

/// A change to the default configuration.
type Tweak = fn(&mut RuntimeConfig);

/// The variants, each a runtime of its own: the defaults first, then the opt-in (both also
/// measured for throughput), then each technique off.
const VARIANTS: [(&str, Tweak); 7] = [
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

/// Variants whose throughput is measured too.
const WITH_THROUGHPUT: usize = 2;

/// The section's figures.
///
/// # Errors
/// When a runtime cannot be built.
///
/// # Panics
/// When an eval fails.
pub(crate) fn figures(options: &BenchOptions) -> Result<Vec<Figure>, String> {
    let runtimes = VARIANTS
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
    for ((name, _), l) in VARIANTS.iter().zip(&latencies) {
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
    for ((name, _), runtime) in VARIANTS.iter().zip(&runtimes).take(WITH_THROUGHPUT) {
        let rate = throughput(
            runtime,
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
