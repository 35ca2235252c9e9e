//! Evals that wait for a human outside the process: saved to the durable store
//! ([`codemode_store`]) after `durable.suspendToStoreAfterSeconds`, or when the server is told to
//! stop, and resumed by whichever node is given the answer.
//!
//! Records (each sealed by the store, each with a time to live):
//! - `owner:<requestState>` — whose the eval is ([`Owner`]: its eval tool and caller), a small
//!   record standing for the eval in the store as long as one of the three below does: written
//!   before `eval:` with its time to live, kept while a resumed eval runs, then as long as its
//!   `result:`. Existence and ownership are looked up here, never by opening the large
//!   `eval:` record;
//! - `eval:<requestState>` — the parked eval: [`ParkedMeta`] (who, which profile, the code,
//!   the open asks) and the sandbox's saved state ([`codemode_runtime::Suspended::save`]);
//!   its time to live is what is left of its asks' approval time;
//! - `ask:<id>` — one open ask of a parked eval (an approval request, or a step of a
//!   `hitl_request` question), for the approval API of any node;
//! - `decision:<id>` — an answer given while the eval was parked (a decision, or a question's
//!   option), taken by the eval's call when it asks again after the resume, and listed by
//!   `GET /approvals?state=decided`;
//! - `running:<requestState>` — a resumed eval running on a node: a lease the node renews,
//!   so that a retry elsewhere waits for the result, or learns that the node died;
//! - `result:<requestState>` — the outcome of a resumed eval nobody was waiting for, fetched by
//!   the client's next retry on any node;
//! - `guest:<sha256>` — the guest module a saved state names, so a node running a newer guest
//!   still resumes it.
//!
//! Taking `eval:<requestState>` is atomic: exactly one node resumes a parked eval.
//!
//! Limits across a park: the time an eval lived in memory is saved with it
//! ([`ParkedMeta::lived_ms`]) and counts against `limits.maxEvalLifetime` when it resumes, while
//! its time in the store is bounded by its approval time; each node counts the evals it parked
//! per client (`limits.perClient.maxParkedEvals`, see [`Durable::watch`]).

mod asks;
mod counts;
pub mod lease;
pub mod parked;

use std::sync::Arc;
use std::time::Duration;

use codemode_policies::{ParkedAsk, SessionApprovals};

use crate::session::GovernedEval;
use codemode_runtime::{GuestHash, ParkRequest, Runtime, Suspended};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approvals::{OpenAsk, Question};
use crate::server::finished::Finished;
use crate::server::owner::Owner;
pub use asks::AnswerRefused;
use counts::ParkedCounts;

use codemode_store::{Store, StoreError};

/// How long a finished result of a resumed eval waits in the store for its client.
const RESULT_TTL: Duration = Duration::from_secs(600);
/// How long a parked eval's records outlive its approval deadline, for the sweep of some node to
/// resume it and time its call out.
const EXPIRY_GRACE: Duration = Duration::from_secs(120);
/// How often each node looks for parked evals whose approval time is up.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// How long a guest module is kept for the states that name it.
const GUEST_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// A resumed eval's outcome in the store (`result:<requestState>`), with whose it is.
#[derive(serde::Serialize, serde::Deserialize)]
struct ResultRecord {
    owner: Owner,
    outcome: Finished,
}

/// What is saved with a parked eval besides its sandbox.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ParkedMeta {
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
    /// The session it ran in, for its audit records (a 2026-07-28 request is a session).
    #[serde(default)]
    pub session_id: Option<String>,
    /// Tools approved "for the rest of the script" so far.
    #[serde(default)]
    pub eval_approvals: SessionApprovals,
    /// Tools approved "for the rest of the session" so far (a 2026-07-28 request's session).
    #[serde(default)]
    pub session_approvals: SessionApprovals,
    /// Milliseconds it spent in memory before this park (earlier runs included), counted against
    /// `limits.maxEvalLifetime` when it resumes (time parked is bounded by the approval timeout).
    #[serde(default)]
    pub lived_ms: u64,
    /// Its trace (traces on where it started): the resumed eval goes on in it.
    #[serde(default)]
    pub trace: Option<crate::traces::SavedTrace>,
    /// The media its calls received: its result may still attach them after the resume.
    #[serde(default)]
    pub media: Vec<codemode_upstream::KeptMedia>,
}

/// One open ask of a parked eval.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SavedAsk {
    /// The approval request's id.
    pub id: String,
    /// What the approval API shows.
    pub view: Value,
    /// The question's text, for a 2026-07-28 client.
    pub message: String,
    /// The question's form.
    pub schema: serde_json::Map<String, Value>,
}

