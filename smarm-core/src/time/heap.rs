//! The timer heap: a min-heap of `(deadline, seq)` entries, with an armed
//! set that makes cancellation O(1) and firing at-most-once.

use crate::hash::BuildWordHasher;
use crate::park::Coordinator;
use crate::slot::Pid;
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};
use std::time::Instant;

/// Identifies an armed message timer, for
/// [`cancel_timer`](crate::time::cancel_timer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimerId {
    runtime: u64,
    seq: u64,
}

impl TimerId {
    /// The timer's sequence number in its runtime.
    pub(crate) fn seq(self) -> u64 {
        self.seq
    }
}

/// What an expired timer does.
pub(crate) enum TimerAction {
    /// Run a delivery thunk (`send_after_to`), outside the timers lock.
    Send(Box<dyn FnOnce() + Send>),
    /// Wake `pid`'s current bounded wait, if it is in one: the actor's
    /// cached wait timer (see `bounded.rs`).
    WakeBounded,
}

pub(crate) struct Entry {
    pub(crate) deadline: Instant,
    pub(crate) seq: u64,
    pub(crate) pid: Pid,
    pub(crate) action: TimerAction,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.deadline == other.deadline && self.seq == other.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.deadline, self.seq).cmp(&(other.deadline, other.seq))
    }
}

/// Cancelled entries the heap may hold beyond twice the armed ones.
const COMPACT_SLACK: usize = 64;

/// All timers of a runtime. Lives under the runtime's Timers-class lock,
/// which is also the serialization the coordinator's timekeeper protocol
/// requires (park (I4)).
pub(crate) struct TimerHeap {
    /// The owning runtime's id, stamped into every `TimerId`.
    runtime: u64,
    heap: BinaryHeap<Reverse<Entry>>,
    next_seq: u64,
    /// Timers neither fired nor cancelled. An entry not in here is skipped.
    /// Armed timers by seq, each noting whether it is an actor's cached
    /// wait timer.
    armed: HashMap<u64, bool, BuildWordHasher>,
    /// Armed `WakeBounded` timers (they stay armed between waits, so the
    /// root-exit sweep does not count them: bounded.rs).
    cached: usize,
    /// Entries removed without firing. Their actions may own values whose
    /// destructors take other locks (a `Sender`), so callers drop them
    /// after releasing the timers lock, via [`take_garbage`](Self::take_garbage).
    garbage: Vec<Entry>,
}

impl TimerHeap {
    pub(crate) fn new(runtime: u64) -> Self {
        TimerHeap {
            runtime,
            heap: BinaryHeap::new(),
            next_seq: 0,
            armed: HashMap::default(),
            cached: 0,
            garbage: Vec::new(),
        }
    }

    /// Arm a timer and note its deadline with the coordinator.
    pub(crate) fn insert(
        &mut self,
        coord: &Coordinator,
        deadline: Instant,
        pid: Pid,
        action: TimerAction,
    ) -> TimerId {
        let seq = self.next_seq;
        self.next_seq += 1;
        let cached = matches!(action, TimerAction::WakeBounded);
        if cached {
            self.cached += 1;
        }
        self.heap.push(Reverse(Entry {
            deadline,
            seq,
            pid,
            action,
        }));
        self.armed.insert(seq, cached);
        coord.note_deadline(deadline);
        TimerId {
            runtime: self.runtime,
            seq,
        }
    }

    /// Disarm a timer. `true` if it was still armed (it will not fire).
    pub(crate) fn cancel(&mut self, coord: &Coordinator, id: TimerId) -> bool {
        let removed = (id.runtime == self.runtime)
            .then(|| self.armed.remove(&id.seq))
            .flatten();
        if removed == Some(true) {
            self.cached -= 1;
        }
        let was_armed = removed.is_some();
        if was_armed && self.armed.is_empty() {
            // Nothing armed: retire the cancelled entries now so the
            // deadline snapshot is exact.
            self.garbage.extend(self.heap.drain().map(|Reverse(e)| e));
            coord.refresh_deadline(None);
        } else if was_armed && self.heap.len() > COMPACT_SLACK + 2 * self.armed.len() {
            self.compact(coord);
        }
        was_armed
    }

