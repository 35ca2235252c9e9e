//! Parking an eval (its sandbox and host state into a [`Suspended`]) and starting one again
//! from it. What is saved and why is in [`crate::suspend`].

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use futures::stream::FuturesUnordered;
use serde_json::Value;
use wasmtime::Store;

use super::errors::internal;
use super::running::{CallStart, Eval, Restored};
use crate::abi::GuestExports;
use crate::clock::EvalClock;
use crate::guest::Guest;
use crate::outcome::EvalError;
use crate::park::EvalControl;
use crate::state::HostState;
use crate::suspend::memory::MemoryDiff;
use crate::suspend::{Answer, PendingCall, SavedEval, SavedOptions, Suspended};
use crate::tool::{CallWarnings, ToolHost};
use crate::{EvalOptions, Runtime};

/// Milliseconds since the Unix epoch, now.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl<'a, T: ToolHost + ?Sized> Eval<'a, T> {
    /// The eval `saved` describes, with `answers` to deliver first and its other pending calls
    /// queued to be made again. The time it spent parked (by this machine's clock, never
    /// negative) counts in its wall time and its calls' durations, not against its timeout.
    pub(super) fn restored(
        saved: &SavedEval,
        options: &'a EvalOptions,
        tools: &'a T,
        control: &EvalControl,
        guest: Arc<Guest>,
        answers: Vec<Answer>,
    ) -> Self {
        let parked = Duration::from_millis(now_ms().saturating_sub(saved.parked_at_ms));
        let clock = Arc::new(EvalClock::with_spent(options.timeout, saved.clock_spent));
        let mut eval = Eval::new(saved.eval_id, clock, options, tools, control, guest);
        let now = Instant::now();
        eval.ledger = saved.ledger.clone();
        eval.call_sites = saved.call_sites.clone();
        eval.call_started = saved
            .call_elapsed
            .iter()
            .map(|elapsed| {
                elapsed.map(|before| CallStart {
                    at: now,
                    before: before + parked,
                })
            })
            .collect();
        eval.warnings = Arc::new(CallWarnings::default());
        for (call_id, message) in &saved.call_warnings {
            eval.warnings.push(*call_id, message.clone());
        }
        let answered: HashMap<u64, ()> = answers.iter().map(|(id, _)| (*id, ())).collect();
        eval.done = answers.into_iter().collect::<VecDeque<_>>();
        for call in &saved.pending {
            if answered.contains_key(&call.call_id) {
                continue;
            }
            if let Some(note) = &call.note {
                eval.resumed_notes.insert(call.call_id, note.clone());
            }
            eval.queued
                .push_back((call.call_id, Ok(call.args.clone()), call.name.clone()));
        }
        eval.wall_before = saved.wall_before + parked;
        eval.fuel_used_before = match (saved.fuel_left, options.fuel) {
            (Some(left), Some(budget)) => budget.saturating_sub(left),
            (Some(left), None) => u64::MAX - left,
            (None, _) => 0,
        };
        eval.memory_peak_before = saved.memory_peak;
        eval.restored = Some(Restored {
            next_call_id: saved.next_call_id,
            logs: saved.logs.clone(),
            output_used: saved.output_used,
            closed_stdio: saved.closed_stdio,
        });
        eval
    }

    /// Makes parking possible when it is asked for and the guest can be saved: the guest's
    /// fresh memory is what a saved memory is the difference from.
    pub(super) fn prepare_parking(&mut self, runtime: &Runtime) {
        if self.park.is_none() {
            return;
        }
        if let Some(why) = &self.guest.unsaveable {
            tracing::warn!("eval {} cannot be parked: {why}", self.id);
            return;
        }
        match self
            .guest
            .reference(&runtime.inner.engine, &runtime.inner.reserve)
        {
            Ok(image) => self.image = Some(image),
            Err(why) => tracing::warn!("eval {} cannot be parked: {why}", self.id),
        }
    }

    /// Whether the eval could park now, if every call in flight waited for a human.
    pub(super) fn can_park(&self, store: &Store<HostState>) -> bool {
        let state = store.data();
        self.image.is_some()
            && !state.memory.table_grew
            && self.done.is_empty()
            && self.queued.iter().all(|(_, args, _)| args.is_ok())
    }

    /// Parks the eval: the calls in flight are dropped (each waits only for a human, whom its
    /// note finds again), and everything that goes on after them is captured.
    pub(super) fn parked(
        &mut self,
        runtime: &Runtime,
        store: &mut Store<HostState>,
        waiting: Vec<(u64, Value)>,
        started: Instant,
    ) -> Suspended {
        // Before the calls are dropped: their layers see they were parked, not abandoned.
        self.human.mark_parked();
        self.in_flight = FuturesUnordered::new();
        self.in_flight_ids.clear();
        let capturing = Instant::now();
        let image = self.image.clone().unwrap_or_else(|| Arc::from(&[][..]));
        let memory = match store.data().guest_memory {
            Some(memory) => MemoryDiff::capture(memory.data(&*store), &image),
            None => MemoryDiff::capture(&[], &image),
        };
        let site = |id: u64| {
            self.call_sites
                .get((id - 1) as usize)
                .copied()
                .unwrap_or_default()
        };
        let mut pending: Vec<PendingCall> = waiting
            .into_iter()
            .map(|(call_id, note)| PendingCall {
                call_id,
                name: self.ledger[(call_id - 1) as usize].tool.clone(),
                args: self.in_flight_args.remove(&call_id).unwrap_or(Value::Null),
                line: site(call_id).0,
                column: site(call_id).1,
                note: Some(note),
            })
            .collect();
        for (call_id, args, name) in self.queued.drain(..) {
            pending.push(PendingCall {
                call_id,
                name,
                args: args.unwrap_or(Value::Null),
                line: site(call_id).0,
                column: site(call_id).1,
                note: None,
            });
        }
        pending.sort_by_key(|call| call.call_id);
        let fuel_left = runtime
            .inner
            .config
            .fuel
            .then(|| store.get_fuel().ok())
            .flatten();
        let state = store.data_mut();
        let saved = SavedEval {
            eval_id: self.id,
            options: SavedOptions::of(self.options),
            fuel_left,
            clock_spent: self.clock.spent(),
            wall_before: self.wall_before + started.elapsed(),
            parked_at_ms: now_ms(),
            next_call_id: state.next_call_id,
            output_used: state.output_used,
            closed_stdio: state.closed_stdio,
            memory_peak: (state.memory.peak as u64).max(self.memory_peak_before),
            logs: std::mem::take(&mut state.logs),
            ledger: std::mem::take(&mut self.ledger),
            call_sites: std::mem::take(&mut self.call_sites),
            call_elapsed: self
                .call_started
                .iter()
                .map(|s| s.map(|s| s.elapsed()))
                .collect(),
            call_warnings: self.warnings.take(),
            pending,
        };
        Suspended {
            guest: self.guest.hash,
            state: Arc::new(saved),
            memory: Arc::new(memory),
            capture: Some(capturing.elapsed()),
        }
    }
}

/// Gives a fresh instance a parked eval's memory: grown to its size, the saved pages written.
pub(super) fn restore_memory(
    store: &mut Store<HostState>,
    guest: &GuestExports,
    memory: &MemoryDiff,
) -> Result<(), EvalError> {
    let current = guest.memory.data_size(&*store) as u64;
    let Some(grow) = memory.size.checked_sub(current) else {
        return Err(EvalError::new(
            crate::ErrorKind::Internal,
            format!(
                "the saved memory ({} bytes) is smaller than the guest's fresh memory ({current} bytes)",
                memory.size
            ),
        ));
    };
    let page = guest.memory.page_size(&*store);
    if grow > 0 {
        guest
            .memory
            .grow(&mut *store, grow / page)
            .map_err(|e| internal("growing the restored memory", &e))?;
    }
    memory.apply(guest.memory.data_mut(&mut *store));
    Ok(())
}
