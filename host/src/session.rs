//! The governed eval: one script run on behalf of a caller, under a profile, with its approval
//! channel and audit log — the single place where codemode's pieces are put together.
//!
//! Every entry point (`codemode run`, the MCP server's eval tools, and any later one) describes
//! *who* is calling and *how* the eval is governed with a [`GovernedEval`], then calls
//! [`GovernedEval::run`]. It wires, in this order:
//! 0. the code as written turned into the JavaScript the sandbox runs, at the same lines and
//!    columns ([`normalize_with_preview`]: a markdown fence, `export default`, TypeScript); a problem there
//!    is the eval's `syntax` error, and nothing runs;
//! 1. the script's tools ([`ScriptTools`]: upstream tools and built-ins);
//! 2. the policy layer in front of them ([`PolicyToolHost`]: the profile's dispositions, the
//!    tools' schemas ([`CatalogSchemas`]: arguments checked before anyone is asked, results
//!    against `outputSchema`), the approver asking through the eval's [`Asker`] and the
//!    approval broker, the session's remembered approvals, the static preview of the script's
//!    call sites shown in prompts, the output policy masking results, one audit record per
//!    call);
//! 3. the sandbox ([`Runtime::eval_cancellable`]) with the eval's limits;
//! 4. the outcome's syntax errors located in the user's code, and one `eval` audit record.
//!
//! ```no_run
//! # async fn demo(runtime: codemode_runtime::Runtime, upstreams: codemode_upstream::UpstreamPool) {
//! use codemode_host::GovernedEval;
//! let eval = GovernedEval::builder(runtime)
//!     .tools(upstreams)
//!     .caller(codemode_policies::Caller::local())
//!     .build();
//! let outcome = eval.run("1 + 2", &Default::default()).await;
//! assert_eq!(outcome.result, serde_json::json!(3));
//! # }
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub use codemode_policies::Caller;
use codemode_policies::{
    Alternative, AuditRecord, AuditSink, EvalAuditContext, EvalAuditRecord, OutputPolicy,
    PolicyToolHost, Profile, SessionApprovals, neutralize,
};
use codemode_runtime::{
    BoxFuture, CancellationToken, ErrorKind, EvalControl, EvalError, EvalId, EvalOptions,
    EvalOutcome, EvalStats, EvalStep, LargestUnit, NoTools, ParkRequest, ResumeError, Runtime,
    Suspended, ToolHost,
};
use codemode_script::{Preview, locate_syntax_error, normalize_with_preview, result_use};

use crate::approvals::{ApprovalBroker, Asker, Channels, HumanWaits, OpenAsks, WaitingAsker};
use crate::tools::{CatalogSchemas, ObservedTypes, SamplingGate, SamplingRoute, ScriptTools};
use codemode_upstream::{CallRelay, Media, UpstreamPool};
use startup::StartupGate;

mod builder;
mod startup;

pub use builder::GovernedEvalBuilder;

/// Where an eval's records go: the sink and whether tool arguments are written out.
#[derive(Clone)]
pub struct AuditTarget {
    /// The audit log.
    pub sink: Arc<dyn AuditSink>,
    /// Whether `tool_call` records carry the arguments themselves (else only their hash).
    pub include_args: bool,
}

/// One eval, fully described: see the module docs. Built with [`GovernedEval::builder`].
pub struct GovernedEval {
    runtime: Runtime,
    upstreams: Option<UpstreamPool>,
    id: EvalId,
    caller: Caller,
    session: Option<(String, SessionApprovals)>,
    profile: Option<Arc<Profile>>,
    alternatives: Vec<Alternative>,
    asker: Arc<dyn Asker>,
    relay: Option<Arc<dyn CallRelay>>,
    sampling: SamplingRoute,
    broker: Option<Arc<ApprovalBroker>>,
    /// The rules approvals "from now on" are kept as, when not the broker's
    /// ([`GovernedEvalBuilder::remembered`]).
    remembered: Option<Arc<codemode_policies::RememberedRules>>,
    /// What identifies a tool's upstream now ([`GovernedEvalBuilder::upstream_identity`]).
    upstream_identity: Option<codemode_policies::UpstreamIdentity>,
    audit: Option<AuditTarget>,
    outputs: Arc<OutputPolicy>,
    classes: Arc<codemode_policies::Classification>,
    options: EvalOptions,
    lifetime: Option<Duration>,
    waits: Option<Arc<dyn HumanWaits>>,
    park: Option<ParkRequest>,
    open_asks: Option<Arc<OpenAsks>>,
    /// The pending asks identical calls join ([`GovernedEvalBuilder::pending_asks`]).
    pending_asks: codemode_policies::PendingAsks,
    audit_id: Option<String>,
    /// Tools approved "for the rest of the script", kept here so that they outlive a park.
    eval_approvals: SessionApprovals,
    /// Time spent in memory in earlier runs of this eval (before it was parked).
    lived_before: Duration,
    /// [`lived_before`](Self::lived_before) plus the time of the last run or resume, once it
    /// ended.
    lived: std::sync::Mutex<Duration>,
    /// The media its tool results carried, for its result to refer to: saved with a parked eval
    /// and kept again by its resume ([`GovernedEvalBuilder::media`]).
    media: Media,
    /// The eval's trace, when traces are on.
    trace: Option<crate::traces::EvalTrace>,
}

