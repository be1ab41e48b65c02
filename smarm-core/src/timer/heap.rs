//! The timer heap: `(deadline, seq)` entries in deadline order, with an
//! armed set that makes cancellation O(1) and firing at-most-once.
//!
//! Only the entries due by the end of the current millisecond (the
//! *horizon*) are kept in a binary heap; later ones wait unordered in a
//! bucket per millisecond, and a bucket joins the heap when the horizon
//! reaches it (at the first `pop_due` in or after its millisecond). So a
//! heap operation costs the logarithm of the timers due in one
//! millisecond, not of every armed timer: 100,000 sleepers cost a bucket
//! push each, not a sift through a 100,000-entry heap.
//!
//! Deadlines are nanoseconds since the coordinator's origin (the clock
//! the schedulers' due-checks and the timekeeper already use), so filing,
//! ordering and the shard's deadline word compare integers: a deadline is
//! converted from an `Instant` once, when it is armed.
//!
//! Invariants:
//! - (H1) Every entry in `heap` is due no later than the end of
//!   millisecond `horizon`; every entry in a bucket is due within that
//!   bucket's millisecond, which is after `horizon`. So the heap's top,
//!   when there is one, is the earliest entry, and otherwise the first
//!   bucket's `earliest` is.
//! - (H2) A bucket is never empty, and its `earliest` is the minimum of its
//!   entries' deadlines.
//! - (H3) (Feature `smarm-causal`.) A virtual-clock timer fires no earlier
//!   than its deadline plus the delay a causal profile inserted since it
//!   was armed, as of its pop: a due entry that has not waited that delay
//!   out is re-filed later by it, and only an entry whose shift is still
//!   due fires. Wall-clock timers are never shifted.

use crate::park::Coordinator;
use crate::slot::Pid;
use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BinaryHeap};

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

/// The clock a timer keeps: the same one without causal profiling. With
/// it (feature `smarm-causal`) a virtual timer also waits out the delay a
/// profile inserts while it is pending (it is workload pacing, which the
/// delay slows like everything else), and a wall timer does not (the
/// profiler's own windows, deadlines set by the outside world).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Clock {
    Virtual,
    Wall,
}

pub(crate) struct Entry {
    /// Nanos since the coordinator's origin.
    pub(crate) deadline: u64,
    pub(crate) seq: u64,
    pub(crate) pid: Pid,
    pub(crate) action: TimerAction,
    /// The inserted delay `deadline` already accounts for, or `WALL`
    /// (feature `smarm-causal`; H3).
    #[cfg(feature = "smarm-causal")]
    pub(crate) shifted_to: u64,
}

/// `Entry::shifted_to` of a wall timer: never shifted.
#[cfg(feature = "smarm-causal")]
pub(crate) const WALL: u64 = u64::MAX;

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

/// One shard of a runtime's timers (see `timers.rs`). Lives under its
/// shard's Timers-class lock, which is also what the coordinator's
/// per-shard deadline word is written under (park (I4)).
pub(crate) struct TimerHeap {
    /// The owning runtime's id, stamped into every `TimerId`.
    runtime: u64,
    /// This heap's shard, stamped into every `seq` (`ArmedSet::arm`).
    shard: usize,
    /// The entries due by the end of millisecond `horizon` (H1).
    heap: BinaryHeap<Reverse<Entry>>,
    /// The entries due after it, a bucket per millisecond (H1, H2).
    later: BTreeMap<u64, Bucket>,
    /// Entries in `later`.
    later_len: usize,
    /// Emptied buckets' vectors, for the next buckets.
    spare: Vec<Vec<Entry>>,
    /// The last millisecond whose entries are all in `heap` (H1).
    horizon: u64,
    /// Timers neither fired nor cancelled. An entry not in here is skipped.
    armed: ArmedSet,
    /// Armed `WakeBounded` timers (they stay armed between waits, so the
    /// root-exit sweep does not count them: bounded.rs).
    cached: usize,
    /// Entries removed without firing. Their actions may own values whose
    /// destructors take other locks (a `Sender`), so callers drop them
    /// after releasing the timers lock, via [`take_garbage`](Self::take_garbage).
    garbage: Vec<Entry>,
}

