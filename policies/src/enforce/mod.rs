//! [`PolicyToolHost`]: the enforcement layer, a [`ToolHost`] that decides each call against a
//! profile, asks a human when the profile says so, and audits every attempt.

mod ask;
mod audit_guard;
mod checks;
mod classes;
mod diff;
mod joined;
mod outcomes;
mod remembered;
mod slots;

pub use joined::PendingAsks;
pub use slots::{PendingSlot, PendingSlots};

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use codemode_runtime::{BoxFuture, CallContext, CallStatus, EvalId, ToolError, ToolHost};
use serde_json::Value;

use crate::approval::ApprovalKey;
use crate::audit::{AuditSink, Decision, Stage};
use crate::{
    Asker, Caller, Classification, Disposition, DispositionKind, NoAsker, OutputPolicy, Profile,
    RememberedRules, SchemaSource, SessionApprovals,
};
use audit_guard::{AuditGuard, Recorder};
use codemode_script::Preview;

/// Wraps a [`ToolHost`] with a profile: each call is allowed, denied (the inner host is never
/// reached) or put to a human through an [`Asker`], and audited exactly once.
///
/// Build one per eval with [`PolicyToolHost::builder`]; share a [`SessionApprovals`] across
/// the evals of a client session.
///
/// # Per call
///
/// 1. The disposition comes from [`Profile::disposition`] on the called name and arguments
///    (no profile: allowed).
/// 2. A tool whose class ([`Classification`]) is destructive, called by a caller without
///    [`Caller::ALLOW_DESTRUCTIVE`](crate::Caller::ALLOW_DESTRUCTIVE): [`ToolError::Denied`] with reason `permission`, whatever
///    the profile says (no profile too), and nobody is asked.
/// 2. If the deciding rule requires permissions (`requirePermissions`) the caller
///    ([`PolicyToolHostBuilder::caller`]) lacks: [`ToolError::Denied`] with reason
///    `permission`, the message naming the missing permissions.
/// 3. `deny`: [`ToolError::Denied`] with reason `denied`.
/// 4. Arguments that fail the tool's `inputSchema` ([`PolicyToolHostBuilder::schemas`]):
///    [`ToolError::Failed`] whose message starts with `invalid_arguments:` and whose `.data` is
///    `{"errors": [{"path", "message"}]}` (`crate::InvalidArguments::to_tool_error`); nobody
///    is asked and the inner host is never reached. (A tool the inner host does not know is
///    not checked: it fails as unknown.)
/// 5. `ask`: if approved earlier for this eval or session (see [`SessionApprovals`] for what
///    an approval covers: the caller, profile, tool and rule), the call proceeds — unless the
///    call's risk policy forbids approvals of that scope (a session approval given for a
///    lower-risk call of the tool does not cover a critical one). Otherwise, if the asker cannot ask anyone, the
///    profile's `elicitationFallback` decides (`deny`: reason `elicitation_unsupported`). A call
///    identical to a pending ask (same caller, profile, tool and arguments) joins it (see
///    [`PendingAsks`]): the one answer decides it too, an approval for this call only. If
///    `maxPendingApprovals` asks of this eval are already waiting, the call waits for a slot,
///    first come first served, up to its approval timeout (then: reason `queue_timeout`).
///    Otherwise the asker is asked, with the call's risk
///    and its risk policy ([`Profile::risk_policy`]) and the risk policy's approval timeout
///    (else the profile's): no answer in time denies (reason `elicitation_timeout`; a timeout
///    never approves), a decline or a dismissal denies (reason `elicitation_declined`, the
///    message ending with the decider's reason, if given). An answer the risk policy forbids
///    ([`crate::RiskPolicy::check`]: a session or eval approval it does not allow, a missing
///    required reason) never takes effect: it is a decline, with a message saying why.
///    Asks about the same tool (from the same list or rule) wait for each other, so that
///    "approve for this eval" answers the calls queued behind it.
/// 6. Otherwise the inner host is called. A result that does not match the tool's
///    `outputSchema` still resolves, with a warning ([`CallContext::warn`]); then the
///    [`OutputPolicy`] masks and removes what it names, before the script sees the result.
///
/// # Human time and the eval's timeout
///
/// While a call waits for a human (queued behind another ask of the same tool, or prompted),
/// it holds [`CallContext::pause_timeout`]: the eval's wall-clock timeout does not count that
/// time, so a slow human cannot make a script fail on time; each prompt is bounded by the
/// approval timeout instead, and at most `maxPendingApprovals` prompts wait at once.
///
/// # Audit
///
/// Exactly one [`crate::ToolCallAuditRecord`] per attempt, whatever happens to it, including
/// a call abandoned midway (its future dropped when the eval ends): recorded then with status
/// `error` and reason `cancelled`. It names the caller and the risk, and for an ask the
/// channel of the answer (`policy` for an approval remembered or a timeout, `fallback` when
/// nobody could be asked), the decider and their reason; for a call that returned, the
/// SHA-256 of the result as returned (`output_sha256`) and the paths the output policy masked
/// or removed (`redacted_paths`).
pub struct PolicyToolHost {
    inner: Arc<dyn ToolHost>,
    profile: Option<Arc<Profile>>,
    asker: Arc<dyn Asker>,
    session: SessionApprovals,
    preview: Arc<Preview>,
    audit: Option<Arc<dyn AuditSink>>,
    include_args: bool,
    /// The `eval_id` written in audit records instead of the runtime id's (a resumed eval).
    audit_id: Option<String>,
    session_id: Option<String>,
    caller: Caller,
    /// The tools' compiled schemas, looked up at each call; `None`: nothing is checked.
    schemas: Option<Arc<dyn SchemaSource>>,
    /// What is masked or removed from results.
    outputs: Arc<OutputPolicy>,
    /// The tools' classes, and whether the local caller may make destructive calls.
    classes: Arc<Classification>,
    /// Tools approved for the rest of an eval (keyed by eval in case a host is reused).
    eval_approvals: Mutex<HashSet<(EvalId, ApprovalKey)>>,
    /// Tools approved for the rest of the one eval this host serves, kept by its owner across
    /// hosts (an eval parked and resumed); when set, used instead of `eval_approvals`.
    eval_scope: Option<SessionApprovals>,
    /// The other eval tools the caller may use, for a denial that names one that can make the
    /// call; empty: a denial names none.
    alternatives: Vec<Alternative>,
    /// Told of each result the script receives.
    observer: Option<Arc<dyn ResultObserver>>,
    /// The slots of the eval's asks waiting for a human (`maxPendingApprovals`).
    pending: PendingSlots,
    /// The asks pending now that identical calls join.
    joins: PendingAsks,
    /// Whose asks this host's calls join: its own, whatever registry `joins` is.
    join_scope: joined::JoinScope,
    /// One queue per approval key: asks about the same thing take turns.
    queues: Mutex<HashMap<ApprovalKey, Arc<tokio::sync::Mutex<()>>>>,
    /// Approvals remembered "from now on"; `None`: that answer is not offered.
    remembered: Option<Arc<RememberedRules>>,
    /// What identifies a tool's upstream now, for remembered rules; `None`: no tool has one.
    upstream_identity: Option<crate::UpstreamIdentity>,
}

