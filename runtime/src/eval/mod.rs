//! One eval: a fresh instance, the guest-driven event loop, tool calls in flight, the ledger.
//!
//! The guest never blocks in a host call: `call_start` queues a call and returns. When the guest
//! has nothing left to run it returns `PENDING` from `cm_run`/`cm_resume`; the host then awaits
//! whichever tool call finishes first and resumes the guest with it. So un-awaited calls run
//! concurrently, a call may take minutes (a human deciding) while the instance costs only its
//! memory, and the store stays synchronous (no fiber stacks).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wasmtime::{Store, UpdateDeadline};

use crate::EvalOptions;
use crate::abi::{GuestExports, STATUS_DONE, STATUS_PENDING};
use crate::clock::EvalClock;
use crate::guest::Guest;
use crate::outcome::{ErrorKind, EvalError, EvalOutcome, EvalStats, Warning};
use crate::park::EvalControl;
use crate::runtime::Runtime;
use crate::state::HostState;
use crate::suspend::memory::MemoryDiff;
use crate::suspend::{Answer, EvalStep, Suspended};
use crate::tool::{EvalId, ToolError, ToolHost};

mod calls;
mod envelope;
mod errors;
mod park;
mod running;

use envelope::{Envelope, guest_error, read_envelope};
use errors::{cancelled_error, internal, timeout_error};
use running::{Eval, Restored};

/// Fuel given to the guest's own initialisation (not counted in `fuel_used`).
const INIT_FUEL: u64 = 2_000_000_000;

/// At most this many warnings from the guest are kept (the guest itself sends at most 11).
const MAX_GUEST_WARNINGS: usize = 32;

/// How an eval's sandbox begins.
pub(crate) enum Start<'s> {
    /// A fresh instance runs `code`.
    Fresh(&'s str),
    /// A fresh instance takes a parked eval's memory and fuel, then waits on its calls.
    Resumed {
        memory: &'s MemoryDiff,
        fuel_left: Option<u64>,
    },
}

/// Runs `code` in a fresh sandbox of the runtime's guest, to its end or (when `control` asks
/// and the eval can) until it parks.
pub(crate) async fn run<T: ToolHost + ?Sized>(
    runtime: &Runtime,
    id: EvalId,
    code: &str,
    options: &EvalOptions,
    tools: &T,
    control: &EvalControl,
) -> EvalStep {
    let clock = Arc::new(EvalClock::new(options.timeout));
    let eval = Eval::new(id, clock, options, tools, control, runtime.inner.primary());
    eval.step(runtime, Start::Fresh(code)).await
}

/// Resumes a parked eval in a fresh sandbox of `guest`: `answers` are delivered first, the other
/// pending calls are made again. The caller has checked the answers and the options.
pub(crate) async fn resume<T: ToolHost + ?Sized>(
    runtime: &Runtime,
    guest: Arc<Guest>,
    suspended: &Suspended,
    options: &EvalOptions,
    answers: Vec<Answer>,
    tools: &T,
    control: &EvalControl,
) -> EvalStep {
    let eval = Eval::restored(&suspended.state, options, tools, control, guest, answers);
    let start = Start::Resumed {
        memory: &suspended.memory,
        fuel_left: suspended.state.fuel_left,
    };
    eval.step(runtime, start).await
}

/// What driving the guest came to.
enum Driven {
    /// The script finished: the outcome envelope's bytes.
    Done(Vec<u8>),
    /// Every call in flight waits for a human and parking was asked for: (call id, note).
    Parked(Vec<(u64, serde_json::Value)>),
}

fn new_store(
    runtime: &Runtime,
    options: &EvalOptions,
    cancel: Option<&CancellationToken>,
    restored: Option<Restored>,
) -> Result<Store<HostState>, EvalError> {
    let mut state = HostState::new(
        usize::try_from(options.memory).unwrap_or(usize::MAX),
        options.max_tool_calls.filter(|&n| n > 0),
        options.max_output,
    );
    if let Some(restored) = restored {
        state.next_call_id = restored.next_call_id;
        state.logs = restored.logs;
        state.output_used = restored.output_used;
        state.closed_stdio = restored.closed_stdio;
    }
    let mut store = Store::new(&runtime.inner.engine, state);
    store.limiter(|s| &mut s.memory);
    if let Some(token) = cancel.cloned() {
        // A cancellable eval checks its token at every epoch tick while guest code runs (a
        // plain eval only wakes at its deadline), so cancelling stops even a busy loop at once.
        store.epoch_deadline_callback(move |mut cx| {
            if token.is_cancelled() {
                cx.data_mut().abort = Some(cancelled_error());
                return Ok(UpdateDeadline::Interrupt);
            }
            Ok(match cx.data().wall_deadline {
                Some(deadline) if Instant::now() >= deadline => UpdateDeadline::Interrupt,
                _ => UpdateDeadline::Continue(1),
            })
        });
    }
    if runtime.inner.config.fuel {
        store
            .set_fuel(INIT_FUEL)
            .map_err(|e| internal("setting fuel", &e))?;
    }
    Ok(store)
}

