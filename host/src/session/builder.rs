//! [`GovernedEvalBuilder`]: every setting of a governed eval, each with a default that grants
//! nothing.

use std::sync::Arc;
use std::time::Duration;

use codemode_policies::{
    Alternative, Caller, OutputPolicy, PendingAsks, Profile, SessionApprovals,
};
use codemode_runtime::{EvalId, EvalOptions, ParkRequest, Runtime};
use codemode_upstream::{CallRelay, KeptMedia, Media, UpstreamPool};

use super::{AuditTarget, GovernedEval};
use crate::approvals::{ApprovalBroker, Asker, HumanWaits, NoAsker, OpenAsks};
use crate::tools::SamplingRoute;

/// Builds a [`GovernedEval`]. Every setting has a default that grants nothing.
pub struct GovernedEvalBuilder {
    eval: GovernedEval,
    /// Media a parked eval saved, kept again by [`build`](Self::build).
    restored: Vec<KeptMedia>,
}

impl GovernedEvalBuilder {
    /// The script's tools: the upstream servers' tools and the built-ins (`search_tools`,
    /// `get_tools`, `hitl_request`). Default: no tools at all (every call is an unknown tool).
    pub fn tools(mut self, upstreams: UpstreamPool) -> Self {
        self.eval.upstreams = Some(upstreams);
        self
    }

    /// Who the eval runs for. Default [`Caller::local`].
    pub fn caller(mut self, caller: Caller) -> Self {
        self.eval.caller = caller;
        self
    }

    /// The session the eval belongs to, and the approvals remembered for it ("approve this tool
    /// for the session"). Default: none (each eval starts with no remembered approvals).
    pub fn session(mut self, id: impl Into<String>, approvals: SessionApprovals) -> Self {
        self.eval.session = Some((id.into(), approvals));
        self
    }

    /// The tools approved "for the rest of the script" so far (an eval resumed after a park
    /// keeps those of its earlier runs, see [`GovernedEval::eval_approvals`]). Default: none.
    pub fn eval_approvals(mut self, approvals: SessionApprovals) -> Self {
        self.eval.eval_approvals = approvals;
        self
    }

    /// Lets the eval park when `request` is made and every call it has in flight waits for a
    /// human ([`GovernedEval::run_step`]). Default: never parks.
    pub fn park(mut self, request: Option<ParkRequest>) -> Self {
        self.eval.park = request;
        self
    }

    /// The pending asks an identical call joins instead of prompting again, shared with the
    /// other evals whose identical asks should be joined (a server's, across its evals).
    /// Default: the eval's own.
    pub fn pending_asks(mut self, asks: PendingAsks) -> Self {
        self.eval.pending_asks = asks;
        self
    }

    /// Where the approval requests open in this eval are kept while they wait (what a parked
    /// eval waits on). Default: not kept.
    pub(crate) fn open_asks(mut self, asks: Option<Arc<OpenAsks>>) -> Self {
        self.eval.open_asks = asks;
        self
    }

    /// The `eval_id` of its audit records. Default: [`AuditRecord::eval_id`](codemode_policies::AuditRecord::eval_id) of
    /// its id; an eval resumed in another process keeps the one it was first audited under.
    pub fn audit_id(mut self, id: Option<String>) -> Self {
        self.eval.audit_id = id;
        self
    }

    /// The eval's id. Default: a fresh one from the runtime (a resumed eval keeps its own).
    pub fn id(mut self, id: EvalId) -> Self {
        self.eval.id = id;
        self
    }

    /// The profile deciding each call. Default `None`: unrestricted.
    pub fn profile(mut self, profile: Option<Arc<Profile>>) -> Self {
        self.eval.profile = profile;
        self
    }

    /// The other eval tools the caller may use, named by a denied call's error when one of
    /// them can make it. Default: none.
    pub fn alternatives(mut self, alternatives: Vec<Alternative>) -> Self {
        self.eval.alternatives = alternatives;
        self
    }

    /// Who is asked about calls the profile asks about, and `hitl_request` questions. Default
    /// [`NoAsker`]: nobody, so the profile's `elicitationFallback` decides.
    pub fn asker(mut self, asker: Arc<dyn Asker>) -> Self {
        self.eval.asker = asker;
        self
    }

    /// Where the upstream servers' progress and log messages about the eval's calls go (its
    /// client, see [`CallRelay`]). Default: none (they are dropped).
    pub fn relay(mut self, relay: Option<Arc<dyn CallRelay>>) -> Self {
        self.eval.relay = relay;
        self
    }

    /// Where the upstream servers' sampling requests during the eval's calls go once its
    /// profile (and maybe a human) allowed them. Default: refused (no client, as in `codemode
    /// run`).
    pub fn sampling(mut self, route: SamplingRoute) -> Self {
        self.eval.sampling = route;
        self
    }

    /// The server-wide approval broker: when its HTTP API is served, approval requests are also
    /// offered there, and the first answer (there or through the asker) wins. Default: none.
    pub fn broker(mut self, broker: Option<Arc<ApprovalBroker>>) -> Self {
        self.eval.broker = broker;
        self
    }

    /// Where approvals "from now on" are kept and looked up, for an eval without a broker that
    /// has them (`codemode run`). Default: the broker's; with neither, that answer is not
    /// offered.
    pub fn remembered(mut self, rules: Option<Arc<codemode_policies::RememberedRules>>) -> Self {
        self.eval.remembered = rules;
        self
    }