impl ParkedMeta {
    /// Whose the eval is.
    pub fn owner(&self) -> Owner {
        Owner::new(self.tool.clone(), self.caller.clone())
    }
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

    /// A question step's form field (`None` for an approval request).
    fn field(&self) -> Option<String> {
        if self.view.get("kind").and_then(Value::as_str) != Some("question") {
            return None;
        }
        let (_, question) = self.question();
        crate::approvals::terminal::choices(&question).map(|(field, _)| field)
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

/// `ask:<id>`: an open ask of a parked eval (an approval request, or a `hitl_request`
/// question step: its view's `kind` says which).
#[derive(Serialize, Deserialize)]
struct AskRecord {
    token: String,
    view: Value,
    /// A question step's form field, which a client's answer fills in (`answer`, `confirm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    field: Option<String>,
    /// When the eval's first ask runs out of time, in ms since the Unix epoch: the sweep then
    /// resumes the eval so that the call ends as timed out, seen by the script and audited.
    #[serde(default)]
    deadline_ms: u64,
    /// When this ask's own time ends, in ms since the Unix epoch (0: not known, a record of an
    /// earlier version): past it, an answer is refused as the live broker refuses it (expired),
    /// rather than accepted for a call that times out.
    #[serde(default)]
    expires_ms: u64,
}

/// A parked eval taken from the store to be resumed.
pub(crate) struct Claimed {
    /// Who, which profile, the code, the asks.
    pub meta: ParkedMeta,
    /// The sandbox's state.
    pub suspended: Suspended,
}

/// This node's lease on a resumed eval it runs (see [`lease`]): the task renewing it, and how
/// long the eval may run (the time to live of its records while it runs).
struct Lease {
    renew: tokio::task::JoinHandle<()>,
    ttl: Duration,
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
    /// The byte caps of parked state, from the config in force.
    byte_caps: std::sync::Mutex<counts::ByteCaps>,
    /// The leases of the resumed evals this node runs, renewed until they end.
    renewing: std::sync::Mutex<std::collections::HashMap<String, Lease>>,
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
            byte_caps: std::sync::Mutex::new(counts::ByteCaps {
                per_client: codemode_config::DEFAULT_MAX_PARKED_BYTES_PER_CLIENT,
                per_node: codemode_config::DEFAULT_MAX_PARKED_BYTES,
            }),
            renewing: std::sync::Mutex::default(),
        }
    }

    /// The store evals are parked in (`/readyz` probes it).
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// Keeps this runtime's guest in the store, for the states it saves.
    pub(crate) async fn keep_guest(&self, runtime: &Runtime) -> Result<(), StoreError> {
        let key = format!("guest:{}", runtime.guest_hash());
        self.store
            .put_if_absent(&key, &runtime.guest_wasm(), GUEST_TTL)
            .await
            .map(|_| ())
    }

    /// Sets who resumes an eval on this node when an answer for it arrives here.
    pub(crate) fn set_resumer(&self, resume: Arc<dyn Fn(String) + Send + Sync>) {
        let _ = self.resumer.set(resume);
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
                // The eval goes on in memory here, reading no decision from the store: its
                // asks must not stay listed for another node to decide.
                for ask in &meta.asks {
                    let _ = self.store.delete(&format!("ask:{}", ask.id)).await;
                }
                // Unless it was resumed here (its lease and owner record stand for it, and its
                // result will be kept), the store must not claim to know it. If it was, its
                // owner record, which the save may have shortened to the parked time, lasts
                // as long as the run again.
                match self.running_ttl(&meta.token) {
                    Some(ttl) => {
                        let _ = self.put_owner(&meta.token, &meta.owner(), ttl).await;
                    }
                    None => {
                        let _ = self.store.delete(&format!("owner:{}", meta.token)).await;
                    }
                }
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
        let parked: Vec<ParkedAsk> = suspended
            .pending()
            .iter()
            .filter_map(|p| serde_json::from_value::<ParkedAsk>(p.note.clone()?).ok())
            .collect();
        let deadline_ms = parked
            .iter()
            .map(|ask| ask.deadline_ms)
            .min()
            .unwrap_or_else(|| codemode_store::now_ms().saturating_add(60_000));
        // The records outlive the deadline by a grace period: the sweep resumes the eval at
        // its deadline, and the time-out reaches the script (see `sweep_expired`).
        let ttl = Duration::from_millis(deadline_ms.saturating_sub(codemode_store::now_ms()))
            + EXPIRY_GRACE;
        let meta_json = serde_json::to_vec(meta).map_err(|e| {
            StoreError::new(
                codemode_store::StoreErrorKind::InvalidArgument,
                format!("the parked eval's description: {e}"),
            )
        })?;
        let mut record = Vec::with_capacity(4 + meta_json.len() + 64 * 1024);
        record.extend_from_slice(&(meta_json.len() as u32).to_le_bytes());
        record.extend_from_slice(&meta_json);
        record.extend_from_slice(&suspended.save());
        self.admit_bytes(meta, record.len() as u64)?;
        // The asks first: an eval is never listed nowhere. Then its owner, which tells a retry
        // that the store knows the eval (`knows`, `owner`): the asks it answers are there. The
        // eval last: it is never in the store unowned.
        for ask in &meta.asks {
            let value = serde_json::to_vec(&AskRecord {
                token: meta.token.clone(),
                view: ask.view.clone(),
                field: ask.field(),
                deadline_ms,
                expires_ms: parked
                    .iter()
                    .find(|p| p.approval == ask.id)
                    .map_or(0, |p| p.deadline_ms),
            })
            .unwrap_or_default();
            self.store
                .put(&format!("ask:{}", ask.id), &value, ttl)
                .await?;
        }
        self.put_owner(&meta.token, &meta.owner(), ttl).await?;
        self.store
            .put(&format!("eval:{}", meta.token), &record, ttl)
            .await?;
        Ok(deadline_ms)
    }

