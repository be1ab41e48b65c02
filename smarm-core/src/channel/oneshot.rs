//! One-shot channels: one value, from one sender to the actor that made
//! the channel. What a call's reply slot needs, without a queue or a lock.
//!
//! # Protocol
//!
//! `state` goes `EMPTY` → `FULL` (sent) or `CLOSED` (sender dropped), and
//! any of them → `GONE` (receiver dropped; a value still in the slot is
//! dropped with it). Parking is the handoff protocol (`handoff.rs`): the
//! receiver registers its wait epoch in `waiter` and re-reads `state`:
//! still `EMPTY`, it parks; the sender publishes `FULL` or `CLOSED`, then
//! reads `waiter` to wake that wait.
//!
//! # Invariants
//!
//! - (O1) The value is written only before `state` leaves `EMPTY` (by the
//!   sender, Release) and read only after the receiver saw `FULL`
//!   (Acquire); after `GONE` only the side that set it touches the slot.
//! - (O2) No lost wake (handoff (H1)): either the receiver sees the value
//!   (and does not park) or the sender sees the wait (and wakes it). The
//!   loom model below checks it.
//! - (O3) Only the actor that made the channel receives on it (checked):
//!   the waiter is one epoch of one known actor.

use super::handoff::WaiterCell;
use crate::loom::{AtomicU32, Ordering};
use crate::scheduler::Section;
use crate::scheduler::WaitingOn;
use crate::scheduler::{self, BoundedWaiter, Deadline, Registered, Wait};
use crate::slot::{Pid, WaitId};
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::Arc;
use std::time::Duration;

const EMPTY: u32 = 0;
const FULL: u32 = 1;
const CLOSED: u32 = 2;
const GONE: u32 = 3;

struct Shot<T> {
    state: AtomicU32,
    /// The receiver's current wait (handoff (H1)).
    waiter: WaiterCell,
    /// The receiving actor (O3).
    owner: Pid,
    /// Its runtime, to wake it from any thread (`None` only in models).
    runtime: Option<Arc<crate::scheduler::Shared>>,
    value: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: the value crosses from the sending to the receiving thread under
// the state protocol (O1); everything else is atomic or locked.
unsafe impl<T: Send> Send for Shot<T> {}
// SAFETY: as above: the two sides never touch the value at once (O1).
unsafe impl<T: Send> Sync for Shot<T> {}

impl<T> Drop for Shot<T> {
    fn drop(&mut self) {
        if self.state.load(Ordering::Acquire) == FULL {
            // SAFETY: FULL means written and not taken (O1); we are the
            // last owner.
            unsafe { self.value.get_mut().assume_init_drop() };
        }
    }
}

/// The sending half: [`send`](OneshotSender::send) once; dropping it
/// unsent wakes the receiver with [`OneshotError::Closed`].
pub struct OneshotSender<T> {
    slot: Option<Arc<Shot<T>>>,
}

/// The receiving half, for the actor that made the channel.
pub struct OneshotReceiver<T> {
    slot: Arc<Shot<T>>,
}

/// Why [`OneshotReceiver::recv_timeout`] returned no value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum OneshotError {
    /// The deadline passed first.
    #[error("smarm: no value within the timeout")]
    Timeout,
    /// The sender was dropped without sending.
    #[error("smarm: the sender was dropped without sending")]
    Closed,
}

/// A one-shot channel whose receiver is the calling actor.
///
/// ```
/// use std::time::Duration;
///
/// smarm::run(|| {
///     let (tx, rx) = smarm::channel::oneshot::<u32>();
///     smarm::spawn(move || {
///         tx.send(7).unwrap();
///     });
///     assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(7));
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn oneshot<T: Send>() -> (OneshotSender<T>, OneshotReceiver<T>) {
    let (owner, runtime) =
        scheduler::with_current_actor("oneshot", |me, shared| (me, shared.to_arc()));
    let slot = Arc::new(Shot {
        state: AtomicU32::new(EMPTY),
        waiter: WaiterCell::new(),
        owner,
        runtime: Some(runtime),
        value: UnsafeCell::new(MaybeUninit::uninit()),
    });
    (
        OneshotSender {
            slot: Some(slot.clone()),
        },
        OneshotReceiver { slot },
    )
}

impl<T> Shot<T> {
    /// Sender: publish `to` (FULL or CLOSED); the receiver's epoch to wake,
    /// if it has one (O2). `Err` if the receiver is gone.
    fn complete(&self, to: u32) -> Result<Option<u32>, ()> {
        if self
            .state
            .compare_exchange(EMPTY, to, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            return Err(()); // GONE: the only other way out of EMPTY
        }
        Ok(self.waiter.to_wake())
    }

    /// Receiver: note the wait `epoch`, then read the state (O2).
    fn register(&self, epoch: u32) -> u32 {
        self.waiter.register(epoch);
        self.state.load(Ordering::Acquire)
    }