/// How a governed eval stopped: finished, or parked while every call it had in flight waited
/// for a human ([`GovernedEvalBuilder::park`]).
pub enum GovernedStep {
    /// The eval ended; its `eval` audit record is written.
    Finished(EvalOutcome),
    /// The eval parked: its sandbox slot is free, no `eval` record is written yet (the run
    /// that finishes it writes it), and the asks it waits on are in its
    /// `GovernedEvalBuilder::open_asks`.
    Parked(Suspended),
}

impl GovernedEval {
    /// The eval's id (in its ledger, audit records and approval requests).
    pub fn id(&self) -> EvalId {
        self.id
    }

    /// Who the eval runs for.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// The profile deciding its calls, if any.
    pub fn profile(&self) -> Option<&Arc<Profile>> {
        self.profile.as_ref()
    }

    /// The channel its questions go to.
    pub fn asker(&self) -> &Arc<dyn Asker> {
        &self.asker
    }

    /// The `eval_id` of its audit records.
    pub fn audit_id(&self) -> String {
        self.audit_id
            .clone()
            .unwrap_or_else(|| codemode_policies::AuditRecord::eval_id(self.id))
    }

    /// The session it belongs to and that session's remembered approvals, if any.
    pub fn session(&self) -> Option<(&str, &SessionApprovals)> {
        self.session.as_ref().map(|(id, a)| (id.as_str(), a))
    }

    /// The tools approved "for the rest of the script" so far: what a parked eval carries to
    /// its resume.
    pub fn eval_approvals(&self) -> &SessionApprovals {
        &self.eval_approvals
    }

    /// Its trace, when traces are on: what a parked eval carries to its resume.
    pub(crate) fn trace(&self) -> Option<&crate::traces::EvalTrace> {
        self.trace.as_ref()
    }

    /// The media its calls received so far (see [`codemode_upstream::media`]): what its
    /// result's media references are resolved against.
    pub fn media(&self) -> &Media {
        &self.media
    }

    /// Time the eval has spent in memory, earlier runs included ([`GovernedEvalBuilder::lived`]),
    /// as of the end of its last run or resume: what a parked eval carries to its resume.
    pub fn lived(&self) -> Duration {
        *self.lived.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `code` to its end, or until `cancel` is cancelled (error kind of a cancelled eval:
    /// see [`Runtime::eval_cancellable`]). Never panics on script input: every failure is in the
    /// outcome. With an audit log, every call attempt and the eval itself are recorded: the
    /// eval by exactly one `eval` record, even when the future is dropped before it completes
    /// (an aborted task, an MCP cancellation): then with `error_kind: "cancelled"`
    /// ([`EvalAuditRecord::abandoned`]).
    pub fn run<'a>(
        &'a self,
        code: &'a str,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, EvalOutcome> {
        Box::pin(async move {
            match self.run_step(code, cancel).await {
                GovernedStep::Finished(outcome) => outcome,
                // Without a park request the runtime never parks; should it, the eval is not lost
                // silently: it reads as cancelled.
                GovernedStep::Parked(_) => EvalOutcome {
                    ok: false,
                    result: serde_json::Value::Null,
                    error: Some(EvalError::new(
                        ErrorKind::Internal,
                        "the eval parked without a park request",
                    )),
                    warnings: Vec::new(),
                    logs: Vec::new(),
                    tool_calls: Vec::new(),
                    stats: EvalStats::default(),
                },
            }
        })
    }

    /// [`run`](Self::run), able to park (see [`GovernedEvalBuilder::park`]).
    pub fn run_step<'a>(
        &'a self,
        code: &'a str,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, GovernedStep> {
        Box::pin(async move {
            let guard = EvalRecordGuard {
                eval: self,
                code,
                started: std::time::Instant::now(),
                done: false,
            };
            let (script, preview) = match normalize_with_preview(code) {
                Ok(prepared) => prepared,
                Err(e) => {
                    let outcome = EvalOutcome {
                        ok: false,
                        result: serde_json::Value::Null,
                        error: Some(e.to_eval_error()),
                        warnings: Vec::new(),
                        logs: Vec::new(),
                        tool_calls: Vec::new(),
                        stats: EvalStats::default(),
                    };
                    guard.finish(&outcome);
                    return GovernedStep::Finished(outcome);
                }
            };
            let tools = StartupGate {
                inner: self.tool_host(preview),
                upstreams: self.upstreams.clone(),
            };
            let script_ref: &str = &script;
            let step = self
                .bounded(cancel, |control| async move {
                    let script = script_ref;
                    Ok::<_, std::convert::Infallible>(
                        self.runtime
                            .eval_parkable(self.id, script, &self.options, &tools, &control)
                            .await,
                    )
                })
                .await;
            let step = match step {
                Ok(step) => step,
                Err(never) => match never {},
            };
            self.ended(step, guard, Some(script_ref))
        })
    }