    /// Whose `token`'s eval is, while the store holds it parked, running after a resume, or
    /// finished with its result kept (`owner:<token>`, see the module docs): a small sealed
    /// record, so that a retry is checked ([`Owner::admits`]) before the eval is answered or
    /// claimed, without opening the saved eval. `None`: the store does not know the token.
    ///
    /// # Errors
    /// When the record is there but this node cannot open it (sealed under another key,
    /// altered; it is left as it is, for a node that can) or the store fails.
    pub async fn owner(&self, token: &str) -> Result<Option<Owner>, StoreError> {
        let Some(record) = self.store.get(&format!("owner:{token}")).await? else {
            return Ok(None);
        };
        serde_json::from_slice(&record.value)
            .map(Some)
            .map_err(|e| {
                StoreError::new(
                    codemode_store::StoreErrorKind::Unreadable,
                    format!("the owner record of an eval in the store is unreadable: {e}"),
                )
            })
    }

    /// Whether `token` names a parked eval, a resumed one still running, or a waiting result
    /// (its `owner:` record: see [`Durable::owner`]).
    ///
    /// # Errors
    /// As [`Durable::owner`].
    pub async fn knows(&self, token: &str) -> Result<bool, StoreError> {
        self.owner(token).await.map(|owner| owner.is_some())
    }

    /// Writes `token`'s `owner:` record for `ttl`.
    async fn put_owner(&self, token: &str, owner: &Owner, ttl: Duration) -> Result<(), StoreError> {
        let value = serde_json::to_vec(owner).map_err(|e| {
            StoreError::new(
                codemode_store::StoreErrorKind::InvalidArgument,
                format!("an eval's owner: {e}"),
            )
        })?;
        self.store.put(&format!("owner:{token}"), &value, ttl).await
    }

    /// Takes the parked eval of `token`, if it is still in the store: exactly one caller gets
    /// it, and marks it running (for `running_for` at most) at once, so that a retry that lost
    /// the race waits for its result. Its asks leave the approval listing.
    ///
    /// # Errors
    /// When the store fails or the record cannot be read.
    pub async fn claim(
        self: &Arc<Self>,
        runtime: &Runtime,
        token: &str,
        running_for: Duration,
    ) -> Result<Option<Claimed>, String> {
        let Some(record) = self
            .store
            .take(&format!("eval:{token}"))
            .await
            .map_err(|e| e.to_string())?
        else {
            return Ok(None);
        };
        self.mark_running(token, running_for).await;
        let claimed = self.open_claimed(runtime, token, &record.value).await;
        match &claimed {
            // Its owner record stands for it while it runs (its parked time to live may be
            // shorter than the run): a retry elsewhere is checked and waits for the result.
            Ok(claimed) => {
                let _ = self
                    .put_owner(token, &claimed.meta.owner(), running_for)
                    .await;
            }
            // Taken and unusable: the store no longer knows the eval.
            Err(_) => {
                self.unmark_running(token).await;
                let _ = self.store.delete(&format!("owner:{token}")).await;
            }
        }
        claimed.map(Some)
    }

