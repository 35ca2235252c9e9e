//! Where an eval's spans come from: its audit records ([`TracingSink`]: `tool_call` and
//! `eval`) and its waits on a human ([`TracingAsker`]: `approval_wait`).

use std::sync::Arc;
use std::time::Duration;

use codemode_policies::{AuditRecord, AuditSink, Channel};
use codemode_runtime::BoxFuture;

use super::{EvalTrace, now_ns};
use crate::approvals::{Answer, Ask, AskKind, Asker, Reply};

/// The span's start, `ms` before `end_ns`.
fn started(end_ns: u64, ms: f64) -> u64 {
    let ns = Duration::from_secs_f64((ms / 1000.0).max(0.0)).as_nanos();
    end_ns.saturating_sub(u64::try_from(ns).unwrap_or(u64::MAX))
}

/// An eval's audit sink that makes a span of each `tool_call` and `eval` record, then hands
/// the record on to `inner` (the audit log, metrics) when there is one.
pub(crate) struct TracingSink {
    pub(crate) trace: EvalTrace,
    pub(crate) inner: Option<Arc<dyn AuditSink>>,
}

impl TracingSink {
    fn span_of(&self, record: &AuditRecord) {
        let end = now_ns();
        let trace = &self.trace;
        match record {
            AuditRecord::ToolCall(call) => trace.record(
                (
                    "tool_call",
                    trace.call_span(call.call_id),
                    Some(trace.eval_span()),
                ),
                (started(end, call.duration_ms), end),
                vec![
                    ("codemode.tool", call.tool.clone()),
                    ("codemode.decision", call.decision.as_str().into()),
                    ("codemode.risk", call.risk.as_str().into()),
                    ("codemode.outcome", call.status.as_str().into()),
                ],
                call.status == codemode_runtime::CallStatus::Error,
            ),
            AuditRecord::Eval(eval) => {
                let outcome = match (eval.ok, eval.error_kind) {
                    (true, _) => "ok",
                    (false, Some(kind)) => kind.as_str(),
                    (false, None) => "error",
                };
                trace.record(
                    ("eval", trace.eval_span(), trace.eval_parent()),
                    (started(end, eval.wall_ms), end),
                    vec![("codemode.outcome", outcome.into())],
                    !eval.ok,
                );
            }
            AuditRecord::Access(_) | AuditRecord::Sampling(_) | AuditRecord::Rule(_) => {}
        }
    }
}

impl AuditSink for TracingSink {
    fn record(&self, record: AuditRecord) {
        self.span_of(&record);
        if let Some(inner) = &self.inner {
            inner.record(record);
        }
    }

    fn flush(&self) {
        if let Some(inner) = &self.inner {
            inner.flush();
        }
    }
}

/// An eval's asker that makes an `approval_wait` span of each approval it asks a human, as a
/// child of the asking call's `tool_call` span.
pub(crate) struct TracingAsker {
    pub(crate) inner: Arc<dyn Asker>,
    pub(crate) trace: EvalTrace,
}

impl Asker for TracingAsker {
    fn supports(&self) -> bool {
        self.inner.supports()
    }

    fn channel(&self) -> Channel {
        self.inner.channel()
    }

    fn approvers_elsewhere(&self) -> bool {
        self.inner.approvers_elsewhere()
    }

    fn ask(&self, ask: Ask) -> BoxFuture<'_, Reply> {
        Box::pin(async move {
            let AskKind::Approval(request) = &ask.kind else {
                return self.inner.ask(ask).await;
            };
            let (tool, call_id) = (request.tool.clone(), request.call_id);
            let start = now_ns();
            let reply = self.inner.ask(ask).await;
            let outcome = match &reply.answer {
                Answer::Accept(_) => "answered",
                Answer::Decline => "declined",
                Answer::Cancel => "cancelled",
                Answer::Timeout => "timeout",
                Answer::Failed(_) => "failed",
            };
            let trace = &self.trace;
            trace.record(
                (
                    "approval_wait",
                    super::random(),
                    Some(trace.call_span(call_id)),
                ),
                (start, now_ns()),
                vec![
                    ("codemode.tool", tool),
                    ("codemode.outcome", outcome.into()),
                    ("codemode.channel", reply.channel.as_str().into()),
                ],
                false,
            );
            reply
        })
    }

    fn taken_while_parked<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, Option<Reply>> {
        self.inner.taken_while_parked(ask)
    }
}