    /// Resumes `suspended`, an eval of `code` parked earlier (here or on another node): its
    /// calls waiting for a human are made again and find their questions by their notes.
    ///
    /// # Errors
    /// [`ResumeError`] when the runtime cannot resume it (its guest is unknown here, …); no
    /// audit record is written then.
    pub fn resume<'a>(
        &'a self,
        code: &'a str,
        suspended: &'a Suspended,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<GovernedStep, ResumeError>> {
        Box::pin(async move {
            let preview = match normalize_with_preview(code) {
                Ok((_, preview)) => preview,
                Err(_) => Preview::default(),
            };
            let tools = StartupGate {
                inner: self.tool_host(preview),
                upstreams: self.upstreams.clone(),
            };
            let step = self
                .bounded(cancel, |control| async move {
                    self.runtime
                        .resume(suspended, Vec::new(), &tools, &control)
                        .await
                })
                .await?;
            let guard = EvalRecordGuard {
                eval: self,
                code,
                started: std::time::Instant::now(),
                done: false,
            };
            Ok(self.ended(step, guard, None))
        })
    }

    /// Runs `start` under `cancel`, the eval's lifetime and its park request. The lifetime left
    /// is the configured one less the time lived in earlier runs; the time of this run is
    /// added to [`lived`](Self::lived) when it ends.
    async fn bounded<F, Fut, E>(&self, cancel: &CancellationToken, start: F) -> Result<EvalStep, E>
    where
        F: FnOnce(EvalControl) -> Fut,
        Fut: std::future::Future<Output = Result<EvalStep, E>>,
    {
        let started = tokio::time::Instant::now();
        let step = self.bounded_run(cancel, start).await;
        *self.lived.lock().unwrap_or_else(|e| e.into_inner()) =
            self.lived_before + started.elapsed();
        step
    }

    async fn bounded_run<F, Fut, E>(
        &self,
        cancel: &CancellationToken,
        start: F,
    ) -> Result<EvalStep, E>
    where
        F: FnOnce(EvalControl) -> Fut,
        Fut: std::future::Future<Output = Result<EvalStep, E>>,
    {
        let mut control = EvalControl::new();
        if let Some(park) = &self.park {
            control.park(park.clone());
        }
        let Some(lifetime) = self.lifetime else {
            control.cancel(cancel.clone());
            return start(control).await;
        };
        let left = lifetime.saturating_sub(self.lived_before);
        // The lifetime cancels the sandbox like a client would; the outcome then says it was
        // the lifetime, as a timeout.
        let stop = cancel.child_token();
        control.cancel(stop.clone());
        let expired = Arc::new(AtomicBool::new(false));
        if left.is_zero() {
            expired.store(true, Ordering::SeqCst);
            stop.cancel();
        }
        let timer = tokio::spawn({
            let (stop, expired) = (stop.clone(), expired.clone());
            async move {
                tokio::time::sleep(left).await;
                expired.store(true, Ordering::SeqCst);
                stop.cancel();
            }
        });
        let mut step = start(control).await;
        timer.abort();
        if let Ok(EvalStep::Finished(outcome)) = &mut step
            && expired.load(Ordering::SeqCst)
            && !cancel.is_cancelled()
            && let Some(error) = outcome.error.as_mut()
            && error.kind == ErrorKind::Cancelled
        {
            *error = lifetime_error(lifetime);
        }
        step
    }

    /// The eval's end: its `eval` record, or none while it is parked.
    fn ended(
        &self,
        step: EvalStep,
        mut guard: EvalRecordGuard<'_>,
        script: Option<&str>,
    ) -> GovernedStep {
        match step {
            EvalStep::Finished(mut outcome) => {
                if let (Some(error), Some(script)) = (outcome.error.as_mut(), script) {
                    locate_syntax_error(script, error);
                    self.explain_type_error(script, error);
                }
                guard.finish(&outcome);
                GovernedStep::Finished(outcome)
            }
            EvalStep::Suspended(suspended) => {
                guard.done = true;
                GovernedStep::Parked(suspended)
            }
        }
    }

    /// A `TypeError` on a tool's result names the expression, the tool and the result's shape
    /// (declared, else observed: `TypeError: \`r.split\` is not a function: \`r\` is \`{ content: string }\`
    /// from files__read_text_file`), where the sandbox only says "not a function".
    fn explain_type_error(&self, script: &str, error: &mut EvalError) {
        if error.kind != ErrorKind::Exception || !error.message.starts_with("TypeError: ") {
            return;
        }
        let (Some(line), Some(column)) = (error.line, error.column) else {
            return;
        };
        let Some(used) = result_use(script, line, column) else {
            return;
        };
        let expression = neutralize(&used.expression);
        let name = neutralize(&used.name);
        let shape = self
            .upstreams
            .as_ref()
            .and_then(|upstreams| self.observed_types(upstreams).shape(&used.tool));
        let tool = codemode_policies::bounded(&used.tool, 80);
        let is = match shape {
            Some(shape) => format!("`{name}` is `{shape}` from {tool}"),
            None => format!("`{name}` is the result of {tool}"),
        };
        error.message = if error.message == "TypeError: not a function" {
            format!("TypeError: `{expression}` is not a function: {is}")
        } else {
            format!("{} (in `{expression}`; {is})", error.message)
        };
    }

    /// What this eval's scripts received from tools that declare no result type, kept per
    /// profile by the pool.
    fn observed_types(&self, upstreams: &UpstreamPool) -> ObservedTypes {
        ObservedTypes::new(
            upstreams.clone(),
            self.profile.as_deref(),
            self.outputs.clone(),
        )
    }

    /// What every `eval` record of this eval shares.
    fn audit_context<'a>(&'a self, code: &'a str) -> EvalAuditContext<'a> {
        EvalAuditContext {
            eval_id: self.id,
            code,
            caller: &self.caller.name,
            session_id: self.session.as_ref().map(|(id, _)| id.as_str()),
            profile: self.profile.as_ref().map(|p| p.name()),
            audit_id: self.audit_id.as_deref(),
        }
    }

    /// The script's tools behind the policy layer. Approvals and `hitl_request` questions ask
    /// through the same channels (the eval's asker and the broker), kept open and counted.
    fn tool_host(&self, preview: Preview) -> PolicyToolHost {
        let channels: Arc<dyn Asker> = Arc::new(
            Channels::new(
                self.asker.clone(),
                self.broker.clone(),
                codemode_policies::AuditRecord::eval_id(self.id),
                self.caller.name.clone(),
            )
            .with_open_asks(self.open_asks.clone()),
        );
        let asker: Arc<dyn Asker> = match &self.waits {
            Some(waits) => Arc::new(WaitingAsker::new(channels, waits.clone())),
            None => channels,
        };
        let asker: Arc<dyn Asker> = match &self.trace {
            Some(trace) => Arc::new(crate::traces::hooks::TracingAsker {
                inner: asker,
                trace: trace.clone(),
            }),
            None => asker,
        };
        let inner: Arc<dyn ToolHost> = match &self.upstreams {
            Some(upstreams) => Arc::new(
                ScriptTools::new(upstreams.clone(), asker.clone())
                    .with_trace(self.trace.clone())
                    .with_profile(self.profile.clone(), self.observed_types(upstreams))
                    .with_relay(self.relay.clone())
                    .with_sampler(Some(self.sampler(asker.clone())))
                    .with_media(self.media.clone()),
            ),
            None => Arc::new(NoTools),
        };
        let (session_id, approvals) = match &self.session {
            Some((id, approvals)) => (Some(id.clone()), approvals.clone()),
            None => (None, SessionApprovals::new()),
        };
        let mut builder = PolicyToolHost::builder(inner)
            .profile(self.profile.clone())
            .asker(asker)
            .session_approvals(approvals)
            .pending_asks(self.pending_asks.clone())
            .eval_approvals(self.eval_approvals.clone())
            .preview(Arc::new(preview))
            .session_id(session_id)
            .caller(self.caller.clone())
            .audit_id(self.audit_id.clone())
            .outputs(self.outputs.clone())
            .classification(self.classes.clone())
            .alternatives(self.alternatives.clone())
            .remembered(
                self.remembered
                    .clone()
                    .or_else(|| self.broker.as_ref().and_then(|b| b.rules())),
            )
            .upstream_identity(self.upstream_identity.clone());
        if let Some(upstreams) = &self.upstreams {
            builder = builder
                .schemas(Arc::new(CatalogSchemas::new(upstreams.clone())))
                .observer(Some(Arc::new(self.observed_types(upstreams))));
        }
        if let Some(audit) = &self.audit {
            builder = builder.audit(audit.sink.clone(), audit.include_args);
        }
        builder.build()
    }
}

