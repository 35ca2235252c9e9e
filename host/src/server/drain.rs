//! Graceful shutdown: the evals a server has in flight, so that `SIGTERM` (or Ctrl-C) can stop
//! taking work, let them finish for a grace period, cancel the rest, and only then close the
//! transports — every eval ends with a response (its result, or a `cancelled` error) and its
//! audit record.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use codemode_runtime::CancellationToken;
use tokio::sync::Notify;

/// How long in-flight evals may still run after a shutdown signal before they are cancelled.
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// How long cancelled evals may take to end (write their audit records) before the server
/// closes anyway.
const CANCEL_GRACE: Duration = Duration::from_secs(5);
/// After the last eval answered: time for its response to leave through the transport before
/// the transport closes.
const SETTLE: Duration = Duration::from_millis(100);

/// The evals in flight, and the token that cancels them all.
#[derive(Debug, Default)]
pub(crate) struct Drain {
    running: AtomicUsize,
    idle: Notify,
    cancel_all: CancellationToken,
}

/// Held by one running eval; dropping it marks the eval as ended.
#[derive(Debug)]
pub struct Running {
    drain: Arc<Drain>,
}

impl Drain {
    /// Marks an eval as started: it ends when the guard drops.
    pub fn enter(self: &Arc<Self>) -> Running {
        self.running.fetch_add(1, Ordering::SeqCst);
        Running {
            drain: self.clone(),
        }
    }

    /// The cancellation token of a new eval: cancelled when the server gives up waiting.
    pub(crate) fn eval_token(&self) -> CancellationToken {
        self.cancel_all.child_token()
    }

    /// Evals in flight now.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }

    /// Cancels every eval in flight and every eval started from now on.
    pub(crate) fn cancel_all(&self) {
        self.cancel_all.cancel();
    }

    /// Waits until no eval runs, at most `limit`; `true` when none runs.
    pub(crate) async fn wait_idle(&self, limit: Duration) -> bool {
        let idle = async {
            loop {
                let notified = self.idle.notified();
                if self.running() == 0 {
                    return;
                }
                notified.await;
            }
        };
        tokio::time::timeout(limit, idle).await.is_ok()
    }

    /// The shutdown sequence after new work has stopped coming: lets the evals in flight run
    /// for `grace`, cancels those still running, and waits (boundedly) for them to end.
    /// Returns how many evals were cancelled.
    pub async fn drain(&self, grace: Duration) -> usize {
        let cancelled = self.drain_evals(grace).await;
        tokio::time::sleep(SETTLE).await;
        cancelled
    }

    async fn drain_evals(&self, grace: Duration) -> usize {
        if self.wait_idle(grace).await {
            return 0;
        }
        let cancelled = self.running();
        tracing::info!("shutting down: cancelling {cancelled} eval(s) still running");
        self.cancel_all();
        if !self.wait_idle(CANCEL_GRACE).await {
            tracing::warn!(
                "shutting down: {} eval(s) did not end after cancellation",
                self.running()
            );
        }
        cancelled
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.drain.running.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.drain.idle.notify_waiters();
        }
    }
}

/// Resolves on the first `SIGTERM` or `SIGINT` (Ctrl-C); a second one cancels every eval at
/// once (through `drain`), for an operator who will not wait.
pub(crate) async fn shutdown_signal(drain: Arc<Drain>) {
    use tokio::signal::unix::{SignalKind, signal};
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for kind in [SignalKind::terminate(), SignalKind::interrupt()] {
        match signal(kind) {
            Ok(mut signals) => {
                let tx = tx.clone();
                tokio::spawn(async move {
                    while signals.recv().await.is_some() && tx.send(()).is_ok() {}
                });
            }
            Err(e) => tracing::warn!("cannot listen for signal {kind:?}: {e}"),
        }
    }
    drop(tx);
    if rx.recv().await.is_none() {
        std::future::pending::<()>().await;
    }
    tokio::spawn(async move {
        if rx.recv().await.is_some() {
            tracing::warn!("second signal: cancelling every eval now");
            drain.cancel_all();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn drain_waits_for_running_evals_then_cancels_the_rest() {
        let drain = Arc::new(Drain::default());
        assert!(
            drain.wait_idle(Duration::ZERO).await,
            "idle with nothing running"
        );
        assert_eq!(drain.drain(Duration::ZERO).await, 0);

        // An eval that finishes within the grace period is not cancelled.
        let d = drain.clone();
        let (started_tx, started_rx) = tokio::sync::oneshot::channel();
        let (finish_tx, finish_rx) = tokio::sync::oneshot::channel::<()>();
        let quick = tokio::spawn(async move {
            let _running = d.enter();
            let token = d.eval_token();
            let _ = started_tx.send(());
            let _ = finish_rx.await;
            token.is_cancelled()
        });
        started_rx.await.unwrap();
        assert_eq!(drain.running(), 1);
        let draining = {
            let d = drain.clone();
            tokio::spawn(async move { d.drain(Duration::from_secs(60)).await })
        };
        finish_tx.send(()).unwrap();
        assert!(!quick.await.unwrap(), "not cancelled");
        assert_eq!(draining.await.unwrap(), 0);

        // One that would run forever is cancelled when the grace period is over.
        let d = drain.clone();
        let (started_tx, started_rx) = tokio::sync::oneshot::channel();
        let stuck = tokio::spawn(async move {
            let _running = d.enter();
            let token = d.eval_token();
            let _ = started_tx.send(());
            token.cancelled().await;
        });
        started_rx.await.unwrap();
        assert_eq!(drain.drain(Duration::ZERO).await, 1);
        stuck.await.unwrap();
        assert_eq!(drain.running(), 0);
        // Evals started after the cancellation are cancelled from the start.
        assert!(drain.eval_token().is_cancelled());
    }
}
