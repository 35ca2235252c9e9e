//! How many evals each client has parked from this node (`limits.perClient.maxParkedEvals`).
//!
//! A parked eval holds no pool slot and no longer counts against `maxSuspendedEvals`, so
//! without a bound one client could fill the store with evals waiting for a human. Each node
//! counts the evals it parked per client until they are resumed (here, or seen gone from the
//! store when the count is at the cap: another node resumed them) or their approval time is up.
//! The count is per node: a client reaching several nodes may park up to the cap on each.
//!
//! The bytes of the parked evals are capped too, per client (`limits.perClient.maxParkedBytes`)
//! and for the node (`durable.maxParkedBytes`): an eval whose record would pass either is not
//! saved — it goes on in memory, as when the store refuses it, and the log names the cap.

use std::sync::Arc;
use std::time::Duration;

use codemode_runtime::ParkRequest;
use codemode_store::{StoreError, StoreErrorKind};

use super::counts::ByteCaps;
use super::{Durable, ParkedMeta};

/// How often an eval kept in memory by `maxParkedEvals` tries again to park.
pub(crate) const PARK_RETRY: Duration = Duration::from_secs(2);

/// Who may park an eval after its wait: the eval's client and `requestState`, and the client's
/// `limits.perClient.maxParkedEvals`.
pub(crate) struct ParkGate {
    /// The client ([`crate::server::fair::client_key`]).
    pub client: String,
    /// The eval's `requestState`.
    pub token: String,
    /// How many evals the client may have parked from this node.
    pub cap: usize,
}

impl Durable {
    /// A park request for one eval: made by [`Durable::watch`] or when the server stops.
    pub(crate) fn park_request(&self) -> ParkRequest {
        self.root.child()
    }

    /// Parks every eval waiting for a human (the server is stopping).
    pub(crate) fn park_all(&self) {
        self.root.request();
    }

    /// Sets the byte caps of parked state (from the config in force): `per_client`
    /// (`limits.perClient.maxParkedBytes`) and `per_node` (`durable.maxParkedBytes`).
    pub(crate) fn cap_parked_bytes(&self, per_client: u64, per_node: u64) {
        *self.byte_caps.lock().unwrap_or_else(|e| e.into_inner()) = ByteCaps {
            per_client,
            per_node,
        };
    }

    /// Counts the `bytes` of `meta`'s eval's record as parked, unless that passes a byte cap:
    /// then the error names the cap and the bytes (and the eval is not saved).
    pub(super) fn admit_bytes(&self, meta: &ParkedMeta, bytes: u64) -> Result<(), StoreError> {
        let caps = *self.byte_caps.lock().unwrap_or_else(|e| e.into_inner());
        let now = codemode_store::now_ms();
        self.parked
            .admit_bytes((&meta.client, &meta.token), bytes, caps, now)
            .map_err(|why| StoreError::new(StoreErrorKind::InvalidArgument, why))?;
        tracing::info!(
            "eval {} parks {bytes} bytes for client `{}`; this node holds {} bytes parked",
            meta.eval_id,
            meta.client,
            self.parked.bytes()
        );
        Ok(())
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
        let now = codemode_store::now_ms();
        if self
            .parked
            .reserve(&gate.client, &gate.token, gate.cap, now)
            .is_ok()
        {
            return Ok(());
        }
        for token in self.parked.saved_tokens_of(&gate.client) {
            if token != gate.token
                && matches!(self.store.exists(&format!("eval:{token}")).await, Ok(false))
            {
                self.parked.release(&token);
            }
        }
        self.parked
            .reserve(&gate.client, &gate.token, gate.cap, now)
    }

    /// How many evals this node parked that still wait (those whose approval time is up no
    /// longer count).
    pub(crate) fn parked_count(&self) -> usize {
        self.parked.waiting(codemode_store::now_ms())
    }

    /// `token`'s eval does not (or no longer) count as parked from this node: it finished, was
    /// resumed, or could not be saved.
    pub(crate) fn not_parked(&self, token: &str) {
        self.parked.release(token);
    }
}
