//! The `limits` section: what one eval may use (fuel, memory, time, output, tool calls), with
//! the per-client and retention limits of `fairness.rs` nested in it.

use std::time::Duration;

use serde_json::Value;

use crate::de;
use crate::fairness::{
    DEFAULT_MAX_EVAL_LIFETIME, PerClientLimits, RetentionLimits, per_client_limits,
    retention_limits,
};
use crate::reader::{JsonPath, Reader};
use crate::schema::sections;
use crate::schema::values::Whole;

/// The default of `limits.maxResultText`: 24 KiB.
pub const DEFAULT_RESULT_TEXT: u64 = 24 * 1024;
pub use crate::schema::sections::MIN_RESULT_TEXT;
/// The default of `limits.maxMediaBytes`: 4 MiB of media per eval.
pub const DEFAULT_MAX_MEDIA_BYTES: u64 = 4 * 1024 * 1024;

/// Resource limits of each eval (`limits`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// WebAssembly fuel budget (`fuel`; `0` in the file means unlimited). Default: the
    /// runtime's [`codemode_runtime::DEFAULT_FUEL`] (20 billion).
    pub fuel: Option<u64>,
    /// Maximum guest memory in bytes (`memory`, a size like `64MiB`). Default: 64 MiB.
    pub memory: u64,
    /// Wall-clock timeout (`timeout`, a duration like `30s`), not counting time spent waiting
    /// for a human's approval. Default: 30 s.
    pub timeout: Duration,
    /// Maximum size of logs plus result, in bytes (`maxOutput`). Default: 1 MiB.
    pub max_output: u64,
    /// Most bytes the result takes in the text block of an MCP eval result (`maxResultText`, a
    /// size); a larger result is elided there keeping valid JSON of the same shape, while the
    /// structured content keeps all of it. At least [`MIN_RESULT_TEXT`]. Default:
    /// [`DEFAULT_RESULT_TEXT`] (24 KiB).
    pub max_result_text: u64,
    /// Most bytes of media (images, audio, embedded blobs of upstream tool results) one eval
    /// keeps for its MCP result (`maxMediaBytes`, a size), apart from
    /// `maxOutput`: a script holds small values naming them, and the blocks its result names go
    /// beside the text block. A block past the budget is dropped with a note in its value.
    /// Default: [`DEFAULT_MAX_MEDIA_BYTES`] (4 MiB).
    pub max_media_bytes: u64,
    /// Maximum tool calls per eval (`maxToolCalls`; `0` in the file means unlimited). Default:
    /// the runtime's [`codemode_runtime::DEFAULT_MAX_TOOL_CALLS`] (1000).
    pub max_tool_calls: Option<u64>,
    /// Maximum tool calls in flight at once (`maxConcurrentToolCalls`). Default: 16.
    pub max_concurrent_tool_calls: usize,
    /// The longest an eval may live, including time spent waiting for a human
    /// (`maxEvalLifetime`, a duration). Past it the eval ends with error kind `timeout`.
    /// Default: [`DEFAULT_MAX_EVAL_LIFETIME`] (15 minutes).
    pub max_eval_lifetime: Duration,
    /// What one client may hold at once (`perClient`). Default: [`PerClientLimits::default`].
    pub per_client: PerClientLimits,
    /// Finished results nobody fetched yet (`unfetchedResults`). Default:
    /// [`RetentionLimits::default`].
    pub unfetched_results: RetentionLimits,
}

impl Default for Limits {
    /// The runtime's own defaults ([`codemode_runtime::EvalOptions::default`]): one source of
    /// truth for `codemode run`, `codemode serve` and embedders.
    fn default() -> Self {
        let d = codemode_runtime::EvalOptions::default();
        Limits {
            fuel: d.fuel,
            memory: d.memory,
            timeout: d.timeout.unwrap_or_default(),
            max_output: d.max_output,
            max_result_text: DEFAULT_RESULT_TEXT,
            max_media_bytes: DEFAULT_MAX_MEDIA_BYTES,
            max_tool_calls: d.max_tool_calls,
            max_concurrent_tool_calls: d.max_concurrent_tool_calls,
            max_eval_lifetime: DEFAULT_MAX_EVAL_LIFETIME,
            per_client: PerClientLimits::default(),
            unfetched_results: RetentionLimits::default(),
        }
    }
}

impl Limits {
    /// These limits as the runtime's [`codemode_runtime::EvalOptions`] (a zero timeout means
    /// none).
    pub fn eval_options(&self) -> codemode_runtime::EvalOptions {
        let mut options = codemode_runtime::EvalOptions::default();
        options
            .fuel(self.fuel)
            .memory(self.memory)
            .timeout(Some(self.timeout).filter(|t| !t.is_zero()))
            .max_output(self.max_output)
            .max_tool_calls(self.max_tool_calls)
            .max_concurrent_tool_calls(self.max_concurrent_tool_calls);
        options
    }
}

/// Reads `limits` at `path`: what the file leaves out (or gets wrong) keeps its default.
pub(crate) fn read_limits(r: &mut Reader, v: &Value, path: &JsonPath) -> Limits {
    let read: sections::Limits = de::read(r, v, path).unwrap_or_default();
    let d = Limits::default();
    // `0` means unlimited for the budgets that the runtime can leave unbounded.
    let unless_zero = |n: Whole| (n.0 > 0).then_some(n.0);
    Limits {
        fuel: read.fuel.map_or(d.fuel, unless_zero),
        memory: read.memory.map_or(d.memory, |n| n.0),
        timeout: read.timeout.map_or(d.timeout, |t| t.0),
        max_output: read.max_output.map_or(d.max_output, |n| n.0),
        max_result_text: read.max_result_text.map_or(d.max_result_text, |n| n.0),
        max_media_bytes: read.max_media_bytes.map_or(d.max_media_bytes, |n| n.0),
        max_tool_calls: read.max_tool_calls.map_or(d.max_tool_calls, unless_zero),
        max_concurrent_tool_calls: read
            .max_concurrent_tool_calls
            .map_or(d.max_concurrent_tool_calls, |n| n.0),
        max_eval_lifetime: read.max_eval_lifetime.map_or(d.max_eval_lifetime, |t| t.0),
        per_client: read.per_client.map_or(d.per_client, per_client_limits),
        unfetched_results: read
            .unfetched_results
            .map_or(d.unfetched_results, retention_limits),
    }
}
