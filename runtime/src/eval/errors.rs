//! Why an eval ended: traps and aborts mapped to [`ErrorKind`]s with messages that say which
//! limit and how much.

use wasmtime::{Store, Trap};

use super::running::Eval;
use crate::limits::{EvalOptions, LargestUnit};
use crate::outcome::{ErrorKind, EvalError};
use crate::state::HostState;
use crate::tool::ToolHost;

impl<T: ToolHost + ?Sized> Eval<'_, T> {
    /// The guest trapped: keep the calls it started in the same turn in the ledger (as not
    /// started), then say why it failed.
    pub(super) fn guest_failed(
        &mut self,
        store: &mut Store<HostState>,
        error: wasmtime::Error,
    ) -> EvalError {
        self.take_started_calls(store);
        self.classify(store, error)
    }

    fn classify(&self, store: &mut Store<HostState>, error: wasmtime::Error) -> EvalError {
        if let Some(reason) = store.data_mut().abort.take() {
            return reason;
        }
        let refused = store.data().memory.refused;
        let limit = store.data().memory.limit;
        match error.downcast_ref::<Trap>() {
            Some(Trap::OutOfFuel) => EvalError::new(
                ErrorKind::OutOfFuel,
                format!(
                    "the script ran out of fuel ({} instructions)",
                    self.options.fuel.unwrap_or(0)
                ),
            ),
            Some(Trap::Interrupt) => timeout_error(self.options),
            Some(Trap::StackOverflow) => stack_overflow(),
            _ if refused => memory_limit(limit),
            // The guest's C stack lies at the bottom of its memory: overflowing it wraps below
            // address 0, which is the only way this guest reads out of bounds.
            Some(Trap::MemoryOutOfBounds) => stack_overflow(),
            _ => EvalError::new(
                ErrorKind::Internal,
                format!("the sandbox failed: {error:#}"),
            ),
        }
    }
}

pub(super) fn timeout_error(options: &EvalOptions) -> EvalError {
    let limit = options
        .timeout
        .map(|t| format!(" of {}", LargestUnit::Seconds.spell(t)))
        .unwrap_or_default();
    EvalError::new(
        ErrorKind::Timeout,
        format!("the script exceeded its wall-clock timeout{limit}"),
    )
}

pub(super) fn cancelled_error() -> EvalError {
    EvalError::new(ErrorKind::Cancelled, "the eval was cancelled by its caller")
}

pub(super) fn internal(what: &str, e: &wasmtime::Error) -> EvalError {
    EvalError::new(ErrorKind::Internal, format!("{what}: {e:#}"))
}

pub(super) fn stack_overflow() -> EvalError {
    EvalError::new(
        ErrorKind::StackOverflow,
        "the script exceeded the maximum call stack size (too deep recursion)",
    )
}

pub(super) fn memory_limit(limit: usize) -> EvalError {
    EvalError::new(
        ErrorKind::MemoryLimit,
        format!("the script exceeded its memory limit of {limit} bytes"),
    )
}
