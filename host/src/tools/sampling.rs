//! An upstream's `sampling/createMessage` during a script's call, governed: [`SamplingGate`]
//! is the eval's [`CallSampler`] — its profile's `sampling` decides (`allow`, `ask`, `deny`;
//! default `ask`, put to a human through the eval's usual channels), one `sampling` audit record
//! says what became of each request, and an allowed request goes to the eval's client's model
//! ([`SamplingRoute`], [`ClientModel`]: a request on its connection, or on 2026-07-28 an input
//! request of the eval's input-required result) — or is refused with the reason when there is
//! none.

#![expect(
    deprecated,
    reason = "SEP-2577 deprecates sampling from protocol 2026-07-28 on, but servers and clients of 2025-11-25 and older use it, and a proxy forwards it"
)]

use std::sync::Arc;
use std::time::Duration;

use codemode_policies::{
    Answer, Ask, AuditRecord, AuditSink, Channel, Decision, DispositionKind, Fallback,
    PendingSlots, Profile, SamplingAuditRecord,
};
use codemode_runtime::{BoxFuture, CallStatus};
use codemode_upstream::CallSampler;
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult, ProtocolVersion};
use rmcp::service::{RequestContext, ServiceError};
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use serde_json::Value;

use super::sampling_prompt::{APPROVE, Asking, FIELD, sampling_question};
use crate::approvals::Asker;

/// The model of an eval's MCP client, as its protocol reaches it: a `sampling/createMessage`
/// request on its connection (2025-11-25 and older), or an input request of the eval's
/// input-required result, answered by the client's retry (2026-07-28).
pub trait ClientModel: Send + Sync {
    /// Has the client's model answer `params`.
    fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, ServiceError>>;
}

impl ClientModel for Peer<RoleServer> {
    fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, ServiceError>> {
        Box::pin(Peer::create_message(self, params))
    }
}

/// Where an eval's allowed sampling requests go.
#[derive(Clone)]
pub enum SamplingRoute {
    /// The model of the eval's MCP client, which declared `sampling`.
    Client(Arc<dyn ClientModel>),
    /// Nowhere: why, in words (the upstream is told).
    Refused(String),
}

impl Default for SamplingRoute {
    fn default() -> Self {
        SamplingRoute::Refused(
            "this script has no client whose model could answer (one of `codemode run`, or resumed from the durable store, has none)"
                .into(),
        )
    }
}

impl SamplingRoute {
    /// The route of an eval requested with `ctx`, when its client declared `sampling`: on
    /// 2025-11-25 and older its connection; on 2026-07-28, where a server sends its client no
    /// requests, `input_required` (the eval's input-required results).
    pub(crate) fn of_request(
        ctx: &RequestContext<RoleServer>,
        input_required: Option<Arc<dyn ClientModel>>,
    ) -> Self {
        if ctx
            .client_capabilities()
            .is_none_or(|c| c.sampling.is_none())
        {
            return SamplingRoute::Refused(
                "this script's client did not declare `sampling`".into(),
            );
        }
        let modern = ctx
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        match (modern, input_required) {
            (false, _) => SamplingRoute::Client(Arc::new(ctx.peer.clone())),
            (true, Some(model)) => SamplingRoute::Client(model),
            (true, None) => SamplingRoute::Refused(
                "this script's 2026-07-28 request cannot return input-required results".into(),
            ),
        }
    }
}

/// The eval's [`CallSampler`] (see the module docs).
pub struct SamplingGate {
    pub(crate) route: SamplingRoute,
    /// The eval's channels (its client's elicitation, the approval API, the terminal).
    pub(crate) asker: Arc<dyn Asker>,
    pub(crate) profile: Option<Arc<Profile>>,
    pub(crate) audit: Option<Arc<dyn AuditSink>>,
    /// The `eval_id` of its audit records.
    pub(crate) eval: String,
    pub(crate) caller: String,
    pub(crate) session: Option<String>,
    /// The slots of its requests waiting for a human (capped like its approvals: an upstream
    /// cannot flood the human with questions; the others wait for a slot).
    pub(crate) waiting: PendingSlots,
}

/// A request refused before it reached the client: the upstream's error, and why in words.
fn refused(why: &str) -> McpError {
    McpError::invalid_request(
        format!("codemode refused this sampling request: {why}"),
        None,
    )
}

