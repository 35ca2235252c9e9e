//! Target: `Runtime::eval` of a trivial script (fresh isolated instance, every limit on) — p50 ≤
//! 15 µs, p99 ≤ 40 µs — and ≥ 100,000 evals/s on 2 cores. `codemode bench` reports the
//! percentiles; criterion reports the mean and its spread.

use codemode::{NoTools, Runtime};
use codemode_bench::{self as bench, workloads};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn eval(c: &mut Criterion) {
    let runtime = Runtime::new(&bench::runtime_config(64)).expect("building the runtime");
    let options = bench::eval_options();
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio");
    let mut group = c.benchmark_group("eval");
    group.throughput(Throughput::Elements(1));
    group.bench_function("trivial", |b| {
        b.iter(|| {
            let outcome = tokio.block_on(runtime.eval(workloads::TRIVIAL, &options, &NoTools));
            assert!(outcome.ok);
            outcome
        })
    });
    group.bench_function("trivial_2_threads", |b| {
        b.iter_custom(|iters| bench::evals_on_threads(&runtime, workloads::TRIVIAL, 2, iters))
    });
    group.finish();
}

criterion_group!(benches, eval);
criterion_main!(benches);
