//! Evals that wait for a human outside the process: saved to the durable store
//! ([`crate::store`]) after `durable.suspendToStoreAfterSeconds`, or when the server is told to
//! stop, and resumed by whichever node is given the answer.
//!
//! Records (each sealed by the store, each with a time to live):
//! - `eval:<requestState>` — the parked eval: [`ParkedMeta`] (who, which profile, the code,
//!   the open asks) and the sandbox's saved state ([`codemode_runtime::Suspended::save`]);
//!   its time to live is what is left of its asks' approval time;
//! - `ask:<approval id>` — one open ask of a parked eval, for the approval API of any node;
//! - `decision:<approval id>` — an answer given while the eval was parked, taken by the eval's
//!   call when it asks again after the resume;
//! - `result:<requestState>` — the outcome of a resumed eval nobody was waiting for, fetched by
//!   the client's next retry on any node;
//! - `guest:<sha256>` — the guest module a saved state names, so a node running a newer guest
//!   still resumes it.
//!
//! Taking `eval:<requestState>` is atomic: exactly one node resumes a parked eval.

use std::sync::Arc;
use std::time::Duration;

use codemode_policies::{ApprovalAnswer, ApprovalDecision, Caller, Channel, ParkedAsk};
use codemode_runtime::{BoxFuture, EvalOutcome, GuestHash, ParkRequest, Runtime, Suspended};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::parked::ParkedCounts;
use crate::approvals::broker::{DecideError, may_decide};
use crate::approvals::view::{decision_name, parse_decision};
use crate::approvals::{Decisions, OpenAsk, Question};
use crate::store::{Store, StoreError};

/// How long a finished result of a resumed eval waits in the store for its client.
const RESULT_TTL: Duration = Duration::from_secs(600);
/// How long a parked eval's records outlive its approval deadline, for the sweep of some node to
/// resume it and time its call out.
const EXPIRY_GRACE: Duration = Duration::from_secs(120);
/// How long a node's mark on a resumed eval it runs lasts unless renewed: a retry elsewhere
/// learns within this long of the node's death that the eval will not finish.
pub const RUNNING_LEASE: Duration = Duration::from_secs(6);
/// How often the node running a resumed eval renews its lease.
const RUNNING_RENEW: Duration = Duration::from_secs(2);
/// How often an eval kept in memory by `maxParkedEvals` tries again to park.
pub const PARK_RETRY: Duration = Duration::from_secs(2);
/// How often each node looks for parked evals whose approval time is up.
pub const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// How long a guest module is kept for the states that name it.
const GUEST_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// What is saved with a parked eval besides its sandbox.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ParkedMeta {
    /// The client's `requestState`.
    pub token: String,
    /// The eval tool called (`eval` or `codemode_eval_<profile>`).
    pub tool: String,
    /// The script as the client sent it (for the audit record and the prompts' preview).
    pub code: String,
    /// Who the eval runs for.
    pub caller: String,
    /// The caller's permissions.
    pub permissions: Vec<String>,
    /// The profile deciding its calls.
    pub profile: Option<String>,
    /// The eval's id.
    pub eval_id: u64,
    /// The `eval_id` of its audit records (the first process's), kept by every resume.
    pub audit_id: String,
    /// The asks it waits on.
    pub asks: Vec<SavedAsk>,
    /// The client it counts against (`limits.perClient`), see [`super::fair::client_key`].
    #[serde(default)]
    pub client: String,
    /// Milliseconds it spent in memory before this park (earlier runs included): counted
    /// against `limits.maxEvalLifetime` when it resumes. Time spent parked is bounded by the
    /// approval timeout instead (the records expire; the sweep ends the call at the deadline).
    #[serde(default)]
    pub lived_ms: u64,
}

/// One open ask of a parked eval.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SavedAsk {
    /// The approval request's id.
    pub id: String,
    /// What the approval API shows.
    pub view: Value,
    /// The question's text, for a 2026-07-28 client.
    pub message: String,
    /// The question's form.
    pub schema: serde_json::Map<String, Value>,
}

