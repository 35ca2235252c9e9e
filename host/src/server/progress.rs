//! Progress notifications of a long eval, for clients that sent a progress token.

use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::RequestContext;

/// How often a long eval reports progress, when the client asked for it.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// Progress notifications for clients that sent a progress token.
pub(super) struct Progress {
    token: Option<ProgressToken>,
    started: Instant,
}

impl Progress {
    pub(super) fn new(ctx: &RequestContext<RoleServer>) -> Self {
        Progress {
            token: ctx.meta.get_progress_token(),
            started: Instant::now(),
        }
    }

    pub(super) async fn tick(&self) {
        if self.token.is_some() {
            tokio::time::sleep(PROGRESS_EVERY).await;
        } else {
            std::future::pending::<()>().await;
        }
    }

    pub(super) async fn send(&self, ctx: &RequestContext<RoleServer>) {
        if let Some(token) = &self.token {
            let seconds = self.started.elapsed().as_secs_f64().floor();
            let mut param = ProgressNotificationParam::new(token.clone(), seconds);
            param.message = Some(format!("script running for {seconds:.0} s"));
            let _ = ctx.peer.notify_progress(param).await;
        }
    }
}
