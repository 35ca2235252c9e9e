//! Which evals have a call in flight on which upstream server, so that an upstream's own
//! `elicitation/create` reaches the human of the eval whose call triggered it.
//!
//! MCP gives no link from an upstream's request to the call that caused it: the request can be
//! routed only when exactly one eval has a call in flight on that server. An eval is known by
//! its asker (one per eval). The registry is process-wide, since the upstream pool that receives
//! the request is; with several servers in one process it is conservative (more declines), never
//! wrong.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use crate::approvals::Asker;

/// The registry (see the module docs).
#[derive(Default)]
pub struct InFlightCalls {
    calls: Mutex<Calls>,
}

/// server → (asker address, asker, calls in flight).
type Calls = HashMap<String, Vec<(usize, Weak<dyn Asker>, usize)>>;

/// The process's registry.
pub fn in_flight() -> &'static InFlightCalls {
    static REGISTRY: OnceLock<InFlightCalls> = OnceLock::new();
    REGISTRY.get_or_init(InFlightCalls::default)
}

fn address(asker: &Arc<dyn Asker>) -> usize {
    Arc::as_ptr(asker).cast::<()>() as usize
}

impl InFlightCalls {
    fn lock(&self) -> std::sync::MutexGuard<'_, Calls> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a call of the eval asking through `asker` on `server`, until the guard drops.
    pub fn enter(&'static self, server: &str, asker: &Arc<dyn Asker>) -> InFlightGuard {
        let key = address(asker);
        let mut calls = self.lock();
        let list = calls.entry(server.to_string()).or_default();
        match list.iter_mut().find(|(k, _, _)| *k == key) {
            Some(entry) => entry.2 += 1,
            None => list.push((key, Arc::downgrade(asker), 1)),
        }
        InFlightGuard {
            registry: self,
            server: server.to_string(),
            key,
        }
    }

    /// The asker of the one eval with calls in flight on `server`; `None` when none or several
    /// have.
    pub fn sole_asker(&self, server: &str) -> Option<Arc<dyn Asker>> {
        let calls = self.lock();
        match calls.get(server).map(Vec::as_slice) {
            Some([(_, asker, _)]) => asker.upgrade(),
            _ => None,
        }
    }
}

/// See [`InFlightCalls::enter`].
pub struct InFlightGuard {
    registry: &'static InFlightCalls,
    server: String,
    key: usize,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        let mut calls = self.registry.lock();
        if let Some(list) = calls.get_mut(&self.server) {
            if let Some(entry) = list.iter_mut().find(|(k, _, _)| *k == self.key) {
                entry.2 -= 1;
            }
            list.retain(|(_, _, n)| *n > 0);
            if list.is_empty() {
                calls.remove(&self.server);
            }
        }
    }
}