impl SavedAsk {
    fn of(ask: &OpenAsk) -> Self {
        SavedAsk {
            id: ask.id.clone(),
            view: ask.view.clone(),
            message: ask.question.message.clone(),
            schema: ask.question.schema.clone(),
        }
    }

    /// The question a 2026-07-28 client answers, under its key.
    pub fn question(&self) -> (String, Question) {
        (
            format!("codemode-{}", self.id),
            Question {
                message: self.message.clone(),
                schema: self.schema.clone(),
            },
        )
    }
}

/// `ask:<id>`: an open ask of a parked eval.
#[derive(Serialize, Deserialize)]
struct AskRecord {
    token: String,
    view: Value,
    /// When the eval's first ask runs out of time, in ms since the Unix epoch: the sweep then
    /// resumes the eval so that the call ends as timed out, seen by the script and audited.
    #[serde(default)]
    deadline_ms: u64,
}

/// `decision:<id>`: an answer given while the eval was parked.
#[derive(Serialize, Deserialize)]
struct DecisionRecord {
    decision: String,
    reason: Option<String>,
    decided_by: Option<String>,
    channel: Channel,
    /// The ask as the approval API showed it, for `GET /approvals?state=decided`.
    #[serde(default)]
    view: Value,
    /// When it was decided (RFC 3339 UTC).
    #[serde(default)]
    decided_at: String,
}

impl DecisionRecord {
    /// The decided ask as the approval API shows decisions: the ask's view with `decision`,
    /// `decided_by`, `reason`, `channel` and `decided_at` (as the broker's decided entries).
    fn decided_view(self) -> Option<Value> {
        let Value::Object(mut view) = self.view else {
            return None;
        };
        view.insert("decision".into(), Value::String(self.decision));
        if let Some(by) = self.decided_by {
            view.insert("decided_by".into(), Value::String(by));
        }
        if let Some(reason) = self.reason {
            view.insert("reason".into(), Value::String(reason));
        }
        view.insert(
            "channel".into(),
            Value::String(self.channel.as_str().into()),
        );
        view.insert("decided_at".into(), Value::String(self.decided_at));
        Some(Value::Object(view))
    }
}

/// A parked eval taken from the store to be resumed.
pub struct Claimed {
    /// Who, which profile, the code, the asks.
    pub meta: ParkedMeta,
    /// The sandbox's state.
    pub suspended: Suspended,
}

/// Parking and resuming through the store. See the module docs.
pub struct Durable {
    store: Store,
    after: Duration,
    /// Made when the server stops: every eval waiting for a human parks.
    root: ParkRequest,
    /// Starts resuming the eval of a `requestState` on this node (set by the server).
    resumer: std::sync::OnceLock<Arc<dyn Fn(String) + Send + Sync>>,
    /// The evals this node parked, per client (`limits.perClient.maxParkedEvals`).
    parked: ParkedCounts,
    /// The leases of the resumed evals this node runs, renewed until they end.
    renewing: std::sync::Mutex<std::collections::HashMap<String, tokio::task::JoinHandle<()>>>,
}

/// Whether a resumed eval is running ([`Durable::running`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Running {
    /// On a node that renews its lease.
    Yes,
    /// It was, on a node that stopped renewing the lease before the eval ended (it died).
    Abandoned,
    /// No node runs it (never resumed, or it ended).
    No,
}

/// Who may park an eval after its wait: the eval's client and `requestState`, and the client's
/// `limits.perClient.maxParkedEvals`.
pub struct ParkGate {
    /// The client ([`super::fair::client_key`]).
    pub client: String,
    /// The eval's `requestState`.
    pub token: String,
    /// How many evals the client may have parked from this node.
    pub cap: usize,
}

