//! A scheduler's records that other threads read: its activity counters
//! (written by its own thread) and what the system monitor has seen of it
//! (written by the monitor, `sysmon` (M2)). Both live in the scheduler's
//! `SchedulerQueues` entry and are read by introspection.

use crate::loom::{AtomicU64, Ordering};
use crate::slot::Pid;

/// A scheduler's activity counters (single writer: its own thread), on
/// lines of their own: they change at every resume, and the queues beside
/// them are read by every idle sibling.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) actors_run: AtomicU64,
    /// Pid bits of the actor running now; 0 between actors (the system
    /// monitor's view of a scheduler stuck in one actor).
    pub(crate) running: AtomicU64,
    pub(crate) parks: AtomicU64,
    pub(crate) wakes: AtomicU64,
    pub(crate) steals: AtomicU64,
    /// Clock ticks spent with nothing to run (looking, spinning, parked).
    pub(crate) idle_ticks: AtomicU64,
}

impl Counters {
    /// Single-writer increment.
    #[inline]
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }
}

/// What the monitor has seen of one scheduler (written by the monitor,
/// read by introspection, M2).
#[derive(Default)]
pub(crate) struct BlockedRecord {
    /// Pid bits of the actor the scheduler is blocked in; 0 if not blocked.
    pub(super) actor: AtomicU64,
    /// Since when it has been running that actor (coordinator nanos).
    pub(super) since: AtomicU64,
    /// The scheduler's resume count when it was found blocked.
    pub(super) resumes: AtomicU64,
    /// Actors moved off this scheduler by the monitor.
    pub(super) moved: AtomicU64,
    /// Times a thread was started for this scheduler (spares only).
    pub(super) starts: AtomicU64,
}

impl BlockedRecord {
    /// The actor this scheduler is blocked in, and since when (coordinator
    /// nanos); `None` if it is not blocked.
    pub(crate) fn blocked(&self) -> Option<(Pid, u64)> {
        match self.actor.load(Ordering::Relaxed) {
            0 => None,
            bits => Some((Pid::from_bits(bits), self.since.load(Ordering::Relaxed))),
        }
    }

    /// Actors moved off this scheduler so far.
    pub(crate) fn moved(&self) -> u64 {
        self.moved.load(Ordering::Relaxed)
    }

    /// Times a spare thread was started for this scheduler.
    pub(crate) fn starts(&self) -> u64 {
        self.starts.load(Ordering::Relaxed)
    }
}