impl<'a, T: ToolHost + ?Sized> Eval<'a, T> {
    /// Runs the eval in a sandbox slot: to its outcome, or parked.
    async fn step(mut self, runtime: &Runtime, start: Start<'_>) -> EvalStep {
        let started = Instant::now();
        if let Err(e) = self.options.validate(&runtime.inner.config) {
            return EvalStep::Finished(self.failed(
                EvalError::new(
                    ErrorKind::InvalidOptions,
                    format!("invalid eval options: {e}"),
                ),
                started,
            ));
        }
        self.prepare_parking(runtime);

        // Waiting for a free instance slot counts against the timeout (a free one is taken at
        // once, without arming the deadline).
        let free = runtime.inner.slots.clone().try_acquire_owned().ok();
        let waited = match free {
            Some(permit) => Some(Ok(permit)),
            None => with_deadline(&self.clock, runtime.inner.slots.clone().acquire_owned()).await,
        };
        let permit = match waited {
            Some(Ok(permit)) => permit,
            Some(Err(_)) => {
                return EvalStep::Finished(self.failed(
                    EvalError::new(ErrorKind::Internal, "the runtime is shutting down"),
                    started,
                ));
            }
            None => {
                let error = timeout_error(self.options);
                return EvalStep::Finished(self.failed(error, started));
            }
        };

        let restored = self.restored.take();
        let mut store = match new_store(runtime, self.options, self.cancel.as_ref(), restored) {
            Ok(store) => store,
            Err(e) => return EvalStep::Finished(self.failed(e, started)),
        };
        let step = match self.drive(runtime, &mut store, start).await {
            Ok(Driven::Parked(waiting)) => {
                EvalStep::Suspended(self.parked(runtime, &mut store, waiting, started))
            }
            Ok(Driven::Done(envelope)) => {
                EvalStep::Finished(self.finish(Ok(envelope), &mut store, started).await)
            }
            Err(e) => EvalStep::Finished(self.finish(Err(e), &mut store, started).await),
        };
        runtime.inner.retire(store, permit);
        step
    }

    /// Runs the guest until the script finishes or the eval parks.
    async fn drive(
        &mut self,
        runtime: &Runtime,
        store: &mut Store<HostState>,
        start: Start<'_>,
    ) -> Result<Driven, EvalError> {
        let fuel = runtime.inner.config.fuel;
        let tick = runtime.inner.config.epoch_tick;
        self.set_deadline(store, tick);
        let instance = self
            .guest
            .pre
            .instantiate(&mut *store)
            .map_err(|e| self.guest_failed(store, e))?;
        let fresh = matches!(start, Start::Fresh(_));
        let guest = GuestExports::bind(store, &instance, &self.guest.layout, fresh)
            .map_err(|e| self.guest_failed(store, e))?;
        let mut status = self.start_guest(store, &guest, start, fuel, tick)?;
        loop {
            self.take_started_calls(store);
            match status {
                STATUS_DONE => {
                    return store
                        .data_mut()
                        .finished
                        .take()
                        .map(Driven::Done)
                        .ok_or_else(|| {
                            EvalError::new(
                                ErrorKind::Internal,
                                "the guest returned without reporting an outcome",
                            )
                        });
                }
                STATUS_PENDING => {}
                other => {
                    return Err(EvalError::new(
                        ErrorKind::Internal,
                        format!("the guest returned unknown status {other}"),
                    ));
                }
            }
            self.launch_queued();
            let can_park = self.can_park(store);
            let (call_id, result) = match self.next_completion(can_park).await? {
                Completion::Call(call_id, result) => (call_id, result),
                Completion::Park(waiting) => return Ok(Driven::Parked(waiting)),
                Completion::Idle => {
                    return Err(EvalError::new(
                        ErrorKind::Internal,
                        "the guest waits on tool calls but none is in flight",
                    ));
                }
            };
            let (ok, payload) = self.settle(call_id, result, store.data().memory.limit);
            // The deadline is relative to the epoch when it was set: after a wait, renew it
            // before any guest code runs (`write` runs the guest's allocator), or time spent
            // waiting — possibly paused for a human — would count twice. A call that had
            // finished already took no time worth renewing for (and reading the clock costs).
            if self.waited {
                self.set_deadline(store, tick);
            }
            let ptr = guest
                .write(store, &payload)
                .map_err(|e| self.guest_failed(store, e))?;
            status = guest
                .resume
                .call(
                    &mut *store,
                    (
                        u32::try_from(call_id).unwrap_or(u32::MAX),
                        ok as u32,
                        ptr,
                        payload.len() as u32,
                    ),
                )
                .map_err(|e| self.guest_failed(store, e))?;
        }
    }

