//! The JS sources measured by `codemode bench` and `benches/`: the same text runs in the
//! sandbox and in the native baseline.

use codemode_runtime::FnTools;
use serde_json::Value;

/// A compute workload.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    /// Short name, used in tables and criterion ids.
    pub name: &'static str,
    /// What it exercises.
    pub what: &'static str,
    /// The script.
    pub source: &'static str,
}

/// The compute workloads of the "≤ 1.5× native" target.
pub const WORKLOADS: &[Workload] = &[
    Workload {
        name: "loop",
        what: "a counting loop, 1e6 iterations",
        source: include_str!("js/loop.js"),
    },
    Workload {
        name: "json",
        what: "JSON.parse + JSON.stringify of a 1 MB document, ×5",
        source: include_str!("js/json.js"),
    },
    Workload {
        name: "strings",
        what: "string building: +=, templates, join/split, case, pad",
        source: include_str!("js/strings.js"),
    },
    Workload {
        name: "regex",
        what: "regex match/matchAll/replace/test/split over 1.2 MB",
        source: include_str!("js/regex.js"),
    },
    Workload {
        name: "richards",
        what: "object-heavy scheduler kernel (Richards-style)",
        source: include_str!("js/richards.js"),
    },
];

/// The workload called `name`.
pub fn workload(name: &str) -> Option<&'static Workload> {
    WORKLOADS.iter().find(|w| w.name == name)
}

/// The trivial script of the latency and throughput targets.
pub const TRIVIAL: &str = "1 + 2";

/// The sample script of the start-up target (examples/hello.js).
pub const HELLO: &str = include_str!("../../examples/hello.js");

/// A script making `calls` sequential tool calls to `noop`.
pub fn tool_loop(calls: u64) -> String {
    format!("for (let i = 0; i < {calls}; i++) await codemode.noop({{ i }});\n{calls}")
}

/// A script that waits on one call to `wait` (the suspension target).
pub const SUSPEND: &str = "await codemode.wait({});\n'resumed'";

/// The typical parked eval of the durable-suspension targets: one call awaiting a human after
/// building a 10,000-element array that it uses afterwards.
pub const PARK: &str = "const xs = Array.from({ length: 10000 }, (_, i) => i);\nconst answer = await codemode.ask({});\nxs.length + answer";

/// The no-op Rust tool of the round-trip target.
pub fn noop_tools() -> FnTools {
    FnTools::new().sync_tool("noop", |_| Ok(Value::Null))
}