    /// What identifies a tool's upstream now, for the remembered rules. Default: none.
    pub fn upstream_identity(
        mut self,
        identity: Option<codemode_policies::UpstreamIdentity>,
    ) -> Self {
        self.eval.upstream_identity = identity;
        self
    }

    /// The audit log. Default: none.
    pub fn audit(mut self, audit: Option<AuditTarget>) -> Self {
        self.eval.audit = audit;
        self
    }

    /// What is masked or removed from tool results before the script sees them (the config's
    /// `outputs`). Default: nothing.
    pub fn outputs(mut self, outputs: Arc<OutputPolicy>) -> Self {
        self.eval.outputs = outputs;
        self
    }

    /// The tools' classes (the config's `evaluation.classification` and
    /// `localAllowDestructive`): a destructive call needs the caller's `allow_destructive`.
    /// Default: classes from the tools' annotations; the local caller may.
    pub fn classification(mut self, classes: Arc<codemode_policies::Classification>) -> Self {
        self.eval.classes = classes;
        self
    }

    /// The eval's limits. Default [`EvalOptions::default`].
    pub fn options(mut self, options: EvalOptions) -> Self {
        self.eval.options = options;
        self
    }

    /// The longest the eval may live in memory, time spent waiting for a human included (the
    /// `timeout` of [`options`](Self::options) does not count that time), summed over its runs
    /// when it parks and resumes ([`lived`](Self::lived)). Past it the eval is stopped and ends
    /// with error kind `timeout`, the message naming this lifetime. Default: none.
    pub fn lifetime(mut self, lifetime: Option<Duration>) -> Self {
        self.eval.lifetime = lifetime;
        self
    }

    /// Time this eval already spent in memory (running, or waiting for a human there) in
    /// earlier runs, before it was parked: it counts against [`lifetime`](Self::lifetime), so
    /// that a park and resume does not start the lifetime over. Default: zero (a fresh eval).
    /// Time spent parked does not count here: the approval's own timeout bounds it.
    pub fn lived(mut self, lived: Duration) -> Self {
        self.eval.lived_before = lived;
        self
    }

    /// The most bytes of media (images, audio, blobs of upstream results) the eval keeps for its
    /// result (`limits.maxMediaBytes`): see [`codemode_upstream::media`]. Default:
    /// [`Media::DEFAULT_MAX_BYTES`](codemode_upstream::Media::DEFAULT_MAX_BYTES) (4 MiB).
    pub fn max_media_bytes(mut self, bytes: u64) -> Self {
        self.eval.media = Media::new(bytes);
        self
    }

    /// Told when the eval starts and stops waiting on a human (approvals and `hitl_request`),
    /// and able to refuse a wait (the question is then not asked). Default: none.
    pub fn waits(mut self, waits: Option<Arc<dyn HumanWaits>>) -> Self {
        self.eval.waits = waits;
        self
    }

    /// The media a parked eval's calls had received ([`Media::saved`]), kept again within the
    /// budget of [`max_media_bytes`](Self::max_media_bytes) so that its result can still attach
    /// them. Default: none (a fresh eval).
    pub fn media(mut self, saved: Vec<KeptMedia>) -> Self {
        self.restored = saved;
        self
    }

    /// The eval, with its id allocated.
    pub fn build(mut self) -> GovernedEval {
        let left_out = self.eval.media.restore(std::mem::take(&mut self.restored));
        if left_out > 0 {
            tracing::warn!(
                eval = self.eval.id.0,
                "{left_out} media block(s) saved with the parked eval are over limits.maxMediaBytes now: a result naming them is told they are not attached"
            );
        }
        // Traced: every record passes the span maker, on to the audit log if there is one.
        if let Some(trace) = &self.eval.trace {
            let (inner, include_args) = match self.eval.audit.take() {
                Some(audit) => (Some(audit.sink), audit.include_args),
                None => (None, false),
            };
            let sink = crate::traces::hooks::TracingSink {
                trace: trace.clone(),
                inner,
            };
            self.eval.audit = Some(AuditTarget {
                sink: Arc::new(sink),
                include_args,
            });
        }
        self.eval
    }

    /// The eval's trace: its spans, and the upstream requests' `traceparent`. Default: none.
    pub(crate) fn trace(mut self, trace: Option<crate::traces::EvalTrace>) -> Self {
        self.eval.trace = trace;
        self
    }
}

impl GovernedEval {
    /// An eval on `runtime`, with the defaults of [`GovernedEvalBuilder`].
    pub fn builder(runtime: Runtime) -> GovernedEvalBuilder {
        let id = runtime.allocate_eval_id();
        GovernedEvalBuilder {
            eval: GovernedEval {
                runtime,
                upstreams: None,
                id,
                caller: Caller::local(),
                session: None,
                profile: None,
                alternatives: Vec::new(),
                asker: Arc::new(NoAsker),
                relay: None,
                sampling: SamplingRoute::default(),
                broker: None,
                remembered: None,
                upstream_identity: None,
                audit: None,
                outputs: Arc::default(),
                classes: Arc::default(),
                options: EvalOptions::default(),
                lifetime: None,
                waits: None,
                park: None,
                open_asks: None,
                pending_asks: PendingAsks::default(),
                audit_id: None,
                eval_approvals: SessionApprovals::new(),
                lived_before: Duration::ZERO,
                lived: std::sync::Mutex::new(Duration::ZERO),
                media: Media::default(),
                trace: None,
            },
            restored: Vec::new(),
        }
    }
}