impl GovernedEval {
    /// The eval's answer to the upstreams' sampling requests: its profile, asking through
    /// `asker` (the channels its approvals use), audited under its id.
    fn sampler(&self, asker: Arc<dyn Asker>) -> Arc<SamplingGate> {
        Arc::new(SamplingGate {
            route: self.sampling.clone(),
            asker,
            profile: self.profile.clone(),
            audit: self.audit.as_ref().map(|a| a.sink.clone()),
            eval: self.audit_id(),
            caller: self.caller.name.clone(),
            session: self.session.as_ref().map(|(id, _)| id.clone()),
            waiting: Default::default(),
        })
    }
}

/// The error of an eval stopped by its [`GovernedEvalBuilder::lifetime`].
fn lifetime_error(lifetime: Duration) -> EvalError {
    EvalError::new(
        ErrorKind::Timeout,
        format!(
            "the eval exceeded its lifetime of {} (limits.maxEvalLifetime), which counts time spent waiting for a human",
            LargestUnit::Minutes.spell(lifetime)
        ),
    )
}

/// Writes the eval's one `eval` record: from the outcome on [`finish`](Self::finish), or, if
/// the eval's future is dropped first, as abandoned (cancelled).
struct EvalRecordGuard<'e> {
    eval: &'e GovernedEval,
    code: &'e str,
    started: std::time::Instant,
    done: bool,
}

