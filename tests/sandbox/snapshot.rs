//! What the fast paths must not change: instances of one snapshot share nothing (globals,
//! `Math.random`), built-ins work, a guest without `cm_init` still runs, and every combination
//! of snapshot, pooling and slot reset gives the same outcomes.

use codemode_runtime::{EvalOptions, EvalOutcome, NoTools, Runtime, RuntimeConfig};
use serde_json::{Value, json};

use crate::RUNTIME;

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio")
        .block_on(f)
}

fn eval_on(runtime: &Runtime, code: &str) -> EvalOutcome {
    block_on(runtime.eval(code, &EvalOptions::default(), &NoTools))
}

fn ok(outcome: &EvalOutcome) -> Value {
    assert!(outcome.ok, "{:?}", outcome.error);
    outcome.result.clone()
}

#[test]
fn globals_do_not_leak_between_evals() {
    for _ in 0..3 {
        let seen = ok(&eval_on(
            &RUNTIME,
            "const before = typeof globalThis.leak;\nglobalThis.leak = 1;\nJSON.parse = null;\nbefore",
        ));
        assert_eq!(seen, json!("undefined"));
        assert_eq!(
            ok(&eval_on(&RUNTIME, "JSON.parse('[1]')")),
            json!([1]),
            "a built-in replaced by one eval is intact in the next"
        );
    }
}

#[test]
fn math_random_differs_between_instances_of_one_snapshot() {
    let draws: Vec<Value> = (0..8)
        .map(|_| ok(&eval_on(&RUNTIME, "[Math.random(), Math.random()]")))
        .collect();
    for (i, a) in draws.iter().enumerate() {
        let pair = a.as_array().unwrap();
        let (x, y) = (pair[0].as_f64().unwrap(), pair[1].as_f64().unwrap());
        assert!((0.0..1.0).contains(&x) && (0.0..1.0).contains(&y), "{a}");
        assert_ne!(x, y, "consecutive draws differ");
        for b in &draws[i + 1..] {
            assert_ne!(a, b, "two evals drew the same sequence");
        }
    }
}

#[test]
fn built_ins_created_at_initialisation_work() {
    let code = r#"
const s = new Set([1, 2]);
const m = new Map([["a", 1]]);
[
  JSON.stringify({a: [1, 2]}), Math.max(1, 5), Reflect.ownKeys({x: 1}), [3, 1, 2].toSorted(),
  "a-b".split("-"), /b+/.exec("abbc")[0], s.has(2), m.get("a"), typeof Promise.withResolvers,
  new TextEncoder().encode("é").length, Number.parseFloat("1.5"), Symbol.for("x").description,
  Object.getOwnPropertyNames(Math).includes("random"),
]"#;
    assert_eq!(
        ok(&eval_on(&RUNTIME, code)),
        json!([
            "{\"a\":[1,2]}",
            5,
            ["x"],
            [1, 2, 3],
            ["a", "b"],
            "bb",
            true,
            1,
            "function",
            2,
            1.5,
            "x",
            true
        ])
    );
}

#[test]
fn every_fast_path_combination_gives_the_same_outcomes() {
    let scripts = [
        "1 + 2",
        "const o = {a: 1}; o.b = [o.a, 'x']; o",
        "async () => { await null; return [1, 2].map((x) => x * 2); }",
        "throw new TypeError('boom')",
        "const x = ;",
        "console.log('hi', {a: 1}); 'done'",
    ];
    let mut outcomes: Vec<Vec<Value>> = Vec::new();
    for (snapshot, pooling, reset_off) in [
        (true, true, true),
        (true, true, false),
        (false, true, true),
        (true, false, true),
        (false, false, false),
    ] {
        let mut config = RuntimeConfig::default();
        config
            .snapshot(snapshot)
            .pooling(pooling)
            .reset_off_request_path(reset_off)
            .max_concurrent_evals(4);
        let runtime = Runtime::new(&config).expect("building the runtime");
        outcomes.push(
            scripts
                .iter()
                .map(|code| {
                    let mut outcome = serde_json::to_value(eval_on(&runtime, code)).unwrap();
                    // Everything but the timings and the resource use must agree.
                    outcome["stats"] = Value::Null;
                    outcome
                })
                .collect(),
        );
    }
    for other in &outcomes[1..] {
        assert_eq!(&outcomes[0], other);
    }
}

#[test]
fn a_guest_without_cm_init_runs_without_a_snapshot() {
    // A minimal guest of the same ABI: every script's result is `7`.
    let wat = r#"(module
      (import "codemode" "finish" (func $finish (param i32 i32)))
      (memory (export "memory") 1)
      (data (i32.const 16) "{\"ok\":true,\"result\":7}")
      (func (export "cm_abi_version") (result i32) i32.const 2)
      (func (export "cm_alloc") (param i32) (result i32) i32.const 1024)
      (func (export "cm_run") (param i32 i32 i32) (result i32)
        (call $finish (i32.const 16) (i32.const 22))
        i32.const 0)
      (func (export "cm_resume") (param i32 i32 i32 i32) (result i32) i32.const 0))"#;
    let mut config = RuntimeConfig::default();
    config.cache_dir(None);
    let runtime =
        Runtime::with_guest(&config, &wat::parse_str(wat).unwrap()).expect("building the runtime");
    assert_eq!(ok(&eval_on(&runtime, "anything")), json!(7));
}