impl std::fmt::Debug for PolicyToolHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyToolHost")
            .field("profile", &self.profile.as_ref().map(|p| p.name()))
            .field("session_id", &self.session_id)
            .field("asker_supports", &self.asker.supports())
            .field("audit", &self.audit.is_some())
            .finish_non_exhaustive()
    }
}

/// Told of each tool result a script receives, after the output policy masked and removed
/// what it names: what a script saw, never more (e.g. to learn the result types of tools that
/// declare none).
pub trait ResultObserver: Send + Sync {
    /// `tool` returned `value` to the script.
    fn observe(&self, tool: &str, value: &Value);
}

/// Builds a [`PolicyToolHost`]. Defaults: no profile (unrestricted), [`NoAsker`], a fresh
/// [`SessionApprovals`], an empty preview, no audit, no session id, [`Caller::local`], no
/// schemas (arguments and results unchecked), no output policy (results unchanged).
pub struct PolicyToolHostBuilder {
    host: PolicyToolHost,
}

impl PolicyToolHostBuilder {
    /// The profile to enforce; `None`: every call is allowed (and still audited).
    pub fn profile(mut self, profile: Option<Arc<Profile>>) -> Self {
        self.host.profile = profile;
        self
    }

    /// Who to ask when the profile says `ask`.
    pub fn asker(mut self, asker: Arc<dyn Asker>) -> Self {
        self.host.asker = asker;
        self
    }