impl Durable {
    /// Parking after `after` of waiting, into `store`.
    pub fn new(store: Store, after: Duration) -> Self {
        Durable {
            store,
            after,
            root: ParkRequest::new(),
            resumer: std::sync::OnceLock::new(),
            parked: ParkedCounts::default(),
            renewing: std::sync::Mutex::default(),
        }
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Keeps this runtime's guest in the store, for the states it saves.
    pub async fn keep_guest(&self, runtime: &Runtime) -> Result<(), StoreError> {
        let key = format!("guest:{}", runtime.guest_hash());
        self.store
            .put_if_absent(&key, &runtime.guest_wasm(), GUEST_TTL)
            .await
            .map(|_| ())
    }

    /// Sets who resumes an eval on this node when an answer for it arrives here.
    pub fn set_resumer(&self, resume: Arc<dyn Fn(String) + Send + Sync>) {
        let _ = self.resumer.set(resume);
    }

    /// A park request for one eval: made by [`Durable::watch`] or when the server stops.
    pub fn park_request(&self) -> ParkRequest {
        self.root.child()
    }

    /// Parks every eval waiting for a human (the server is stopping).
    pub fn park_all(&self) {
        self.root.request();
    }

    /// Requests `park` once `asks` has had an open ask for `suspendToStoreAfterSeconds`, if
    /// `gate`'s client is under its `maxParkedEvals` on this node; else the eval stays in memory
    /// (it says so in the log once) and parking is tried again every [`PARK_RETRY`].
    pub fn watch(
        self: &Arc<Self>,
        asks: Arc<crate::approvals::OpenAsks>,
        park: ParkRequest,
        gate: ParkGate,
    ) -> tokio::task::JoinHandle<()> {
        let after = self.after;
        let durable = self.clone();
        tokio::spawn(async move {
            const POLL: Duration = Duration::from_millis(50);
            let mut waiting_since: Option<tokio::time::Instant> = None;
            let mut refused = false;
            loop {
                if park.is_requested() {
                    return;
                }
                let open = !asks.snapshot().is_empty();
                let now = tokio::time::Instant::now();
                match (open, waiting_since) {
                    (false, _) => waiting_since = None,
                    (true, None) => waiting_since = Some(now),
                    (true, Some(since)) if now.duration_since(since) >= after => {
                        match durable.may_park(&gate).await {
                            Ok(()) => {
                                park.request();
                                return;
                            }
                            Err(count) => {
                                if !std::mem::replace(&mut refused, true) {
                                    tracing::warn!(
                                        "an eval of client `{}` stays in memory instead of being parked: the client has {count} evals parked from this node (limits.perClient.maxParkedEvals = {})",
                                        gate.client,
                                        gate.cap
                                    );
                                }
                                tokio::time::sleep(PARK_RETRY).await;
                                continue;
                            }
                        }
                    }
                    (true, Some(_)) => {}
                }
                tokio::time::sleep(POLL).await;
            }
        })
    }

    /// Counts `gate`'s eval as parked for its client, unless the client is at its cap on this
    /// node (`Err(count)`). At the cap, the evals counted are looked up in the store first:
    /// those another node resumed no longer count.
    async fn may_park(&self, gate: &ParkGate) -> Result<(), usize> {
        let now = crate::store::now_ms();
        if self
            .parked
            .reserve(&gate.client, &gate.token, gate.cap, now)
            .is_ok()
        {
            return Ok(());
        }
        for token in self.parked.tokens_of(&gate.client) {
            if token != gate.token
                && matches!(self.store.get(&format!("eval:{token}")).await, Ok(None))
            {
                self.parked.release(&token);
            }
        }
        self.parked
            .reserve(&gate.client, &gate.token, gate.cap, now)
    }

    /// `token`'s eval does not (or no longer) count as parked from this node: it finished, was
    /// resumed, or could not be saved.
    pub fn not_parked(&self, token: &str) {
        self.parked.release(token);
    }

    /// How many evals `client` has parked from this node.
    pub fn parked_count(&self, client: &str) -> usize {
        self.parked.count(client)
    }

    /// Saves a parked eval and its asks.
    ///
    /// # Errors
    /// When the store refuses (the eval is then still in `suspended`: resume it here).
    pub async fn save(&self, meta: &ParkedMeta, suspended: &Suspended) -> Result<(), StoreError> {
        match self.save_records(meta, suspended).await {
            Ok(deadline_ms) => {
                self.parked.saved(&meta.client, &meta.token, deadline_ms);
                Ok(())
            }
            Err(e) => {
                self.parked.release(&meta.token);
                Err(e)
            }
        }
    }

    /// [`save`](Self::save)'s records; returns the deadline of the eval's first ask.
    async fn save_records(
        &self,
        meta: &ParkedMeta,
        suspended: &Suspended,
    ) -> Result<u64, StoreError> {
        let deadline_ms = suspended
            .pending()
            .iter()
            .filter_map(|p| serde_json::from_value::<ParkedAsk>(p.note.clone()?).ok())
            .map(|ask| ask.deadline_ms)
            .min()
            .unwrap_or_else(|| crate::store::now_ms().saturating_add(60_000));
        // The records outlive the deadline by a grace period: the sweep resumes the eval at
        // its deadline, and the time-out reaches the script (see `sweep_expired`).
        let ttl = Duration::from_millis(deadline_ms.saturating_sub(crate::store::now_ms()))
            + EXPIRY_GRACE;
        let meta_json = serde_json::to_vec(meta).map_err(|e| {
            StoreError::new(
                crate::store::StoreErrorKind::InvalidArgument,
                format!("the parked eval's description: {e}"),
            )
        })?;
        let mut record = Vec::with_capacity(4 + meta_json.len() + 64 * 1024);
        record.extend_from_slice(&(meta_json.len() as u32).to_le_bytes());
        record.extend_from_slice(&meta_json);
        record.extend_from_slice(&suspended.save());
        // The asks first: an eval is never listed nowhere.
        for ask in &meta.asks {
            let value = serde_json::to_vec(&AskRecord {
                token: meta.token.clone(),
                view: ask.view.clone(),
                deadline_ms,
            })
            .unwrap_or_default();
            self.store
                .put(&format!("ask:{}", ask.id), &value, ttl)
                .await?;
        }
        self.store
            .put(&format!("eval:{}", meta.token), &record, ttl)
            .await?;
        Ok(deadline_ms)
    }

    /// The eval tool a parked eval was called through (read, not taken), so that a retry
    /// naming another tool is refused before the eval is claimed.
    pub async fn parked_tool(&self, token: &str) -> Option<String> {
        let record = self.store.get(&format!("eval:{token}")).await.ok()??;
        let (meta, _) = split_record(&record.value).ok()?;
        Some(meta.tool)
    }

    /// Takes the parked eval of `token`, if it is still in the store: exactly one caller gets
    /// it. Its asks leave the approval listing.
    ///
    /// # Errors
    /// When the store fails or the record cannot be read.
    pub async fn claim(&self, runtime: &Runtime, token: &str) -> Result<Option<Claimed>, String> {
        let Some(record) = self
            .store
            .take(&format!("eval:{token}"))
            .await
            .map_err(|e| e.to_string())?
        else {
            return Ok(None);
        };
        let (meta, state) = split_record(&record.value)?;
        let suspended =
            Suspended::load(state).map_err(|e| format!("a parked eval's state: {e}"))?;
        self.parked.release(token);
        for ask in &meta.asks {
            let _ = self.store.delete(&format!("ask:{}", ask.id)).await;
        }
        self.ensure_guest(runtime, suspended.guest_hash()).await?;
        Ok(Some(Claimed { meta, suspended }))
    }

    /// Adds the guest `hash` to `runtime` from the store when the runtime lacks it.
    async fn ensure_guest(&self, runtime: &Runtime, hash: GuestHash) -> Result<(), String> {
        if runtime.guests().contains(&hash) {
            return Ok(());
        }
        let record = self
            .store
            .get(&format!("guest:{hash}"))
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| {
                format!("the eval was saved with guest {hash}, which is not in the store")
            })?;
        runtime
            .add_guest(&record.value)
            .map(|_| ())
            .map_err(|e| format!("guest {hash}: {e}"))
    }