impl EvalRecordGuard<'_> {
    fn finish(mut self, outcome: &EvalOutcome) {
        self.done = true;
        if let Some(audit) = &self.eval.audit {
            let record = EvalAuditRecord::from_outcome(outcome, self.eval.audit_context(self.code));
            audit.sink.record(AuditRecord::Eval(record));
        }
    }
}

impl Drop for EvalRecordGuard<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Some(audit) = &self.eval.audit {
            let wall_ms = self.started.elapsed().as_secs_f64() * 1000.0;
            let record = EvalAuditRecord::abandoned(self.eval.audit_context(self.code), wall_ms);
            audit.sink.record(AuditRecord::Eval(record));
        }
    }
}

#[cfg(test)]
mod tests {
    use codemode_policies::{
        AuditRecord, Config, Decision, DispositionKind, MemoryAuditSink, ToolCallAuditRecord,
    };
    use codemode_runtime::{ErrorKind, RuntimeConfig};
    use serde_json::json;

    use super::*;

    fn runtime() -> Runtime {
        let mut config = RuntimeConfig::default();
        config.max_concurrent_evals(2);
        Runtime::new(&config).expect("runtime")
    }

    /// A profile decides each call, the denial reaches the script as a `ToolCallDeniedError`,
    /// and the audit log gets one `tool_call` record per attempt and one `eval` record, with the
    /// session and the profile.
    /// An asker that asks and never hears back (a human who has not decided yet).
    struct Undecided;