    /// The session's approvals, shared with the other evals of the session.
    pub fn session_approvals(mut self, session: SessionApprovals) -> Self {
        self.host.session = session;
        self
    }

    /// The approvals "for the rest of the script" of the one eval this host serves, owned by
    /// the caller so that they outlive the host (an eval parked and resumed on a new host keeps
    /// them). Default: kept inside the host, per eval.
    pub fn eval_approvals(mut self, approvals: SessionApprovals) -> Self {
        self.host.eval_scope = Some(approvals);
        self
    }

    /// The eval's static call-site preview, shown in approval requests.
    pub fn preview(mut self, preview: Arc<Preview>) -> Self {
        self.host.preview = preview;
        self
    }

    /// Where audit records go; with `include_args`, records carry the arguments themselves.
    pub fn audit(mut self, sink: Arc<dyn AuditSink>, include_args: bool) -> Self {
        self.host.audit = Some(sink);
        self.host.include_args = include_args;
        self
    }

    /// The `eval_id` its audit records carry, when not the one of the runtime's id: an eval
    /// resumed in another process keeps the id its first records were written under.
    /// Default: [`AuditRecord::eval_id`](crate::AuditRecord::eval_id) of each call's eval.
    pub fn audit_id(mut self, id: Option<String>) -> Self {
        self.host.audit_id = id;
        self
    }

    /// The client session (MCP), for approval requests and audit records.
    pub fn session_id(mut self, session_id: Option<String>) -> Self {
        self.host.session_id = session_id;
        self
    }

    /// Who the eval runs for: checked against rules' `requirePermissions`, bound to the
    /// approvals given, named in approval requests and audit records.
    pub fn caller(mut self, caller: Caller) -> Self {
        self.host.caller = caller;
        self
    }

    /// Where the tools' compiled schemas come from: arguments are checked against each
    /// tool's `inputSchema` before anyone is asked or the tool is reached, results against its
    /// `outputSchema`.
    pub fn schemas(mut self, schemas: Arc<dyn SchemaSource>) -> Self {
        self.host.schemas = Some(schemas);
        self
    }

    /// What to mask or remove from results before the script sees them (`outputs`).
    pub fn outputs(mut self, outputs: Arc<OutputPolicy>) -> Self {
        self.host.outputs = outputs;
        self
    }

    /// The tools' classes (`evaluation.classification`); default: from the tools'
    /// annotations ([`PolicyToolHostBuilder::schemas`]), else write, and the local caller may
    /// make destructive calls.
    pub fn classification(mut self, classes: Arc<Classification>) -> Self {
        self.host.classes = classes;
        self
    }

    /// The other eval tools the caller may use (default: none): a denied call's error names
    /// the first of them whose profile allows it, or asks about it.
    pub fn alternatives(mut self, alternatives: Vec<Alternative>) -> Self {
        self.host.alternatives = alternatives;
        self
    }

    /// Who is told of each result a script receives, as it receives it (after the output
    /// policy). Default: nobody.
    pub fn observer(mut self, observer: Option<Arc<dyn ResultObserver>>) -> Self {
        self.host.observer = observer;
        self
    }

    /// The pending asks an identical call of the same eval joins instead of asking again
    /// (keyed by eval, so one registry may serve a server's evals, as its metrics read it).
    /// Default: the host's own.
    pub fn pending_asks(mut self, asks: PendingAsks) -> Self {
        self.host.joins = asks;
        self
    }

    /// Where approvals given "from now on" are remembered and looked up (default: nowhere,
    /// and that answer is not offered).
    pub fn remembered(mut self, rules: Option<Arc<RememberedRules>>) -> Self {
        self.host.remembered = rules;
        self
    }

    /// What identifies a tool's upstream server now (from the current config): a remembered
    /// rule covers a call only while it is the one approved. Default: none (no tool has an
    /// upstream identity).
    pub fn upstream_identity(mut self, identity: Option<crate::UpstreamIdentity>) -> Self {
        self.host.upstream_identity = identity;
        self
    }

