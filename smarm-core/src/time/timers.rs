//! `Timers`: a runtime's timer heap behind its Timers-class lock, with
//! what the schedulers do to it. Everything a timer owned (a message
//! thunk) is dropped outside the lock, since its destructor may touch
//! other locks (time (I1)).

use super::bounded;
use super::heap::{Entry, TimerAction, TimerHeap, TimerId};
use crate::park::Coordinator;
use crate::slot::{Pid, Slot, WaitId};
use crate::sync::{LockClass, RawMutex};
use std::time::Instant;

/// The timers of one runtime. The lock is also the serialisation the
/// coordinator's timekeeper protocol needs (park (I4)).
pub(crate) struct Timers {
    heap: RawMutex<TimerHeap>,
}

impl Timers {
    /// The timers of runtime `runtime_id` (stamped into every `TimerId`).
    pub(crate) fn new(runtime_id: u64) -> Self {
        Timers {
            heap: RawMutex::new(LockClass::Timers, TimerHeap::new(runtime_id)),
        }
    }

    /// Arm a timer for `owner` at `deadline`, noting the deadline with the
    /// coordinator under the lock.
    pub(crate) fn insert(
        &self,
        coord: &Coordinator,
        deadline: Instant,
        owner: Pid,
        action: TimerAction,
    ) -> TimerId {
        let at = coord.deadline_nanos(deadline);
        self.heap.lock().insert(coord, at, owner, action)
    }

    /// Cancel timer `id`: `true` if it was still armed.
    pub(crate) fn cancel(&self, coord: &Coordinator, id: TimerId) -> bool {
        let (was_armed, garbage) = {
            let mut heap = self.heap.lock();
            (heap.cancel(coord, id), heap.take_garbage())
        };
        drop(garbage);
        was_armed
    }

    /// Retire every timer (the runtime is finishing).
    pub(crate) fn clear(&self, coord: &Coordinator) {
        let garbage = {
            let mut heap = self.heap.lock();
            heap.clear(coord);
            heap.take_garbage()
        };
        drop(garbage);
    }

    /// Move every timer due at `now` into `due`. With `try_only` (the busy
    /// path) give up if another scheduler holds the lock: the due state
    /// stays, so the check fires again on the next loop.
    pub(crate) fn take_due(
        &self,
        coord: &Coordinator,
        now: Instant,
        try_only: bool,
        due: &mut Vec<Entry>,
    ) {
        let now = coord.deadline_nanos(now);
        let garbage = {
            let mut heap = if try_only {
                match self.heap.try_lock() {
                    Some(heap) => heap,
                    None => return,
                }
            } else {
                self.heap.lock()
            };
            heap.pop_due(coord, now, due);
            heap.take_garbage()
        };
        drop(garbage);
    }

    /// How many timers are armed (the root-exit sweep waits for them).
    pub(crate) fn armed(&self) -> usize {
        self.heap.lock().armed()
    }

    /// The timekeeper's step: the earliest deadline, if `claim` takes the
    /// timekeeper role for it (checked under the lock, park (I4)).
    pub(crate) fn earliest_for_timekeeper(
        &self,
        coord: &Coordinator,
        claim: impl FnOnce(Instant) -> bool,
    ) -> Option<Instant> {
        let heap = self.heap.lock();
        heap.peek_deadline()
            .map(|at| coord.instant_at(at))
            .filter(|d| claim(*d))
    }

    /// Arm the cached wait timer of the actor in `slot` for `wait`, due at
    /// `at` (coordinator nanos; bounded (B1)).
    pub(crate) fn arm_wait(&self, coord: &Coordinator, slot: &Slot, wait: WaitId, at: u64) {
        bounded::arm(slot, &self.heap, coord, wait, at);
    }

    /// The actor of `slot` finished: cancel its cached wait timer (B3).
    pub(crate) fn finish_actor(&self, coord: &Coordinator, slot: &Slot) {
        bounded::finish(slot, &self.heap, coord);
    }
}
