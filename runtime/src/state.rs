//! What one eval's `Store` holds.

use wasmtime::ResourceLimiter;

use crate::outcome::{ErrorKind, EvalError, LogEntry};

/// A tool call the guest started and the host has not picked up yet.
#[derive(Debug)]
pub(crate) struct StartedCall {
    pub id: u64,
    pub name: String,
    pub args_json: String,
    /// Where the script made the call: 1-based line and column in its code, when known.
    pub line: Option<u32>,
    pub column: Option<u32>,
}

/// Per-eval host state, reached from host imports through `Caller`.
pub(crate) struct HostState {
    /// Standard descriptors (bit = fd) the guest closed, for [`crate::wasi`].
    pub closed_stdio: u8,
    pub memory: MemoryLimiter,
    /// The guest's exported memory, kept by [`crate::abi::GuestExports::bind`] so that host
    /// imports do not look it up by name on every call.
    pub guest_memory: Option<wasmtime::Memory>,
    pub started: Vec<StartedCall>,
    pub next_call_id: u64,
    pub max_tool_calls: Option<u64>,
    pub logs: Vec<LogEntry>,
    pub output_used: u64,
    pub max_output: u64,
    pub finished: Option<Vec<u8>>,
    /// Set by a host import that ends the eval (then it traps): the real reason.
    pub abort: Option<EvalError>,
    /// When the wall-clock budget runs out, for the per-tick check of cancellable evals.
    pub wall_deadline: Option<std::time::Instant>,
}

impl HostState {
    /// A fresh state: no calls, no logs, memory capped at `memory_limit` bytes.
    pub fn new(memory_limit: usize, max_tool_calls: Option<u64>, max_output: u64) -> Self {
        HostState {
            closed_stdio: 0,
            memory: MemoryLimiter {
                limit: memory_limit,
                peak: 0,
                refused: false,
                tables_created: 0,
                table_grew: false,
            },
            guest_memory: None,
            started: Vec::new(),
            next_call_id: 1,
            max_tool_calls,
            logs: Vec::new(),
            output_used: 0,
            wall_deadline: None,
            max_output,
            finished: None,
            abort: None,
        }
    }

    /// Counts `bytes` of output against the limit.
    pub(crate) fn charge_output(&mut self, bytes: u64) -> Result<(), EvalError> {
        self.output_used = self.output_used.saturating_add(bytes);
        if self.output_used > self.max_output {
            return Err(EvalError::new(
                ErrorKind::OutputLimit,
                format!(
                    "the script's output (logs and result) exceeded {} bytes",
                    self.max_output
                ),
            ));
        }
        Ok(())
    }
}

/// Caps linear memory and remembers the peak and whether growth was refused.
#[derive(Debug)]
pub(crate) struct MemoryLimiter {
    pub limit: usize,
    pub peak: usize,
    pub refused: bool,
    /// Tables created with the instance (each is "grown" once, from nothing).
    pub tables_created: usize,
    /// Whether a table grew after the instance was created: state a saved eval cannot hold.
    pub table_grew: bool,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.limit {
            self.refused = true;
            return Ok(false);
        }
        self.peak = self.peak.max(desired).max(current);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // The guest never grows its table at run time; bound it anyway. A table is created by
        // growing from 0; any growth later is remembered (it would not survive a save).
        if current == 0 && self.tables_created == 0 {
            self.tables_created = 1;
        } else {
            self.table_grew = true;
        }
        Ok(desired <= 100_000)
    }
}
