//! `Coordinator`: the idle mask, the wake protocol, the timekeeper role and
//! one earliest-deadline word per timer shard (see the module docs for the
//! proofs).

use super::parker::Parker;
use crate::loom::{AtomicU64, Ordering, fence};
use crossbeam_utils::CachePadded;
use std::time::Instant;

/// "No timekeeper" in the holder word.
const NO_TIMEKEEPER: u64 = u64::MAX;
/// "No deadline" in the deadline words; also what the due-check compares
/// against, so `now < NO_DEADLINE` is one branch.
pub(crate) const NO_DEADLINE: u64 = u64::MAX;

/// How a [`Coordinator::park`] call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParkResult {
    /// A permit was consumed (a wake landed before or during the park).
    Woken,
    /// The deadline passed with no wake (never under loom).
    TimedOut,
    /// The post-publish re-check found work; the thread never blocked. A
    /// permit may still be pending from a racing `wake_one`; it surfaces as
    /// one spurious `Woken` later (over-wake by design).
    WorkFound,
}

pub(crate) struct Coordinator {
    parkers: Box<[Parker]>,
    /// Bit `i` set = scheduler `i` is parked or committed to parking (I1).
    idle: AtomicU64,
    /// Bit `i` set = scheduler `i` parks in the IO poller (I6): a hint
    /// for `wake_one`, which prefers the others.
    polling: AtomicU64,
    /// Timekeeper holder id, or `NO_TIMEKEEPER` (I4).
    tk_holder: AtomicU64,
    /// The holder's armed deadline in nanos since `origin`, or `NO_DEADLINE`.
    tk_armed: AtomicU64,
    /// Per timer shard: its earliest deadline (nanos since `origin`) or
    /// `NO_DEADLINE`, whether or not anyone is parked. Written only under
    /// that shard's lock (I4); the busy-path due-check and the timekeeper
    /// read them all.
    shard_deadlines: Box<[ShardDeadline]>,
    origin: Instant,
    /// The monotonic clock at (or just before) `origin`, in nanoseconds:
    /// what [`Coordinator::now_nanos`] counts from.
    origin_clock: u64,
    /// Causal profiling's experiment state (feature `smarm-causal`): the
    /// delay inserted so far is a second clock beside this one, which
    /// every non-wall timer waits out too (`timer/heap.rs`).
    #[cfg(feature = "smarm-causal")]
    pub(crate) causal: crate::causal::delay::Delays,
}

/// One timer shard's earliest deadline, on a line of its own: its owner
/// writes it at every earlier insert and every pop, and every scheduler
/// reads it at its due-check.
struct ShardDeadline(CachePadded<AtomicU64>);

impl Coordinator {
    /// A coordinator for `schedulers` schedulers (1..=64: the mask is a u64)
    /// and one timer shard.
    #[cfg(test)]
    pub(crate) fn new(schedulers: usize) -> Self {
        Self::with_timer_shards(schedulers, 1)
    }

    /// A coordinator for `schedulers` schedulers (1..=64: the mask is a u64)
    /// whose timers are kept in `shards` shards (1..=64), each under a lock
    /// of its own.
    pub(crate) fn with_timer_shards(schedulers: usize, shards: usize) -> Self {
        assert!(
            (1..=64).contains(&schedulers),
            "smarm: scheduler count must be 1..=64 (the idle mask is one u64); got {schedulers}"
        );
        assert!(
            (1..=64).contains(&shards),
            "smarm: timer shard count must be 1..=64; got {shards}"
        );
        Coordinator {
            shard_deadlines: (0..shards)
                .map(|_| ShardDeadline(CachePadded::new(AtomicU64::new(NO_DEADLINE))))
                .collect(),
            parkers: (0..schedulers).map(|_| Parker::new()).collect(),
            idle: AtomicU64::new(0),
            polling: AtomicU64::new(0),
            tk_holder: AtomicU64::new(NO_TIMEKEEPER),
            tk_armed: AtomicU64::new(NO_DEADLINE),
            // The clock first: `now_nanos` then runs ahead of nanos derived
            // from an `Instant` by at most the gap, so deadlines computed
            // with it fire late by that gap at worst, never early.
            origin_clock: crate::clock::monotonic_nanos(),
            origin: crate::clock::instant(),
            #[cfg(feature = "smarm-causal")]
            causal: crate::causal::delay::Delays::default(),
        }
    }

