//! Target: `codemode run hello.js`, whole process, warm cache — ≤ 20 ms. Also `Runtime::new`
//! with a warm cache (engine, pool, compiled snapshot).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use codemode::Runtime;
use codemode_bench::{self as bench, workloads};
use criterion::{Criterion, criterion_group, criterion_main};

fn startup(c: &mut Criterion) {
    let mut group = c.benchmark_group("startup");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(5));
    let config = bench::runtime_config(2);
    drop(Runtime::new(&config).expect("building the runtime (fills the cache)"));
    group.bench_function("runtime_new_warm_cache", |b| {
        b.iter(|| Runtime::new(&config).expect("building the runtime"))
    });

    let dir = std::env::temp_dir().join(format!("codemode-bench-startup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let script: PathBuf = dir.join("hello.js");
    std::fs::write(&script, workloads::HELLO).expect("writing hello.js");
    let run = || {
        let status = Command::new(env!("CARGO_BIN_EXE_codemode"))
            .arg("run")
            .arg(&script)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("running codemode");
        assert!(status.success(), "codemode run hello.js: {status}");
    };
    run();
    group.bench_function("codemode_run_hello_warm", |b| b.iter(run));
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, startup);
criterion_main!(benches);
