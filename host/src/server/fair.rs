//! Fair sharing of one server between its clients (`limits.perClient`): how many evals each
//! client has running and waiting on a human, and the refusal of an eval over a cap, at once,
//! before it takes a pool slot.
//!
//! A client is the authenticated caller, else the legacy MCP session, else the remote address
//! ([`client_key`]).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use codemode_config::PerClientLimits;
use codemode_policies::Caller;
use rmcp::RoleServer;
use rmcp::service::RequestContext;

use crate::approvals::HumanWaits;

/// Who an eval request counts against: `caller:<name>` when the request was authenticated,
/// else `session:<id>` for a legacy MCP session (and stdio), else `address:<ip>` for a stateless
/// 2026-07-28 request (every request is its own session there).
pub(crate) fn client_key(
    ctx: &RequestContext<RoleServer>,
    caller: &Caller,
    modern: bool,
    session_id: &str,
) -> String {
    if caller.name != Caller::local().name {
        return format!("caller:{}", caller.name);
    }
    let address = ctx
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| {
            parts
                .extensions
                .get::<axum::extract::ConnectInfo<SocketAddr>>()
        })
        .map(|info| info.0.ip());
    match address {
        Some(ip) if modern => format!("address:{ip}"),
        _ => format!("session:{session_id}"),
    }
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Counts {
    running: usize,
    suspended: usize,
}

/// An eval refused by a per-client cap: the cap (its config key in snake case, the metrics'
/// `cap` label) and the message for the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal(pub &'static str, pub String);

/// Every client's running and waiting evals (shared by the whole server).
#[derive(Default)]
pub(crate) struct ClientLoad {
    clients: Mutex<HashMap<String, Counts>>,
}

impl ClientLoad {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Counts>> {
        self.clients.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts a new eval of `client`, or refuses it (the message names the cap) when the client
    /// already has `max_concurrent_evals` running or `max_suspended_evals` waiting on a human.
    /// The eval counts until the returned slot is dropped.
    pub(crate) fn try_start(
        self: &Arc<Self>,
        client: String,
        limits: PerClientLimits,
    ) -> Result<Arc<EvalSlot>, Refusal> {
        let mut clients = self.lock();
        let counts = clients.entry(client.clone()).or_default();
        if counts.running >= limits.max_concurrent_evals {
            return Err(Refusal(
                "max_concurrent_evals",
                format!(
                    "eval refused: client `{client}` already has {} evals running (limits.perClient.maxConcurrentEvals = {}); wait for one to finish",
                    counts.running, limits.max_concurrent_evals
                ),
            ));
        }
        if counts.suspended >= limits.max_suspended_evals {
            return Err(Refusal(
                "max_suspended_evals",
                format!(
                    "eval refused: client `{client}` already has {} evals waiting for a human (limits.perClient.maxSuspendedEvals = {}); answer or cancel one first",
                    counts.suspended, limits.max_suspended_evals
                ),
            ));
        }
        counts.running += 1;
        Ok(Arc::new(EvalSlot {
            load: self.clone(),
            client,
            max_suspended: limits.max_suspended_evals,
            waits: Mutex::new(0),
        }))
    }

    /// `(running, waiting on a human)` of `client`.
    #[cfg(test)]
    pub fn counts(&self, client: &str) -> (usize, usize) {
        self.lock()
            .get(client)
            .map_or((0, 0), |c| (c.running, c.suspended))
    }
}

/// One counted eval; also its [`HumanWaits`]: while any of its questions is open it counts as
/// waiting, and a first question beyond the client's `maxSuspendedEvals` is not asked.
pub(crate) struct EvalSlot {
    load: Arc<ClientLoad>,
    client: String,
    max_suspended: usize,
    waits: Mutex<usize>,
}

impl EvalSlot {
    /// The client it counts against.
    pub fn client(&self) -> &str {
        &self.client
    }
}

impl HumanWaits for EvalSlot {
    fn begin(&self) -> Result<(), String> {
        let mut waits = self.waits.lock().unwrap_or_else(|e| e.into_inner());
        if *waits == 0 {
            let mut clients = self.load.lock();
            let counts = clients.entry(self.client.clone()).or_default();
            if counts.suspended >= self.max_suspended {
                return Err(format!(
                    "not asked: client `{}` already has {} evals waiting for a human (limits.perClient.maxSuspendedEvals = {})",
                    self.client, counts.suspended, self.max_suspended
                ));
            }
            counts.suspended += 1;
        }
        *waits += 1;
        Ok(())
    }

