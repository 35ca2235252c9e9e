//! The eval's wall clock: a deadline that can be paused while a human decides.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// Wall-clock budget of one eval. Time counts unless at least one [`TimeoutPause`] is alive.
#[derive(Debug)]
pub(crate) struct EvalClock {
    state: Mutex<ClockState>,
    /// Woken whenever pausing starts or stops, so the eval loop recomputes its sleep.
    pub(crate) changed: Notify,
}

#[derive(Debug)]
struct ClockState {
    /// `None`: no timeout at all.
    budget: Option<Duration>,
    /// Time consumed before the current running stretch began.
    spent: Duration,
    /// When the current running stretch began; `None` while paused.
    running_since: Option<Instant>,
    pauses: usize,
}

impl EvalClock {
    pub(crate) fn new(budget: Option<Duration>) -> Self {
        Self::with_spent(budget, Duration::ZERO)
    }

    /// A clock of which `spent` was already used (an eval resumed from a saved state).
    pub(crate) fn with_spent(budget: Option<Duration>, spent: Duration) -> Self {
        EvalClock {
            state: Mutex::new(ClockState {
                budget,
                spent,
                running_since: Some(Instant::now()),
                pauses: 0,
            }),
            changed: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ClockState> {
        // A panic while holding this lock cannot leave the state inconsistent (plain fields).
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Time left, `None` without a budget. While paused, the remainder does not shrink.
    pub(crate) fn remaining(&self) -> Option<Duration> {
        let s = self.lock();
        let budget = s.budget?;
        let spent = s.spent + s.running_since.map_or(Duration::ZERO, |t| t.elapsed());
        Some(budget.saturating_sub(spent))
    }

    /// Time counted against the budget so far (pauses excluded).
    pub(crate) fn spent(&self) -> Duration {
        let s = self.lock();
        s.spent + s.running_since.map_or(Duration::ZERO, |t| t.elapsed())
    }

    /// `true` while at least one pause guard is alive.
    pub(crate) fn is_paused(&self) -> bool {
        self.lock().pauses > 0
    }

    pub(crate) fn pause(self: &std::sync::Arc<Self>) -> TimeoutPause {
        {
            let mut s = self.lock();
            if s.pauses == 0
                && let Some(since) = s.running_since.take()
            {
                s.spent += since.elapsed();
            }
            s.pauses += 1;
        }
        self.changed.notify_waiters();
        TimeoutPause {
            clock: self.clone(),
        }
    }

    fn unpause(&self) {
        {
            let mut s = self.lock();
            s.pauses = s.pauses.saturating_sub(1);
            if s.pauses == 0 {
                s.running_since = Some(Instant::now());
            }
        }
        self.changed.notify_waiters();
    }
}

/// While alive, the eval's wall-clock timeout does not count. See
/// [`crate::CallContext::pause_timeout`].
#[derive(Debug)]
#[must_use = "the timeout runs again as soon as the guard is dropped"]
pub struct TimeoutPause {
    clock: std::sync::Arc<EvalClock>,
}

impl Drop for TimeoutPause {
    fn drop(&mut self) {
        self.clock.unpause();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_resumed_clock_starts_with_what_was_spent() {
        let clock = Arc::new(EvalClock::with_spent(
            Some(Duration::from_secs(10)),
            Duration::from_secs(4),
        ));
        let _pause = clock.pause();
        // Paused, the two are frozen: what was spent before, plus the instants since, and the
        // rest of the budget.
        assert!(clock.spent() >= Duration::from_secs(4));
        assert_eq!(
            clock.remaining().unwrap() + clock.spent(),
            Duration::from_secs(10)
        );
    }

    #[test]
    fn no_budget_means_no_remaining() {
        assert_eq!(EvalClock::new(None).remaining(), None);
    }

    #[test]
    fn pause_freezes_the_remainder_and_guards_nest() {
        let clock = Arc::new(EvalClock::new(Some(Duration::from_secs(10))));
        let a = clock.pause();
        let b = clock.pause();
        let frozen = clock.remaining().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(clock.remaining().unwrap(), frozen);
        drop(a);
        assert!(clock.is_paused());
        assert_eq!(clock.remaining().unwrap(), frozen);
        drop(b);
        assert!(!clock.is_paused());
        std::thread::sleep(Duration::from_millis(20));
        assert!(clock.remaining().unwrap() < frozen);
    }
}
