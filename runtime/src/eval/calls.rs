//! The tool calls of one eval: from the guest's `call_start` to the ledger, in order of start,
//! at most `max_concurrent_tool_calls` in flight, each settled back into the guest.

use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use futures::FutureExt;
use futures::stream::StreamExt;
use serde_json::{Value, json};
use wasmtime::Store;

use super::errors::{cancelled_error, timeout_error};
use super::running::{CallStart, Eval};
use super::{Completion, with_deadline};
use crate::outcome::{CallStatus, EvalError, ToolCallRecord};
use crate::park::{HumanWaits, ParkRequest};
use crate::state::{HostState, StartedCall};
use crate::suggest;
use crate::tool::{CallContext, ToolError, ToolHost};

impl<T: ToolHost + ?Sized> Eval<'_, T> {
    /// Moves the calls the guest just started into the queue (and the ledger).
    pub(super) fn take_started_calls(&mut self, store: &mut Store<HostState>) {
        for StartedCall {
            id,
            name,
            args_json,
            line,
            column,
        } in store.data_mut().started.drain(..)
        {
            self.call_sites.push((line, column));
            self.ledger.push(ToolCallRecord {
                id,
                tool: name.clone(),
                // Until settled: `closed_ledger` says why not, if it never is.
                status: CallStatus::Error,
                reason: None,
                duration_ms: 0.0,
                note: None,
            });
            self.call_started.push(None);
            let args = serde_json::from_str::<Value>(&args_json).map_err(|e| {
                ToolError::failed(format!("the arguments to `{name}` could not be read: {e}"))
            });
            self.queued.push_back((id, args, name));
        }
    }

    pub(super) fn launch_queued(&mut self) {
        // At least 1: the options were validated when the eval started.
        let max = self.options.max_concurrent_tool_calls;
        while self.in_flight.len() < max {
            let Some((id, args, name)) = self.queued.pop_front() else {
                break;
            };
            let index = (id - 1) as usize;
            // A call made again after a resume keeps its first start.
            if self.call_started[index].is_none() {
                self.call_started[index] = Some(CallStart::now());
            }
            if self.image.is_some()
                && let Ok(args) = &args
            {
                // Saved with the call if the eval parks.
                self.in_flight_args.insert(id, args.clone());
            }
            let tools = self.tools;
            let cx = CallContext {
                eval_id: self.id,
                call_id: id,
                clock: self.clock.clone(),
                warnings: self.warnings.clone(),
                notes: self.notes.clone(),
                human: self.human.clone(),
                resumed_note: self.resumed_notes.remove(&id),
            };
            let mut call: super::running::CallFuture<'_> = Box::pin(async move {
                let result = match args {
                    Ok(args) => tools.call(&name, args, &cx).await,
                    Err(e) => Err(e),
                };
                (id, result)
            });
            // A tool that answers at once (an in-process one) needs no place among the calls in
            // flight. Polled here with a waker that does nothing: a call that is not finished is
            // polled again, with the real waker, in `in_flight`.
            match call.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
                Poll::Ready(finished) => {
                    self.in_flight_args.remove(&id);
                    self.done.push_back(finished);
                }
                Poll::Pending => {
                    self.in_flight_ids.push(id);
                    self.in_flight.push(call);
                }
            }
        }
    }

    /// Waits for the next tool call to finish, within the wall-clock budget; or, when
    /// `can_park` and parking is asked for, until every call in flight waits for a human.
    pub(super) async fn next_completion(
        &mut self,
        can_park: bool,
    ) -> Result<Completion, EvalError> {
        self.waited = false;
        // A call that is already done (a tool that answers at once) needs no deadline or
        // cancellation armed; a cancelled eval goes the long way so that cancellation wins.
        if self.cancel.as_ref().is_none_or(|c| !c.is_cancelled()) {
            if let Some((id, result)) = self.done.pop_front() {
                return Ok(Completion::Call(id, result));
            }
            if self.in_flight.is_empty() {
                return Ok(Completion::Idle);
            }
            if let Some(done) = self.in_flight.next().now_or_never() {
                return Ok(self.landed(done));
            }
        } else if self.in_flight.is_empty() {
            return Err(cancelled_error());
        }
        self.waited = true;
        let cancel = self.cancel.clone();
        let cancelled = async move {
            match cancel {
                Some(token) => token.cancelled_owned().await,
                None => std::future::pending().await,
            }
        };
        let park = self.park.clone().filter(|_| can_park);
        let parkable = all_waiting_for_humans(park, self.human.clone(), self.in_flight_ids.clone());
        let done = tokio::select! {
            done = with_deadline(&self.clock, self.in_flight.next()) => match done {
                Some(done) => done,
                None => return Err(timeout_error(self.options)),
            },
            () = cancelled => return Err(cancelled_error()),
            waiting = parkable => return Ok(Completion::Park(waiting)),
        };
        Ok(self.landed(done))
    }

    /// A call that came out of `in_flight` (`None`: it was empty).
    fn landed(&mut self, done: Option<(u64, Result<Value, ToolError>)>) -> Completion {
        match done {
            Some((id, result)) => {
                self.in_flight_ids.retain(|&i| i != id);
                self.in_flight_args.remove(&id);
                Completion::Call(id, result)
            }
            None => Completion::Idle,
        }
    }

    /// Records a finished call in the ledger and encodes what the guest receives.
    pub(super) fn settle(
        &mut self,
        id: u64,
        result: Result<Value, ToolError>,
        memory_limit: usize,
    ) -> (bool, Vec<u8>) {
        let index = (id - 1) as usize;
        let duration_ms =
            self.call_started[index].map_or(0.0, |t| t.elapsed().as_secs_f64() * 1000.0);
        let tool = &self.ledger[index].tool;
        let result = result.and_then(|value| match serde_json::to_vec(&value) {
            // A result larger than the whole sandbox cannot be delivered: say so instead of
            // letting the guest die of it.
            Ok(bytes) if bytes.len() >= memory_limit => Err(ToolError::failed(format!(
                "the result of `{tool}` ({} bytes) does not fit in the eval's memory limit ({memory_limit} bytes)",
                bytes.len()
            ))),
            Ok(bytes) => Ok(bytes),
            Err(e) => Err(ToolError::failed(format!("the result of `{tool}` cannot be encoded: {e}"))),
        });
        let note = self.notes.take_last(id);
        let record = &mut self.ledger[index];
        record.duration_ms = duration_ms;
        if note.is_some() {
            record.note = note;
        }
        match result {
            Ok(bytes) => {
                record.status = CallStatus::Ok;
                record.reason = None;
                (true, bytes)
            }
            Err(error) => {
                let payload = match &error {
                    ToolError::NotFound { tool } => {
                        let names = self.tools.tool_names();
                        let near = suggest::closest(tool, &names, 3);
                        let dashed = suggest::dashed(tool, &names);
                        let hint = if let Some(full) = dashed {
                            format!(
                                "; the tool `{full}` has a dash in its name, which `codemode.{full}` would read as a subtraction: write codemode[\"{full}\"](...)"
                            )
                        } else if near.is_empty() {
                            if names.is_empty() {
                                " (no tools are available)".to_string()
                            } else {
                                String::new()
                            }
                        } else {
                            format!(
                                "; did you mean {}?",
                                near.iter()
                                    .map(|n| format!("`{n}`"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        };
                        json!({"type": "not_found", "message": format!("unknown tool `{tool}`{hint}")})
                    }
                    ToolError::Failed { message, data } => {
                        json!({"type": "failed", "message": message, "data": data})
                    }
                    ToolError::Denied {
                        reason, message, ..
                    } => {
                        json!({"type": "denied", "message": message, "reason": reason})
                    }
                };
                record.status = if matches!(error, ToolError::Denied { .. }) {
                    CallStatus::Denied
                } else {
                    CallStatus::Error
                };
                record.reason = Some(match &error {
                    ToolError::Denied { reason, .. } => reason.clone(),
                    _ => payload["message"].as_str().unwrap_or_default().to_string(),
                });
                (
                    false,
                    serde_json::to_vec(&payload).unwrap_or_else(|_| b"{}".to_vec()),
                )
            }
        }
    }

    /// The ledger, each call the eval ended before it settled saying so: "not started" or
    /// "unfinished" (which may or may not have taken effect).
    pub(super) fn closed_ledger(&mut self) -> Vec<ToolCallRecord> {
        let mut ledger = std::mem::take(&mut self.ledger);
        for (record, started) in ledger.iter_mut().zip(&self.call_started) {
            // A settled error always has a reason.
            if record.status == CallStatus::Error && record.reason.is_none() {
                record.reason = Some(if started.is_some() {
                    "unfinished: the eval ended while the call was in flight (it may or may not have taken effect)".into()
                } else {
                    "not started: the eval ended first".into()
                });
            }
        }
        ledger
    }

    /// After the script finished: let calls it started but did not await run to their end, so
    /// the ledger says what really happened.
    pub(super) async fn drain_unawaited(&mut self) {
        loop {
            self.launch_queued();
            match self.next_completion(false).await {
                Ok(Completion::Call(id, result)) => {
                    self.settle(id, result, usize::MAX);
                }
                Ok(Completion::Idle | Completion::Park(_)) | Err(_) => return,
            }
        }
    }
}

/// Resolves, with each call's note, once `park` is requested and every call of `in_flight`
/// holds a [`crate::HumanWait`]; never without a request.
async fn all_waiting_for_humans(
    park: Option<ParkRequest>,
    human: Arc<HumanWaits>,
    in_flight: Vec<u64>,
) -> Vec<(u64, Value)> {
    let Some(park) = park else {
        return std::future::pending().await;
    };
    park.requested().await;
    loop {
        let changed = human.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        if let Some(notes) = human.notes_if_all(&in_flight) {
            return in_flight.into_iter().zip(notes).collect();
        }
        changed.await;
    }
}
