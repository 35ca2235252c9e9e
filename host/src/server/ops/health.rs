//! What `/readyz` reads besides the server's parts: the `/mcp` listener's state, the last
//! config reload, the last probe of the durable store; and the token `/metrics` demands.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::Instant;

/// The `/mcp` listener's state, for `/readyz`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Listener {
    /// Not an HTTP server (stdio): no listener check.
    None = 0,
    /// Being bound.
    Binding = 1,
    /// Accepting connections.
    Accepting = 2,
    /// Shutting down: no new connections.
    Draining = 3,
}

/// What `/readyz` reads besides the server's parts.
#[derive(Debug)]
pub(crate) struct Health {
    pub(super) listener: AtomicU8,
    pub(super) reload_failed: AtomicBool,
    pub(super) store_probe: tokio::sync::Mutex<Option<(Instant, bool)>>,
    /// The SHA-256 of the token `/metrics` demands (`server.admin.metricsAuth`), read at start.
    pub(super) metrics_token: Mutex<Option<[u8; 32]>>,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            listener: AtomicU8::new(Listener::None as u8),
            reload_failed: AtomicBool::new(false),
            store_probe: tokio::sync::Mutex::new(None),
            metrics_token: Mutex::new(None),
        }
    }
}

impl Health {
    pub(crate) fn set_listener(&self, listener: Listener) {
        self.listener.store(listener as u8, Ordering::Relaxed);
    }

    /// Whether the last config reload failed (`false` once one succeeds).
    pub(crate) fn set_reload_failed(&self, failed: bool) {
        self.reload_failed.store(failed, Ordering::Relaxed);
    }

    pub(crate) fn set_metrics_token(&self, sha256: Option<[u8; 32]>) {
        *self.metrics_token.lock().unwrap_or_else(|e| e.into_inner()) = sha256;
    }

    pub(super) fn listener_check(&self) -> Option<&'static str> {
        match self.listener.load(Ordering::Relaxed) {
            0 => None,
            1 => Some("binding"),
            2 => Some("ok"),
            _ => Some("draining"),
        }
    }
}
