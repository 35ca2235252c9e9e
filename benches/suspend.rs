//! Targets of durable suspension (`codemode bench` section `suspend`): saving a parked eval to
//! a local file ≤ 200 µs p50 (with and without fsync), restore + resume ≤ 300 µs, saved size
//! ≤ 64 KiB — for the typical eval, one call awaiting a human after building a 10,000-element
//! array. Prints the saved size, then measures.
#![expect(
    clippy::print_stderr,
    reason = "a benchmark reports its figures on stderr"
)]

use codemode_bench::{self as bench, park_typical, resume_typical, write_file};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};

fn suspend(c: &mut Criterion) {
    let runtime = codemode::Runtime::new(&bench::runtime_config(8)).expect("building the runtime");
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio");
    let dir = std::env::temp_dir();
    let path = dir.join(format!("codemode-suspend-{}.bin", std::process::id()));
    // Each save writes a new file, as a store does (ext4 flushes a truncated file on close).
    let counter = std::cell::Cell::new(0u64);
    let fresh = || {
        counter.set(counter.get() + 1);
        dir.join(format!(
            "codemode-suspend-{}-{}.bin",
            std::process::id(),
            counter.get()
        ))
    };
    let parked = tokio.block_on(park_typical(&runtime));
    let bytes = parked.save();
    eprintln!(
        "suspend: saved {} bytes ({} bytes of pages before compression); capture took {:?}",
        bytes.len(),
        parked.memory_bytes(),
        parked.capture_time().unwrap_or_default()
    );
    let mut group = c.benchmark_group("suspend");
    // Parking itself runs the script; the batch setup parks, the routine saves what parked.
    group.bench_function("encode_and_write", |b| {
        b.iter_batched(
            || tokio.block_on(park_typical(&runtime)),
            |suspended| write_file(&fresh(), &suspended.save(), false),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("encode_and_write_fsync", |b| {
        b.iter_batched(
            || tokio.block_on(park_typical(&runtime)),
            |suspended| write_file(&fresh(), &suspended.save(), true),
            BatchSize::SmallInput,
        )
    });
    write_file(&path, &bytes, false);
    group.bench_function("restore_and_resume", |b| {
        b.iter(|| {
            let read = std::fs::read(&path).expect("reading");
            let loaded = codemode::runtime::Suspended::load(&read).expect("loading");
            tokio.block_on(resume_typical(&runtime, &loaded))
        })
    });
    group.finish();
    let _ = std::fs::remove_file(&path);
    for n in 1..=counter.get() {
        let _ = std::fs::remove_file(
            dir.join(format!("codemode-suspend-{}-{n}.bin", std::process::id())),
        );
    }
}

criterion_group!(benches, suspend);
criterion_main!(benches);