    /// Starts the guest's first turn: the script, or for a resumed eval its memory back (the
    /// guest then waits on its calls). Its status when the turn ends.
    fn start_guest(
        &mut self,
        store: &mut Store<HostState>,
        guest: &GuestExports,
        start: Start<'_>,
        fuel: bool,
        tick: Duration,
    ) -> Result<u32, EvalError> {
        Ok(match start {
            Start::Fresh(code) => {
                if fuel {
                    store
                        .set_fuel(self.options.fuel.unwrap_or(u64::MAX))
                        .map_err(|e| internal("setting fuel", &e))?;
                }
                let heap_limit = heap_limit(store.data().memory.limit);
                let code_ptr = guest
                    .write(store, code.as_bytes())
                    .map_err(|e| self.guest_failed(store, e))?;
                self.set_deadline(store, tick);
                guest
                    .run
                    .call(&mut *store, (code_ptr, code.len() as u32, heap_limit))
                    .map_err(|e| self.guest_failed(store, e))?
            }
            Start::Resumed { memory, fuel_left } => {
                park::restore_memory(store, guest, memory)?;
                if fuel {
                    let left = fuel_left.unwrap_or(self.options.fuel.unwrap_or(u64::MAX));
                    store
                        .set_fuel(left)
                        .map_err(|e| internal("setting fuel", &e))?;
                }
                STATUS_PENDING
            }
        })
    }

    fn set_deadline(&self, store: &mut Store<HostState>, tick: Duration) {
        if self.cancel.is_some() {
            // Checked by the epoch callback at every tick (see `new_store`).
            store.data_mut().wall_deadline =
                self.clock.remaining().map(|left| Instant::now() + left);
            store.set_epoch_deadline(1);
            return;
        }
        let ticks = match self.clock.remaining() {
            Some(left) => (left.as_nanos() / tick.as_nanos().max(1)) as u64 + 1,
            None => u64::MAX / 2,
        };
        store.set_epoch_deadline(ticks);
    }

    async fn finish(
        mut self,
        result: Result<Vec<u8>, EvalError>,
        store: &mut Store<HostState>,
        started: Instant,
    ) -> EvalOutcome {
        let envelope = result.and_then(|bytes| read_envelope(&bytes));
        let (ok, value, error) = match envelope {
            Ok(Envelope {
                ok: true,
                result,
                warnings,
                ..
            }) => {
                self.guest_warnings = warnings;
                self.guest_warnings.truncate(MAX_GUEST_WARNINGS);
                let size = json_size(&result);
                match store.data_mut().charge_output(size) {
                    Ok(()) => (true, result, None),
                    Err(e) => (false, Value::Null, Some(e)),
                }
            }
            Ok(Envelope {
                error, warnings, ..
            }) => {
                // A failed script's warnings too: a call nothing awaited often explains the
                // failure (`r.split is not a function` where `r` is that call's promise).
                self.guest_warnings = warnings;
                self.guest_warnings.truncate(MAX_GUEST_WARNINGS);
                (false, Value::Null, Some(guest_error(error)))
            }
            Err(e) => (false, Value::Null, Some(e)),
        };
        if ok {
            // Un-awaited calls still running: the script is done, but their effects are not.
            self.drain_unawaited().await;
        }
        // Answers given on resume that the script ended before taking: the calls did finish.
        while let Some((id, result)) = self.done.pop_front() {
            self.settle(id, result, usize::MAX);
        }
        self.outcome(ok, value, error, store, started)
    }

