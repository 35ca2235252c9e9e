//! Each limit fails the eval with its own kind, and the runtime stays usable afterwards.

use std::time::Duration;

use codemode_runtime::{
    BoxFuture, CallContext, CallStatus, ErrorKind, EvalOptions, FnTools, ToolError, ToolHost,
};
use serde_json::{Value, json};

use crate::{assert_still_usable, basic_tools, eval_with, failed, failed_in, ok, opts, show};

fn sleepy_tools() -> FnTools {
    basic_tools().tool("sleep5", |_| async {
        tokio::time::sleep(Duration::from_secs(5)).await;
        Ok(json!("woke"))
    })
}

struct Case {
    what: &'static str,
    code: &'static str,
    options: EvalOptions,
    kind: ErrorKind,
}

fn cases() -> Vec<Case> {
    let ms = Duration::from_millis;
    vec![
        Case {
            what: "fuel",
            code: "while (true) {}",
            options: opts().fuel(Some(5_000_000)).clone(),
            kind: ErrorKind::OutOfFuel,
        },
        Case {
            what: "fuel after a tool call",
            code: "await codemode.echo({});\nlet i = 0;\nwhile (true) { i++; }",
            options: opts().fuel(Some(5_000_000)).clone(),
            kind: ErrorKind::OutOfFuel,
        },
        Case {
            what: "memory",
            code: "const a = [];\nwhile (true) a.push(new Array(1000).fill(1));",
            options: opts().memory(16 << 20).clone(),
            kind: ErrorKind::MemoryLimit,
        },
        Case {
            what: "memory, typed arrays",
            code: "const keep = [];\nwhile (true) keep.push(new Uint8Array(1 << 20));",
            options: opts().memory(16 << 20).clone(),
            kind: ErrorKind::MemoryLimit,
        },
        Case {
            what: "timeout in a tool call",
            code: "await codemode.sleep5({});\n'finished'",
            options: opts().timeout(Some(ms(300))).clone(),
            kind: ErrorKind::Timeout,
        },
        Case {
            what: "timeout in a CPU loop",
            code: "while (true) {}",
            options: opts().fuel(None).timeout(Some(ms(300))).clone(),
            kind: ErrorKind::Timeout,
        },
        Case {
            // Calls that finish at once leave the deadline as it was: it still fires.
            what: "timeout in a CPU loop after tool calls",
            code: "for (let i = 0; i < 100; i++) await codemode.echo({i});\nwhile (true) {}",
            options: opts().fuel(None).timeout(Some(ms(300))).clone(),
            kind: ErrorKind::Timeout,
        },
        Case {
            what: "output: logs",
            code: "for (let i = 0; i < 100000; i++) console.log('line ' + i + ' ' + 'x'.repeat(50));",
            options: opts().max_output(10 << 10).clone(),
            kind: ErrorKind::OutputLimit,
        },
        Case {
            what: "output: result",
            code: "'x'.repeat(20000)",
            options: opts().max_output(10 << 10).clone(),
            kind: ErrorKind::OutputLimit,
        },
        Case {
            what: "output: logs and result together",
            code: "console.log('y'.repeat(6000));\n'x'.repeat(6000)",
            options: opts().max_output(10 << 10).clone(),
            kind: ErrorKind::OutputLimit,
        },
        Case {
            what: "tool calls",
            code: "const out = [];\nfor (let i = 0; i < 10; i++) out.push(await codemode.echo({i}));\nout",
            options: opts().max_tool_calls(Some(3)).clone(),
            kind: ErrorKind::ToolLimit,
        },
        Case {
            what: "stack depth",
            code: "function f(n) { return f(n + 1) + 1; }\nf(0)",
            options: opts(),
            kind: ErrorKind::StackOverflow,
        },
        Case {
            what: "stack depth after a tool call, caught",
            code: "await codemode.echo({});\nconst f = (n) => 1 + f(n + 1);\ntry { f(0) } catch (e) { 'caught' }",
            options: opts(),
            kind: ErrorKind::StackOverflow,
        },
    ]
}

