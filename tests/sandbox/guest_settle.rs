//! The real guest against a misbehaving host: results that are not JSON, error descriptions that
//! are not objects, ids the guest never gave out. `Runtime`'s host never sends these, so this test
//! drives the guest module through a bare wasmtime linker and feeds `cm_resume` by hand. Each
//! case must settle the script's `await` with a catchable error (or nothing), never trap.

use codemode_runtime::Runtime;
use serde_json::{Value, json};
use wasmtime::{Caller, Engine, Instance, Linker, Memory, Module, Store, TypedFunc};

struct Host {
    calls: u32,
    envelope: Option<Value>,
}

fn memory(caller: &mut Caller<'_, Host>) -> Memory {
    caller
        .get_export("memory")
        .and_then(wasmtime::Extern::into_memory)
        .expect("the guest exports its memory")
}

/// The guest's WASI imports as an empty context gives them: no environment, writes to
/// stdout/stderr accepted and dropped, a clock, bytes for randomness.
fn add_wasi(linker: &mut Linker<Host>) {
    const WASI: &str = "wasi_snapshot_preview1";
    let put = |caller: &mut Caller<'_, Host>, at: u32, bytes: &[u8]| {
        let memory = memory(caller);
        memory.data_mut(caller)[at as usize..][..bytes.len()].copy_from_slice(bytes);
    };
    let sizes = move |mut caller: Caller<'_, Host>, count: u32, size: u32| -> i32 {
        put(&mut caller, count, &0u32.to_le_bytes());
        put(&mut caller, size, &0u32.to_le_bytes());
        0
    };
    let clock = move |mut caller: Caller<'_, Host>, _: i32, _: i64, out: u32| -> i32 {
        put(&mut caller, out, &1u64.to_le_bytes());
        0
    };
    let random = move |mut caller: Caller<'_, Host>, at: u32, len: u32| -> i32 {
        put(&mut caller, at, &vec![0x2a; len as usize]);
        0
    };
    let write = move |mut caller: Caller<'_, Host>, _: i32, iovs: u32, n: u32, out: u32| -> i32 {
        let memory = memory(&mut caller);
        let data = memory.data(&caller);
        let written: u32 = (0..n)
            .map(|i| {
                let len = &data[(iovs + i * 8 + 4) as usize..][..4];
                u32::from_le_bytes(len.try_into().expect("4 bytes"))
            })
            .sum();
        put(&mut caller, out, &written.to_le_bytes());
        0
    };
    let fdstat = move |mut caller: Caller<'_, Host>, _: i32, out: u32| -> i32 {
        put(&mut caller, out, &[0; 24]);
        0
    };
    linker.func_wrap(WASI, "environ_sizes_get", sizes).unwrap();
    linker
        .func_wrap(WASI, "environ_get", |_: i32, _: i32| 0)
        .unwrap();
    linker.func_wrap(WASI, "clock_time_get", clock).unwrap();
    linker.func_wrap(WASI, "random_get", random).unwrap();
    linker.func_wrap(WASI, "fd_write", write).unwrap();
    linker.func_wrap(WASI, "fd_fdstat_get", fdstat).unwrap();
    linker.func_wrap(WASI, "fd_close", |_: i32| 0).unwrap();
    linker
        .func_wrap(WASI, "fd_seek", |_: i32, _: i64, _: i32, _: i32| 70)
        .unwrap();
    linker
        .func_wrap(WASI, "proc_exit", |status: i32| -> wasmtime::Result<()> {
            Err(wasmtime::Error::msg(format!(
                "the guest exited with {status}"
            )))
        })
        .unwrap();
}

/// A guest that has started one call (id 1) to `t` and waits for it.
struct Waiting {
    store: Store<Host>,
    memory: Memory,
    alloc: TypedFunc<u32, u32>,
    resume: TypedFunc<(u32, u32, u32, u32), u32>,
}

