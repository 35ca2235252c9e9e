//! Per-eval limits: [`EvalOptions`]. Nothing is unlimited unless asked for.

use std::time::Duration;

/// Default fuel budget: 20 billion WebAssembly instructions (tens of seconds of compute).
pub const DEFAULT_FUEL: u64 = 20_000_000_000;
/// Default linear-memory limit: 64 MiB.
pub const DEFAULT_MEMORY: u64 = 64 << 20;
/// Default wall-clock timeout: 30 s, time in tool calls included.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default cap on logs + result: 1 MiB.
pub const DEFAULT_MAX_OUTPUT: u64 = 1 << 20;
/// Default cap on the number of tool calls of one eval: 1000.
pub const DEFAULT_MAX_TOOL_CALLS: u64 = 1000;
/// Default cap on tool calls running at once within one eval: 16 (more wait their turn).
pub const DEFAULT_MAX_CONCURRENT_TOOL_CALLS: usize = 16;

/// Limits and identity of one eval.
///
/// Every limit has its own [`crate::ErrorKind`] when exceeded, except
/// [`EvalOptions::max_concurrent_tool_calls`], which queues calls instead of failing them.
///
/// ```
/// use codemode_runtime::EvalOptions;
/// use std::time::Duration;
/// let opts = EvalOptions::default().fuel(Some(1_000_000)).timeout(Some(Duration::from_millis(500)));
/// assert_eq!(opts.fuel, Some(1_000_000));
/// assert_eq!(opts.memory, 64 << 20);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EvalOptions {
    /// WebAssembly instructions the eval may execute; `None` = unlimited. Default
    /// [`DEFAULT_FUEL`]. Ignored (and `fuel_used` is 0) when the runtime was built with fuel off.
    pub fuel: Option<u64>,
    /// Linear-memory bytes; also bounds the QuickJS heap. Default [`DEFAULT_MEMORY`]; at most
    /// the runtime's [`crate::RuntimeConfig::max_memory`].
    pub memory: u64,
    /// Wall-clock time for the whole eval, tool calls included; `None` = unlimited. Default
    /// [`DEFAULT_TIMEOUT`]. Time a [`crate::ToolHost`] spends under
    /// [`crate::CallContext::pause_timeout`] (a human deciding) does not count.
    pub timeout: Option<Duration>,
    /// Bytes of console output plus the JSON result. Default [`DEFAULT_MAX_OUTPUT`].
    pub max_output: u64,
    /// Tool calls the script may start; `None` = unlimited. Default [`DEFAULT_MAX_TOOL_CALLS`].
    pub max_tool_calls: Option<u64>,
    /// Tool calls in flight at once; further calls wait (no error). Default
    /// [`DEFAULT_MAX_CONCURRENT_TOOL_CALLS`].
    pub max_concurrent_tool_calls: usize,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            fuel: Some(DEFAULT_FUEL),
            memory: DEFAULT_MEMORY,
            timeout: Some(DEFAULT_TIMEOUT),
            max_output: DEFAULT_MAX_OUTPUT,
            max_tool_calls: Some(DEFAULT_MAX_TOOL_CALLS),
            max_concurrent_tool_calls: DEFAULT_MAX_CONCURRENT_TOOL_CALLS,
        }
    }
}

impl EvalOptions {
    /// Sets [`EvalOptions::fuel`].
    pub fn fuel(mut self, fuel: Option<u64>) -> Self {
        self.fuel = fuel;
        self
    }
    /// Sets [`EvalOptions::memory`] in bytes.
    pub fn memory(mut self, bytes: u64) -> Self {
        self.memory = bytes;
        self
    }
    /// Sets [`EvalOptions::timeout`].
    pub fn timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }
    /// Sets [`EvalOptions::max_output`] in bytes.
    pub fn max_output(mut self, bytes: u64) -> Self {
        self.max_output = bytes;
        self
    }
    /// Sets [`EvalOptions::max_tool_calls`].
    pub fn max_tool_calls(mut self, calls: Option<u64>) -> Self {
        self.max_tool_calls = calls;
        self
    }
    /// Sets [`EvalOptions::max_concurrent_tool_calls`] (at least 1).
    pub fn max_concurrent_tool_calls(mut self, calls: usize) -> Self {
        self.max_concurrent_tool_calls = calls.max(1);
        self
    }
}