    /// Drop the cancelled entries from the heap (into `garbage`). Bounded
    /// waits are cancelled far more often than they fire (a call's timeout,
    /// say): without this the heap would hold every cancelled deadline until
    /// it passed, and every insert would pay for them. Amortised O(1) per
    /// cancel: it runs when the cancelled entries outnumber the armed ones
    /// by `COMPACT_SLACK`.
    fn compact(&mut self, coord: &Coordinator) {
        let (keep, drop): (Vec<_>, Vec<_>) = std::mem::take(&mut self.heap)
            .into_vec()
            .into_iter()
            .partition(|Reverse(e)| self.armed.contains_key(&e.seq));
        self.heap = BinaryHeap::from(keep);
        self.garbage.extend(drop.into_iter().map(|Reverse(e)| e));
        coord.refresh_deadline(self.peek_deadline());
    }

    /// Number of armed timers, actors' cached wait timers excluded.
    pub(crate) fn armed(&self) -> usize {
        self.armed.len() - self.cached
    }

    /// Disarm the cached wait timer `seq` of an actor that finished.
    pub(crate) fn cancel_cached(&mut self, coord: &Coordinator, seq: u64) {
        let id = TimerId {
            runtime: self.runtime,
            seq,
        };
        self.cancel(coord, id);
    }

    /// The earliest deadline, cancelled entries included.
    pub(crate) fn peek_deadline(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse(e)| e.deadline)
    }

    /// Pop every armed entry due at `now` into `out`, then re-anchor the
    /// coordinator's deadline snapshot to the new minimum.
    pub(crate) fn pop_due(&mut self, coord: &Coordinator, now: Instant, out: &mut Vec<Entry>) {
        while let Some(Reverse(top)) = self.heap.peek() {
            if top.deadline > now {
                break;
            }
            let Some(Reverse(entry)) = self.heap.pop() else {
                break;
            };
            if let Some(cached) = self.armed.remove(&entry.seq) {
                if cached {
                    self.cached -= 1;
                }
                out.push(entry);
            } else {
                self.garbage.push(entry);
            }
        }
        coord.refresh_deadline(self.peek_deadline());
    }

    /// Retire every timer (the runtime is finishing).
    pub(crate) fn clear(&mut self, coord: &Coordinator) {
        self.garbage.extend(self.heap.drain().map(|Reverse(e)| e));
        self.armed.clear();
        self.cached = 0;
        coord.refresh_deadline(None);
    }

    /// The entries removed without firing, to be dropped by the caller
    /// once the timers lock is released.
    #[must_use]
    pub(crate) fn take_garbage(&mut self) -> Vec<Entry> {
        std::mem::take(&mut self.garbage)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

    fn wake(pid: u32) -> (Pid, TimerAction) {
        (Pid::from_parts(pid, 1), TimerAction::WakeBounded)
    }

    #[test]
    fn pops_in_deadline_then_insertion_order() {
        let c = Coordinator::new(1);
        let mut h = TimerHeap::new(1);
        let t0 = Instant::now();
        for (i, ms) in [(1u32, 30u64), (2, 10), (3, 20), (4, 10)] {
            let (pid, a) = wake(i);
            h.insert(&c, t0 + Duration::from_millis(ms), pid, a);
        }
        let mut out = Vec::new();
        h.pop_due(&c, t0 + Duration::from_millis(25), &mut out);
        let order: Vec<u32> = out.iter().map(|e| e.pid.index()).collect();
        assert_eq!(order, [2, 4, 3], "earliest first, ties in insertion order");
        assert_eq!(c.next_deadline(), Some(t0 + Duration::from_millis(30)));
    }

    #[test]
    fn cancelled_timer_never_fires_and_cancel_is_once() {
        let c = Coordinator::new(1);
        let mut h = TimerHeap::new(1);
        let t0 = Instant::now();
        let (p1, a1) = wake(1);
        let (p2, a2) = wake(2);
        let id = h.insert(&c, t0, p1, a1);
        h.insert(&c, t0, p2, a2);
        assert!(h.cancel(&c, id));
        assert!(
            !h.cancel(&c, id),
            "a second cancel reports the timer was not armed"
        );
        let mut out = Vec::new();
        h.pop_due(&c, t0, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].pid.index(), 2);
        assert_eq!(h.armed(), 0);
    }

    #[test]
    fn cancelling_the_last_armed_timer_clears_the_snapshot() {
        let c = Coordinator::new(1);
        let mut h = TimerHeap::new(1);
        let (p, a) = wake(1);
        let id = h.insert(&c, Instant::now() + Duration::from_secs(3600), p, a);
        assert!(c.next_deadline().is_some());
        assert!(h.cancel(&c, id));
        assert_eq!(c.next_deadline(), None);
        assert_eq!(h.peek_deadline(), None);
    }
}