    /// Starts resuming `token` on this node (an answer for it arrived here).
    pub fn resume_here(&self, token: &str) {
        if let Some(resume) = self.resumer.get() {
            resume(token.to_string());
        }
    }

    /// Records `answer` for ask `id` of the parked eval `token` (from a client's retry); `false`
    /// when the eval does not wait on that ask or it was answered already.
    pub async fn answer(&self, token: &str, id: &str, answer: &ApprovalAnswer) -> bool {
        let Ok(Some(record)) = self.store.get(&format!("ask:{id}")).await else {
            return false;
        };
        match serde_json::from_slice::<AskRecord>(&record.value) {
            Ok(ask) if ask.token == token => {
                self.put_decision(id, answer, record.remaining(), ask.view)
                    .await
            }
            _ => false,
        }
    }

    async fn put_decision(
        &self,
        id: &str,
        answer: &ApprovalAnswer,
        ttl: Duration,
        view: Value,
    ) -> bool {
        let value = serde_json::to_vec(&DecisionRecord {
            decision: decision_name(answer.decision).to_string(),
            reason: answer.reason.clone(),
            decided_by: answer.decided_by.clone(),
            channel: answer.channel,
            view,
            decided_at: codemode_policies::rfc3339_utc(std::time::SystemTime::now()),
        })
        .unwrap_or_default();
        // The first answer wins, as in the broker: a later one is refused.
        let key = format!("decision:{id}");
        let ttl = ttl.max(Duration::from_secs(1));
        matches!(self.store.put_if_absent(&key, &value, ttl).await, Ok(true))
    }

