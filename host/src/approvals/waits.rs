//! Counting an eval's waits on a human: [`WaitingAsker`] wraps an eval's channels and tells a [`HumanWaits`] when a wait begins and ends, so that a server can cap how
//! many evals of one client sit in the pool waiting for an answer (`limits.perClient`).

use std::sync::Arc;

use codemode_policies::Channel;
use codemode_runtime::BoxFuture;

use super::{Answer, Ask, Asker, Reply};

/// Told when one eval starts and stops waiting on a human. Waits of one eval may overlap.
pub trait HumanWaits: Send + Sync {
    /// A wait is about to begin. `Err(message)`: it may not (a cap is reached): the question is
    /// not asked, and `message` says why.
    fn begin(&self) -> Result<(), String>;
    /// A wait that [`begin`](Self::begin) allowed has ended (answered, timed out or dropped).
    fn end(&self);
}

/// Ends the wait however the asking future ends.
struct Waiting<'a>(&'a dyn HumanWaits);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// An [`Asker`] whose asks count as waits of `waits`. An ask refused by [`HumanWaits::begin`]
/// fails through [`Channel::Policy`] with its message (an approval is declined with it as the
/// reason).
pub struct WaitingAsker {
    inner: Arc<dyn Asker>,
    waits: Arc<dyn HumanWaits>,
}

impl WaitingAsker {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Asker>, waits: Arc<dyn HumanWaits>) -> Self {
        WaitingAsker { inner, waits }
    }
}

impl Asker for WaitingAsker {
    fn supports(&self) -> bool {
        self.inner.supports()
    }

    fn channel(&self) -> Channel {
        self.inner.channel()
    }

    fn approvers_elsewhere(&self) -> bool {
        self.inner.approvers_elsewhere()
    }

    fn ask(&self, ask: Ask) -> BoxFuture<'_, Reply> {
        Box::pin(async move {
            if let Err(message) = self.waits.begin() {
                return Reply::new(Answer::Failed(message), Channel::Policy);
            }
            let _waiting = Waiting(self.waits.as_ref());
            self.inner.ask(ask).await
        })
    }

    // Not a wait: an answer given already.
    fn taken_while_parked<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, Option<Reply>> {
        self.inner.taken_while_parked(ask)
    }
}