    /// The delay causal profiling has inserted so far, in nanos (feature
    /// `smarm-causal`): what every timer on the virtual clock waits out on
    /// top of its deadline.
    #[cfg(feature = "smarm-causal")]
    #[inline(always)]
    pub(crate) fn inserted_delay(&self) -> u64 {
        self.causal.global()
    }

    /// Nanos since `origin`, read straight off the monotonic clock (the
    /// one `Instant` reads), without `Instant`'s arithmetic.
    #[inline]
    pub(crate) fn now_nanos(&self) -> u64 {
        crate::clock::monotonic_nanos().saturating_sub(self.origin_clock)
    }

    /// The deadline `timeout` from now, in nanos since `origin`; `None` if
    /// it is beyond any clock (never due).
    #[inline]
    pub(crate) fn deadline_after(&self, timeout: std::time::Duration) -> Option<u64> {
        let t = u64::try_from(timeout.as_nanos()).ok()?;
        self.now_nanos()
            .checked_add(t)
            .filter(|at| *at < NO_DEADLINE - 1)
    }

    /// [`deadline_after`](Self::deadline_after), saturating where that
    /// is `None` as [`deadline_nanos`](Self::deadline_nanos) does: a
    /// deadline beyond any clock is `NO_DEADLINE - 1` (never due).
    #[inline]
    pub(crate) fn deadline_after_saturating(&self, timeout: std::time::Duration) -> u64 {
        self.deadline_after(timeout).unwrap_or(NO_DEADLINE - 1)
    }

    /// A deadline in nanos since `origin` as an `Instant` (saturating at
    /// a century out: later than any timer can matter).
    pub(crate) fn instant_at(&self, nanos: u64) -> Instant {
        const CENTURY: u64 = 100 * 365 * 24 * 3600 * 1_000_000_000;
        self.origin + std::time::Duration::from_nanos(nanos.min(CENTURY))
    }

    /// Encode a deadline as nanos since `origin`, saturating: at or before
    /// the origin is 0 (always due), beyond ~584 years is `NO_DEADLINE - 1`.
    pub(crate) fn deadline_nanos(&self, deadline: Instant) -> u64 {
        let nanos = deadline
            .checked_duration_since(self.origin)
            .map_or(0, |d| d.as_nanos());
        u64::try_from(nanos).map_or(NO_DEADLINE - 1, |n| n.min(NO_DEADLINE - 1))
    }

    /// Park scheduler `id` until a wake, `deadline`, or a positive re-check.
    ///
    /// Protocol: (1) publish the idle bit, (2) fence, (3) run `recheck`,
    /// which must re-read every work source (a `true` aborts the park),
    /// (4) block on the parker. (I2)
    pub(crate) fn park(
        &self,
        id: usize,
        deadline: Option<Instant>,
        recheck: impl FnOnce() -> bool,
    ) -> ParkResult {
        self.park_with(id, recheck, |parker| parker.park(deadline))
    }

    /// [`park`](Self::park), blocking in `poll` instead of the futex: the
    /// scheduler is the runtime's IO poller while it sleeps (I6). `poll`
    /// gets the time left and returns whether it found work; a wake
    /// writes `wake_fd`, which `poll` must watch.
    pub(crate) fn park_polling(
        &self,
        id: usize,
        deadline: Option<Instant>,
        recheck: impl FnOnce() -> bool,
        wake_fd: std::os::fd::RawFd,
        poll: impl FnMut(Option<std::time::Duration>) -> bool,
    ) -> ParkResult {
        let bit = 1u64 << id;
        self.polling.fetch_or(bit, Ordering::Relaxed);
        let result = self.park_with(id, recheck, |parker| {
            parker.park_polling(deadline, wake_fd, poll)
        });
        self.polling.fetch_and(!bit, Ordering::Relaxed);
        result
    }