    /// Resumes, on this node, every parked eval whose approval time is up: its call then ends
    /// as timed out (a timeout never approves), which the script sees and the audit records.
    /// Nodes sweeping at once race for each eval; exactly one takes it.
    pub async fn sweep_expired(&self) {
        let Ok(listing) = self.store.list("ask:").await else {
            return;
        };
        let now = crate::store::now_ms();
        let mut due: Vec<String> = listing
            .records
            .iter()
            .filter_map(|record| serde_json::from_slice::<AskRecord>(&record.value).ok())
            .filter(|ask| ask.deadline_ms != 0 && ask.deadline_ms <= now)
            .map(|ask| ask.token)
            .collect();
        due.sort();
        due.dedup();
        for token in due {
            self.resume_here(&token);
        }
    }

    /// The asks of every parked eval of the cluster, as the approval API shows them.
    pub async fn parked_asks(&self) -> Vec<Value> {
        let Ok(listing) = self.store.list("ask:").await else {
            return Vec::new();
        };
        listing
            .records
            .iter()
            .filter_map(|record| serde_json::from_slice::<AskRecord>(&record.value).ok())
            .map(|ask| ask.view)
            .collect()
    }

    /// The decisions given to parked evals' asks (on any node, by the approval API or a
    /// client's retry), as the approval API shows decisions, newest first. Each is listed until
    /// its ask's approval time (and the records' grace period) is up.
    pub async fn decided_asks(&self) -> Vec<Value> {
        let Ok(listing) = self.store.list("decision:").await else {
            return Vec::new();
        };
        let mut views: Vec<Value> = listing
            .records
            .iter()
            .filter_map(|record| serde_json::from_slice::<DecisionRecord>(&record.value).ok())
            .filter_map(DecisionRecord::decided_view)
            .collect();
        views.sort_by(|a, b| b["decided_at"].as_str().cmp(&a["decided_at"].as_str()));
        views
    }

