//! Bounded waits (`sleep`, `recv_timeout`, `select_timeout`,
//! `Mutex::lock_timeout`): one cached timer per actor instead of a timer
//! armed and cancelled per wait.
//!
//! A bounded wait usually ends long before its deadline (a call's reply
//! arrives in microseconds; its timeout is seconds away), so arming a heap
//! timer and cancelling it on every wait is mostly wasted work under a
//! timers lock. Instead the actor marks its slot as being in a
//! bounded wait (`bounded_epoch`), and makes sure a timer of its own is
//! pending no later than the deadline: the one it armed for an earlier wait
//! if that one is due soon enough, else a new one. When a cached timer
//! fires it wakes whatever bounded wait the actor is in by then; the wait
//! re-checks its own deadline and, if it is not reached, waits again with a
//! new timer. A wait may therefore wake early, never late.
//!
//! # Invariants
//!
//! - (B1) While an actor is in a bounded wait, a timer of its own with a
//!   deadline no later than the wait's is armed, or has fired after the
//!   wait was marked (and so woke it). The actor marks the wait, then (SeqCst
//!   fence) looks at its cached timer; a firing timer clears its mark, then
//!   (SeqCst fence) reads the actor's wait: either the actor sees the timer
//!   gone and arms a new one, or the timer sees the wait and wakes it. The
//!   loom model below checks this handshake.
//!   A timer is recorded as cached under the timers lock it is inserted
//!   under, so its fire (which pops it under that lock) always clears it.
//! - (B2) A cached timer wakes only the wait that is current when it fires,
//!   by that wait's `WaitId`: a wait that ended is never
//!   woken, and a wait that is not bounded is never marked.
//! - (B3) A finished actor's cached timer is cancelled at finalisation, so
//!   pending timers stay bounded by live actors; the root-exit sweep counts
//!   a cached timer only while its actor is in a bounded wait.

use super::heap::{Clock, TimerAction, TimerHeap};
use super::timers::Timers;
use crate::lock::RawMutex;
use crate::loom::{Ordering, fence};
use crate::park::Coordinator;
use crate::slot::{Pid, Slot, SlotTable, WaitId};

/// Enter the bounded wait `wait` of the actor in `slot`, ending at `at`
/// (coordinator nanos), arming a new cached timer if the one it has fires
/// too late (B1). Call with the wait open, before parking; call [`leave`]
/// when the wait is over (including on an unwind).
pub(crate) fn arm(
    slot: &Slot,
    timers: &RawMutex<TimerHeap>,
    coord: &Coordinator,
    wait: WaitId,
    at: u64,
    clock: Clock,
) {
    // Read before the insert stamps its own: a cached level no later than
    // the timer's makes the reuse check err on the side of a new timer (as
    // does 0 while no session runs: levels only grow).
    let level = session_level(coord);
    if !enter(slot, wait.epoch, at, clock, level) {
        return; // the cached timer fires in time (B1)
    }
    // Cache it before the timers lock is released: the timer can only be
    // popped (and fire) under that lock, so its fire always finds it cached
    // and clears it. Cached after the release, a timer that fired at once
    // would stay cached, and a later wait reusing it would never be woken
    // (B1).
    let mut heap = timers.lock();
    let id = heap.insert(coord, at, wait.pid, TimerAction::WakeBounded, clock);
    cache(slot, id.seq(), at, clock, level);
    drop(heap);
}

/// The actor of `slot` left its bounded wait (B2).
#[inline]
pub(crate) fn leave(slot: &Slot) {
    slot.bounded_epoch.store(0, Ordering::SeqCst);
}

/// Mark the bounded wait `epoch` (ending at `at` on `clock`, armed while
/// the inserted delay is `level`) on the actor's slot; `true` if a new
/// timer must be armed (none cached, or the cached one is due too late)
/// (B1).
fn enter(slot: &Slot, epoch: u32, at: u64, clock: Clock, level: u64) -> bool {
    slot.bounded_epoch.store(epoch + 1, Ordering::Relaxed);
    fence(Ordering::SeqCst);
    slot.wait_timer_seq.load(Ordering::Relaxed) == 0
        || !fires_by(
            slot.wait_timer_at.load(Ordering::Relaxed),
            cached_level(slot),
            at,
            clock,
            level,
        )
}

/// Whether a cached timer due at `cached_at`, armed while the inserted
/// delay was `cached_level`, fires no later than a timer armed now (delay
/// `level`) for `at` on `clock` would (heap (H3)). Without causal
/// profiling nothing shifts: the earlier deadline fires first.
fn fires_by(cached_at: u64, cached_level: u64, at: u64, clock: Clock, level: u64) -> bool {
    #[cfg(feature = "smarm-causal")]
    {
        match (cached_level == super::heap::WALL, clock) {
            (true, _) => cached_at <= at,
            // It may yet shift past a deadline that does not.
            (false, Clock::Wall) => false,
            // Both shift alike from here; the cached one has already
            // shifted by what was inserted since it was armed.
            (false, Clock::Virtual) => {
                cached_at.saturating_add(level.saturating_sub(cached_level)) <= at
            }
        }
    }
    #[cfg(not(feature = "smarm-causal"))]
    {
        let _ = (cached_level, clock, level);
        cached_at <= at
    }
}