impl CallSampler for SamplingGate {
    fn create_message<'a>(
        &'a self,
        server: &'a str,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'a, Result<CreateMessageResult, McpError>> {
        Box::pin(async move {
            let json = serde_json::to_value(&params).unwrap_or(Value::Null);
            let mut audit = Audited::new(self, server);
            let record = &mut audit.record;
            record.messages = params.messages.len();
            record.max_tokens = params.max_tokens;
            record.request_sha256 = AuditRecord::args_sha256(&json);
            match self.decide(server, &json, record).await {
                Ok(peer) => {
                    // From here on it reached the client (withdrawn midway: an error).
                    record.status = CallStatus::Error;
                    let within = self
                        .profile
                        .as_deref()
                        .map_or(Profile::DEFAULT_APPROVAL_TIMEOUT, Profile::approval_timeout);
                    forward(peer, params, within, record).await
                }
                Err(why) => {
                    tracing::warn!("refused a sampling request from upstream `{server}`: {why}");
                    record.reason = Some(why.clone());
                    Err(refused(&why))
                }
            }
        })
    }
}

/// A request's record, written when the request ends — also when its future is dropped midway
/// (the upstream withdrew it, or the script's call ended): then it says so.
struct Audited {
    sink: Option<Arc<dyn AuditSink>>,
    record: SamplingAuditRecord,
}

impl Audited {
    fn new(gate: &SamplingGate, server: &str) -> Self {
        let mut record = SamplingAuditRecord::now(&gate.eval, &gate.caller, server);
        record.session_id.clone_from(&gate.session);
        record.profile = gate.profile.as_ref().map(|p| p.name().to_string());
        // Replaced by how it ended, unless it never does.
        record.reason = Some(
            "withdrawn before it was answered: the upstream cancelled it, or the script's call ended"
                .into(),
        );
        Audited {
            sink: gate.audit.clone(),
            record,
        }
    }
}

impl Drop for Audited {
    fn drop(&mut self) {
        if let Some(sink) = &self.sink {
            let mut record = self.record.clone();
            record.ts = AuditRecord::now_rfc3339();
            sink.record(AuditRecord::Sampling(record));
        }
    }
}

impl SamplingGate {
    /// Whether the request may go to the client (its peer), by the profile and maybe a human;
    /// the decision, and who made it, go into `record`.
    async fn decide(
        &self,
        server: &str,
        params: &Value,
        record: &mut SamplingAuditRecord,
    ) -> Result<&Arc<dyn ClientModel>, String> {
        let peer = match &self.route {
            SamplingRoute::Client(peer) => peer,
            SamplingRoute::Refused(why) => return Err(why.clone()),
        };
        let profile = self.profile.as_deref();
        let named = profile.map_or_else(
            || "this script".to_string(),
            |p| format!("profile `{}`", p.name()),
        );
        match profile.map_or(DispositionKind::Ask, Profile::sampling) {
            DispositionKind::Allow => record.decision = Decision::Allowed,
            DispositionKind::Deny => return Err(format!("{named} denies sampling")),
            DispositionKind::Ask => self.ask(server, params, record, &named).await?,
        }
        Ok(peer)
    }

    /// Puts the request to a human; `Ok` when approved.
    async fn ask(
        &self,
        server: &str,
        params: &Value,
        record: &mut SamplingAuditRecord,
        named: &str,
    ) -> Result<(), String> {
        let profile = self.profile.as_deref();
        if !self.asker.supports() {
            record.decision = Decision::Unsupported;
            record.channel = Some(Channel::Fallback);
            return match profile.map_or(Fallback::Deny, Profile::elicitation_fallback) {
                Fallback::Allow => Ok(()),
                Fallback::Deny => Err(format!(
                    "{named} asks a human about sampling, and nobody can be asked"
                )),
            };
        }
        let max = profile.map_or(
            Profile::DEFAULT_MAX_PENDING_APPROVALS,
            Profile::max_pending_approvals,
        );
        let timeout = profile.map_or(Profile::DEFAULT_APPROVAL_TIMEOUT, Profile::approval_timeout);
        let Some(_slot) = self.waiting.wait(max, timeout).await else {
            record.decision = Decision::Timeout;
            record.channel = Some(Channel::Policy);
            return Err(format!(
                "{named} waited {timeout:?} for a slot without getting one: this script's other sampling requests held all maxPendingApprovals = {max} slots"
            ));
        };
        let asking = Asking {
            server,
            caller: &self.caller,
            profile: profile.map(Profile::name),
            timeout,
        };
        let ask = Ask::form(sampling_question(&asking, params), timeout);
        // From here on it waits for a human: withdrawn meanwhile, it was not answered in time.
        record.decision = Decision::Timeout;
        let Ok(reply) = tokio::time::timeout(timeout, self.asker.ask(ask)).await else {
            return timed_out(record, timeout);
        };
        record.channel = Some(reply.channel);
        record.decided_by.clone_from(&reply.decided_by);
        match reply.answer {
            Answer::Accept(content)
                if content.get(FIELD).and_then(Value::as_str) == Some(APPROVE) =>
            {
                record.decision = Decision::Approved;
                Ok(())
            }
            Answer::Timeout => timed_out(record, timeout),
            Answer::Failed(why) => {
                record.decision = Decision::Unsupported;
                Err(format!("asking a human failed: {why}"))
            }
            _ => {
                record.decision = Decision::Declined;
                let by = reply
                    .decided_by
                    .map_or_else(|| "the user".to_string(), |who| format!("`{who}`"));
                Err(format!("it was declined by {by}"))
            }
        }
    }
}