    /// Decides ask `id` of a parked eval through the approval API, then resumes the eval here.
    ///
    /// # Errors
    /// [`DecideError::NotFound`] when no parked eval has that ask; the others as
    /// [`crate::approvals::ApprovalBroker::decide`].
    pub async fn decide(
        &self,
        id: &str,
        decider: &Caller,
        decision: ApprovalDecision,
        reason: Option<String>,
    ) -> Result<(), DecideError> {
        let record = self
            .store
            .get(&format!("ask:{id}"))
            .await
            .ok()
            .flatten()
            .ok_or_else(|| DecideError::NotFound(id.to_string()))?;
        let ask: AskRecord = serde_json::from_slice(&record.value)
            .map_err(|_| DecideError::NotFound(id.to_string()))?;
        may_decide(
            decider,
            ask.view
                .get("caller")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        )?;
        let allowed: Vec<&str> = ask
            .view
            .get("allowed_decisions")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let name = decision_name(decision);
        if decision != ApprovalDecision::Decline && !allowed.contains(&name) {
            return Err(DecideError::Invalid(format!(
                "`{name}` is not allowed for this ask (allowed: {})",
                allowed.join(", ")
            )));
        }
        let reason = reason.filter(|r| !r.trim().is_empty());
        if ask.view.get("reason_required") == Some(&Value::Bool(true)) && reason.is_none() {
            return Err(DecideError::Invalid(
                "this ask needs a reason with the decision".into(),
            ));
        }
        let answer = ApprovalAnswer::new(decision, Channel::Http)
            .with_reason(reason)
            .decided_by(decider.name.clone());
        let token = ask.token.clone();
        if !self
            .put_decision(id, &answer, record.remaining(), ask.view)
            .await
        {
            return Err(DecideError::Closed(id.to_string(), "decided"));
        }
        self.resume_here(&token);
        Ok(())
    }

    /// Keeps the outcome of a resumed eval for its client's next retry, on any node.
    pub async fn put_result(&self, token: &str, outcome: &EvalOutcome) {
        if let Ok(value) = serde_json::to_vec(outcome) {
            let _ = self
                .store
                .put(&format!("result:{token}"), &value, RESULT_TTL)
                .await;
        }
    }

    /// Takes the outcome of a resumed eval, if one is waiting.
    pub async fn take_result(&self, token: &str) -> Option<EvalOutcome> {
        let record = self.store.take(&format!("result:{token}")).await.ok()??;
        serde_json::from_slice(&record.value).ok()
    }

    /// Marks `token` as resumed on this node until its result is kept (or `ttl` passes), so
    /// that a retry elsewhere waits for the result instead of saying the eval is gone. The mark
    /// holds a lease renewed every [`RUNNING_RENEW`] while this node runs the eval: when the
    /// node dies, the lease runs out within [`RUNNING_LEASE`], and a retry says so.
    pub async fn mark_running(self: &Arc<Self>, token: &str, ttl: Duration) {
        self.put_running(token, ttl).await;
        let durable = self.clone();
        let key = token.to_string();
        let renew = tokio::spawn(async move {
            loop {
                tokio::time::sleep(RUNNING_RENEW).await;
                durable.put_running(&key, ttl).await;
            }
        });
        if let Some(old) = self.renewing().insert(token.to_string(), renew) {
            old.abort();
        }
    }

