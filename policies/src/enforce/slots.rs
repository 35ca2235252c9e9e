//! The pending-approval cap (`maxPendingApprovals`): at most so many questions of an eval wait
//! for a human at once; the others wait for a slot, first come first served, each up to its
//! own approval timeout.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The slots of one eval's questions to humans. The cap is the `max` of the first wait (one
/// profile governs an eval, so every wait passes the same).
#[derive(Debug, Default)]
pub struct PendingSlots {
    slots: OnceLock<Arc<Semaphore>>,
}

/// One of the slots, taken; freed on drop.
#[derive(Debug)]
pub struct PendingSlot {
    _permit: OwnedSemaphorePermit,
}

impl PendingSlots {
    /// No slot taken yet.
    pub fn new() -> Self {
        PendingSlots::default()
    }

    /// A slot, once one of the `max` is free and the questions that waited before this one
    /// have theirs; `None` when none came within `timeout`.
    pub async fn wait(&self, max: usize, timeout: Duration) -> Option<PendingSlot> {
        let slots = self
            .slots
            .get_or_init(|| Arc::new(Semaphore::new(max.min(Semaphore::MAX_PERMITS))))
            .clone();
        match tokio::time::timeout(timeout, slots.acquire_owned()).await {
            Ok(Ok(permit)) => Some(PendingSlot { _permit: permit }),
            // The semaphore is never closed; a timeout is the only way out.
            Ok(Err(_)) | Err(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_wait_beyond_the_cap_gets_the_first_freed_slot_in_arrival_order() {
        let slots = PendingSlots::new();
        let first = slots.wait(1, Duration::from_secs(1)).await.unwrap();
        let second = slots.wait(1, Duration::from_secs(5));
        let third = slots.wait(1, Duration::from_secs(5));
        tokio::pin!(second, third);
        // Both are queued (polled once, in order) before the slot is freed.
        assert!(futures::poll!(second.as_mut()).is_pending());
        assert!(futures::poll!(third.as_mut()).is_pending());
        drop(first);
        let second = second.await.unwrap();
        assert!(
            futures::poll!(third.as_mut()).is_pending(),
            "second holds it"
        );
        drop(second);
        assert!(third.await.is_some());
    }

    #[tokio::test]
    async fn a_wait_with_no_slot_freed_in_time_gets_none() {
        let slots = PendingSlots::new();
        let held = slots.wait(1, Duration::from_secs(1)).await.unwrap();
        assert!(slots.wait(1, Duration::from_millis(200)).await.is_none());
        // The timed-out wait left no claim behind: the cap is still one.
        drop(held);
        assert!(slots.wait(1, Duration::ZERO).await.is_some());
    }
}
