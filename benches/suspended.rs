//! Target: 1,000 evals suspended at once in tool calls — ≤ 1 GiB RSS, and new evals still start
//! at full speed. Prints the memory figures, then measures the trivial eval while they wait.
#![expect(
    clippy::print_stderr,
    reason = "a benchmark reports its figures on stderr"
)]

use codemode::{NoTools, Runtime};
use codemode_bench::{self as bench, Parked, workloads};
use criterion::{Criterion, criterion_group, criterion_main};

const SUSPENDED: usize = 1000;

fn suspended(c: &mut Criterion) {
    let runtime = Runtime::new(&bench::suspension_config(SUSPENDED)).expect("building the runtime");
    let options = bench::eval_options();
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio");
    let mut group = c.benchmark_group("suspended");
    group.bench_function("trivial_eval_idle", |b| {
        b.iter(|| tokio.block_on(runtime.eval(workloads::TRIVIAL, &options, &NoTools)))
    });
    let idle = bench::memory();
    let parked = Parked::start(&runtime, SUSPENDED);
    let busy = bench::memory();
    eprintln!(
        "suspended: {SUSPENDED} evals in tool calls: RSS {:.0} MiB (idle {:.0} MiB, {:.0} KiB per eval), PSS {:.0} MiB",
        busy.rss_bytes as f64 / 1048576.0,
        idle.rss_bytes as f64 / 1048576.0,
        busy.rss_bytes.saturating_sub(idle.rss_bytes) as f64 / 1024.0 / SUSPENDED as f64,
        busy.pss_bytes as f64 / 1048576.0,
    );
    group.bench_function("trivial_eval_with_1000_suspended", |b| {
        b.iter(|| tokio.block_on(runtime.eval(workloads::TRIVIAL, &options, &NoTools)))
    });
    group.finish();
    parked.release();
}

criterion_group!(benches, suspended);
criterion_main!(benches);
