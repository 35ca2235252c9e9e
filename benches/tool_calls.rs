//! Target: a host tool-call round trip with a no-op Rust tool — ≤ 2 µs per call, measured as one
//! eval making 10,000 sequential calls (criterion's throughput is in calls).

use codemode::Runtime;
use codemode_bench::{self as bench, workloads};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const CALLS: u64 = 10_000;

fn tool_calls(c: &mut Criterion) {
    let runtime = Runtime::new(&bench::runtime_config(8)).expect("building the runtime");
    let mut options = bench::eval_options();
    options.max_tool_calls(Some(CALLS));
    let tools = workloads::noop_tools();
    let code = workloads::tool_loop(CALLS);
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio");
    let mut group = c.benchmark_group("tool_calls");
    group.throughput(Throughput::Elements(CALLS));
    group.sample_size(20);
    group.bench_function("noop_10k_sequential", |b| {
        b.iter(|| {
            let outcome = tokio.block_on(runtime.eval(&code, &options, &tools));
            assert!(outcome.ok, "{:?}", outcome.error);
            outcome
        })
    });
    group.finish();
}

criterion_group!(benches, tool_calls);
criterion_main!(benches);
