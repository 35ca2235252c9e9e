//! Durable suspension: an eval waiting for humans leaves memory as a [`Suspended`] value,
//! becomes bytes ([`Suspended::save`]), and later — in another process, on another machine,
//! after a deploy — resumes from them ([`crate::Runtime::resume`]) as if it had never stopped.
//!
//! # What is saved
//! An eval parks between two turns of its guest, when `cm_run`/`cm_resume` has returned
//! PENDING: the wasm stack is empty and the shadow-stack pointer (the guest's one mutable
//! global) is back at its initial value, so the sandbox is its linear memory. That is saved as
//! the 4 KiB pages that differ from the guest's fresh image ([`memory`]), compressed with zstd
//! when large enough to pay. With it goes the host's side of the eval: options, fuel left,
//! wall time spent, output used, logs, warnings, the ledger, the next call id, the memory peak,
//! and the calls in flight ([`PendingCall`]), each with the note of its
//! [`crate::HumanWait`]. A guest with more state than that (more mutable globals, an exported
//! or imported global, table or memory, a table grown at run time) is never parked: it stays
//! in memory and finishes there.
//!
//! # What resuming does
//! The saved guest is instantiated fresh (from its copy-on-write image), grown to the saved
//! size and given the saved pages; the answers given are delivered one by one as the tools'
//! results; every pending call without an answer is made again, through the [`crate::ToolHost`]
//! with [`crate::CallContext::resumed_note`]. A call that had finished before the eval parked
//! was delivered then and is never made again. Limits go on from where they were.
//!
//! # What the embedder owns
//! The bytes are checksummed, not sealed: store them where only the service can write, or
//! seal them (the host's stores use an AEAD). Resuming the same saved bytes twice runs the rest
//! of the script twice; making each saved eval resume once (delete on resume, a lease in a
//! shared store) is the embedder's business, as is keeping the guest modules that saved evals
//! name ([`crate::Runtime::guest_wasm`], [`crate::Runtime::add_guest`]).

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::EvalOptions;
use crate::error::InvalidConfig;
use crate::guest::GuestHash;
use crate::outcome::{EvalOutcome, LogEntry, ToolCallRecord};
use crate::tool::{EvalId, ToolError};

mod format;
pub(crate) mod memory;
mod resident;

pub use format::LoadError;
use memory::MemoryDiff;

/// How an eval that may park ended: finished, or parked for later.
#[derive(Debug)]
pub enum EvalStep {
    /// The script finished (or failed): its outcome.
    Finished(EvalOutcome),
    /// The eval parked, its sandbox slot freed: resume it with [`crate::Runtime::resume`].
    Suspended(Suspended),
}

impl EvalStep {
    /// The outcome when finished.
    pub fn finished(self) -> Option<EvalOutcome> {
        match self {
            EvalStep::Finished(outcome) => Some(outcome),
            EvalStep::Suspended(_) => None,
        }
    }

    /// The parked eval when suspended.
    pub fn suspended(self) -> Option<Suspended> {
        match self {
            EvalStep::Finished(_) => None,
            EvalStep::Suspended(suspended) => Some(suspended),
        }
    }
}

/// A call an eval had in flight (or queued) when it parked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingCall {
    /// Its id in the eval ([`crate::CallContext::call_id`], the ledger's id).
    pub call_id: u64,
    /// The tool the script called.
    pub name: String,
    /// The arguments it passed.
    pub args: Value,
    /// Where the script made the call: 1-based line and column, when known.
    pub line: Option<u32>,
    /// See [`PendingCall::line`].
    pub column: Option<u32>,
    /// The note of the call's [`crate::HumanWait`]; `None` for a call that had not started
    /// (it waited for a free place under [`EvalOptions::max_concurrent_tool_calls`]).
    pub note: Option<Value>,
}

/// A parked eval: what its sandbox and the host held, ready to be saved or resumed.
///
/// Cheap to clone (the memory is shared). [`crate::Runtime::resume`] takes it by reference, so
/// a resume refused for a bad input loses nothing.
#[derive(Debug, Clone)]
pub struct Suspended {
    pub(crate) guest: GuestHash,
    pub(crate) state: Arc<SavedEval>,
    pub(crate) memory: Arc<MemoryDiff>,
    /// How long capturing the sandbox took, when it was parked in this process.
    pub(crate) capture: Option<Duration>,
}

impl Suspended {
    /// The eval's id (as given when it started; a resumed eval keeps it).
    pub fn eval_id(&self) -> EvalId {
        self.state.eval_id
    }

    /// The calls it had in flight or queued, by id.
    pub fn pending(&self) -> &[PendingCall] {
        &self.state.pending
    }

    /// The guest module the eval runs in: resuming needs a runtime that has it.
    pub fn guest_hash(&self) -> GuestHash {
        self.guest
    }

    /// The options it runs with; they carry over to the resumed eval.
    pub fn options(&self) -> EvalOptions {
        self.state.options.to_options()
    }

    /// The ledger so far: every call the script started, the pending ones still `error` with
    /// no reason.
    pub fn ledger(&self) -> &[ToolCallRecord] {
        &self.state.ledger
    }

    /// The console output so far.
    pub fn logs(&self) -> &[LogEntry] {
        &self.state.logs
    }

    /// Bytes of linear memory the saved state holds, before compression (the pages that
    /// differ from the guest's image).
    pub fn memory_bytes(&self) -> usize {
        self.memory.page_bytes()
    }