fn timed_out(record: &mut SamplingAuditRecord, timeout: Duration) -> Result<(), String> {
    record.decision = Decision::Timeout;
    record.channel = Some(Channel::Policy);
    Err(format!(
        "no human approved it within {} s",
        timeout.as_secs()
    ))
}

/// Sends an allowed request to the client; its answer (or its own error) goes back upstream.
/// The client's model gets `within` (the profile's approval timeout: a client may put the
/// request to its own human first). Unbounded, a model that never answers — a 2026-07-28
/// client that never retries — would hold the eval until its lifetime ends, since the call
/// the request came during does not count the time against its timeout.
async fn forward(
    peer: &Arc<dyn ClientModel>,
    params: CreateMessageRequestParams,
    within: Duration,
    record: &mut SamplingAuditRecord,
) -> Result<CreateMessageResult, McpError> {
    let Ok(answer) = tokio::time::timeout(within, peer.create_message(params)).await else {
        let why = format!(
            "the client's model did not answer within {} s",
            within.as_secs()
        );
        record.reason = Some(why.clone());
        return Err(McpError::invalid_request(
            format!("codemode withdrew this sampling request: {why}"),
            None,
        ));
    };
    match answer {
        Ok(result) => {
            record.status = CallStatus::Ok;
            record.reason = None;
            record.model = Some(result.model.clone());
            Ok(result)
        }
        Err(ServiceError::McpError(e)) => {
            record.status = CallStatus::Error;
            record.reason = Some(format!("the client answered with an error: {}", e.message));
            Err(e)
        }
        Err(e) => {
            record.status = CallStatus::Error;
            let why = format!("the client did not answer: {e}");
            record.reason = Some(why.clone());
            Err(McpError::internal_error(why, None))
        }
    }
}

#[cfg(test)]
mod tests {
    use codemode_policies::{Config, MemoryAuditSink};
    use rmcp::model::SamplingMessage;

    use super::*;
    use crate::approvals::NoAsker;

    /// A client's model that never answers (a 2026-07-28 client that never retries, or an
    /// older one that leaves the request open).
    struct Silent;
    impl ClientModel for Silent {
        fn create_message(
            &self,
            _: CreateMessageRequestParams,
        ) -> BoxFuture<'_, Result<CreateMessageResult, ServiceError>> {
            Box::pin(std::future::pending())
        }
    }

    /// Red team (rt11): an allowed request waited for the client's model with no bound; the
    /// call it came during stopped its clock meanwhile (a request being answered pauses the
    /// call's timeout and the eval's), so the eval hung until `maxEvalLifetime`, holding its
    /// slot. The model now has the profile's approval timeout, as a human would.
    #[tokio::test]
    async fn a_model_that_never_answers_is_given_up_on_after_the_approval_timeout() {
        let config = Config::from_json_str(
            r#"{"evaluation": {"profiles": {"open": {"sampling": "allow", "approvalTimeoutSeconds": 1}}}}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let audit = Arc::new(MemoryAuditSink::default());
        let gate = SamplingGate {
            route: SamplingRoute::Client(Arc::new(Silent)),
            asker: Arc::new(NoAsker),
            profile: config.profile("open").cloned(),
            audit: Some(audit.clone()),
            eval: "e1".into(),
            caller: "local".into(),
            session: None,
            waiting: PendingSlots::default(),
        };
        let params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text("hi")], 5);
        let answer =
            tokio::time::timeout(Duration::from_secs(120), gate.create_message("up", params))
                .await
                .expect("given up on long before the eval's lifetime would end");
        let e = answer.expect_err("no model answered");
        assert_eq!(
            e.message,
            "codemode withdrew this sampling request: the client's model did not answer within 1 s"
        );
        drop(gate);
        let records = audit.records();
        let [AuditRecord::Sampling(record)] = records.as_slice() else {
            panic!("one sampling record: {records:?}");
        };
        assert_eq!(record.decision, Decision::Allowed);
        assert_eq!(record.status, CallStatus::Error);
        assert_eq!(
            record.reason.as_deref(),
            Some("the client's model did not answer within 1 s")
        );
    }
}
