//! Target: compute under limits ≤ 1.5× the same QuickJS compiled natively, for each workload of
//! `codemode::host::bench::WORKLOADS`. The native side needs `--features native-baseline`
//! (`cargo bench --features native-baseline --bench compute`); without it only the sandbox runs.

use std::time::Duration;

use codemode::host::bench::{self, WORKLOADS, native};
use codemode::{NoTools, Runtime};
use criterion::{Criterion, criterion_group, criterion_main};

fn compute(c: &mut Criterion) {
    let runtime = Runtime::new(&bench::runtime_config(8)).expect("building the runtime");
    let options = bench::eval_options();
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio");
    for workload in WORKLOADS {
        let mut group = c.benchmark_group(format!("compute/{}", workload.name));
        group
            .sample_size(10)
            .measurement_time(Duration::from_secs(4));
        group.bench_function("sandbox", |b| {
            b.iter(|| {
                let outcome = tokio.block_on(runtime.eval(workload.source, &options, &NoTools));
                assert!(outcome.ok, "{}: {:?}", workload.name, outcome.error);
                outcome
            })
        });
        if native::AVAILABLE {
            group.bench_function("native", |b| {
                b.iter(|| native::eval(workload.source).expect("native eval"))
            });
        }
        group.finish();
    }
}

criterion_group!(benches, compute);
criterion_main!(benches);