#[tokio::test]
async fn each_limit_has_its_own_kind_and_the_runtime_stays_usable() {
    let tools = sleepy_tools();
    for case in cases() {
        let outcome = eval_with(case.code, &case.options, &tools).await;
        let error = failed_in(case.what, &outcome, case.kind);
        assert!(
            !error.message.is_empty(),
            "{}: {}",
            case.what,
            show(&outcome)
        );
        let output: usize = outcome.logs.iter().map(|l| l.message.len()).sum();
        assert!(
            output as u64 <= case.options.max_output,
            "{}: logs past the limit were kept",
            case.what
        );
        assert!(
            outcome.stats.memory_peak_bytes <= case.options.memory,
            "{}: memory peak {} above the limit",
            case.what,
            outcome.stats.memory_peak_bytes
        );
        if case.kind == ErrorKind::OutOfFuel {
            assert_eq!(
                outcome.stats.fuel_used,
                case.options.fuel.unwrap(),
                "{}: {}",
                case.what,
                show(&outcome)
            );
        }
        assert_still_usable().await;
    }
}

#[tokio::test]
async fn the_tool_limit_keeps_the_allowed_calls_in_the_ledger() {
    let code = "for (let i = 0; i < 10; i++) await codemode.echo({i});";
    let outcome = eval_with(code, opts().max_tool_calls(Some(3)), &basic_tools()).await;
    let error = failed(&outcome, ErrorKind::ToolLimit);
    assert!(
        error.message.contains('3'),
        "the message names the limit: {}",
        show(&outcome)
    );
    let ledger: Vec<_> = outcome
        .tool_calls
        .iter()
        .map(|r| (r.id, r.tool.as_str(), r.status))
        .collect();
    assert_eq!(
        ledger,
        [
            (1, "echo", CallStatus::Ok),
            (2, "echo", CallStatus::Ok),
            (3, "echo", CallStatus::Ok)
        ],
        "{}",
        show(&outcome)
    );
}

#[tokio::test]

async fn the_tool_limit_keeps_unawaited_allowed_calls_in_the_ledger() {
    let code = "const ps = [];\nfor (let i = 0; i < 10; i++) ps.push(codemode.echo({i}));\nawait Promise.all(ps)";
    let outcome = eval_with(code, opts().max_tool_calls(Some(3)), &basic_tools()).await;
    failed(&outcome, ErrorKind::ToolLimit);
    let ids: Vec<_> = outcome
        .tool_calls
        .iter()
        .map(|r| (r.id, r.tool.as_str()))
        .collect();
    assert_eq!(
        ids,
        [(1, "echo"), (2, "echo"), (3, "echo")],
        "{}",
        show(&outcome)
    );
}

#[tokio::test]
async fn within_the_limits_nothing_fails() {
    let code = "const out = [];\nfor (let i = 0; i < 3; i++) out.push(await codemode.echo({i}));\nconsole.log('x'.repeat(100));\nout.length";
    let mut options = opts();
    options
        .max_tool_calls(Some(3))
        .max_output(1024)
        .memory(16 << 20)
        .fuel(Some(100_000_000));
    let outcome = eval_with(code, &options, &basic_tools()).await;
    assert_eq!(ok(&outcome), &json!(3), "{}", show(&outcome));
    assert!(
        outcome.stats.fuel_used > 0 && outcome.stats.fuel_used < 100_000_000,
        "{}",
        show(&outcome)
    );
}

/// `ask` sleeps `sleep`, holding a timeout pause while it does when `pause` is set.
struct Patient {
    pause: bool,
    sleep: Duration,
}

impl ToolHost for Patient {
    fn call<'a>(
        &'a self,
        _name: &'a str,
        _args: Value,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let guard = self.pause.then(|| cx.pause_timeout());
            tokio::time::sleep(self.sleep).await;
            drop(guard);
            Ok(json!("approved"))
        })
    }
    fn tool_names(&self) -> Vec<String> {
        vec!["ask".into()]
    }
}

const TWO_ASKS: &str =
    "const a = await codemode.ask({});\nconst b = await codemode.ask({});\n[a, b]";

#[tokio::test]
async fn pause_timeout_stops_the_clock() {
    // Each call sleeps longer than the whole timeout, under a pause.
    let mut options = opts();
    options.timeout(Some(Duration::from_millis(300)));
    let tools = Patient {
        pause: true,
        sleep: Duration::from_millis(450),
    };
    let outcome = eval_with(TWO_ASKS, &options, &tools).await;
    assert_eq!(
        ok(&outcome),
        &json!(["approved", "approved"]),
        "{}",
        show(&outcome)
    );
    assert_eq!(outcome.tool_calls.len(), 2, "{}", show(&outcome));
}