/// The entries due within one millisecond after the horizon.
struct Bucket {
    /// The earliest of their deadlines (H2).
    earliest: u64,
    entries: Vec<Entry>,
}

impl Bucket {
    /// File `entry`, keeping `earliest` the minimum (H2).
    fn add(&mut self, entry: Entry) {
        self.earliest = self.earliest.min(entry.deadline);
        self.entries.push(entry);
    }
}

/// Spare bucket vectors kept for reuse.
const SPARE_BUCKETS: usize = 64;

impl TimerHeap {
    /// Shard `shard` (below [`MAX_SHARDS`]) of runtime `runtime`'s timers.
    pub(crate) fn new(runtime: u64, shard: usize) -> Self {
        debug_assert!(shard < MAX_SHARDS, "TimerHeap::new: shard out of range");
        TimerHeap {
            runtime,
            shard,
            heap: BinaryHeap::new(),
            later: BTreeMap::new(),
            later_len: 0,
            spare: Vec::new(),
            horizon: 0,
            armed: ArmedSet::default(),
            cached: 0,
            garbage: Vec::new(),
        }
    }

    /// The millisecond (since the coordinator's origin) that `at` falls in.
    fn millisecond(at: u64) -> u64 {
        at / 1_000_000
    }

    /// File `entry` by its deadline: into the heap if it is due by the
    /// horizon, else into its millisecond's bucket (H1, H2).
    fn file(&mut self, entry: Entry) {
        let ms = Self::millisecond(entry.deadline);
        if ms <= self.horizon {
            self.heap.push(Reverse(entry));
            return;
        }
        self.later_len += 1;
        // Timers armed together usually share the latest bucket: reach it
        // down the tree's right edge, without a key search.
        if let Some(mut last) = self.later.last_entry()
            && *last.key() == ms
        {
            last.get_mut().add(entry);
            return;
        }
        match self.later.entry(ms) {
            std::collections::btree_map::Entry::Occupied(mut bucket) => bucket.get_mut().add(entry),
            std::collections::btree_map::Entry::Vacant(slot) => {
                let mut entries = self.spare.pop().unwrap_or_default();
                let earliest = entry.deadline;
                entries.push(entry);
                slot.insert(Bucket { earliest, entries });
            }
        }
    }

    /// Move the horizon to millisecond `ms`, moving the buckets it passes
    /// into the heap (H1).
    fn advance(&mut self, ms: u64) {
        self.horizon = ms;
        while let Some(first) = self.later.first_entry() {
            if *first.key() > ms {
                break;
            }
            let mut bucket = first.remove();
            self.later_len -= bucket.entries.len();
            self.heap.extend(bucket.entries.drain(..).map(Reverse));
            if self.spare.len() < SPARE_BUCKETS {
                self.spare.push(bucket.entries);
            }
        }
    }

    /// Entries held, cancelled ones included.
    fn len(&self) -> usize {
        self.heap.len() + self.later_len
    }

    /// Move every entry, armed or not, into `garbage`.
    fn drain_all(&mut self) {
        self.garbage.extend(self.heap.drain().map(|Reverse(e)| e));
        for (_, bucket) in std::mem::take(&mut self.later) {
            self.garbage.extend(bucket.entries);
        }
        self.later_len = 0;
    }

    /// Arm a timer due at `deadline` (coordinator nanos) and note the
    /// deadline with the coordinator.
    pub(crate) fn insert(
        &mut self,
        coord: &Coordinator,
        deadline: u64,
        pid: Pid,
        action: TimerAction,
        clock: Clock,
    ) -> TimerId {
        let _ = clock;
        let cached = matches!(action, TimerAction::WakeBounded);
        if cached {
            self.cached += 1;
        }
        let seq = self.armed.arm(cached, self.shard);
        self.file(Entry {
            deadline,
            seq,
            pid,
            action,
            #[cfg(feature = "smarm-causal")]
            shifted_to: match clock {
                Clock::Virtual => coord.inserted_delay(),
                Clock::Wall => WALL,
            },
        });
        coord.note_deadline_at(self.shard, deadline);
        TimerId {
            runtime: self.runtime,
            seq,
        }
    }