    /// The host.
    pub fn build(self) -> PolicyToolHost {
        self.host
    }
}

impl PolicyToolHost {
    /// Starts building a policy layer around `inner`.
    pub fn builder(inner: Arc<dyn ToolHost>) -> PolicyToolHostBuilder {
        PolicyToolHostBuilder {
            host: PolicyToolHost {
                inner,
                profile: None,
                asker: Arc::new(NoAsker),
                session: SessionApprovals::new(),
                preview: Arc::new(Preview::default()),
                audit: None,
                include_args: false,
                audit_id: None,
                session_id: None,
                caller: Caller::local(),
                schemas: None,
                outputs: Arc::default(),
                classes: Arc::default(),
                eval_approvals: Mutex::new(HashSet::new()),
                eval_scope: None,
                alternatives: Vec::new(),
                observer: None,
                pending: PendingSlots::new(),
                joins: PendingAsks::default(),
                join_scope: joined::JoinScope::fresh(),
                queues: Mutex::new(HashMap::new()),
                remembered: None,
                upstream_identity: None,
            },
        }
    }

    /// The profile enforced, if any.
    pub fn profile(&self) -> Option<&Arc<Profile>> {
        self.profile.as_ref()
    }

    fn profile_name(&self) -> Option<&str> {
        self.profile.as_deref().map(Profile::name)
    }

    /// What the audit records of this host's calls say; `None` without an audit sink.
    fn recorder(&self) -> Option<Recorder<'_>> {
        self.audit.as_deref().map(|sink| Recorder {
            sink,
            include_args: self.include_args,
            audit_id: self.audit_id.as_deref(),
            session_id: self.session_id.as_deref(),
            profile: self.profile_name(),
            caller: &self.caller.name,
            caller_permissions: self.classes.permissions_of(&self.caller),
        })
    }

    async fn call_inner(
        &self,
        tool: &str,
        args: Value,
        cx: &CallContext,
    ) -> Result<Value, ToolError> {
        let mut audit = AuditGuard::start(self.recorder(), tool, &args, cx);
        let d = match &self.profile {
            Some(p) => p.disposition(tool, &args),
            None => Disposition::unrestricted(),
        };
        audit.disposition = d.kind;
        audit.reason = d.reason.clone();
        audit.risk = d.risk;
        let class = self.class_of(tool);
        audit.classification = Some(class);
        let destructive = !self.classes.permits(&self.caller, class);
        let missing = self.caller.missing(&d.required_permissions);
        let unauthorised = destructive || self.profile.is_some() && !missing.is_empty();
        let refused = unauthorised || self.profile.is_some() && d.kind == DispositionKind::Deny;
        if refused {
            audit.stage = if unauthorised {
                Stage::Auth
            } else {
                Stage::Permission
            };
        }
        // Arguments are checked once the policy has not refused the call, and before anyone
        // is asked: nobody is asked about a call that cannot run.
        let invalid = if refused {
            None
        } else {
            self.check_arguments(tool, &args, &mut audit).err()
        };
        let (decision, gate) = match (d.kind, self.profile.as_deref(), invalid) {
            _ if destructive => (Decision::Denied, Err(self.destructive_denial(tool))),
            (_, Some(p), _) if !missing.is_empty() => (
                Decision::Denied,
                Err(self.permission_denial(p, tool, &args, &d, &missing)),
            ),
            (DispositionKind::Deny, Some(p), _) => {
                let what = describe_match(tool, d.reason.as_deref());
                let next = self.next_step(tool, &args);
                (
                    Decision::Denied,
                    Err(denied(
                        tool,
                        "denied",
                        format!("profile `{}` does not allow {what}{next}", p.name()),
                    )),
                )
            }
            (_, _, Some(invalid)) => {
                audit.stage = Stage::Validation;
                (Decision::Invalid, Err(invalid))
            }
            (DispositionKind::Allow, _, None) | (_, None, None) => (Decision::Allowed, Ok(())),
            // Nobody is asked about a tool that does not exist: the call fails as unknown.
            (DispositionKind::Ask, Some(_), None)
                if !self.inner.tool_names().iter().any(|n| n == tool) =>
            {
                (Decision::Allowed, Ok(()))
            }
            (DispositionKind::Ask, Some(p), None) => {
                audit.stage = Stage::Approval;
                self.ask(p, tool, &args, &d, cx, &mut audit).await
            }
        };
        audit.decision = decision;
        let result = match gate {
            Ok(()) => match self.inner.call(tool, args, cx).await {
                Ok(value) => self.finish_result(tool, value, cx, &mut audit),
                // No such tool: nothing was allowed to run.
                Err(e @ ToolError::NotFound { .. }) => {
                    audit.stage = Stage::Registry;
                    audit.decision = Decision::Denied;
                    audit.reason = Some("unknown_tool".into());
                    Err(e)
                }
                Err(e) => Err(e),
            },
            Err(e) => {
                if let ToolError::Denied { reason, .. } = &e {
                    audit.reason = Some(reason.clone());
                }
                Err(e)
            }
        };
        let status = match &result {
            Ok(_) => CallStatus::Ok,
            Err(ToolError::Denied { .. }) => CallStatus::Denied,
            Err(_) => CallStatus::Error,
        };
        audit.finish(status);
        result
    }
}