#[tokio::test]
async fn without_a_pause_a_slow_tool_times_out() {
    let mut options = opts();
    options.timeout(Some(Duration::from_millis(300)));
    let tools = Patient {
        pause: false,
        sleep: Duration::from_millis(450),
    };
    let outcome = eval_with(TWO_ASKS, &options, &tools).await;
    failed(&outcome, ErrorKind::Timeout);
    assert_eq!(outcome.tool_calls.len(), 1, "{}", show(&outcome));
    assert_eq!(
        outcome.tool_calls[0].status,
        CallStatus::Error,
        "{}",
        show(&outcome)
    );
    assert!(
        outcome.tool_calls[0]
            .reason
            .as_deref()
            .unwrap_or_default()
            .starts_with("unfinished"),
        "{}",
        show(&outcome)
    );
    assert_still_usable().await;
}

#[tokio::test]
async fn a_short_paused_call_within_the_timeout_is_fine() {
    // The pause guard itself does no harm when the call is quick.
    let mut options = opts();
    options.timeout(Some(Duration::from_secs(5)));
    let tools = Patient {
        pause: true,
        sleep: Duration::from_millis(20),
    };
    let outcome = eval_with(TWO_ASKS, &options, &tools).await;
    assert_eq!(
        ok(&outcome),
        &json!(["approved", "approved"]),
        "{}",
        show(&outcome)
    );
}

/// Cancelling stops guest code even in a busy loop (a future cannot be dropped mid-call), keeps
/// the ledger, and leaves the runtime usable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_stops_a_busy_loop() {
    let runtime = &*crate::RUNTIME;
    let token = codemode_runtime::CancellationToken::new();
    // The script's one call says it is under way; the busy loop follows its answer. The
    // cancellation waits for that event (no fixed delay).
    let called = std::sync::Arc::new(tokio::sync::Notify::new());
    let canceller = token.clone();
    let heard = called.clone();
    tokio::spawn(async move {
        heard.notified().await;
        canceller.cancel();
    });
    let mut options = codemode_runtime::EvalOptions::default();
    options.fuel(None).timeout(Some(Duration::from_secs(60)));
    let tools = crate::basic_tools().sync_tool("started", move |args| {
        called.notify_one();
        Ok(args)
    });
    let outcome = runtime
        .eval_cancellable(
            runtime.allocate_eval_id(),
            "await codemode.started({}); while (true) {}",
            &options,
            &tools,
            &token,
        )
        .await;
    // Kind `cancelled`, not `timeout`: the cancellation, not the 60 s clock, ended it.
    let error = outcome.error.as_ref().expect("cancelled");
    assert_eq!(
        (error.kind, error.message.as_str()),
        (
            codemode_runtime::ErrorKind::Cancelled,
            "the eval was cancelled by its caller"
        ),
        "{outcome:?}"
    );
    assert_eq!(outcome.tool_calls.len(), 1);

    // Cancelled while waiting on a tool: the cancellation follows the tool's start.
    let token = codemode_runtime::CancellationToken::new();
    let sleeping = std::sync::Arc::new(tokio::sync::Notify::new());
    let canceller = token.clone();
    let heard = sleeping.clone();
    tokio::spawn(async move {
        heard.notified().await;
        canceller.cancel();
    });
    let sleepy = codemode_runtime::FnTools::new().tool("sleep", move |_| {
        let sleeping = sleeping.clone();
        async move {
            sleeping.notify_one();
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok(serde_json::Value::Null)
        }
    });
    let outcome = runtime
        .eval_cancellable(
            runtime.allocate_eval_id(),
            "await codemode.sleep({})",
            &options,
            &sleepy,
            &token,
        )
        .await;
    assert_eq!(
        outcome.error.as_ref().map(|e| e.kind),
        Some(codemode_runtime::ErrorKind::Cancelled),
        "{outcome:?}"
    );
    assert_eq!(outcome.tool_calls.len(), 1, "{outcome:?}");
    assert!(
        outcome.tool_calls[0]
            .reason
            .as_deref()
            .is_some_and(|r| r.starts_with("unfinished")),
        "{outcome:?}"
    );
    assert!(crate::eval("1 + 1").await.ok);
}

