//! Times the toy interpreters of `docs/experiments/dispatch/vm.c` under wasmtime, with the
//! engine settings the runtime uses for compute (Cranelift at `Speed`), four ways: no
//! instrumentation, epoch checks, fuel, and both.
//!
//! The modules are not committed: build them from `vm.c` first, with Debian 12's clang 16
//! (`apt-get install clang-16 lld-16`; docs/experiments/dispatch/README.md has their checksums),
//! then pass their paths:
//!
//! ```text
//! cd docs/experiments/dispatch
//! clang-16 --target=wasm32 -mtail-call -O2 -nostdlib -Wl,--no-entry -DSWITCH vm.c -o switch.wasm
//! clang-16 --target=wasm32 -mtail-call -O2 -nostdlib -Wl,--no-entry -DTAIL vm.c -o tail.wasm
//! cd ../../..
//! cargo run --release -p codemode-runtime --example dispatch -- \
//!     docs/experiments/dispatch/switch.wasm docs/experiments/dispatch/tail.wasm
//! ```
//!
//! Each module exports `run(n: i64) -> i64`, the sum of `0..n`. The best of three runs of
//! `run(100_000_000)` is printed per module and setting.

// A command-line measurement: printing the table is its job.
#![expect(clippy::print_stdout, reason = "an example prints its results")]

use std::time::{Duration, Instant};

use wasmtime::{Config, Engine, Instance, Module, OptLevel, Store};

const ITERATIONS: i64 = 100_000_000;

fn main() -> wasmtime::Result<()> {
    let modules: Vec<String> = std::env::args().skip(1).collect();
    if modules.is_empty() {
        wasmtime::bail!("usage: dispatch MODULE.wasm...");
    }
    let settings = [
        ("none", false, false),
        ("epoch", true, false),
        ("fuel", false, true),
        ("fuel+epoch", true, true),
    ];
    println!("{:<40} {:>12} {:>12}", "module", "limits", "best of 3");
    for path in &modules {
        for (name, epoch, fuel) in settings {
            let best = best_of_three(path, epoch, fuel)?;
            println!("{path:<40} {name:>12} {:>9.1} ms", best.as_secs_f64() * 1e3);
        }
    }
    Ok(())
}

fn best_of_three(path: &str, epoch: bool, fuel: bool) -> wasmtime::Result<Duration> {
    let mut config = Config::new();
    config
        .epoch_interruption(epoch)
        .consume_fuel(fuel)
        .wasm_tail_call(true)
        .cranelift_opt_level(OptLevel::Speed);
    let engine = Engine::new(&config)?;
    let module = Module::from_file(&engine, path)?;
    let mut store = Store::new(&engine, ());
    if fuel {
        store.set_fuel(u64::MAX)?;
    }
    if epoch {
        // Never reached: the ticker is not running, so only the checks' cost is measured.
        store.set_epoch_deadline(u64::MAX / 2);
    }
    let instance = Instance::new(&mut store, &module, &[])?;
    let run = instance.get_typed_func::<i64, i64>(&mut store, "run")?;
    let expected = ITERATIONS * (ITERATIONS - 1) / 2;
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        let sum = run.call(&mut store, ITERATIONS)?;
        best = best.min(start.elapsed());
        if sum != expected {
            wasmtime::bail!("{path}: run returned {sum}, expected {expected}");
        }
    }
    Ok(best)
}
