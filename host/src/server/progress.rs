//! Progress notifications of a long eval, for clients that sent a progress token: a tick while
//! the script runs, and the upstreams' own progress on its calls ([`super::relay`]).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codemode_policies::neutralize;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};

/// How often a long eval reports progress, when the client asked for it.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// Progress notifications of one eval request, for clients that sent a progress token.
///
/// MCP requires each notification's `progress` to be larger than the last: the value is the
/// eval's running time in seconds, nudged past the last one sent when two come in the same
/// instant (an upstream's own counts go in the message).
pub(super) struct Progress {
    token: Option<ProgressToken>,
    peer: Peer<RoleServer>,
    started: Instant,
    last: Mutex<f64>,
}

impl Progress {
    /// The progress of the request of `ctx`: the one its eval's relay shares (put in the
    /// request's extensions by `call_eval`), else a new one.
    pub(super) fn of(ctx: &RequestContext<RoleServer>) -> Arc<Progress> {
        match ctx.extensions.get::<Arc<Progress>>() {
            Some(progress) => progress.clone(),
            None => Arc::new(Progress::new(ctx)),
        }
    }

    pub(super) fn new(ctx: &RequestContext<RoleServer>) -> Self {
        Progress {
            token: ctx.meta.get_progress_token(),
            peer: ctx.peer.clone(),
            started: Instant::now(),
            last: Mutex::new(0.0),
        }
    }

    pub(super) async fn tick(&self) {
        if self.token.is_some() {
            tokio::time::sleep(PROGRESS_EVERY).await;
        } else {
            std::future::pending::<()>().await;
        }
    }

    /// The running-time report of a tick.
    pub(super) async fn send(&self) {
        let seconds = self.started.elapsed().as_secs_f64().floor();
        self.notify(format!("script running for {seconds:.0} s"))
            .await;
    }

    /// Upstream `server`'s progress on one of the eval's calls, as a message naming the server:
    /// `[everything] 2/5 step two` (its text neutralised).
    pub(super) async fn forward(&self, server: &str, update: ProgressNotificationParam) {
        let count = match update.total {
            Some(total) => format!("{}/{}", update.progress, total),
            None => update.progress.to_string(),
        };
        let message = match update.message.as_deref() {
            Some(text) => format!("[{server}] {count} {}", neutralize(text)),
            None => format!("[{server}] {count}"),
        };
        self.notify(message).await;
    }

    async fn notify(&self, message: String) {
        let Some(token) = &self.token else { return };
        let value = {
            let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
            let elapsed = (self.started.elapsed().as_secs_f64() * 1000.0).floor() / 1000.0;
            *last = elapsed.max(*last + 0.001);
            *last
        };
        let mut param = ProgressNotificationParam::new(token.clone(), value);
        param.message = Some(message);
        // A client that left is told nothing more; its eval ends by its own cancellation.
        let _ = self.peer.notify_progress(param).await;
    }
}
