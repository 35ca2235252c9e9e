//! Running scripts: [`Runtime::eval`] and its variants, and [`Runtime::resume`] for a parked
//! eval.

use crate::park::EvalControl;
use crate::runtime::Runtime;
use crate::suspend::{Answer, EvalStep, ResumeError, Suspended};
use crate::tool::{EvalId, ToolHost};
use crate::{EvalOptions, EvalOutcome, eval};

impl Runtime {
    /// Evaluates `code` in a fresh sandbox; tool calls go to `tools`. Never panics on guest
    /// input: every failure is an [`EvalOutcome`] with `ok: false`.
    ///
    /// # Blocking
    /// The guest runs inside the future's `poll`, on the thread polling it, without yielding until
    /// the script waits on a tool call or ends: a busy script holds that thread until its fuel or
    /// its [`EvalOptions::timeout`] runs out. Polled on an async executor's worker, it stalls every
    /// task queued behind it there (other requests, accepts, timers). Poll each eval on a thread of
    /// its own instead, driven by the executor's handle: a [`ThreadPool`](crate::ThreadPool) hands
    /// out such threads without a thread start per eval (its docs show the pattern; `codemode
    /// serve` runs every eval so). A process running one eval at a time may as well `block_on` it
    /// from a thread that is not a worker, as `codemode run` does. The same holds for every
    /// `eval_*` method and [`Runtime::resume`].
    pub async fn eval<T: ToolHost + ?Sized>(
        &self,
        code: &str,
        options: &EvalOptions,
        tools: &T,
    ) -> EvalOutcome {
        let id = self.allocate_eval_id();
        self.eval_with_id(id, code, options, tools).await
    }

    /// [`Runtime::eval`] with an id from [`Runtime::allocate_eval_id`].
    pub async fn eval_with_id<T: ToolHost + ?Sized>(
        &self,
        id: EvalId,
        code: &str,
        options: &EvalOptions,
        tools: &T,
    ) -> EvalOutcome {
        let step = eval::run(self, id, code, options, tools, &EvalControl::new()).await;
        finished(step)
    }

    /// [`Runtime::eval_with_id`] that ends as soon as `cancel` is cancelled — even inside a busy
    /// loop, within one epoch tick — with error kind [`crate::ErrorKind::Cancelled`] and the
    /// ledger of what ran. Dropping an eval's future also stops it, but only at its next
    /// await point: a future cannot be dropped while guest code runs inside it.
    pub async fn eval_cancellable<T: ToolHost + ?Sized>(
        &self,
        id: EvalId,
        code: &str,
        options: &EvalOptions,
        tools: &T,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> EvalOutcome {
        let control = EvalControl {
            cancel: Some(cancel.clone()),
            park: None,
        };
        let step = eval::run(self, id, code, options, tools, &control).await;
        finished(step)
    }

    /// [`Runtime::eval_with_id`] steered by `control`: cancellable, and able to park.
    ///
    /// Once [`EvalControl::park`] is requested, the eval parks as soon as every tool call it
    /// has in flight waits for a human ([`crate::CallContext::awaiting_human`]) and no finished
    /// call waits to be delivered; until then it runs on in memory, and it may finish first.
    /// Parking drops the calls in flight, frees the sandbox slot and returns
    /// [`EvalStep::Suspended`]: save it ([`Suspended::save`]) and resume it later, here or
    /// elsewhere ([`Runtime::resume`]).
    pub async fn eval_parkable<T: ToolHost + ?Sized>(
        &self,
        id: EvalId,
        code: &str,
        options: &EvalOptions,
        tools: &T,
        control: &EvalControl,
    ) -> EvalStep {
        eval::run(self, id, code, options, tools, control).await
    }

    /// Resumes a parked eval in a fresh sandbox of the guest it was saved with.
    ///
    /// `answers` are results for some of its [pending calls](Suspended::pending), as the
    /// tools would have returned them; they are delivered first, in the order given. Every
    /// pending call without an answer is made again through `tools`, its
    /// [`crate::CallContext::resumed_note`] set to its note. Calls that finished before the
    /// eval parked are never made again. The eval keeps its id, options and everything it
    /// used (fuel, wall time, output, tool calls, logs, warnings, ledger); the time it spent
    /// parked counts in its `wall_ms` and its calls' durations, not against its timeout. It
    /// may park again under `control`.
    ///
    /// # Errors
    /// [`ResumeError`] when the eval cannot start, with `suspended` untouched: its guest is
    /// not in this runtime ([`Runtime::add_guest`]), an answer names a call it does not wait
    /// on or a call twice, or its options do not fit this runtime. Anything that goes wrong
    /// once it runs is its outcome, as for any eval.
    pub async fn resume<T: ToolHost + ?Sized>(
        &self,
        suspended: &Suspended,
        answers: Vec<Answer>,
        tools: &T,
        control: &EvalControl,
    ) -> Result<EvalStep, ResumeError> {
        let guest = self
            .inner
            .guest(suspended.guest)
            .ok_or(ResumeError::UnknownGuest {
                guest: suspended.guest,
            })?;
        let pending = suspended.pending();
        let mut seen = std::collections::HashSet::new();
        for (call_id, _) in &answers {
            if !pending.iter().any(|p| p.call_id == *call_id) {
                return Err(ResumeError::UnknownCall {
                    call_id: *call_id,
                    pending: pending.iter().map(|p| p.call_id).collect(),
                });
            }
            if !seen.insert(*call_id) {
                return Err(ResumeError::DuplicateAnswer { call_id: *call_id });
            }
        }
        let options = suspended.options();
        options
            .validate(&self.inner.config)
            .map_err(ResumeError::InvalidOptions)?;
        let image = guest
            .reference(&self.inner.engine, &self.inner.reserve)
            .map_err(ResumeError::Incompatible)?;
        if suspended.memory.size < image.len() as u64 {
            return Err(ResumeError::Incompatible(format!(
                "the saved memory ({} bytes) is smaller than the guest's fresh memory ({} bytes)",
                suspended.memory.size,
                image.len()
            )));
        }
        Ok(eval::resume(self, guest, suspended, &options, answers, tools, control).await)
    }
}

/// The outcome of an eval that was not asked to park (so cannot have).
fn finished(step: EvalStep) -> EvalOutcome {
    match step {
        EvalStep::Finished(outcome) => outcome,
        EvalStep::Suspended(suspended) => EvalOutcome {
            ok: false,
            result: serde_json::Value::Null,
            error: Some(crate::EvalError::new(
                crate::ErrorKind::Internal,
                "an eval that was not asked to park parked",
            )),
            warnings: Vec::new(),
            logs: suspended.logs().to_vec(),
            tool_calls: suspended.ledger().to_vec(),
            stats: crate::EvalStats::default(),
        },
    }
}
