//! Target: compute under limits ≤ 1.5× the same QuickJS compiled natively, for each workload of
//! `codemode_bench::WORKLOADS`. The native side needs `--features native-baseline`
//! (`cargo bench --features native-baseline --bench compute`); without it only the sandbox runs.
//! The sandbox runs three ways: with the default limits (fuel + epoch), with epoch interruption
//! alone (the issue allows either), and with no CPU bound at all, the floor that no setting of
//! the limits goes below (not a target: nothing then stops a busy script).

use std::time::Duration;

use codemode::{NoTools, Runtime};
use codemode_bench::{self as bench, WORKLOADS, native};
use criterion::{Criterion, criterion_group, criterion_main};

fn compute(c: &mut Criterion) {
    let runtime_with = |fuel: bool, epoch: bool| {
        Runtime::new(&bench::cpu_bound_config(fuel, epoch)).expect("building the runtime")
    };
    let sandboxes = [
        ("sandbox", runtime_with(true, true)),
        ("sandbox_epoch_only", runtime_with(false, true)),
        ("sandbox_no_cpu_bound", runtime_with(false, false)),
    ];
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
        for (name, runtime) in &sandboxes {
            group.bench_function(*name, |b| {
                b.iter(|| {
                    let outcome = tokio.block_on(runtime.eval(workload.source, &options, &NoTools));
                    assert!(outcome.ok, "{}: {:?}", workload.name, outcome.error);
                    outcome
                })
            });
        }
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
