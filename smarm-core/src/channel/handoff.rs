//! `WaiterCell`: the parking half shared by the single-value handoffs
//! (oneshot, call replies): one waiter, one completer, no lock.
//!
//! # Protocol
//!
//! The waiter opens a wait, stores its epoch here ([`register`]), fences,
//! then re-reads the handoff's state: still pending, it parks. The
//! completer changes the state (publishes a value, or claims the handoff
//! to write one), fences, then reads the epoch here ([`to_wake`]) and
//! wakes that wait.
//!
//! # Invariants
//!
//! - (H1) No lost wake: the waiter's store of its epoch and the
//!   completer's state change are each followed by a SeqCst fence before
//!   the other side's load, so either the waiter sees the state change
//!   (and does not park) or the completer sees the epoch (and wakes it).
//!   The oneshot's loom model checks it on the real cell.
//!
//! [`register`]: WaiterCell::register
//! [`to_wake`]: WaiterCell::to_wake

use crate::loom::{AtomicU32, Ordering, fence};

/// The epoch of the wait a handoff's waiter parked in (see the module
/// docs).
pub(super) struct WaiterCell {
    /// The wait epoch + 1; 0: none registered.
    epoch: AtomicU32,
}

impl WaiterCell {
    pub(super) fn new() -> Self {
        WaiterCell {
            epoch: AtomicU32::new(0),
        }
    }

    /// Forget any registered wait (a reused handoff starts over).
    pub(super) fn clear(&self) {
        self.epoch.store(0, Ordering::Relaxed);
    }

    /// Waiter: note the wait `epoch`; the caller reads the handoff's state
    /// right after (H1).
    #[inline]
    pub(super) fn register(&self, epoch: u32) {
        self.epoch.store(epoch + 1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
    }

    /// Completer, right after its state change: the wait to wake, if the
    /// waiter registered one (H1).
    #[inline]
    pub(super) fn to_wake(&self) -> Option<u32> {
        fence(Ordering::SeqCst);
        match self.epoch.load(Ordering::Relaxed) {
            0 => None,
            e => Some(e - 1),
        }
    }
}