    fn end(&self) {
        let mut waits = self.waits.lock().unwrap_or_else(|e| e.into_inner());
        *waits = waits.saturating_sub(1);
        if *waits == 0 {
            let mut clients = self.load.lock();
            if let Some(counts) = clients.get_mut(&self.client) {
                counts.suspended = counts.suspended.saturating_sub(1);
            }
        }
    }
}

impl Drop for EvalSlot {
    fn drop(&mut self) {
        let waiting = *self.waits.get_mut().unwrap_or_else(|e| e.into_inner()) > 0;
        let mut clients = self.load.lock();
        if let Some(counts) = clients.get_mut(&self.client) {
            counts.running = counts.running.saturating_sub(1);
            if waiting {
                counts.suspended = counts.suspended.saturating_sub(1);
            }
            if *counts == Counts::default() {
                clients.remove(&self.client);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(running: usize, suspended: usize) -> PerClientLimits {
        PerClientLimits {
            max_concurrent_evals: running,
            max_suspended_evals: suspended,
            max_parked_evals: 1,
            ..PerClientLimits::default()
        }
    }

    #[test]
    fn a_client_over_its_running_cap_is_refused_and_others_are_not() {
        let load = Arc::new(ClientLoad::default());
        let a1 = load.try_start("a".into(), limits(2, 1)).unwrap();
        let _a2 = load.try_start("a".into(), limits(2, 1)).unwrap();
        let refused = load.try_start("a".into(), limits(2, 1)).err().unwrap();
        assert_eq!(
            refused,
            Refusal(
                "max_concurrent_evals",
                "eval refused: client `a` already has 2 evals running (limits.perClient.maxConcurrentEvals = 2); wait for one to finish".into()
            )
        );
        let _b = load.try_start("b".into(), limits(2, 1)).unwrap();
        assert_eq!((load.counts("a"), load.counts("b")), ((2, 0), (1, 0)));
        drop(a1);
        assert_eq!(load.counts("a"), (1, 0));
        assert!(load.try_start("a".into(), limits(2, 1)).is_ok());
    }

    #[test]
    fn waits_count_once_per_eval_and_the_suspended_cap_refuses_questions_and_new_evals() {
        let load = Arc::new(ClientLoad::default());
        let a1 = load.try_start("a".into(), limits(4, 1)).unwrap();
        let a2 = load.try_start("a".into(), limits(4, 1)).unwrap();
        a1.begin().unwrap();
        a1.begin().unwrap();
        assert_eq!(load.counts("a"), (2, 1));
        assert_eq!(
            a2.begin().unwrap_err(),
            "not asked: client `a` already has 1 evals waiting for a human (limits.perClient.maxSuspendedEvals = 1)"
        );
        let refused = load.try_start("a".into(), limits(4, 1)).err().unwrap();
        assert_eq!(refused.0, "max_suspended_evals");
        assert!(refused.1.contains("limits.perClient.maxSuspendedEvals = 1"));
        a1.end();
        assert_eq!(load.counts("a"), (2, 1));
        a1.end();
        assert_eq!(load.counts("a"), (2, 0));
        a2.begin().unwrap();
        drop(a2);
        assert_eq!(load.counts("a"), (1, 0));
        drop(a1);
        assert_eq!(load.counts("a"), (0, 0));
        assert!(load.lock().is_empty());
    }
}