    fn outcome(
        &mut self,
        ok: bool,
        result: Value,
        error: Option<EvalError>,
        store: &mut Store<HostState>,
        started: Instant,
    ) -> EvalOutcome {
        let fuel_used = match (store.get_fuel(), self.options.fuel) {
            (Ok(left), Some(budget)) => budget.saturating_sub(left),
            (Ok(left), None) => u64::MAX - left,
            (Err(_), _) => 0,
        };
        let warnings = self.warnings();
        let state = store.data_mut();
        EvalOutcome {
            ok,
            result,
            error,
            warnings,
            logs: std::mem::take(&mut state.logs),
            tool_calls: self.closed_ledger(),
            stats: EvalStats {
                fuel_used,
                wall_ms: (self.wall_before + started.elapsed()).as_secs_f64() * 1000.0,
                memory_peak_bytes: (state.memory.peak as u64).max(self.memory_peak_before),
            },
        }
    }

    /// The warnings tool calls raised, in the order they were raised, each at its call's site;
    /// then the guest's.
    fn warnings(&mut self) -> Vec<Warning> {
        let mut warnings: Vec<Warning> = self
            .warnings
            .take()
            .into_iter()
            .map(|(call_id, message)| {
                let (line, column) = usize::try_from(call_id)
                    .ok()
                    .and_then(|id| self.call_sites.get(id.wrapping_sub(1)))
                    .copied()
                    .unwrap_or_default();
                Warning {
                    message,
                    line,
                    column,
                }
            })
            .collect();
        warnings.append(&mut self.guest_warnings);
        warnings
    }

    /// An outcome for an eval that failed before its guest ran (a resumed one keeps its logs).
    fn failed(mut self, error: EvalError, started: Instant) -> EvalOutcome {
        let logs = self.restored.take().map(|r| r.logs).unwrap_or_default();
        EvalOutcome {
            ok: false,
            result: Value::Null,
            error: Some(error),
            warnings: self.warnings(),
            logs,
            tool_calls: self.closed_ledger(),
            stats: EvalStats {
                fuel_used: self.fuel_used_before,
                wall_ms: (self.wall_before + started.elapsed()).as_secs_f64() * 1000.0,
                memory_peak_bytes: self.memory_peak_before,
            },
        }
    }
}

/// What the eval loop waits for next.
enum Completion {
    /// A call finished.
    Call(u64, Result<Value, ToolError>),
    /// Nothing is in flight.
    Idle,
    /// Parking was asked for and every call in flight waits for a human: (call id, note).
    Park(Vec<(u64, Value)>),
}

/// The QuickJS heap limit for a linear-memory limit: leave room for the C stack, static data
/// and the Rust side's buffers, so QuickJS reports "out of memory" (catchable, with a position)
/// before the allocator has to fail.
fn heap_limit(memory_limit: usize) -> u32 {
    const RESERVED: usize = 3 << 20;
    u32::try_from(memory_limit.saturating_sub(RESERVED).max(1 << 20)).unwrap_or(u32::MAX)
}

/// Awaits `fut` unless the eval's clock runs out first (`None`). Pauses of the clock (a human
/// deciding) are honoured: the deadline moves while paused.
async fn with_deadline<F: std::future::Future>(clock: &EvalClock, fut: F) -> Option<F::Output> {
    tokio::pin!(fut);
    loop {
        let changed = clock.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let sleep = match (clock.is_paused(), clock.remaining()) {
            (true, _) | (_, None) => None,
            (false, Some(left)) => Some(left),
        };
        tokio::select! {
            biased;
            out = &mut fut => return Some(out),
            _ = &mut changed => continue,
            _ = tokio::time::sleep(sleep.unwrap_or_default()), if sleep.is_some() => {
                if !clock.is_paused() && clock.remaining() == Some(Duration::ZERO) {
                    return None;
                }
            }
        }
    }
}

/// The length of `value` serialised as JSON, counted without building the text.
fn json_size(value: &Value) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len() as u64;
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => 0,
    }
}

#[cfg(test)]
mod json_size_tests {
    use super::*;

    #[test]
    fn counts_what_serialising_writes() {
        for value in [
            serde_json::json!(null),
            serde_json::json!("é\u{1}\"\\"),
            serde_json::json!({"a": [1, 2.5, -3e300], "b": {"c": null}}),
        ] {
            assert_eq!(
                json_size(&value),
                serde_json::to_vec(&value).unwrap().len() as u64
            );
        }
    }
}