    /// Disarm a timer. `true` if it was still armed (it will not fire).
    pub(crate) fn cancel(&mut self, coord: &Coordinator, id: TimerId) -> bool {
        let removed = (id.runtime == self.runtime && shard_of_seq(id.seq) == self.shard)
            .then(|| self.armed.disarm(id.seq))
            .flatten();
        if removed == Some(true) {
            self.cached -= 1;
        }
        let was_armed = removed.is_some();
        if was_armed && self.armed.is_empty() {
            // Nothing armed: retire the cancelled entries now so the
            // shard's deadline word is exact.
            self.drain_all();
            coord.refresh_deadline_at(self.shard, None);
        } else if was_armed && self.len() > COMPACT_SLACK + 2 * self.armed.len() {
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
        let armed = &self.armed;
        let (keep, drop): (Vec<_>, Vec<_>) = std::mem::take(&mut self.heap)
            .into_vec()
            .into_iter()
            .partition(|Reverse(e)| armed.is_armed(e.seq));
        self.heap = BinaryHeap::from(keep);
        self.garbage.extend(drop.into_iter().map(|Reverse(e)| e));
        let garbage = &mut self.garbage;
        self.later.retain(|_, bucket| {
            let (keep, drop): (Vec<_>, Vec<_>) = std::mem::take(&mut bucket.entries)
                .into_iter()
                .partition(|e| armed.is_armed(e.seq));
            garbage.extend(drop);
            bucket.entries = keep;
            match bucket.entries.iter().map(|e| e.deadline).min() {
                Some(earliest) => {
                    bucket.earliest = earliest; // (H2)
                    true
                }
                None => false,
            }
        });
        self.later_len = self.later.values().map(|b| b.entries.len()).sum();
        coord.refresh_deadline_at(self.shard, self.peek_deadline());
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

    /// The earliest deadline (coordinator nanos), cancelled entries
    /// included.
    pub(crate) fn peek_deadline(&self) -> Option<u64> {
        // (H1): the heap's entries are due before every bucket's.
        match self.heap.peek() {
            Some(Reverse(e)) => Some(e.deadline),
            None => self.later.values().next().map(|b| b.earliest),
        }
    }

    /// Pop every armed entry due at `now` (coordinator nanos) into `out`,
    /// then re-anchor the shard's deadline word in the coordinator to the new
    /// minimum.
    pub(crate) fn pop_due(&mut self, coord: &Coordinator, now: u64, out: &mut Vec<Entry>) {
        let ms = Self::millisecond(now);
        if ms > self.horizon {
            self.advance(ms);
        }
        #[cfg(feature = "smarm-causal")]
        let inserted = coord.inserted_delay();
        while let Some(Reverse(top)) = self.heap.peek() {
            if top.deadline > now {
                break;
            }
            let Some(Reverse(entry)) = self.heap.pop() else {
                break;
            };
            #[cfg(feature = "smarm-causal")]
            let Some(entry) = self.shift(entry, inserted, now) else {
                continue; // re-filed later by the delay inserted meanwhile (H3)
            };
            if let Some(cached) = self.armed.disarm(entry.seq) {
                if cached {
                    self.cached -= 1;
                }
                out.push(entry);
            } else {
                self.garbage.push(entry);
            }
        }
        coord.refresh_deadline_at(self.shard, self.peek_deadline());
    }

    /// A due `entry` on the virtual clock waits out the delay inserted
    /// since it was armed (or last shifted): re-file it that much later
    /// unless that is still due at `now` (H3). `None` once re-filed.
    #[cfg(feature = "smarm-causal")]
    fn shift(&mut self, mut entry: Entry, inserted: u64, now: u64) -> Option<Entry> {
        if entry.shifted_to == WALL
            || entry.shifted_to >= inserted
            || !self.armed.is_armed(entry.seq)
        {
            return Some(entry);
        }
        entry.deadline = entry.deadline.saturating_add(inserted - entry.shifted_to);
        entry.shifted_to = inserted;
        if entry.deadline <= now {
            return Some(entry);
        }
        self.file(entry);
        None
    }

    /// Retire every timer (the runtime is finishing).
    pub(crate) fn clear(&mut self, coord: &Coordinator) {
        self.drain_all();
        self.armed.clear();
        self.cached = 0;
        coord.refresh_deadline_at(self.shard, None);
    }

    /// The entries removed without firing, to be dropped by the caller
    /// once the timers lock is released.
    #[must_use]
    pub(crate) fn take_garbage(&mut self) -> Vec<Entry> {
        std::mem::take(&mut self.garbage)
    }
}

/// The armed timers: a record per timer slot, reused through a free
/// list, so arming and disarming touch a recently used record instead of
/// a hash table's random one. A timer's `seq` is its record's index (low
/// 32 bits), its generation (25 bits above) and its heap's shard (6 bits
/// above those; bit 63 stays clear, so `seq + 1` never overflows): a
/// disarm bumps the generation, which retires every `TimerId` and entry
/// of the old one (short of 2^25 reuses of one record while a stale entry
/// waits, which compaction rules out: a stale entry is dropped once
/// cancelled entries outnumber the armed ones by `COMPACT_SLACK`).
#[derive(Default)]
struct ArmedSet {
    records: Vec<Record>,
    free: Vec<u32>,
    len: usize,
}

#[derive(Clone, Copy)]
struct Record {
    generation: u32,
    armed: bool,
    /// An actor's cached wait timer (bounded.rs).
    cached: bool,
}

const GENERATION_MASK: u32 = (1 << 25) - 1;
/// Where a `seq`'s shard starts.
const SHARD_SHIFT: u32 = 57;
/// Shards a runtime's timers may have (6 bits of a `seq`).
pub(crate) const MAX_SHARDS: usize = 64;

/// The shard of the heap that armed timer `seq`.
pub(crate) fn shard_of_seq(seq: u64) -> usize {
    (seq >> SHARD_SHIFT) as usize & (MAX_SHARDS - 1)
}

/// The generation bits of `seq`.
fn generation_of(seq: u64) -> u64 {
    (seq >> 32) & u64::from(GENERATION_MASK)
}

impl ArmedSet {
    /// Arm a new timer in shard `shard`'s set; its `seq`.
    fn arm(&mut self, cached: bool, shard: usize) -> u64 {
        let index = match self.free.pop() {
            Some(index) => index,
            None => {
                // 2^32 armed timers would hold 200 GiB of entries first.
                let index = self.records.len() as u32;
                self.records.push(Record {
                    generation: 0,
                    armed: false,
                    cached: false,
                });
                index
            }
        };
        let record = &mut self.records[index as usize];
        record.armed = true;
        record.cached = cached;
        self.len += 1;
        (shard as u64) << SHARD_SHIFT | u64::from(record.generation) << 32 | u64::from(index)
    }

    /// The record of `seq`, if `seq` is armed.
    fn armed_record(&mut self, seq: u64) -> Option<&mut Record> {
        let record = self.records.get_mut((seq & u64::from(u32::MAX)) as usize)?;
        (record.armed && u64::from(record.generation) == generation_of(seq)).then_some(record)
    }

    fn is_armed(&self, seq: u64) -> bool {
        self.records
            .get((seq & u64::from(u32::MAX)) as usize)
            .is_some_and(|r| r.armed && u64::from(r.generation) == generation_of(seq))
    }

    /// Disarm `seq`: whether it was a cached timer, if it was armed.
    fn disarm(&mut self, seq: u64) -> Option<bool> {
        let record = self.armed_record(seq)?;
        let cached = record.cached;
        record.armed = false;
        record.generation = (record.generation + 1) & GENERATION_MASK;
        self.free.push((seq & u64::from(u32::MAX)) as u32);
        self.len -= 1;
        Some(cached)
    }

    fn len(&self) -> usize {
        self.len
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Disarm every timer.
    fn clear(&mut self) {
        for (index, record) in self.records.iter_mut().enumerate() {
            if record.armed {
                record.armed = false;
                record.generation = (record.generation + 1) & GENERATION_MASK;
                self.free.push(index as u32);
            }
        }
        self.len = 0;
    }
}

#[cfg(all(test, not(loom)))]
#[allow(clippy::disallowed_methods)] // real time: the tests measure the OS clock
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn wake(pid: u32) -> (Pid, TimerAction) {
        (Pid::from_parts(pid, 1), TimerAction::WakeBounded)
    }

    /// `t` in the heap's time base.
    fn at(c: &Coordinator, t: Instant) -> u64 {
        c.deadline_nanos(t)
    }

    #[test]
    fn pops_in_deadline_then_insertion_order() {
        let c = Coordinator::new(1);
        let mut h = TimerHeap::new(1, 0);
        let t0 = Instant::now();
        for (i, ms) in [(1u32, 30u64), (2, 10), (3, 20), (4, 10)] {
            let (pid, a) = wake(i);
            h.insert(
                &c,
                at(&c, t0 + Duration::from_millis(ms)),
                pid,
                a,
                Clock::Virtual,
            );
        }
        let mut out = Vec::new();
        h.pop_due(&c, at(&c, t0 + Duration::from_millis(25)), &mut out);
        let order: Vec<u32> = out.iter().map(|e| e.pid.index()).collect();
        assert_eq!(order, [2, 4, 3], "earliest first, ties in insertion order");
        assert_eq!(c.next_deadline(), Some(t0 + Duration::from_millis(30)));
    }

    #[test]
    fn cancelled_timer_never_fires_and_cancel_is_once() {
        let c = Coordinator::new(1);
        let mut h = TimerHeap::new(1, 0);
        let t0 = Instant::now();
        let (p1, a1) = wake(1);
        let (p2, a2) = wake(2);
        let id = h.insert(&c, at(&c, t0), p1, a1, Clock::Virtual);
        h.insert(&c, at(&c, t0), p2, a2, Clock::Virtual);
        assert!(h.cancel(&c, id));
        assert!(
            !h.cancel(&c, id),
            "a second cancel reports the timer was not armed"
        );
        let mut out = Vec::new();
        h.pop_due(&c, at(&c, t0), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].pid.index(), 2);
        assert_eq!(h.armed(), 0);
    }

    #[test]
    fn cancelling_the_last_armed_timer_clears_the_snapshot() {
        let c = Coordinator::new(1);
        let mut h = TimerHeap::new(1, 0);
        let (p, a) = wake(1);
        let id = h.insert(
            &c,
            at(&c, Instant::now() + Duration::from_secs(3600)),
            p,
            a,
            Clock::Virtual,
        );
        assert!(c.next_deadline().is_some());
        assert!(h.cancel(&c, id));
        assert_eq!(c.next_deadline(), None);
        assert_eq!(h.peek_deadline(), None);
    }

    /// Timers spread over many milliseconds, armed out of order, some
    /// cancelled: pops at rising times give every armed one exactly once,
    /// in `(deadline, seq)` order and never before its deadline, and the
    /// shard's deadline word is always the earliest armed-or-cancelled entry.
    #[test]
    fn timers_across_buckets_fire_in_order_once_and_never_early() {
        let c = Coordinator::new(1);
        let mut h = TimerHeap::new(1, 0);
        let t0 = Instant::now();
        // A fixed shuffle of 0..2000 (multiplication by a unit mod 2000),
        // deadlines in 0.25 ms steps: 4 per millisecond bucket.
        let mut ids = Vec::new();
        for i in 0..2000u64 {
            let k = (i * 1337) % 2000;
            let due = at(&c, t0 + Duration::from_micros(250 * k));
            let (pid, a) = wake(k as u32);
            ids.push((k, h.insert(&c, due, pid, a, Clock::Virtual)));
        }
        let cancelled: std::collections::HashSet<u64> = ids
            .iter()
            .filter(|(k, _)| k % 7 == 3)
            .map(|(k, _)| *k)
            .collect();
        for (k, id) in &ids {
            if cancelled.contains(k) {
                assert!(h.cancel(&c, *id));
            }
        }
        let mut fired = Vec::new();
        let mut out = Vec::new();
        for step in 0..=530u64 {
            let now = at(&c, t0 + Duration::from_micros(950 * step));
            h.pop_due(&c, now, &mut out);
            for e in out.drain(..) {
                assert!(e.deadline <= now, "fired before its deadline");
                fired.push(e.pid.index() as u64);
            }
            let mut garbage = h.take_garbage();
            garbage.clear();
            if let Some(next) = h.peek_deadline() {
                assert!(next > now, "a due entry was left behind");
            }
        }
        let expected: Vec<u64> = (0..2000).filter(|k| !cancelled.contains(k)).collect();
        assert_eq!(fired, expected);
        assert_eq!(h.armed(), 0);
        assert_eq!(h.peek_deadline(), None);
    }

    /// Compaction sweeps cancelled entries out of the buckets too, and the
    /// snapshot is then the earliest armed deadline exactly.
    #[test]
    fn compaction_reaches_the_buckets_and_keeps_the_snapshot_exact() {
        let c = Coordinator::new(1);
        let mut h = TimerHeap::new(1, 0);
        let t0 = Instant::now() + Duration::from_secs(1);
        let ids: Vec<_> = (0..1000u32)
            .map(|i| {
                let (pid, a) = wake(i);
                h.insert(
                    &c,
                    at(&c, t0 + Duration::from_micros(100 * u64::from(i))),
                    pid,
                    a,
                    Clock::Virtual,
                )
            })
            .collect();
        for id in &ids[..999] {
            assert!(h.cancel(&c, *id));
        }
        assert!(
            h.len() < COMPACT_SLACK + 2,
            "cancelled entries were compacted: {}",
            h.len()
        );
        let last = t0 + Duration::from_micros(100 * 999);
        assert_eq!(h.peek_deadline(), Some(at(&c, last)));
        assert_eq!(c.next_deadline(), Some(last));
        let mut out = Vec::new();
        h.pop_due(&c, at(&c, last), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].pid.index(), 999);
    }