    fn park_with(
        &self,
        id: usize,
        recheck: impl FnOnce() -> bool,
        block: impl FnOnce(&Parker) -> bool,
    ) -> ParkResult {
        debug_assert!(id < self.parkers.len(), "park: scheduler id out of range");
        let bit = 1u64 << id;
        let prev = self.idle.fetch_or(bit, Ordering::AcqRel);
        debug_assert_eq!(prev & bit, 0, "park: idle bit already set (I1)");
        // Pairs with the producer's fence in `wake_one_if_idle` (module docs).
        fence(Ordering::SeqCst);
        if recheck() {
            self.idle.fetch_and(!bit, Ordering::AcqRel);
            return ParkResult::WorkFound;
        }
        // A wake_one that picked us after the re-check has CASed our bit
        // clear and left a permit, so this returns at once.
        let woken = block(&self.parkers[id]);
        self.idle.fetch_and(!bit, Ordering::AcqRel);
        if woken {
            ParkResult::Woken
        } else {
            ParkResult::TimedOut
        }
    }

    /// Wake exactly one parked scheduler, if any: the highest idle bit
    /// (warmest cache), CASed clear, then a permit (I3). The IO poller is
    /// woken only when no other scheduler is idle: it keeps polling (I6).
    /// Returns whether a scheduler was woken. Out of line: the enqueue
    /// tail inlines only its fenced load.
    #[inline(never)]
    pub(crate) fn wake_one(&self) -> bool {
        // RMW read: the latest mask by modification-order coherence.
        let mut mask = self.idle.fetch_or(0, Ordering::AcqRel);
        loop {
            if mask == 0 {
                return false;
            }
            let others = mask & !self.polling.load(Ordering::Relaxed);
            let pick = if others != 0 { others } else { mask };
            let id = 63 - pick.leading_zeros() as usize;
            let bit = 1u64 << id;
            match self
                .idle
                .compare_exchange(mask, mask & !bit, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    self.parkers[id].unpark();
                    return true;
                }
                Err(current) => mask = current,
            }
        }
    }

    /// The producer wake tail, run after every enqueue: a fence, then one
    /// Relaxed load of the mask; only if someone is idle, `wake_one`. (I2)
    pub(crate) fn wake_one_if_idle(&self) -> bool {
        fence(Ordering::SeqCst);
        if self.idle.load(Ordering::Relaxed) == 0 {
            return false;
        }
        self.wake_one()
    }

    /// Wake scheduler `id` specifically (a permit if it is not parked).
    pub(crate) fn unpark(&self, id: usize) {
        self.parkers[id].unpark();
    }

    /// Terminal wake: clear the mask and permit every parker. Idempotent; a
    /// permit left on a busy scheduler costs one spurious park return.
    pub(crate) fn wake_all(&self) {
        self.idle.store(0, Ordering::Release);
        for p in self.parkers.iter() {
            p.unpark();
        }
    }

    /// The latest idle mask (RMW read).
    pub(crate) fn idle_mask(&self) -> u64 {
        self.idle.fetch_or(0, Ordering::AcqRel)
    }

    // ----- timekeeper (I4) -----

    /// Take the timekeeper role for scheduler `id` if nobody holds it and a
    /// timer is pending: the deadline to park toward, or `None` (park with
    /// no deadline). Lock-free: after publishing its armed deadline the
    /// holder re-reads every shard's deadline, and an insert publishes its
    /// shard's deadline before it reads the armed one (`note_deadline_at`),
    /// so of the two, one sees the other (I4): an earlier insert is armed
    /// here, or wakes the holder to re-peek.
    pub(crate) fn keep_time(&self, id: usize) -> Option<Instant> {
        let earliest = self.earliest_deadline();
        if earliest == NO_DEADLINE || !self.try_arm_timer_at(id, earliest) {
            return None;
        }
        let mut armed = earliest;
        loop {
            // Pairs with the fence in `note_deadline_at` (I4).
            fence(Ordering::SeqCst);
            let now = self.earliest_deadline();
            if now >= armed {
                return Some(self.instant_at(armed));
            }
            armed = now;
            self.tk_armed.store(armed, Ordering::SeqCst);
        }
    }

    /// Try to take the timekeeper role for scheduler `id`, with `deadline`
    /// the earliest pending timer. `false` = someone else holds it.
    #[cfg(test)]
    pub(crate) fn try_arm_timer(&self, id: usize, deadline: Instant) -> bool {
        self.try_arm_timer_at(id, self.deadline_nanos(deadline))
    }

    fn try_arm_timer_at(&self, id: usize, deadline: u64) -> bool {
        debug_assert!(id < self.parkers.len(), "try_arm_timer: id out of range");
        if self
            .tk_holder
            .compare_exchange(NO_TIMEKEEPER, id as u64, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return false;
        }
        // Holder before deadline: an insert-check that sees the holder with
        // NO_DEADLINE still in place compares `new < MAX` and over-wakes.
        self.tk_armed.store(deadline, Ordering::SeqCst);
        true
    }

    /// Hand back the timekeeper role (the holder, on waking, before it
    /// fires timers). A racing insert may then wake a non-holder: over-wake.
    pub(crate) fn disarm_timer(&self, id: usize) {
        debug_assert_eq!(
            self.tk_holder.load(Ordering::SeqCst),
            id as u64,
            "disarm_timer by a non-holder"
        );
        // Deadline first, so a concurrent insert-check skips a pointless wake.
        self.tk_armed.store(NO_DEADLINE, Ordering::SeqCst);
        self.tk_holder.store(NO_TIMEKEEPER, Ordering::SeqCst);
    }

    /// `timer_inserted_at` for an `Instant` (tests and models).
    #[cfg(test)]
    pub(crate) fn timer_inserted(&self, deadline: Instant) {
        self.timer_inserted_at(self.deadline_nanos(deadline));
    }

    /// Insert-side re-arm check for `deadline` (nanos since `origin`):
    /// wake the timekeeper if it is earlier than the one it sleeps toward;
    /// with no timekeeper, wake an idle scheduler to become one (I5).
    /// Called after the shard's deadline is stored.
    fn timer_inserted_at(&self, deadline: u64) {
        if deadline < self.tk_armed.load(Ordering::SeqCst) {
            let holder = self.tk_holder.load(Ordering::SeqCst);
            if holder != NO_TIMEKEEPER {
                // Direct: the holder must re-peek, whoever else is idle.
                self.parkers[holder as usize].unpark();
            } else {
                // Nobody keeps time: the busy schedulers' due-check fires
                // it only while they keep coming back to their loop, and
                // one blocked in a system call does not.
                self.wake_one_if_idle();
            }
        }
    }

    /// A timer is pending and no parked scheduler keeps time for it: a
    /// scheduler about to park must take the role instead (I5). Part of
    /// the park re-check, so it pairs with `timer_inserted_at`'s fenced
    /// idle-mask load.
    pub(crate) fn timer_unkept(&self) -> bool {
        self.earliest_deadline() != NO_DEADLINE
            && self.tk_holder.load(Ordering::SeqCst) == NO_TIMEKEEPER
    }

    /// The timekeeper's armed deadline (nanos since origin).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn armed_deadline_nanos(&self) -> u64 {
        self.tk_armed.load(Ordering::Relaxed)
    }

    // ----- the shards' deadlines (busy-path due-check) -----

    /// How many timer shards there are.
    pub(crate) fn timer_shards(&self) -> usize {
        self.shard_deadlines.len()
    }

    /// The timer shard of scheduler `id` (a spare's is a regular one's).
    pub(crate) fn shard_of(&self, id: usize) -> usize {
        id % self.shard_deadlines.len()
    }

    /// `note_deadline_at` on shard 0, for an `Instant` (tests and models).
    #[cfg(test)]
    pub(crate) fn note_deadline(&self, deadline: Instant) {
        self.note_deadline_at(0, self.deadline_nanos(deadline));
    }

    /// Note a deadline `n` (nanos since `origin`, the timer heap's time
    /// base) newly inserted into `shard` (its lock held): lower the shard's
    /// deadline if earlier, and run the timekeeper re-arm check. An insert
    /// no earlier than a timer already pending in its shard needs no
    /// check: the timekeeper, if any, is armed no later than that timer
    /// (I4), and with none, the insert of that timer made sure one would
    /// come (I5).
    pub(crate) fn note_deadline_at(&self, shard: usize, n: u64) {
        let word = &self.shard_deadlines[shard].0;
        if n >= word.load(Ordering::Relaxed) {
            return;
        }
        word.store(n, Ordering::SeqCst);
        // The store-buffer pair with `keep_time`'s publish, fence, re-read
        // (I4): of the two fences, the later one's side sees the other's
        // store.
        fence(Ordering::SeqCst);
        self.timer_inserted_at(n);
    }

    /// `refresh_deadline_at` on shard 0, for an `Instant` (tests).
    #[cfg(test)]
    pub(crate) fn refresh_deadline(&self, next: Option<Instant>) {
        self.refresh_deadline_at(0, next.map(|d| self.deadline_nanos(d)));
    }

    /// Re-anchor `shard`'s deadline to its heap minimum `next` (nanos
    /// since `origin`) after a pop or clear (its lock held). `None` = the
    /// shard is empty.
    pub(crate) fn refresh_deadline_at(&self, shard: usize, next: Option<u64>) {
        self.shard_deadlines[shard]
            .0
            .store(next.unwrap_or(NO_DEADLINE), Ordering::SeqCst);
    }

    /// `shard`'s earliest deadline (nanos since `origin`), or `NO_DEADLINE`.
    #[inline]
    pub(crate) fn shard_deadline(&self, shard: usize) -> u64 {
        self.shard_deadlines[shard].0.load(Ordering::Relaxed)
    }

    /// The earliest deadline of all shards (nanos since `origin`), or
    /// `NO_DEADLINE`.
    fn earliest_deadline(&self) -> u64 {
        self.shard_deadlines
            .iter()
            .map(|d| d.0.load(Ordering::SeqCst))
            .min()
            .unwrap_or(NO_DEADLINE)
    }

    /// The earliest deadline of all shards in nanos since the origin, if a
    /// timer is pending: where a simulation moves its clock when every
    /// scheduler is idle.
    #[cfg(feature = "sim")]
    pub(crate) fn earliest_deadline_nanos(&self) -> Option<u64> {
        Some(self.earliest_deadline()).filter(|&n| n != NO_DEADLINE)
    }

    /// Busy-path due-check: a Relaxed load per shard when no timer exists;
    /// the clock is read only when one does.
    #[inline]
    pub(crate) fn deadline_due(&self) -> bool {
        let n = self
            .shard_deadlines
            .iter()
            .map(|d| d.0.load(Ordering::Relaxed))
            .min()
            .unwrap_or(NO_DEADLINE);
        n != NO_DEADLINE && self.now_nanos() >= n
    }

    /// The earliest deadline as an `Instant` (`None` = no timer pending).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        let n = self.earliest_deadline();
        if n == NO_DEADLINE {
            None
        } else {
            self.origin.checked_add(std::time::Duration::from_nanos(n))
        }
    }
}
