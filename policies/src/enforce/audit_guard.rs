//! Exactly one audit record per call attempt, even when the attempt is abandoned midway.

use std::time::Instant;

use codemode_runtime::{CallContext, CallStatus};
use serde_json::Value;

use crate::audit::hitl::{HitlAudit, is_hitl_request};
use crate::audit::{
    AuditRecord, AuditSink, Decision, Stage, ToolCallAuditRecord, args_sha256, audit_eval_id,
    now_rfc3339,
};
use crate::{Channel, Class, DispositionKind, Risk};

/// Where an attempt's record goes, and what it says besides the call: borrowed from the host
/// that makes the call.
pub(super) struct Recorder<'h> {
    pub(super) sink: &'h dyn AuditSink,
    /// Whether records include the arguments themselves.
    pub(super) include_args: bool,
    /// The `eval_id` written instead of the runtime id's (a resumed eval).
    pub(super) audit_id: Option<&'h str>,
    pub(super) session_id: Option<&'h str>,
    pub(super) profile: Option<&'h str>,
    pub(super) caller: &'h str,
    /// The caller's permissions as they count for the call, sorted.
    pub(super) caller_permissions: Vec<String>,
}

/// Collects what is known about one attempt and records it once: on [`AuditGuard::finish`],
/// or on drop if the call's future was dropped before finishing (status `error`, reason
/// `cancelled`).
pub(super) struct AuditGuard<'h> {
    /// `None` when the host has no audit sink (nothing to hash or record).
    recorder: Option<Recorder<'h>>,
    /// `Some` with the recorder.
    base: Option<Base>,
    started: Instant,
    pub(super) disposition: DispositionKind,
    pub(super) decision: Decision,
    pub(super) reason: Option<String>,
    pub(super) risk: Risk,
    /// Where the answer to an ask came from; `None` when nobody was asked.
    pub(super) channel: Option<Channel>,
    pub(super) decided_by: Option<String>,
    /// The `approvers` permission the decider held (see [`ToolCallAuditRecord::approver_right`]).
    pub(super) approver_right: Option<String>,
    pub(super) decision_reason: Option<String>,
    /// The paths the output policy masked or removed from the result.
    pub(super) redacted_paths: Vec<String>,
    /// Hex SHA-256 of the result as the tool returned it.
    pub(super) output_sha256: Option<String>,
    /// Where the call's fate was decided.
    pub(super) stage: Stage,
    /// The tool's class.
    pub(super) classification: Option<Class>,
    /// How long the human had to answer, in seconds, when one was asked.
    pub(super) timeout_seconds: Option<f64>,
    /// The id of the pending ask this call joined, if it joined one.
    pub(super) joined_ask: Option<String>,
    /// What a `hitl_request` asked and was answered; `None` for other tools.
    hitl: Option<HitlAudit>,
    /// The call, to tell at drop whether its eval parked (the call is made again on resume,
    /// which writes its record) or ended (this attempt is recorded as cancelled).
    call: CallContext,
}

struct Base {
    eval_id: codemode_runtime::EvalId,
    call_id: u64,
    tool: String,
    args_sha256: String,
    args: Option<Value>,
}

impl<'h> AuditGuard<'h> {
    pub(super) fn start(
        recorder: Option<Recorder<'h>>,
        tool: &str,
        args: &Value,
        cx: &CallContext,
    ) -> Self {
        let base = recorder.as_ref().map(|recorder| Base {
            eval_id: cx.eval_id,
            call_id: cx.call_id,
            tool: tool.to_string(),
            args_sha256: args_sha256(args),
            args: recorder.include_args.then(|| args.clone()),
        });
        let hitl = (base.is_some() && is_hitl_request(tool)).then(|| HitlAudit::asked(args));
        AuditGuard {
            recorder,
            base,
            started: Instant::now(),
            disposition: DispositionKind::Allow,
            decision: Decision::Allowed,
            reason: None,
            risk: Risk::default(),
            channel: None,
            decided_by: None,
            approver_right: None,
            decision_reason: None,
            redacted_paths: Vec::new(),
            output_sha256: None,
            stage: Stage::Execution,
            classification: None,
            timeout_seconds: None,
            joined_ask: None,
            hitl,
            call: cx.clone(),
        }
    }

    /// Whether a record will be written (else there is nothing to hash).
    pub(super) fn records(&self) -> bool {
        self.base.is_some()
    }

    /// Takes a `hitl_request`'s result: the answer, and the question's timeout when a human
    /// was asked and no approval's timeout is recorded already.
    pub(super) fn hitl_result(&mut self, result: &Value) {
        if let Some(hitl) = &mut self.hitl
            && let Some(seconds) = hitl.answered(result)
        {
            self.timeout_seconds.get_or_insert(seconds);
        }
    }

    /// Records the attempt as ended with `status`.
    pub(super) fn finish(mut self, status: CallStatus) {
        self.emit(status);
    }

    fn emit(&mut self, status: CallStatus) {
        let (Some(base), Some(recorder)) = (self.base.take(), self.recorder.as_ref()) else {
            return;
        };
        let hitl = self.hitl.take().unwrap_or_default();
        recorder
            .sink
            .record(AuditRecord::ToolCall(ToolCallAuditRecord {
                ts: now_rfc3339(),
                eval_id: recorder
                    .audit_id
                    .map_or_else(|| audit_eval_id(base.eval_id), str::to_string),
                call_id: base.call_id,
                session_id: recorder.session_id.map(str::to_string),
                profile: recorder.profile.map(str::to_string),
                tool: base.tool,
                args_sha256: base.args_sha256,
                args: base.args,
                disposition: self.disposition,
                decision: self.decision,
                reason: self.reason.take(),
                status,
                duration_ms: self.started.elapsed().as_secs_f64() * 1000.0,
                caller: recorder.caller.to_string(),
                risk: self.risk,
                channel: self.channel,
                decided_by: self.decided_by.take(),
                decision_reason: self.decision_reason.take(),
                redacted_paths: std::mem::take(&mut self.redacted_paths),
                output_sha256: self.output_sha256.take(),
                stage: Some(self.stage),
                classification: self.classification,
                approver_right: self.approver_right.take(),
                caller_permissions: recorder.caller_permissions.clone(),
                timeout_seconds: self.timeout_seconds,
                joined_ask: self.joined_ask.take(),
                question: hitl.question,
                options: hitl.options,
                answer: hitl.answer,
                metadata: hitl.metadata,
            }));
    }
}

impl Drop for AuditGuard<'_> {
    fn drop(&mut self) {
        if self.base.is_some() && !self.call.is_parked() {
            self.reason = Some("cancelled".to_string());
            self.emit(CallStatus::Error);
        }
    }
}