    /// A timer's record is reused once it fired: the old `TimerId` then
    /// names nothing, and cancelling it leaves the new timer armed.
    #[test]
    fn a_stale_timer_id_never_cancels_the_timer_that_reuses_its_record() {
        let c = Coordinator::new(1);
        let mut h = TimerHeap::new(1, 0);
        let t0 = Instant::now();
        let (p1, a1) = wake(1);
        let old = h.insert(&c, at(&c, t0), p1, a1, Clock::Virtual);
        let mut out = Vec::new();
        h.pop_due(&c, at(&c, t0), &mut out);
        assert_eq!(out.len(), 1);
        let (p2, a2) = wake(2);
        let new = h.insert(&c, at(&c, t0), p2, a2, Clock::Virtual);
        assert_eq!(
            old.seq() & 0xffff_ffff,
            new.seq() & 0xffff_ffff,
            "the record is reused"
        );
        assert!(!h.cancel(&c, old), "the fired timer's id names nothing");
        out.clear();
        h.pop_due(&c, at(&c, t0), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].pid.index(), 2);
        assert!(!h.cancel(&c, new), "fired: no longer armed");
    }

    /// A timer's id names the shard that armed it, through generations of
    /// its record, and another shard's heap never cancels it (a cancel is
    /// routed by that name: timers.rs).
    #[test]
    fn a_timer_id_names_its_shard_and_only_that_shard_cancels_it() {
        let c = Coordinator::with_timer_shards(1, MAX_SHARDS);
        let t0 = Instant::now() + Duration::from_secs(1);
        let mut other = TimerHeap::new(1, 5);
        let mut last = TimerHeap::new(1, MAX_SHARDS - 1);
        for round in 0..3 {
            let (p, a) = wake(round);
            let id = last.insert(&c, at(&c, t0), p, a, Clock::Virtual);
            assert_eq!(shard_of_seq(id.seq()), MAX_SHARDS - 1);
            assert!(!other.cancel(&c, id), "cancelled by another shard's heap");
            assert!(last.cancel(&c, id), "its own shard's heap cancels it");
            assert!(id.seq() < u64::MAX >> 1, "seq + 1 must never overflow");
        }
        let (p, a) = wake(9);
        let id = other.insert(&c, at(&c, t0), p, a, Clock::Virtual);
        assert_eq!(shard_of_seq(id.seq()), 5);
        assert_eq!(
            c.shard_deadline(5),
            at(&c, t0),
            "the shard's own deadline word"
        );
        assert_eq!(
            c.shard_deadline(MAX_SHARDS - 1),
            u64::MAX,
            "cancelled: empty"
        );
    }
}
