//! `Timers`: a runtime's timer heaps, one shard per regular scheduler,
//! each behind a Timers-class lock of its own, with what the schedulers do
//! to them. Everything a timer owned (a message thunk) is dropped outside
//! the lock, since its destructor may touch other locks (time (I1)).
//!
//! An actor arms its timers in the shard of the scheduler it runs on, and
//! that scheduler fires them, so the arm and fire of a timer touch one
//! core's lock and heap (time (I4)). A timer's shard is stamped into its
//! `seq` (`heap.rs`), which is how a cancel from anywhere finds it.

use super::bounded;
use super::heap::{Clock, Entry, TimerAction, TimerHeap, TimerId, shard_of_seq};
use crate::lock::{LockClass, RawMutex};
use crate::park::Coordinator;
use crate::slot::{Pid, Slot, WaitId};
use crossbeam_utils::CachePadded;
use std::time::Instant;

/// One shard, on lines of its own: its owner arms and fires in it at every
/// sleep, and the other schedulers should not share those lines.
pub(crate) struct Shard(CachePadded<RawMutex<TimerHeap>>);

impl Shard {
    /// The shard's heap, behind its lock.
    pub(crate) fn heap(&self) -> &RawMutex<TimerHeap> {
        &self.0
    }
}

/// The timers of one runtime. Each shard's lock is also what its deadline
/// word in the coordinator is written under (park (I4)).
pub(crate) struct Timers {
    shards: Box<[Shard]>,
}

impl Timers {
    /// The timers of runtime `runtime_id` (stamped into every `TimerId`),
    /// in `shards` shards (as many as the coordinator keeps deadlines for).
    pub(crate) fn new(runtime_id: u64, shards: usize) -> Self {
        Timers {
            shards: (0..shards)
                .map(|shard| {
                    Shard(CachePadded::new(RawMutex::new(
                        LockClass::Timers,
                        TimerHeap::new(runtime_id, shard),
                    )))
                })
                .collect(),
        }
    }

    /// The shard that armed timer `seq`, if it is one of ours.
    pub(crate) fn shard_for_seq(&self, seq: u64) -> Option<&Shard> {
        self.shards.get(shard_of_seq(seq))
    }

    /// Arm a timer for `owner` at `deadline` in `shard`, noting the
    /// deadline with the coordinator under the shard's lock.
    pub(crate) fn insert(
        &self,
        coord: &Coordinator,
        shard: usize,
        deadline: Instant,
        owner: Pid,
        action: TimerAction,
        clock: Clock,
    ) -> TimerId {
        let at = coord.deadline_nanos(deadline);
        self.shards[shard]
            .0
            .lock()
            .insert(coord, at, owner, action, clock)
    }

    /// Cancel timer `id`: `true` if it was still armed.
    pub(crate) fn cancel(&self, coord: &Coordinator, id: TimerId) -> bool {
        let Some(shard) = self.shard_for_seq(id.seq()) else {
            return false;
        };
        let (was_armed, garbage) = {
            let mut heap = shard.0.lock();
            (heap.cancel(coord, id), heap.take_garbage())
        };
        drop(garbage);
        was_armed
    }

    /// Retire every timer (the runtime is finishing).
    pub(crate) fn clear(&self, coord: &Coordinator) {
        for shard in self.shards.iter() {
            let garbage = {
                let mut heap = shard.0.lock();
                heap.clear(coord);
                heap.take_garbage()
            };
            drop(garbage);
        }
    }

    /// Move every timer of `shard` due at `now` (coordinator nanos) into
    /// `due`. With `try_only` (the busy path) give up if another scheduler
    /// holds the shard's lock: its deadline stays due, so the check fires
    /// again on the next loop.
    pub(crate) fn take_due(
        &self,
        coord: &Coordinator,
        shard: usize,
        now: u64,
        try_only: bool,
        due: &mut Vec<Entry>,
    ) {
        let shard = &self.shards[shard].0;
        let garbage = {
            let mut heap = if try_only {
                match shard.try_lock() {
                    Some(heap) => heap,
                    None => return,
                }
            } else {
                shard.lock()
            };
            heap.pop_due(coord, now, due);
            heap.take_garbage()
        };
        drop(garbage);
    }

    /// How many timers are armed (the root-exit sweep waits for them).
    pub(crate) fn armed(&self) -> usize {
        self.shards.iter().map(|s| s.0.lock().armed()).sum()
    }

    /// Arm the cached wait timer of the actor in `slot` for `wait`, due at
    /// `at` (coordinator nanos; bounded (B1)), in `shard`: the shard of the
    /// scheduler the actor runs on.
    pub(crate) fn arm_wait(
        &self,
        coord: &Coordinator,
        shard: usize,
        slot: &Slot,
        wait: WaitId,
        at: u64,
        clock: Clock,
    ) {
        bounded::arm(slot, &self.shards[shard].0, coord, wait, at, clock);
    }

    /// The actor of `slot` finished: cancel its cached wait timer (B3).
    pub(crate) fn finish_actor(&self, coord: &Coordinator, slot: &Slot) {
        bounded::finish(slot, self, coord);
    }
}