    fn renewing(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, tokio::task::JoinHandle<()>>>
    {
        self.renewing.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn put_running(&self, token: &str, ttl: Duration) {
        let until = crate::store::now_ms()
            .saturating_add(u64::try_from(RUNNING_LEASE.as_millis()).unwrap_or(u64::MAX));
        let _ = self
            .store
            .put(&format!("running:{token}"), &until.to_le_bytes(), ttl)
            .await;
    }

    /// Ends [`mark_running`](Self::mark_running).
    pub async fn unmark_running(&self, token: &str) {
        if let Some(renew) = self.renewing().remove(token) {
            renew.abort();
        }
        let _ = self.store.delete(&format!("running:{token}")).await;
    }

    /// Whether `token`'s eval runs on some node after a resume, or ran on a node that stopped.
    pub async fn running(&self, token: &str) -> Running {
        match self.store.get(&format!("running:{token}")).await {
            Ok(Some(record)) => {
                let until = record
                    .value
                    .get(..8)
                    .and_then(|b| <[u8; 8]>::try_from(b).ok())
                    .map_or(0, u64::from_le_bytes);
                if until > crate::store::now_ms() {
                    Running::Yes
                } else {
                    Running::Abandoned
                }
            }
            _ => Running::No,
        }
    }

    /// Whether `token` names a parked eval, a resumed one still running, or a waiting result.
    ///
    /// # Errors
    /// When a record is there but this node cannot open it (sealed under another key, altered)
    /// or the store fails: the record is left as it is, for a node that can.
    pub async fn knows(&self, token: &str) -> Result<bool, StoreError> {
        for key in [
            format!("eval:{token}"),
            format!("result:{token}"),
            format!("running:{token}"),
        ] {
            match self.store.get(&key).await {
                Ok(Some(_)) => return Ok(true),
                Ok(None) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(false)
    }

    /// The description saved with an eval being parked.
    pub fn meta(
        (token, client): (&str, &str),
        tool: &str,
        code: &str,
        caller: &Caller,
        profile: Option<&str>,
        (eval_id, audit_id): (u64, String),
        asks: &[OpenAsk],
        lived: Duration,
    ) -> ParkedMeta {
        ParkedMeta {
            token: token.to_string(),
            client: client.to_string(),
            tool: tool.to_string(),
            code: code.to_string(),
            caller: caller.name.clone(),
            permissions: caller.permissions.iter().cloned().collect(),
            profile: profile.map(str::to_string),
            eval_id,
            audit_id,
            asks: asks.iter().map(SavedAsk::of).collect(),
            lived_ms: u64::try_from(lived.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

impl Decisions for Durable {
    fn take(&self, id: &str) -> BoxFuture<'_, Option<ApprovalAnswer>> {
        let key = format!("decision:{id}");
        Box::pin(async move {
            // Read, not taken: the record stays until its ask's time is up, so that a second
            // answer arriving after the resume is still refused as "already decided".
            let record = self.store.get(&key).await.ok()??;
            let d: DecisionRecord = serde_json::from_slice(&record.value).ok()?;
            let decision = parse_decision(&d.decision).unwrap_or(ApprovalDecision::Decline);
            let mut answer = ApprovalAnswer::new(decision, d.channel).with_reason(d.reason);
            answer.decided_by = d.decided_by;
            Some(answer)
        })
    }
}

impl crate::approvals::broker::ParkedAsks for Durable {
    fn list(&self) -> BoxFuture<'_, Vec<Value>> {
        Box::pin(self.parked_asks())
    }

    fn decided(&self) -> BoxFuture<'_, Vec<Value>> {
        Box::pin(self.decided_asks())
    }

    fn decide<'a>(
        &'a self,
        id: &'a str,
        decider: &'a Caller,
        decision: ApprovalDecision,
        reason: Option<String>,
    ) -> BoxFuture<'a, Result<(), DecideError>> {
        Box::pin(Durable::decide(self, id, decider, decision, reason))
    }
}

/// An `eval:` record: its description and the sandbox's saved bytes.
fn split_record(bytes: &[u8]) -> Result<(ParkedMeta, &[u8]), String> {
    let len = bytes
        .get(..4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or("a parked eval's record is truncated")?;
    let meta = bytes
        .get(4..4 + len)
        .ok_or("a parked eval's record is truncated")?;
    let meta: ParkedMeta = serde_json::from_slice(meta)
        .map_err(|e| format!("a parked eval's description is unreadable: {e}"))?;
    Ok((meta, &bytes[4 + len..]))
}
