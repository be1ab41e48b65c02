//! `WakeCell`: the one word through which a future's waker and the actor
//! polling it meet (the handshake of the module docs, (F1)-(F3)).

use crate::loom::{AtomicU64, Ordering};

/// A wake arrived since the actor last began a poll.
const NOTIFIED: u64 = 1 << 63;
/// The actor is parked, or about to park, on the wait in the low bits.
const ARMED: u64 = 1 << 62;
/// The wait's epoch (slot word epochs are narrower than this).
const EPOCH: u64 = u32::MAX as u64;

/// What [`WakeCell::arm`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "the actor must park on the wait or poll again"]
pub(crate) enum Armed {
    /// No wake came during the poll: park on the wait; a wake from now on
    /// is delivered to it.
    Park,
    /// A wake came during the poll: retire the wait and poll again.
    Repoll,
}

/// The handshake word: `NOTIFIED | ARMED | epoch`.
pub(crate) struct WakeCell {
    state: AtomicU64,
}

impl WakeCell {
    pub(crate) fn new() -> WakeCell {
        WakeCell {
            state: AtomicU64::new(0),
        }
    }

    /// The actor is about to poll: consume any notification and disarm.
    /// Acquire, so the poll sees what every waker wrote before its wake
    /// (F2).
    #[inline]
    pub(crate) fn begin_poll(&self) {
        self.state.swap(0, Ordering::Acquire);
    }

    /// The poll returned `Pending` and the actor opened wait `epoch`:
    /// park on it, unless a wake came during the poll (F1). Release, so a
    /// waker that finds the cell armed also finds the actor's pid
    /// (written before the first poll) current.
    #[inline]
    pub(crate) fn arm(&self, epoch: u32) -> Armed {
        match self.state.compare_exchange(
            0,
            ARMED | u64::from(epoch),
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => Armed::Park,
            Err(_) => Armed::Repoll, // NOTIFIED: only the actor sets ARMED
        }
    }

    /// A waker's wake: note it, and return the epoch to deliver it to if
    /// the actor is armed and no earlier wake already was delivered or
    /// noted (F3). Release, pairing with `begin_poll`'s Acquire (F2).
    #[inline]
    pub(crate) fn notify(&self) -> Option<u32> {
        let old = self.state.fetch_or(NOTIFIED, Ordering::AcqRel);
        (old & (NOTIFIED | ARMED) == ARMED).then_some((old & EPOCH) as u32)
    }

    /// The wait is over for good (the future finished, the actor unwound):
    /// no later wake is delivered anywhere (F4).
    #[inline]
    pub(crate) fn disarm(&self) {
        self.state.swap(0, Ordering::AcqRel);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_wake_during_the_poll_makes_the_actor_poll_again() {
        let cell = WakeCell::new();
        cell.begin_poll();
        assert_eq!(cell.notify(), None, "not armed: nothing to deliver to");
        assert_eq!(cell.arm(7), Armed::Repoll);
        cell.begin_poll();
        assert_eq!(cell.arm(8), Armed::Park);
    }

    #[test]
    fn the_first_wake_after_arming_is_delivered_once() {
        let cell = WakeCell::new();
        cell.begin_poll();
        assert_eq!(cell.arm(u32::MAX >> 4), Armed::Park);
        assert_eq!(cell.notify(), Some(u32::MAX >> 4));
        assert_eq!(cell.notify(), None, "repeated wakes deliver nothing more");
        cell.begin_poll();
        assert_eq!(cell.arm(3), Armed::Park);
        assert_eq!(cell.notify(), Some(3));
    }

    #[test]
    fn a_disarmed_cell_delivers_nothing() {
        let cell = WakeCell::new();
        cell.begin_poll();
        assert_eq!(cell.arm(5), Armed::Park);
        cell.disarm();
        assert_eq!(cell.notify(), None);
    }
}