impl ToolHost for PolicyToolHost {
    fn call<'a>(
        &'a self,
        name: &'a str,
        args: Value,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(self.call_inner(name, args, cx))
    }

    /// The inner host's tools (denied ones included: listing is not calling).
    fn tool_names(&self) -> Vec<String> {
        self.inner.tool_names()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Sets and maps of plain keys: a panic cannot leave them inconsistent.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn denied(tool: &str, reason: &str, message: String) -> ToolError {
    ToolError::Denied {
        tool: tool.to_string(),
        reason: reason.to_string(),
        message,
    }
}

/// "`fs__write` (system files)": the tool, and the deciding rule's reason if it has one. What
/// in the config decided is left to the audit log: a refusal says what to do instead.
fn describe_match(tool: &str, reason: Option<&str>) -> String {
    match reason {
        Some(r) => format!("`{tool}` ({r})"),
        None => format!("`{tool}`"),
    }
}

/// Another eval tool the caller may use: its name and profile (`None`: unrestricted).
#[derive(Debug, Clone)]
pub struct Alternative {
    /// `eval` or `codemode_eval_<profile>`.
    pub tool: String,
    /// Its profile.
    pub profile: Option<Arc<Profile>>,
}

impl PolicyToolHost {
    /// The refusal of a call whose deciding rule requires permissions (`missing`) the caller
    /// lacks: reason `permission`, naming them and what could make the call instead.
    fn permission_denial(
        &self,
        p: &Profile,
        tool: &str,
        args: &Value,
        d: &Disposition,
        missing: &[&str],
    ) -> ToolError {
        let what = describe_match(tool, d.reason.as_deref());
        let which = missing
            .iter()
            .map(|m| format!("`{m}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let s = if missing.len() == 1 { "" } else { "s" };
        let next = self.next_step(tool, args);
        denied(
            tool,
            "permission",
            format!(
                "{what} needs the permission{s} {which} under profile `{}`, which caller `{}` lacks{next}",
                p.name(),
                self.caller.name
            ),
        )
    }

    /// `; `eval` can, after approval` — the first [`Alternative`] whose profile allows the
    /// call (or asks about it) for this caller; `; no eval tool you may use allows it` when
    /// none does; nothing when no alternatives were given.
    fn next_step(&self, tool: &str, args: &Value) -> String {
        if self.alternatives.is_empty() {
            return String::new();
        }
        for alt in &self.alternatives {
            let d = match &alt.profile {
                Some(p) => p.disposition(tool, args),
                None => Disposition::unrestricted(),
            };
            if !self.caller.missing(&d.required_permissions).is_empty() {
                continue;
            }
            match d.kind {
                DispositionKind::Allow => return format!("; `{}` can call it", alt.tool),
                DispositionKind::Ask => return format!("; `{}` can, after approval", alt.tool),
                DispositionKind::Deny => {}
            }
        }
        "; no eval tool you may use allows it".to_string()
    }
}

#[cfg(test)]
mod tests;