    /// The eval in a taken `eval:` record, with its guest added to `runtime`.
    async fn open_claimed(
        &self,
        runtime: &Runtime,
        token: &str,
        record: &[u8],
    ) -> Result<Claimed, String> {
        let (meta, state) = split_record(record)?;
        let suspended =
            Suspended::load(state).map_err(|e| format!("a parked eval's state: {e}"))?;
        self.parked.release(token);
        for ask in &meta.asks {
            let _ = self.store.delete(&format!("ask:{}", ask.id)).await;
        }
        self.ensure_guest(runtime, suspended.guest_hash()).await?;
        Ok(Claimed { meta, suspended })
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

    /// Whether `token`'s eval is parked in the store now: whether its `eval:` record exists,
    /// looked up without reading it ([`Store::exists`]; a legacy request polls this while its
    /// eval is parked). Whether the record opens is learnt when it is claimed.
    ///
    /// # Errors
    /// When the store fails.
    pub async fn is_parked(&self, token: &str) -> Result<bool, StoreError> {
        self.store.exists(&format!("eval:{token}")).await
    }

    /// Starts resuming `token` on this node (an answer for it arrived here).
    pub(crate) fn resume_here(&self, token: &str) {
        if let Some(resume) = self.resumer.get() {
            resume(token.to_string());
        }
    }

    /// Resumes, on this node, every parked eval whose approval time is up: its call then ends
    /// as timed out (a timeout never approves), which the script sees and the audit records.
    /// Nodes sweeping at once race for each eval; exactly one takes it.
    pub(crate) async fn sweep_expired(&self) {
        let Ok(listing) = self.store.list("ask:").await else {
            return;
        };
        let now = codemode_store::now_ms();
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

    /// Keeps the outcome of a resumed eval for its client's next retry, on any node; only its
    /// `owner` gets it. Its `owner:` record lives as long.
    pub(crate) async fn put_result(&self, token: &str, owner: &Owner, outcome: &Finished) {
        let record = ResultRecord {
            owner: owner.clone(),
            outcome: outcome.clone(),
        };
        if let Ok(value) = serde_json::to_vec(&record) {
            let _ = self
                .store
                .put(&format!("result:{token}"), &value, RESULT_TTL)
                .await;
        }
        let _ = self.put_owner(token, owner, RESULT_TTL).await;
    }

    /// The outcome of a resumed eval for a request through `tool` by `caller`, if one is kept
    /// and the eval is theirs ([`Owner::admits`]): read, not taken, so that every retry with
    /// its `requestState` gets it (a client whose answer was lost retries) until the record
    /// expires. Anyone else's request gets `None`.
    ///
    /// # Errors
    /// When the store cannot be read, in words.
    pub async fn result(
        &self,
        token: &str,
        (tool, caller): (&str, &str),
    ) -> Result<Option<Finished>, String> {
        let record = self
            .store
            .get(&format!("result:{token}"))
            .await
            .map_err(|e| e.to_string())?;
        Ok(record
            .and_then(|r| serde_json::from_slice::<ResultRecord>(&r.value).ok())
            .filter(|r| r.owner.admits(tool, caller).is_ok())
            .map(|r| r.outcome))
    }

    /// Drops the kept outcome of `token`'s eval, and with it the eval's last trace in the
    /// store: for a legacy request that got it, the only one that could ask for it (a legacy
    /// eval has no `requestState` to retry with).
    pub(crate) async fn forget_result(&self, token: &str) {
        let _ = self.store.delete(&format!("result:{token}")).await;
        let _ = self.store.delete(&format!("owner:{token}")).await;
    }

    /// The description saved with `eval`, of `code` called through `tool`, being parked with
    /// `asks` open: `(requestState, client)` name it and whom it counts against.
    pub fn meta(
        (token, client): (&str, &str),
        tool: &str,
        code: &str,
        eval: &GovernedEval,
        asks: &[OpenAsk],
    ) -> ParkedMeta {
        let caller = eval.caller();
        let (session_id, session_approvals) = match eval.session() {
            Some((id, approvals)) => (Some(id.to_string()), approvals.clone()),
            None => (None, SessionApprovals::new()),
        };
        ParkedMeta {
            token: token.to_string(),
            client: client.to_string(),
            tool: tool.to_string(),
            code: code.to_string(),
            caller: caller.name.clone(),
            permissions: caller.permissions.iter().cloned().collect(),
            profile: eval.profile().map(|p| p.name().to_string()),
            eval_id: eval.id().0,
            audit_id: eval.audit_id(),
            asks: asks.iter().map(SavedAsk::of).collect(),
            session_id,
            eval_approvals: eval.eval_approvals().clone(),
            session_approvals,
            lived_ms: u64::try_from(eval.lived().as_millis()).unwrap_or(u64::MAX),
            trace: eval.trace().map(crate::traces::EvalTrace::saved),
            media: eval.media().saved(),
        }
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

#[cfg(test)]
mod tests;
