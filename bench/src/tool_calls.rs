//! The host tool-call round trip: guest → no-op Rust tool → guest (section `tools`, target
//! ≤ 2 µs per call).

use std::time::Instant;

use codemode_runtime::Runtime;

use crate::report::Figure;
use crate::{Samples, eval_options, tokio_current, workloads};

/// Calls made by one sample of the `tools` section.
const CALLS: u64 = 10_000;
/// Samples of the `tools` section.
const SAMPLES: usize = 7;

/// Cost of one host tool-call round trip (guest → no-op Rust tool → guest), in µs per call:
/// each sample is one eval making `calls` sequential calls, divided by `calls`.
///
/// # Panics
/// When an eval fails or records another number of calls.
pub fn tool_round_trip(runtime: &Runtime, calls: u64, samples: usize) -> Samples {
    let mut options = eval_options();
    options.max_tool_calls(Some(calls));
    let tools = workloads::noop_tools();
    let code = workloads::tool_loop(calls);
    let tokio = tokio_current();
    tokio.block_on(async {
        let outcome = runtime.eval(&code, &options, &tools).await;
        assert!(outcome.ok, "tool-call eval failed: {:?}", outcome.error);
        let mut per_call = Vec::with_capacity(samples);
        for _ in 0..samples {
            let started = Instant::now();
            let outcome = runtime.eval(&code, &options, &tools).await;
            per_call.push(started.elapsed() / calls as u32);
            assert!(outcome.ok, "tool-call eval failed: {:?}", outcome.error);
            assert_eq!(outcome.tool_calls.len() as u64, calls);
        }
        Samples::micros(&per_call)
    })
}

/// The round trip's median on `runtime`, labelled by how its CPU time is bounded.
pub(crate) fn figure(runtime: &Runtime, label: &str) -> Figure {
    let per_call = tool_round_trip(runtime, CALLS, SAMPLES);
    Figure::new(
        "tools",
        format!("tool-call round trip, no-op Rust tool (10k calls in one eval), {label}"),
        per_call.median(),
        "µs/call",
    )
    .target("≤ 2 µs per call", per_call.median() <= 2.0)
}
