//! The WASI functions the runtime implements itself (runtime/src/wasi.rs) give what
//! wasmtime-wasi gives for an empty context: host clocks and randomness, no environment,
//! stdout/stderr accepted and discarded, `EBADF`/`ESPIPE` where wasmtime-wasi has them, traps for
//! pointers outside memory and unknown clocks. (The clock, random and environment results were
//! checked against wasmtime-wasi's own functions by leaving runtime/src/wasi.rs's definitions
//! out; its fd_* functions cannot be: inside a tokio runtime they panic the host, trying to
//! start a runtime of their own — which codemode's own definitions also put an end to.)

use codemode_runtime::{
    ErrorKind, EvalOptions, EvalOutcome, NoTools, Runtime, RuntimeConfig, RuntimeError,
};
use serde_json::json;

/// A guest whose `cm_run` calls WASI functions and reports each result as a two-digit string.
const GUEST: &str = r#"(module
  (import "wasi_snapshot_preview1" "clock_time_get" (func $clock (param i32 i64 i32) (result i32)))
  (import "wasi_snapshot_preview1" "random_get" (func $random (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $env_sizes (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_seek" (func $seek (param i32 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_close" (func $close (param i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_fdstat_get" (func $fdstat (param i32 i32) (result i32)))
  (import "codemode" "finish" (func $finish (param i32 i32)))
  (memory (export "memory") 1)
  ;; 16 results: ["..", "..", ...]
  (data (i32.const 0) "{\"ok\":true,\"result\":[\"..\",\"..\",\"..\",\"..\",\"..\",\"..\",\"..\",\"..\",\"..\",\"..\",\"..\",\"..\",\"..\",\"..\",\"..\",\"..\"]}")
  ;; an iovec at 300: 10 bytes at 0
  (data (i32.const 300) "\00\00\00\00\0a\00\00\00")
  (func $put (param $i i32) (param $v i32)
    (local $at i32)
    (local.set $at (i32.add (i32.const 22) (i32.mul (local.get $i) (i32.const 5))))
    (i32.store8 (local.get $at) (i32.add (i32.const 48) (i32.div_u (local.get $v) (i32.const 10))))
    (i32.store8 (i32.add (local.get $at) (i32.const 1)) (i32.add (i32.const 48) (i32.rem_u (local.get $v) (i32.const 10)))))
  (func (export "cm_abi_version") (result i32) i32.const 2)
  (func (export "cm_alloc") (param i32) (result i32) i32.const 4096)
  (func (export "cm_resume") (param i32 i32 i32 i32) (result i32) i32.const 0)
  (func (export "cm_run") (param i32 i32 i32) (result i32)
    {trap}
    (call $put (i32.const 0) (call $clock (i32.const 0) (i64.const 0) (i32.const 256)))
    ;; realtime after 2020 (1.6e18 ns)
    (call $put (i32.const 1) (i64.gt_u (i64.load (i32.const 256)) (i64.const 1600000000000000000)))
    (call $put (i32.const 2) (call $clock (i32.const 1) (i64.const 0) (i32.const 264)))
    (call $put (i32.const 3) (call $clock (i32.const 2) (i64.const 0) (i32.const 272)))
    (call $put (i32.const 4) (call $clock (i32.const 1) (i64.const 0) (i32.const 65528)))
    (call $put (i32.const 5) (call $random (i32.const 512) (i32.const 32)))
    ;; 32 random bytes are not all zero
    (call $put (i32.const 6) (i64.ne (i64.or (i64.load (i32.const 512)) (i64.load (i32.const 520))) (i64.const 0)))
    (call $put (i32.const 7) (call $random (i32.const 65500) (i32.const 36)))
    (call $put (i32.const 8) (call $env_sizes (i32.const 280) (i32.const 284)))
    (call $put (i32.const 9) (call $write (i32.const 1) (i32.const 300) (i32.const 1) (i32.const 320)))
    (call $put (i32.const 10) (i32.load (i32.const 320)))
    (call $put (i32.const 11) (call $write (i32.const 5) (i32.const 300) (i32.const 1) (i32.const 320)))
    (call $put (i32.const 12) (call $seek (i32.const 2) (i64.const 0) (i32.const 0) (i32.const 330)))
    (call $put (i32.const 13) (call $fdstat (i32.const 0) (i32.const 400)))
    (call $put (i32.const 14) (call $close (i32.const 1)))
    (call $put (i32.const 15) (call $write (i32.const 1) (i32.const 300) (i32.const 1) (i32.const 320)))
    (call $finish (i32.const 0) (i32.const 102))
    i32.const 0))"#;

fn run(trap: &str) -> EvalOutcome {
    let mut config = RuntimeConfig::default();
    config.cache_dir(None).max_concurrent_evals(2);
    let guest = GUEST.replace("{trap}", trap);
    let runtime = Runtime::with_guest(&config, &wat::parse_str(&guest).unwrap())
        .expect("building the runtime");
    // On a worker of a multi-thread runtime, as a server runs evals.
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio");
    tokio
        .block_on(
            tokio.spawn(async move { runtime.eval("", &EvalOptions::default(), &NoTools).await }),
        )
        .expect("the eval task")
}

#[test]
fn bad_pointers_and_clock_ids_trap() {
    for (call, needle) in [
        (
            "(call $random (i32.const 65530) (i32.const 100))",
            "out of bounds",
        ),
        (
            "(call $clock (i32.const 1) (i64.const 0) (i32.const 65530))",
            "out of bounds",
        ),
        (
            "(call $env_sizes (i32.const 70000) (i32.const 0))",
            "out of bounds",
        ),
        (
            "(call $write (i32.const 1) (i32.const 65534) (i32.const 1) (i32.const 0))",
            "out of bounds",
        ),
        (
            "(call $fdstat (i32.const 1) (i32.const 65530))",
            "out of bounds",
        ),
        (
            "(call $clock (i32.const 9) (i64.const 0) (i32.const 0))",
            "Invalid enum value",
        ),
    ] {
        let outcome = run(&format!("(drop {call})"));
        let error = outcome.error.expect("a trap");
        assert_eq!(error.kind, ErrorKind::Internal, "{call}");
        assert!(error.message.contains(needle), "{call}: {}", error.message);
    }
}

#[test]
fn the_sandboxs_own_wasi_functions() {
    let outcome = run("");
    assert!(outcome.ok, "{:?}", outcome.error);
    let want = json!([
        "00", // clock_time_get(realtime)
        "01", // … after 2020
        "00", // clock_time_get(monotonic)
        "08", // clock_time_get(process cputime): EBADF
        "00", // clock_time_get(monotonic) into the last 8 bytes
        "00", // random_get
        "01", // … not all zeros
        "00", // random_get up to the end of memory
        "00", // environ_sizes_get
        "00", // fd_write(stdout)
        "10", // … all 10 bytes "written"
        "08", // fd_write(5): EBADF
        "70", // fd_seek(stderr): ESPIPE
        "00", // fd_fdstat_get(stdin)
        "00", // fd_close(stdout)
        "08", // fd_write(stdout) once closed: EBADF
    ]);
    assert_eq!(outcome.result, want);
}

/// WASI is only what the guest imports: a guest importing any other WASI function (here, one
/// that opens files) is refused when it is linked, with the import named.
#[test]
fn a_guest_importing_other_wasi_functions_is_refused_naming_the_import() {
    let guest = r#"(module
      (import "wasi_snapshot_preview1" "path_open"
        (func (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
      (memory (export "memory") 1)
      (func (export "cm_abi_version") (result i32) i32.const 2)
      (func (export "cm_alloc") (param i32) (result i32) i32.const 4096)
      (func (export "cm_resume") (param i32 i32 i32 i32) (result i32) i32.const 0)
      (func (export "cm_run") (param i32 i32 i32) (result i32) i32.const 0))"#;
    let mut config = RuntimeConfig::default();
    config.cache_dir(None);
    let Err(error) = Runtime::with_guest(&config, &wat::parse_str(guest).unwrap()) else {
        panic!("a guest importing path_open was linked");
    };
    assert!(matches!(error, RuntimeError::Link(_)), "{error:?}");
    // The link error's chain, as `codemode` prints it.
    let mut said = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        said.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    assert!(said.contains("wasi_snapshot_preview1::path_open"), "{said}");
}
