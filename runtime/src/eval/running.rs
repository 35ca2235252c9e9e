//! One eval's state as it runs: its limits and clock, the calls it made and has in flight,
//! its ledger, and what a parked eval brings back ([`Restored`]).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::FuturesUnordered;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::EvalOptions;
use crate::clock::EvalClock;
use crate::guest::Guest;
use crate::outcome::{LogEntry, ToolCallRecord, Warning};
use crate::park::{EvalControl, HumanWaits, ParkRequest};
use crate::tool::{BoxFuture, CallWarnings, EvalId, ToolError, ToolHost};

pub(super) type CallFuture<'a> = BoxFuture<'a, (u64, Result<Value, ToolError>)>;

/// The host-side pieces of a parked eval that go into its new store.
pub(super) struct Restored {
    pub(super) next_call_id: u64,
    pub(super) logs: Vec<LogEntry>,
    pub(super) output_used: u64,
    pub(super) closed_stdio: u8,
}

/// When a tool call started, as the time it had already run (before its eval was parked, the
/// parked time included) plus the instant it was last (re)started in this process.
#[derive(Debug, Clone, Copy)]
pub(super) struct CallStart {
    pub(super) at: Instant,
    pub(super) before: Duration,
}

impl CallStart {
    pub(super) fn now() -> Self {
        CallStart {
            at: Instant::now(),
            before: Duration::ZERO,
        }
    }

    pub(super) fn elapsed(&self) -> Duration {
        self.before + self.at.elapsed()
    }
}

/// One eval as it runs; its methods are in the modules beside this one (`mod.rs` drives the
/// guest, `calls.rs` the tool calls, `park.rs` parking, `errors.rs` why it failed).
pub(super) struct Eval<'a, T: ?Sized> {
    pub(super) id: EvalId,
    pub(super) clock: Arc<EvalClock>,
    /// Warnings raised by tool calls ([`crate::CallContext::warn`]).
    pub(super) warnings: Arc<CallWarnings>,
    /// The calls' notes ([`crate::CallContext::note`]), moved to the ledger as each settles.
    pub(super) notes: Arc<CallWarnings>,
    pub(super) options: &'a EvalOptions,
    pub(super) tools: &'a T,
    pub(super) cancel: Option<CancellationToken>,
    pub(super) guest: Arc<Guest>,
    /// The calls waiting for a human ([`crate::CallContext::awaiting_human`]).
    pub(super) human: Arc<HumanWaits>,
    pub(super) park: Option<ParkRequest>,
    /// The guest's fresh memory, when this eval may park (asked to, and its guest can be
    /// saved): what the saved memory is the difference from.
    pub(super) image: Option<Arc<[u8]>>,
    pub(super) ledger: Vec<ToolCallRecord>,
    /// Start of each call, indexed like `ledger`.
    pub(super) call_started: Vec<Option<CallStart>>,
    /// Where in the script each call was made (line, column), indexed like `ledger`.
    pub(super) call_sites: Vec<(Option<u32>, Option<u32>)>,
    /// The warnings the guest sent with its outcome.
    pub(super) guest_warnings: Vec<Warning>,
    pub(super) queued: VecDeque<(u64, Result<Value, ToolError>, String)>,
    /// Calls that finished as they were launched (a tool that answers at once), in order; on
    /// resume, the answers given.
    pub(super) done: VecDeque<(u64, Result<Value, ToolError>)>,
    pub(super) in_flight: FuturesUnordered<CallFuture<'a>>,
    /// The ids of the calls in `in_flight`.
    pub(super) in_flight_ids: Vec<u64>,
    /// The arguments of the calls in flight, kept only while the eval may park.
    pub(super) in_flight_args: HashMap<u64, Value>,
    /// Notes of parked calls to hand to the tools when they are made again.
    pub(super) resumed_notes: HashMap<u64, Value>,
    /// Whether the last `next_completion` had to wait (rather than take a finished call).
    pub(super) waited: bool,
    /// Wall time of the eval before this sandbox (earlier runs and parked time).
    pub(super) wall_before: Duration,
    /// Host state to restore in the store, for a resumed eval (until the store exists).
    pub(super) restored: Option<Restored>,
    /// Fuel and memory peak of the eval before this sandbox.
    pub(super) fuel_used_before: u64,
    pub(super) memory_peak_before: u64,
}

impl<'a, T: ToolHost + ?Sized> Eval<'a, T> {
    pub(super) fn new(
        id: EvalId,
        clock: Arc<EvalClock>,
        options: &'a EvalOptions,
        tools: &'a T,
        control: &EvalControl,
        guest: Arc<Guest>,
    ) -> Self {
        Eval {
            id,
            clock,
            warnings: Arc::default(),
            notes: Arc::default(),
            options,
            tools,
            cancel: control.cancel.clone(),
            guest,
            human: Arc::default(),
            park: control.park.clone(),
            image: None,
            ledger: Vec::new(),
            call_started: Vec::new(),
            call_sites: Vec::new(),
            guest_warnings: Vec::new(),
            queued: VecDeque::new(),
            done: VecDeque::new(),
            in_flight: FuturesUnordered::new(),
            in_flight_ids: Vec::new(),
            in_flight_args: HashMap::new(),
            resumed_notes: HashMap::new(),
            waited: false,
            wall_before: Duration::ZERO,
            restored: None,
            fuel_used_before: 0,
            memory_peak_before: 0,
        }
    }
}
