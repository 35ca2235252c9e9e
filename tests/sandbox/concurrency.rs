//! Un-awaited tool calls run concurrently on the host; many evals run at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use codemode_runtime::{CallStatus, FnTools};
use serde_json::{Value, json};

use crate::{RUNTIME, basic_tools, ok, opts, show};

/// Counts tool calls in flight and remembers the most at once.
#[derive(Default)]
struct InFlight {
    now: AtomicUsize,
    max: AtomicUsize,
    done: AtomicUsize,
}

impl InFlight {
    /// Adds async tools `names` that each sleep `sleep` and return their name and arguments.
    fn tools(self: &Arc<Self>, names: &[&'static str], sleep: Duration) -> FnTools {
        names.iter().fold(FnTools::new(), |tools, &name| {
            let this = self.clone();
            tools.tool(name, move |args: Value| {
                let this = this.clone();
                async move {
                    let now = this.now.fetch_add(1, Ordering::SeqCst) + 1;
                    this.max.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(sleep).await;
                    this.now.fetch_sub(1, Ordering::SeqCst);
                    this.done.fetch_add(1, Ordering::SeqCst);
                    Ok(json!({"tool": name, "args": args}))
                }
            })
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unawaited_calls_run_concurrently() {
    let counter = Arc::new(InFlight::default());
    let tools = counter.tools(&["a", "b", "c"], Duration::from_millis(100));
    let code = "const [x, y, z] = await Promise.all([codemode.a({i: 1}), codemode.b({i: 2}), codemode.c({i: 3})]);\n[x, y, z]";
    let outcome = RUNTIME.eval(code, &opts(), &tools).await;
    let want = json!([
        {"tool": "a", "args": {"i": 1}},
        {"tool": "b", "args": {"i": 2}},
        {"tool": "c", "args": {"i": 3}},
    ]);
    assert_eq!(ok(&outcome), &want, "{}", show(&outcome));
    // The tools' own count, not the eval's wall time, shows the overlap.
    assert_eq!(
        counter.max.load(Ordering::SeqCst),
        3,
        "all three calls should be in flight at once"
    );
    assert_eq!(outcome.tool_calls.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_concurrent_tool_calls_queues_the_rest() {
    let counter = Arc::new(InFlight::default());
    let tools = counter.tools(&["slow"], Duration::from_millis(30));
    let code = "const ps = [];\nfor (let i = 0; i < 7; i++) ps.push(codemode.slow({i}));\n(await Promise.all(ps)).map((r) => r.args.i)";
    let mut options = opts();
    options.max_concurrent_tool_calls(2);
    let outcome = RUNTIME.eval(code, &options, &tools).await;
    assert_eq!(
        ok(&outcome),
        &json!([0, 1, 2, 3, 4, 5, 6]),
        "{}",
        show(&outcome)
    );
    assert_eq!(
        counter.max.load(Ordering::SeqCst),
        2,
        "at most two calls at once, and two did overlap"
    );
    assert_eq!(counter.done.load(Ordering::SeqCst), 7);
    assert!(
        outcome
            .tool_calls
            .iter()
            .all(|r| r.status == CallStatus::Ok),
        "{}",
        show(&outcome)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_evals_at_once_each_get_their_own_result() {
    let tools = basic_tools().tool("pause", |args: Value| async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok(args)
    });
    let evals = (0..50).map(|i| {
        let tools = &tools;
        async move {
            let code = format!(
                "globalThis.mine = {i};\nconst r = await codemode.pause({{i: {i}}});\nconst s = await codemode.add({{a: r.i, b: 1000}});\n[r.i, s, globalThis.mine]"
            );
            (i, RUNTIME.eval(&code, &opts(), tools).await)
        }
    });
    let outcomes = futures::future::join_all(evals).await;
    for (i, outcome) in outcomes {
        assert_eq!(
            ok(&outcome),
            &json!([i, i + 1000, i]),
            "eval {i}: {}",
            show(&outcome)
        );
        assert_eq!(outcome.tool_calls.len(), 2, "eval {i}: {}", show(&outcome));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evals_run_in_parallel_across_tasks() {
    // Spawned on the runtime's workers: the futures are Send, and they overlap.
    let counter = Arc::new(InFlight::default());
    let tools = Arc::new(counter.tools(&["wait"], Duration::from_millis(100)));
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let tools = tools.clone();
            tokio::spawn(async move {
                RUNTIME
                    .eval(
                        &format!("(await codemode.wait({{i: {i}}})).args.i"),
                        &opts(),
                        &tools,
                    )
                    .await
            })
        })
        .collect();
    for (i, handle) in handles.into_iter().enumerate() {
        let outcome = handle.await.expect("the eval task panicked");
        assert_eq!(ok(&outcome), &json!(i), "{}", show(&outcome));
    }
    assert_eq!(
        counter.max.load(Ordering::SeqCst),
        4,
        "the four evals' calls overlapped"
    );
}