/// The delay inserted so far while a profiling session runs, else 0
/// (feature `smarm-causal`; always 0 without it).
#[inline(always)]
fn session_level(coord: &Coordinator) -> u64 {
    #[cfg(feature = "smarm-causal")]
    if crate::causal::delay::any_session() {
        return coord.inserted_delay();
    }
    let _ = coord;
    0
}

/// The inserted delay the actor's cached timer was armed at (feature
/// `smarm-causal`; 0 without it).
fn cached_level(slot: &Slot) -> u64 {
    #[cfg(feature = "smarm-causal")]
    {
        slot.causal.timer_level.load(Ordering::Relaxed)
    }
    #[cfg(not(feature = "smarm-causal"))]
    {
        let _ = slot;
        0
    }
}

/// Record the timer `seq`, due at `at` on `clock` and armed at inserted
/// delay `level`, as the actor's cached one.
fn cache(slot: &Slot, seq: u64, at: u64, clock: Clock, level: u64) {
    #[cfg(feature = "smarm-causal")]
    slot.causal.timer_level.store(
        match clock {
            Clock::Virtual => level,
            Clock::Wall => super::heap::WALL,
        },
        Ordering::Relaxed,
    );
    #[cfg(not(feature = "smarm-causal"))]
    let _ = (clock, level);
    slot.wait_timer_at.store(at, Ordering::Relaxed);
    slot.wait_timer_seq.store(seq + 1, Ordering::Release);
}

/// The cached timer `seq` fired: clear it and return the epoch of the
/// bounded wait to wake, if the actor is in one (B1, B2).
fn fired(slot: &Slot, seq: u64) -> Option<u32> {
    let _ = slot
        .wait_timer_seq
        .compare_exchange(seq + 1, 0, Ordering::AcqRel, Ordering::Relaxed);
    fence(Ordering::SeqCst);
    match slot.bounded_epoch.load(Ordering::Relaxed) {
        0 => None,
        bounded => Some(bounded - 1),
    }
}

/// A cached timer `seq` of `pid` fired: the wait to wake, if the actor
/// (still that incarnation) is in a bounded wait (B1, B2). Runs on a
/// scheduler, outside the timers lock.
pub(crate) fn fire(slots: &SlotTable, pid: Pid, seq: u64) -> Option<WaitId> {
    let slot = slots.get(pid.index())?;
    if slot.word.load().generation() != pid.generation() {
        return None; // finished (its timer was cancelled, this one raced it)
    }
    fired(slot, seq).map(|epoch| WaitId { pid, epoch })
}

/// The actor of `slot` finished: cancel its cached timer (B3), in the
/// shard that armed it (its `seq` says which).
pub(crate) fn finish(slot: &Slot, timers: &Timers, coord: &Coordinator) {
    slot.bounded_epoch.store(0, Ordering::Relaxed);
    let seq = slot.wait_timer_seq.swap(0, Ordering::SeqCst);
    if let Some(shard) = seq.checked_sub(1).and_then(|seq| timers.shard_for_seq(seq)) {
        let garbage = {
            let mut heap = shard.heap().lock();
            heap.cancel_cached(coord, seq - 1);
            heap.take_garbage()
        };
        drop(garbage);
    }
}

/// Whether any actor of `slots` is in a bounded wait (its cached timer
/// may be the one thing that wakes it: B3). Scans the slots: only the
/// root-exit sweep asks.
pub(crate) fn any_waiting(slots: &SlotTable) -> bool {
    (0..slots.high_water()).any(|i| {
        slots
            .get(i as u32)
            .is_some_and(|slot| slot.bounded_epoch.load(Ordering::SeqCst) != 0)
    })
}

#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// The actor enters a bounded wait while its cached timer (seq 7, due
    /// at 100) fires. Either the actor arms a new timer, or the firing timer
    /// wakes this very wait: never neither (B1).
    #[test]
    fn a_bounded_wait_is_never_left_without_a_timer() {
        loom::model(|| {
            let slot = Arc::new(Slot::new());
            cache(&slot, 7, 100, Clock::Virtual, 0);
            let timer = {
                let slot = slot.clone();
                thread::spawn(move || fired(&slot, 7))
            };
            let arms_new = enter(&slot, 3, 200, Clock::Virtual, 0);
            let woke = timer.join().unwrap();
            assert!(
                arms_new || woke == Some(3),
                "the wait kept a timer that had already fired without waking it"
            );
        });
    }
}