/// QuickJS measures its heap with the allocator's real block sizes (on WASI too), so its own
/// heap limit — a few MiB under the memory limit — fires first: the script gets a catchable
/// "out of memory" with room left to handle it, and linear memory never reaches the limit.
#[tokio::test]
async fn the_quickjs_heap_limit_fires_before_linear_memory_runs_out() {
    let limit = 24u64 << 20;
    let code = "let keep = [];\ntry {\n  while (true) keep.push(new Uint8Array(1 << 16));\n} catch (e) {\n  const n = keep.length;\n  keep = null;\n  return { caught: String(e), blocks: n };\n}";
    let outcome = eval_with(code, opts().memory(limit), &basic_tools()).await;
    let result = ok(&outcome);
    assert_eq!(
        result["caught"],
        json!("InternalError: out of memory"),
        "{}",
        show(&outcome)
    );
    // 64 KiB buffers: it stopped near its heap limit, not early.
    let blocks = result["blocks"].as_u64().unwrap_or(0);
    assert!(blocks > 200, "only {blocks} blocks: {}", show(&outcome));
    assert!(
        outcome.stats.memory_peak_bytes < limit - (1 << 20),
        "linear memory reached {} of {limit}: QuickJS did not count its heap",
        outcome.stats.memory_peak_bytes
    );
    assert_still_usable().await;
}

#[tokio::test]
async fn running_out_of_memory_is_a_memory_limit_error_wherever_it_strikes() {
    // Blocks of many sizes leave the heap at many distances from its limit when an allocation is
    // refused; close enough, QuickJS cannot even allocate its "out of memory" error and throws
    // `null` (which once ended such scripts as "Uncaught null", kind `exception`). A script that
    // catches the error and goes on allocating uses up the reserve kept for that error too.
    let tools = basic_tools();
    for size in [1, 7, 64, 1000, 4096, 65_536] {
        let grow = format!("while (true) a.push(new Array({size}).fill(1));");
        for (what, code) in [
            ("plain", format!("const a = [];\n{grow}")),
            ("async", format!("await null;\nconst a = [];\n{grow}")),
            (
                "caught, then again",
                format!("const a = [];\ntry {{ {grow} }} catch (e) {{}}\n{grow}"),
            ),
        ] {
            let outcome = eval_with(&code, opts().memory(16 << 20), &tools).await;
            let error = failed_in(
                &format!("{what}, arrays of {size}"),
                &outcome,
                ErrorKind::MemoryLimit,
            );
            // Either QuickJS's error, or (when not even the report fits) the runtime's own.
            assert!(
                error.message.contains("out of memory"),
                "{what}, arrays of {size}: {}",
                show(&outcome)
            );
        }
    }
    // A script's own `throw null` is not mistaken for it.
    let outcome = eval_with("throw null", &opts(), &tools).await;
    let error = failed_in("throw null", &outcome, ErrorKind::Exception);
    assert_eq!(error.message, "Uncaught null", "{}", show(&outcome));
    assert_still_usable().await;
}

#[tokio::test]
async fn invalid_options_end_the_eval_before_it_runs() {
    let mut no_concurrency = opts();
    no_concurrency.max_concurrent_tool_calls(0);
    let mut too_much_memory = opts();
    too_much_memory.memory(crate::RUNTIME.config().get_max_memory() + 1);
    let max = crate::RUNTIME.config().get_max_memory();
    for (options, message) in [
        (
            no_concurrency,
            "invalid eval options: `max_concurrent_tool_calls` must be at least 1 (it is 0)"
                .to_string(),
        ),
        (
            too_much_memory,
            format!(
                "invalid eval options: `memory` must be at most the runtime's max_memory of {max} bytes (it is {})",
                max + 1
            ),
        ),
    ] {
        let outcome = eval_with("await codemode.echo({})", &options, &basic_tools()).await;
        let error = failed(&outcome, ErrorKind::InvalidOptions);
        assert_eq!(error.message, message);
        assert!(
            outcome.logs.is_empty() && outcome.tool_calls.is_empty(),
            "{}",
            show(&outcome)
        );
        assert_eq!(outcome.stats.fuel_used, 0);
    }
    assert_still_usable().await;
}
