//! Time: `sleep`, and the timer heap behind it and behind every bounded
//! wait.
//!
//! # Design
//!
//! One min-heap per runtime under the Timers-class lock: entries ordered by
//! `(deadline, seq)`, each with an action. A sleeping actor opens a wait,
//! arms a `Wake { epoch }` timer and parks; the firing scheduler calls
//! `unpark_at(pid, epoch)`, so a timer that fires after its wait ended does
//! nothing (slot (I3)). Timers fire from two places: the busy-path
//! due-check at the top of every scheduler loop, and the timekeeper, the
//! one idle scheduler parked with the earliest deadline as its timeout
//! (see [`crate::park`]). Every insert notes its deadline with the
//! coordinator under the timers lock.
//!
//! # Invariants
//!
//! - (I1) An armed timer fires at most once; a cancelled one never fires
//!   (the armed set decides at pop time).
//! - (I2) `sleep(d)` returns no earlier than `d` after it was called: a
//!   wake before the deadline (a stop, a stale notification) re-arms.
//! - (I3) A sleep unwound by a stop cancels its timer, so a stopped
//!   sleeper leaves no armed timer behind to delay the root-exit sweep.

mod heap;

pub(crate) use heap::{Entry, TimerAction, TimerHeap, TimerId};

use crate::scheduler;
use std::time::{Duration, Instant};

/// Suspend the calling actor for at least `duration`. Only the actor
/// sleeps: its scheduler thread runs other actors meanwhile.
///
/// ```
/// use std::time::{Duration, Instant};
///
/// smarm::run(|| {
///     let t0 = Instant::now();
///     smarm::sleep(Duration::from_millis(5));
///     assert!(t0.elapsed() >= Duration::from_millis(5));
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn sleep(duration: Duration) {
    let deadline = Instant::now() + duration;
    if duration.is_zero() {
        crate::yield_now();
        return;
    }
    loop {
        let (me, epoch) = scheduler::begin_wait();
        let id = scheduler::with_current_actor("sleep", |_, shared| {
            shared
                .timers
                .lock()
                .insert(&shared.coord, deadline, me, TimerAction::Wake { epoch })
        });
        let armed = CancelOnDrop(id);
        scheduler::park();
        if Instant::now() >= deadline {
            // Fired (or due and about to be popped as stale): nothing to cancel.
            std::mem::forget(armed);
            return;
        }
        drop(armed); // an early wake: disarm, then wait again (I2)
    }
}

/// Cancels a sleep's timer if the sleep ends early or unwinds (I3).
struct CancelOnDrop(TimerId);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        scheduler::with_worker(|_, shared| shared.timers.lock().cancel(&shared.coord, self.0));
    }
}