impl Waiting {
    fn start(engine: &Engine, module: &Module) -> Waiting {
        let mut linker = Linker::<Host>::new(engine);
        add_wasi(&mut linker);
        linker
            .func_wrap(
                "codemode",
                "call_start",
                |mut caller: Caller<'_, Host>,
                 _: u32,
                 _: u32,
                 _: u32,
                 _: u32,
                 _: u32,
                 _: u32|
                 -> u32 {
                    caller.data_mut().calls += 1;
                    caller.data().calls
                },
            )
            .unwrap();
        linker
            .func_wrap(
                "codemode",
                "log",
                |_: Caller<'_, Host>, _: u32, _: u32, _: u32| {},
            )
            .unwrap();
        linker
            .func_wrap(
                "codemode",
                "finish",
                |mut caller: Caller<'_, Host>, ptr: u32, len: u32| {
                    let memory = memory(&mut caller);
                    let bytes = memory.data(&caller)[ptr as usize..][..len as usize].to_vec();
                    caller.data_mut().envelope = Some(serde_json::from_slice(&bytes).unwrap());
                },
            )
            .unwrap();
        let host = Host {
            calls: 0,
            envelope: None,
        };
        let mut store = Store::new(engine, host);
        let instance: Instance = linker.instantiate(&mut store, module).unwrap();
        for init in ["_initialize", "cm_init"] {
            if let Ok(f) = instance.get_typed_func::<(), ()>(&mut store, init) {
                f.call(&mut store, ()).unwrap();
            }
        }
        let memory = instance.get_memory(&mut store, "memory").unwrap();
        let alloc = instance.get_typed_func(&mut store, "cm_alloc").unwrap();
        let run: TypedFunc<(u32, u32, u32), u32> =
            instance.get_typed_func(&mut store, "cm_run").unwrap();
        let resume = instance.get_typed_func(&mut store, "cm_resume").unwrap();
        let mut waiting = Waiting {
            store,
            memory,
            alloc,
            resume,
        };
        let code = "try {\n  return ['resolved', await codemode.t({})];\n} catch (e) {\n  return [e.name, e.message, e.reason ?? null];\n}";
        let ptr = waiting.write(code.as_bytes());
        let status = run
            .call(&mut waiting.store, (ptr, code.len() as u32, 0))
            .unwrap();
        assert_eq!(status, 1, "the script should wait on its call");
        assert_eq!(waiting.store.data().calls, 1);
        waiting
    }

    fn write(&mut self, bytes: &[u8]) -> u32 {
        let ptr = self
            .alloc
            .call(&mut self.store, bytes.len() as u32)
            .unwrap();
        self.memory
            .write(&mut self.store, ptr as usize, bytes)
            .unwrap();
        ptr
    }

    /// `cm_resume(id, ok, payload)`: the status it returns.
    fn resume(&mut self, id: u32, ok: bool, payload: &[u8]) -> u32 {
        let ptr = self.write(payload);
        self.resume
            .call(
                &mut self.store,
                (id, u32::from(ok), ptr, payload.len() as u32),
            )
            .unwrap()
    }

    fn result(&self) -> Value {
        let envelope = self.store.data().envelope.clone().expect("finished");
        assert_eq!(envelope["ok"], json!(true), "{envelope}");
        envelope["result"].clone()
    }
}

#[test]
fn a_misbehaving_host_gets_catchable_errors_not_traps() {
    let engine = Engine::default();
    let module = Module::new(&engine, Runtime::GUEST_WASM).unwrap();
    let invalid_json = "codemode.t: the host sent invalid JSON";
    let cases: &[(&str, bool, &[u8], Value)] = &[
        (
            "a result",
            true,
            b"{\"a\":[1,2]}",
            json!(["resolved", {"a": [1, 2]}]),
        ),
        (
            "a result that is not JSON",
            true,
            b"{not json",
            json!(["ToolError", invalid_json]),
        ),
        (
            "an empty result",
            true,
            b"",
            json!(["ToolError", invalid_json]),
        ),
        (
            "a result with invalid UTF-8 (read lossily)",
            true,
            b"\"a\xffb\"",
            json!(["resolved", "a\u{fffd}b"]),
        ),
        (
            "an error description that is not JSON",
            false,
            b"nope",
            json!(["ToolError", invalid_json]),
        ),
        (
            "an error description that is not an object",
            false,
            b"42",
            json!([
                "ToolError",
                "codemode.t: the host sent an invalid error description",
                null
            ]),
        ),
        (
            "a denial",
            false,
            b"{\"type\":\"denied\",\"message\":\"no\",\"reason\":\"profile\"}",
            json!(["ToolCallDeniedError", "no", "profile"]),
        ),
        (
            "an error of an unknown type",
            false,
            b"{\"type\":\"weird\",\"message\":\"odd\"}",
            json!(["ToolError", "odd", null]),
        ),
    ];
    for (what, ok, payload, want) in cases {
        let mut guest = Waiting::start(&engine, &module);
        // An id the guest never gave out settles nothing: the script still waits.
        assert_eq!(guest.resume(7, true, b"1"), 1, "{what}: unknown id");
        assert_eq!(guest.resume(1, *ok, payload), 0, "{what}: did not finish");
        let got = guest.result();
        // Messages that quote the parser's own words are compared by their start.
        let got = match (&got, want) {
            (Value::Array(g), Value::Array(w)) if w.len() == 2 && g.len() == 3 => {
                let message = g[1].as_str().unwrap_or_default();
                let prefix = w[1].as_str().unwrap_or_default();
                assert!(message.starts_with(prefix), "{what}: {got}");
                json!([g[0], w[1]])
            }
            _ => got,
        };
        assert_eq!(&got, want, "{what}");
        // The call is settled once: resuming it again changes nothing.
        assert_eq!(guest.resume(1, true, b"2"), 0, "{what}: settled twice");
    }
}