    /// Receiver: take the value of a FULL slot.
    fn take(&self) -> T {
        // SAFETY: the state is FULL (the caller saw it with Acquire), so the
        // value is written and nobody else reads it (O1).
        let value = unsafe { (*self.value.get()).assume_init_read() };
        self.state.store(GONE, Ordering::Relaxed); // taken: not dropped again
        value
    }
}

impl<T: Send> OneshotSender<T> {
    /// Send the value. `Err(value)` if the receiver is gone.
    pub fn send(mut self, value: T) -> Result<(), T> {
        let Some(slot) = self.slot.take() else {
            return Err(value);
        };
        // Completing and waking must not be cut in two by an overflow.
        let _section = Section::enter();
        // SAFETY: the state is still EMPTY (only this sender leaves it, and
        // the receiver only reads after FULL), so nobody reads the slot
        // while we write it (O1).
        unsafe { (*slot.value.get()).write(value) };
        match slot.complete(FULL) {
            Ok(waiter) => {
                wake(&slot, waiter);
                Ok(())
            }
            // SAFETY: GONE: the receiver will never read the slot; take our
            // value back out of it.
            Err(()) => Err(unsafe { (*slot.value.get()).assume_init_read() }),
        }
    }

    /// Whether the receiver has been dropped (a send would fail).
    pub fn is_closed(&self) -> bool {
        self.slot
            .as_ref()
            .is_none_or(|s| s.state.load(Ordering::Relaxed) == GONE)
    }
}

impl<T> Drop for OneshotSender<T> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            let _section = Section::enter();
            if let Ok(waiter) = slot.complete(CLOSED) {
                wake(&slot, waiter);
            }
        }
    }
}

/// Wake the receiver's wait `waiter`, from whatever thread.
fn wake<T>(slot: &Shot<T>, waiter: Option<u32>) {
    if let (Some(epoch), Some(rt)) = (waiter, &slot.runtime) {
        rt.wake(WaitId {
            pid: slot.owner,
            epoch,
        });
    }
}

impl<T: Send> OneshotReceiver<T> {
    /// Wait up to `timeout` for the value.
    ///
    /// # Panics
    ///
    /// Outside the actor that made the channel.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, OneshotError> {
        let deadline = crate::clock::instant()
            .checked_add(timeout)
            .map(Deadline::At);
        let mut waiter = OneshotWait { slot: &self.slot };
        scheduler::bounded_wait(
            "OneshotReceiver::recv_timeout",
            &mut waiter,
            deadline,
            timeout.is_zero(),
        )
    }
}

/// `recv_timeout`'s side of the bounded-wait loop.
struct OneshotWait<'a, T> {
    slot: &'a Shot<T>,
}

impl<T: Send> BoundedWaiter for OneshotWait<'_, T> {
    const WAITS_ON: WaitingOn = WaitingOn::Reply;
    type Output = Result<T, OneshotError>;

    fn ready(&mut self) -> Option<Self::Output> {
        match self.slot.state.load(Ordering::Acquire) {
            FULL => Some(Ok(self.slot.take())),
            CLOSED => Some(Err(OneshotError::Closed)),
            _ => None,
        }
    }

    fn timed_out(&mut self) -> Option<Self::Output> {
        Some(Err(OneshotError::Timeout))
    }

    fn register(&mut self, wait: &Wait) -> Registered<Self::Output> {
        assert_eq!(
            wait.id().pid,
            self.slot.owner,
            "smarm: a oneshot is received by the actor that made it"
        );
        match self.slot.register(wait.id().epoch) {
            EMPTY => Registered::Yes,
            _ => Registered::Ready,
        }
    }
}

impl<T> Drop for OneshotReceiver<T> {
    fn drop(&mut self) {
        if self.slot.state.swap(GONE, Ordering::AcqRel) == FULL {
            // SAFETY: FULL: written, not taken, and the sender is done
            // with the slot (O1).
            unsafe { (*self.slot.value.get()).assume_init_drop() };
        }
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::thread;

    fn shot() -> Arc<Shot<u64>> {
        Arc::new(Shot {
            state: AtomicU32::new(EMPTY),
            waiter: WaiterCell::new(),
            owner: Pid::from_parts(1, 1),
            runtime: None,
            value: UnsafeCell::new(MaybeUninit::uninit()),
        })
    }

    /// The receiver registers wait 4 and decides whether to park while the
    /// sender publishes: if it parks, the sender wakes wait 4; if it does
    /// not, it sees the value (O1, O2).
    #[test]
    fn no_lost_wake_and_the_value_arrives() {
        loom::model(|| {
            let s = shot();
            let sender = {
                let s = s.clone();
                thread::spawn(move || {
                    // SAFETY: EMPTY, and only this thread writes (O1).
                    unsafe { (*s.value.get()).write(42) };
                    s.complete(FULL).unwrap()
                })
            };
            let state = s.register(4);
            let woken = sender.join().unwrap();
            if state == EMPTY {
                assert_eq!(woken, Some(4), "parked and nobody wakes it");
            }
            assert_eq!(s.state.load(Ordering::Acquire), FULL);
            assert_eq!(s.take(), 42);
        });
    }
}
