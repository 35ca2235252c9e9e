//! The `limits` section: what one eval may use (fuel, memory, time, output, tool calls), with
//! the per-client and retention limits of `fairness.rs` nested in it.

use std::time::Duration;

use serde_json::Value;

use crate::error::ConfigErrorKind;
use crate::fairness::{DEFAULT_MAX_EVAL_LIFETIME, PerClientLimits, RetentionLimits};
use crate::reader::{JsonPath, Reader, describe};
use crate::schema::sections;
use crate::units::parse_duration;
use crate::values::{duration, size};

/// The default of `limits.maxResultText`: 24 KiB.
pub const DEFAULT_RESULT_TEXT: u64 = 24 * 1024;
/// The smallest `limits.maxResultText`: room for any value elided to its markers.
pub const MIN_RESULT_TEXT: u64 = 256;
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

pub(crate) fn read_limits(r: &mut Reader, v: &Value, path: &JsonPath) -> Limits {
    let mut limits = Limits::default();
    let Some(map) = r.object(v, path, crate::schema::keys::of::<sections::Limits>()) else {
        return limits;
    };
    if let Some(v) = map.get("fuel")
        && let Some(n) = r.u64(v, &path.key("fuel"))
    {
        limits.fuel = (n > 0).then_some(n);
    }
    if let Some(v) = map.get("memory")
        && let Some(n) = size(r, v, &path.key("memory"))
    {
        limits.memory = n;
    }
    if let Some(v) = map.get("timeout") {
        let p = path.key("timeout");
        let parsed = match v {
            Value::String(s) => {
                parse_duration(s).map_err(|e| (ConfigErrorKind::InvalidValue, e.to_string()))
            }
            _ => Err((
                ConfigErrorKind::WrongType,
                format!("expected a duration such as \"30s\", found {}", describe(v)),
            )),
        };
        match parsed {
            Ok(d) if d.is_zero() => r.error(
                &p,
                ConfigErrorKind::InvalidValue,
                "the timeout must be greater than zero",
            ),
            Ok(d) => limits.timeout = d,
            Err((kind, msg)) => r.error(&p, kind, msg),
        }
    }
    if let Some(v) = map.get("maxOutput")
        && let Some(n) = size(r, v, &path.key("maxOutput"))
    {
        limits.max_output = n;
    }
    if let Some(v) = map.get("maxResultText") {
        let p = path.key("maxResultText");
        match size(r, v, &p) {
            Some(n) if n < MIN_RESULT_TEXT => r.error(
                &p,
                ConfigErrorKind::InvalidValue,
                format!("must be at least {MIN_RESULT_TEXT} bytes, found {n}"),
            ),
            Some(n) => limits.max_result_text = n,
            None => {}
        }
    }
    if let Some(v) = map.get("maxMediaBytes")
        && let Some(n) = size(r, v, &path.key("maxMediaBytes"))
    {
        limits.max_media_bytes = n;
    }
    if let Some(v) = map.get("maxToolCalls")
        && let Some(n) = r.u64(v, &path.key("maxToolCalls"))
    {
        limits.max_tool_calls = (n > 0).then_some(n);
    }
    if let Some(v) = map.get("maxConcurrentToolCalls") {
        let p = path.key("maxConcurrentToolCalls");
        match r.u64(v, &p).map(usize::try_from) {
            Some(Ok(0)) => r.error(&p, ConfigErrorKind::InvalidValue, "must be at least 1"),
            Some(Ok(n)) => limits.max_concurrent_tool_calls = n,
            Some(Err(_)) => r.error(&p, ConfigErrorKind::InvalidValue, "too large"),
            None => {}
        }
    }
    if let Some(v) = map.get("maxEvalLifetime")
        && let Some(d) = duration(r, v, &path.key("maxEvalLifetime"))
    {
        limits.max_eval_lifetime = d;
    }
    if let Some(v) = map.get("perClient") {
        limits.per_client = crate::fairness::read_per_client(r, v, &path.key("perClient"));
    }
    if let Some(v) = map.get("unfetchedResults") {
        limits.unfetched_results =
            crate::fairness::read_retention(r, v, &path.key("unfetchedResults"));
    }
    limits
}
