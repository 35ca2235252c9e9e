//! The host side of the ABI: a guest module that makes arbitrary host calls — any pointer, any
//! length, any bytes in its memory, any status returned — against the runtime's real linker.
//! Whatever it does, the eval ends (no hang), nothing panics, and the outcome is well formed.
//! A misbehaving *guest module* may end as `internal` (the guest is codemode's own code); what
//! matters here is that the host survives it.

use std::fmt::Write as _;
use std::sync::LazyLock;

use codemode_runtime::{EvalOptions, FnTools, Runtime, RuntimeConfig};
use serde_json::json;

static TOKIO: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
});

/// A `u32` from 4 bytes of `data` at `at` (0 past the end), mapped so that small, edge and huge
/// values are all likely.
fn word(data: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    for (i, slot) in b.iter_mut().enumerate() {
        *slot = data.get(at + i).copied().unwrap_or(0);
    }
    let raw = u32::from_le_bytes(b);
    match raw % 8 {
        0 => raw >> 3,                 // anything
        1 => 0xffff_ffff - (raw >> 8), // near the top
        _ => (raw >> 3) % 70_000,      // inside or just past the one 64 KiB page
    }
}

/// The module `data` describes: its memory holds `data`; `cm_run` makes one host call per
/// 13-byte op (`kind`, then three words) and returns the last word as its status; `cm_resume`
/// does the same from the other end.
fn module(data: &[u8]) -> String {
    let mut body = String::new();
    for (n, op) in data.chunks(13).take(32).enumerate() {
        let kind = op.first().copied().unwrap_or(0);
        let (a, b, c) = (word(op, 1), word(op, 5), word(op, 9));
        let _ = match kind % 4 {
            0 => write!(
                body,
                "(drop (call $call_start (i32.const {a}) (i32.const {b}) (i32.const {c}) (i32.const {})))",
                b ^ c
            ),
            1 => write!(
                body,
                "(call $log (i32.const {}) (i32.const {a}) (i32.const {b}))",
                kind >> 2
            ),
            2 => write!(body, "(call $finish (i32.const {a}) (i32.const {b}))"),
            _ => write!(
                body,
                "(drop (memory.grow (i32.const {})))",
                a % 4 + n as u32 % 2
            ),
        };
    }
    let status = word(data, data.len().saturating_sub(4)) % 4;
    let bytes: String = data
        .iter()
        .take(4096)
        .map(|b| format!("\\{b:02x}"))
        .collect();
    format!(
        r#"(module
  (import "codemode" "call_start" (func $call_start (param i32 i32 i32 i32) (result i32)))
  (import "codemode" "log" (func $log (param i32 i32 i32)))
  (import "codemode" "finish" (func $finish (param i32 i32)))
  (memory (export "memory") 1 4)
  (data (i32.const 0) "{bytes}")
  (func (export "cm_abi_version") (result i32) (i32.const 1))
  (func (export "cm_alloc") (param i32) (result i32) (i32.const 8192))
  (func (export "cm_run") (param i32 i32 i32) (result i32) {body} (i32.const {status}))
  (func (export "cm_resume") (param i32 i32 i32 i32) (result i32) {body} (i32.const 0))
)"#
    )
}

/// Input: the ops and memory of a guest module (see `module`).
pub fn abi(data: &[u8]) {
    let wasm = wat::parse_str(module(data)).expect("the generated module is valid WAT");
    let mut config = RuntimeConfig::default();
    config
        .max_concurrent_evals(1)
        .cache_dir(None)
        .pooling(false);
    let Ok(runtime) = TOKIO.block_on(async { Runtime::with_guest(&config, &wasm) }) else {
        return; // refused at link time: fine
    };
    let tools = FnTools::new().sync_tool("echo", |args| Ok(json!({ "echo": args })));
    let mut options = EvalOptions::default();
    options.timeout(Some(std::time::Duration::from_secs(2)));
    let outcome = TOKIO.block_on(runtime.eval("", &options, &tools));
    assert_eq!(outcome.ok, outcome.error.is_none());
    serde_json::to_string(&outcome).expect("the outcome serialises");
}