    impl Asker for Undecided {
        fn supports(&self) -> bool {
            true
        }
        fn channel(&self) -> codemode_policies::Channel {
            codemode_policies::Channel::Elicitation
        }
        fn ask(
            &self,
            _ask: crate::approvals::Ask,
        ) -> codemode_runtime::BoxFuture<'_, crate::approvals::Reply> {
            Box::pin(std::future::pending())
        }
    }

    use crate::approvals::given::Given;

    /// Issue 18: an eval waiting for an approval parks (its slot freed, no audit record yet),
    /// goes to bytes and back, and resumes — in a governed eval built afresh, as on another
    /// node — under the same approval id; the answer given meanwhile approves the call, which
    /// runs once, and the audit log holds exactly one record of the call and one of the eval.
    #[tokio::test]
    async fn a_parked_eval_resumes_with_the_answer_given_meanwhile_and_is_audited_once() {
        let config = Config::from_json_str(
            r#"{"evaluation": {"profiles": {"p": {"asklist": ["search_tools"]}}}}"#,
        )
        .unwrap();
        let profile = config.resolve_profile(Some("p")).unwrap();
        let sink = Arc::new(MemoryAuditSink::new());
        let runtime = runtime();
        let decisions = Arc::new(Given::default());
        let governed = |park: Option<ParkRequest>, asks: Arc<OpenAsks>, id: Option<EvalId>| {
            let mut builder = GovernedEval::builder(runtime.clone())
                .tools(UpstreamPool::new())
                .profile(profile.clone())
                .asker(Arc::new(Undecided))
                .park(park)
                .open_asks(Some(asks))
                .audit(Some(AuditTarget {
                    sink: sink.clone(),
                    include_args: false,
                }));
            if let Some(id) = id {
                builder = builder.id(id);
            }
            builder.build()
        };
        let code = "console.log('before');\n\
                    const found = await codemode.search_tools({query: 'tools'});\n\
                    console.log('after');\n\
                    return found.results.length > 0;";

        let park = ParkRequest::new();
        park.request();
        let asks = Arc::new(OpenAsks::new(Some(decisions.clone())));
        let first = governed(Some(park), asks.clone(), None);
        let GovernedStep::Parked(parked) = first.run_step(code, &CancellationToken::new()).await
        else {
            panic!("the eval should park at its approval");
        };
        assert!(sink.records().is_empty(), "{:?}", sink.records());
        let open = asks.snapshot();
        assert_eq!(open.len(), 1);
        let note: codemode_policies::ParkedAsk =
            serde_json::from_value(parked.pending()[0].note.clone().unwrap()).unwrap();
        assert_eq!(note.approval, open[0].id);

        let bytes = parked.save();
        let loaded = codemode_runtime::Suspended::load(&bytes).unwrap();
        decisions.0.lock().unwrap().push((
            open[0].id.clone(),
            crate::approvals::Decided::Approval(
                codemode_policies::ApprovalAnswer::new(
                    codemode_policies::ApprovalDecision::ApproveOnce,
                    codemode_policies::Channel::Http,
                )
                .decided_by("alice"),
            ),
        ));
        let second = governed(
            None,
            Arc::new(OpenAsks::new(Some(decisions.clone()))),
            Some(first.id()),
        );
        let GovernedStep::Finished(outcome) = second
            .resume(code, &loaded, &CancellationToken::new())
            .await
            .unwrap()
        else {
            panic!("the resumed eval should finish");
        };
        assert!(outcome.ok, "{:?}", outcome.error);
        assert_eq!(outcome.result, json!(true));
        let logs: Vec<&str> = outcome.logs.iter().map(|l| l.message.as_str()).collect();
        assert_eq!(logs, ["before", "after"]);
        let calls: Vec<_> = sink
            .tool_calls()
            .into_iter()
            .map(|r| (r.tool, r.decision, r.decided_by, r.call_id))
            .collect();
        assert_eq!(
            calls,
            [(
                "search_tools".to_string(),
                Decision::Approved,
                Some("alice".to_string()),
                1
            )]
        );
        let evals = sink
            .records()
            .into_iter()
            .filter(|r| matches!(r, AuditRecord::Eval(_)))
            .count();
        assert_eq!(evals, 1);
        assert!(
            decisions.0.lock().unwrap().is_empty(),
            "the decision was taken"
        );
    }

    /// Issue 18: `maxEvalLifetime` counts the time an eval spends in memory across a park. An
    /// eval with a 3 s lifetime waits 2 s for a human in memory and parks; resumed, it has 1 s
    /// left, not 3 s: its resumed wait ends as a lifetime `timeout` naming the 3 s, before the
    /// client's cancellation 2 s into the resume (which would be the end without the carry).
    #[tokio::test]
    async fn the_lifetime_counts_time_in_memory_across_a_park() {
        let config = Config::from_json_str(
            r#"{"evaluation": {"profiles": {"p": {"asklist": ["search_tools"],
                                                  "approvalTimeoutSeconds": 3600}}}}"#,
        )
        .unwrap();
        let profile = config.resolve_profile(Some("p")).unwrap();
        let runtime = runtime();
        let lifetime = Duration::from_secs(3);
        let governed = |park: Option<ParkRequest>, lived: Duration| {
            GovernedEval::builder(runtime.clone())
                .tools(UpstreamPool::new())
                .profile(profile.clone())
                .asker(Arc::new(Undecided))
                .park(park)
                .open_asks(Some(Arc::new(OpenAsks::new(None))))
                .lifetime(Some(lifetime))
                .lived(lived)
                .build()
        };
        let code = "await codemode.search_tools({query: 'tools'}); return 'approved';";

        let park = ParkRequest::new();
        let first = governed(Some(park.clone()), Duration::ZERO);
        let waited = Duration::from_secs(2);
        let parker = tokio::spawn(async move {
            tokio::time::sleep(waited).await;
            park.request();
        });
        let GovernedStep::Parked(parked) = first.run_step(code, &CancellationToken::new()).await
        else {
            panic!("the eval should park at its approval");
        };
        parker.await.unwrap();
        assert!(first.lived() >= waited, "{:?}", first.lived());
        assert!(first.lived() < lifetime, "{:?}", first.lived());

        let second = governed(None, first.lived());
        let cancel = CancellationToken::new();
        let client = tokio::spawn({
            let cancel = cancel.clone();
            async move {
                tokio::time::sleep(Duration::from_secs(2)).await;
                cancel.cancel();
            }
        });
        let GovernedStep::Finished(outcome) = second.resume(code, &parked, &cancel).await.unwrap()
        else {
            panic!("the resumed eval should end");
        };
        client.abort();
        let error = outcome.error.expect("stopped by its lifetime");
        assert_eq!(
            (error.kind, error.message.as_str()),
            (
                ErrorKind::Timeout,
                "the eval exceeded its lifetime of 3s (limits.maxEvalLifetime), which counts time spent waiting for a human"
            )
        );
        assert!(!cancel.is_cancelled(), "the lifetime ended it first");
        assert!(second.lived() >= lifetime, "{:?}", second.lived());
    }

    #[tokio::test]
    async fn a_profile_decides_and_the_audit_records_each_attempt_and_the_eval() {
        let config = Config::from_json_str(
            r#"{"evaluation": {"profiles": {"p": {"denylist": ["get_tools"]}}}}"#,
        )
        .unwrap();
        let profile = config.resolve_profile(Some("p")).unwrap();
        let sink = Arc::new(MemoryAuditSink::new());
        let eval = GovernedEval::builder(runtime())
            .tools(UpstreamPool::new())
            .session("s7", SessionApprovals::new())
            .profile(profile)
            .audit(Some(AuditTarget {
                sink: sink.clone(),
                include_args: true,
            }))
            .build();
        let code = "const found = await codemode.search_tools({query: 'tools'});\n\
                    try { await codemode.get_tools({names: []}); return 'called'; }\n\
                    catch (e) { return [e.name, e.toolName, found.results.length > 0]; }";
        let outcome = eval.run(code, &CancellationToken::new()).await;
        assert!(outcome.ok, "{:?}", outcome.error);
        assert_eq!(
            outcome.result,
            json!(["ToolCallDeniedError", "get_tools", true])
        );

        let calls: Vec<(String, DispositionKind, Decision)> = sink
            .tool_calls()
            .into_iter()
            .map(|r: ToolCallAuditRecord| {
                assert_eq!(
                    r.eval_id,
                    codemode_policies::AuditRecord::eval_id(eval.id())
                );
                assert_eq!(r.session_id.as_deref(), Some("s7"));
                assert_eq!(r.profile.as_deref(), Some("p"));
                (r.tool, r.disposition, r.decision)
            })
            .collect();
        assert_eq!(
            calls,
            [
                (
                    "search_tools".to_string(),
                    DispositionKind::Allow,
                    Decision::Allowed
                ),
                (
                    "get_tools".to_string(),
                    DispositionKind::Deny,
                    Decision::Denied
                ),
            ]
        );
        let evals: Vec<_> = sink
            .records()
            .into_iter()
            .filter_map(|r| match r {
                AuditRecord::Eval(e) => Some(e),
                AuditRecord::ToolCall(_)
                | AuditRecord::Access(_)
                | AuditRecord::Sampling(_)
                | AuditRecord::Rule(_) => None,
            })
            .collect();
        assert_eq!(evals.len(), 1);
        assert_eq!(
            evals[0].eval_id,
            codemode_policies::AuditRecord::eval_id(eval.id())
        );
        assert_eq!(evals[0].caller, "local");
        assert!(evals[0].ok);
        assert_eq!(evals[0].tool_calls, 2);
        assert_eq!(evals[0].profile.as_deref(), Some("p"));
    }

    /// Asks nobody, forever; says when it was asked.
    struct HangingAsker(std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>);

    impl Asker for HangingAsker {
        fn supports(&self) -> bool {
            true
        }
        fn channel(&self) -> codemode_policies::Channel {
            codemode_policies::Channel::Terminal
        }
        fn ask(
            &self,
            _ask: crate::approvals::Ask,
        ) -> codemode_runtime::BoxFuture<'_, crate::approvals::Reply> {
            if let Some(tx) = self.0.lock().unwrap().take() {
                let _ = tx.send(());
            }
            Box::pin(std::future::pending())
        }
    }

    /// An eval whose task is aborted mid-run (as an MCP cancellation drops it) still ends with
    /// exactly one `eval` record: cancelled, for its caller.
    #[tokio::test]
    async fn an_aborted_eval_still_writes_one_cancelled_eval_record() {
        let sink = Arc::new(MemoryAuditSink::new());
        let (asked_tx, asked_rx) = tokio::sync::oneshot::channel();
        let eval = Arc::new(
            GovernedEval::builder(runtime())
                .tools(UpstreamPool::new())
                .asker(Arc::new(HangingAsker(std::sync::Mutex::new(Some(
                    asked_tx,
                )))))
                .caller(Caller {
                    name: "ci".into(),
                    ..Caller::local()
                })
                .audit(Some(AuditTarget {
                    sink: sink.clone(),
                    include_args: false,
                }))
                .build(),
        );
        let code = "return await codemode.hitl_request({question: 'q', options: ['a', 'b']});";
        let task = tokio::spawn({
            let eval = eval.clone();
            async move { eval.run(code, &CancellationToken::new()).await }
        });
        // The script is waiting for its human: abort it there.
        asked_rx.await.unwrap();
        task.abort();
        assert!(task.await.unwrap_err().is_cancelled());
        let records = sink.records();
        assert_eq!(records.len(), 2, "{records:?}");
        let AuditRecord::ToolCall(call) = &records[0] else {
            panic!("{records:?}")
        };
        assert_eq!(
            (call.tool.as_str(), call.reason.as_deref()),
            ("hitl_request", Some("cancelled"))
        );
        let AuditRecord::Eval(rec) = &records[1] else {
            panic!("{records:?}")
        };
        assert_eq!(
            rec.eval_id,
            codemode_policies::AuditRecord::eval_id(eval.id())
        );
        assert_eq!(rec.eval_id, call.eval_id);
        assert_eq!(rec.caller, "ci");
        assert!(!rec.ok);
        assert_eq!(rec.error_kind, Some(ErrorKind::Cancelled));
        assert_eq!(
            rec.code_sha256,
            codemode_policies::AuditRecord::sha256_hex(code.as_bytes())
        );

        // Cancelled through the token, the outcome's own record is the only one.
        let sink = Arc::new(MemoryAuditSink::new());
        let eval = GovernedEval::builder(runtime())
            .audit(Some(AuditTarget {
                sink: sink.clone(),
                include_args: false,
            }))
            .build();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let outcome = eval.run("while (true) {}", &cancel).await;
        assert_eq!(outcome.error.unwrap().kind, ErrorKind::Cancelled);
        assert_eq!(sink.records().len(), 1);
    }

    /// Without tools, no name resolves (not even the built-ins), and a syntax error is located in
    /// the user's code.
    #[tokio::test]
    async fn without_tools_every_call_is_unknown_and_syntax_errors_are_located() {
        let runtime = runtime();
        let eval = GovernedEval::builder(runtime.clone()).build();
        let outcome = eval
            .run(
                "try { await codemode.search_tools({query: 'x'}); } catch (e) { return e.name; }",
                &CancellationToken::new(),
            )
            .await;
        assert_eq!(outcome.result, json!("UnknownToolError"));

        let eval = GovernedEval::builder(runtime).build();
        let outcome = eval
            .run("let a = 1;\nlet b = ;", &CancellationToken::new())
            .await;
        let error = outcome.error.expect("a syntax error");
        assert_eq!(error.kind, ErrorKind::Syntax);
        assert_eq!((error.line, error.column), (Some(2), Some(9)));
        assert_eq!(eval.caller(), &Caller::local());
    }

    /// Fenced TypeScript runs with its errors on the lines as written (the fence line counts);
    /// a construct that needs more than stripping is a `syntax` outcome at its place, with the
    /// eval still audited (the code's hash is that of the text as written).
    #[tokio::test]
    async fn typescript_in_a_fence_runs_at_the_lines_written() {
        let runtime = runtime();
        let code = "```ts\ninterface P { n: number }\nconst p: P = { n: 1 } satisfies P;\nthrow new Error(`n=${p!.n as number}`);\n```";
        let outcome = GovernedEval::builder(runtime.clone())
            .build()
            .run(code, &CancellationToken::new())
            .await;
        let error = outcome.error.expect("the throw");
        assert_eq!(error.kind, ErrorKind::Exception);
        assert_eq!(error.message, "Error: n=1");
        assert_eq!(error.line, Some(4));

        let sink = Arc::new(MemoryAuditSink::new());
        let eval = GovernedEval::builder(runtime)
            .audit(Some(AuditTarget {
                sink: sink.clone(),
                include_args: false,
            }))
            .build();
        let code = "const a = 1;\nenum E { A }\nreturn a;";
        let outcome = eval.run(code, &CancellationToken::new()).await;
        let error = outcome.error.expect("the enum");
        assert_eq!(error.kind, ErrorKind::Syntax);
        assert!(
            error
                .message
                .starts_with("SyntaxError: TypeScript `enum` needs more than type stripping"),
            "{}",
            error.message
        );
        assert_eq!((error.line, error.column), (Some(2), Some(1)));
        let records = sink.records();
        let [AuditRecord::Eval(rec)] = records.as_slice() else {
            panic!("{records:?}")
        };
        assert_eq!(rec.error_kind, Some(ErrorKind::Syntax));
        assert_eq!(
            rec.code_sha256,
            codemode_policies::AuditRecord::sha256_hex(code.as_bytes())
        );
    }
}