    /// How long capturing the sandbox took when the eval parked (finding the pages that
    /// differ from the guest's image, gathering the host's state): the part of saving that
    /// happens before [`Suspended::save`]. `None` for a loaded eval. For metrics.
    pub fn capture_time(&self) -> Option<Duration> {
        self.capture
    }
}

/// Why [`crate::Runtime::resume`] did not start; the [`Suspended`] is untouched.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    /// The runtime does not have the guest the eval was saved with.
    #[error(
        "the eval was saved with guest {guest}, which this runtime does not have (add it with Runtime::add_guest)"
    )]
    UnknownGuest {
        /// The guest the eval needs.
        guest: GuestHash,
    },
    /// An answer names a call the eval does not wait on.
    #[error(
        "an answer for call {call_id}, which the eval does not wait on (it waits on {pending:?})"
    )]
    UnknownCall {
        /// The id answered.
        call_id: u64,
        /// The ids of the calls the eval waits on.
        pending: Vec<u64>,
    },
    /// Two answers for one call.
    #[error("two answers for call {call_id}")]
    DuplicateAnswer {
        /// The id answered twice.
        call_id: u64,
    },
    /// The eval's options do not fit this runtime (e.g. a memory limit above its
    /// `max_memory`).
    #[error("the saved eval's options do not fit this runtime: {0}")]
    InvalidOptions(InvalidConfig),
    /// The saved state does not fit its guest (e.g. a memory smaller than the guest's own).
    #[error("the saved eval does not fit its guest: {0}")]
    Incompatible(String),
}

/// The result given for a pending call on resume: what the tool would have returned.
pub type Answer = (u64, Result<Value, ToolError>);

/// The host's side of a parked eval (what [`format`] stores as JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SavedEval {
    pub(crate) eval_id: EvalId,
    pub(crate) options: SavedOptions,
    /// Fuel left in the store; `None` when the runtime meters none.
    pub(crate) fuel_left: Option<u64>,
    /// Wall-clock time counted against the timeout (pauses excluded).
    pub(crate) clock_spent: Duration,
    /// Wall-clock time of the eval before it parked, pauses included (for `wall_ms`).
    pub(crate) wall_before: Duration,
    /// When it parked, in milliseconds since the Unix epoch: the parked time is added to the
    /// durations of calls and of the eval (never negative, whatever the clocks of two machines).
    pub(crate) parked_at_ms: u64,
    pub(crate) next_call_id: u64,
    pub(crate) output_used: u64,
    pub(crate) closed_stdio: u8,
    pub(crate) memory_peak: u64,
    pub(crate) logs: Vec<LogEntry>,
    pub(crate) ledger: Vec<ToolCallRecord>,
    pub(crate) call_sites: Vec<(Option<u32>, Option<u32>)>,
    /// For each call: the time it had run when the eval parked; `None` if it had not started.
    pub(crate) call_elapsed: Vec<Option<Duration>>,
    /// Warnings tool calls raised: (call id, message).
    pub(crate) call_warnings: Vec<(u64, String)>,
    pub(crate) pending: Vec<PendingCall>,
}

impl SavedEval {
    /// Checks that the pieces agree with each other (a loaded state is used by index).
    pub(super) fn check(&self) -> Result<(), String> {
        let calls = self.ledger.len();
        if self.call_sites.len() != calls || self.call_elapsed.len() != calls {
            return Err(format!(
                "{calls} calls in the ledger, {} call sites, {} start times",
                self.call_sites.len(),
                self.call_elapsed.len()
            ));
        }
        if self.next_call_id != calls as u64 + 1 {
            return Err(format!(
                "the next call id is {} after {calls} calls",
                self.next_call_id
            ));
        }
        for (index, record) in self.ledger.iter().enumerate() {
            if record.id != index as u64 + 1 {
                return Err(format!("call {} at ledger place {}", record.id, index + 1));
            }
        }
        if self.pending.is_empty() {
            return Err("no pending call: the eval would wait forever".into());
        }
        let mut last = 0;
        for call in &self.pending {
            if call.call_id <= last || call.call_id > calls as u64 {
                return Err(format!(
                    "pending call {} is not a call of the ledger in order",
                    call.call_id
                ));
            }
            last = call.call_id;
        }
        let mut widest = crate::RuntimeConfig::default();
        widest.max_memory(crate::RuntimeConfig::MAX_MEMORY_LIMIT);
        self.options
            .to_options()
            .validate(&widest)
            .map_err(|e| format!("the options are invalid: {e}"))
    }
}

/// [`EvalOptions`] as saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SavedOptions {
    fuel: Option<u64>,
    pub(crate) memory: u64,
    timeout: Option<Duration>,
    max_output: u64,
    max_tool_calls: Option<u64>,
    max_concurrent_tool_calls: usize,
}

impl SavedOptions {
    pub(crate) fn of(options: &EvalOptions) -> Self {
        SavedOptions {
            fuel: options.fuel,
            memory: options.memory,
            timeout: options.timeout,
            max_output: options.max_output,
            max_tool_calls: options.max_tool_calls,
            max_concurrent_tool_calls: options.max_concurrent_tool_calls,
        }
    }

    pub(crate) fn to_options(&self) -> EvalOptions {
        let mut options = EvalOptions::default();
        options
            .fuel(self.fuel)
            .memory(self.memory)
            .timeout(self.timeout)
            .max_output(self.max_output)
            .max_tool_calls(self.max_tool_calls)
            .max_concurrent_tool_calls(self.max_concurrent_tool_calls);
        options
    }
}
