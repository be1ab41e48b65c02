//! Switching the running actor out: why it leaves (`Intent`), the park
//! and the yield, and the cooperative stop observed on the way
//! (`StopSignal`).

use super::{outside_actor, preempt, with_worker, worker};
use crate::slot::table::PINNED_UNWINDING;

/// Why an actor switched back to its scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Intent {
    /// Run again later (back of the local queue).
    Yield,
    /// Suspend until a matching wake (commit the park on the slot word).
    Park,
    /// Timeslice spent at a safepoint: run again later, on this thread.
    Preempt,
    /// The actor finished; how, is in `Worker::exit_result`.
    Exit,
    /// The actor overflowed its stack and is ended where it stands (set by
    /// the overflow handler, `life.rs`).
    Overflow,
    /// The actor hibernates: release its stack and commit the park of the
    /// wait it registered (`life.rs`).
    Hibernate,
    /// The actor is past its heap limit and allocated on for a whole
    /// timeslice without reaching a safepoint that unwinds: it is ended
    /// where it stands, at the allocation (`preempt.rs`, `life.rs`).
    HeapLimit,
}

/// The unwind payload of a cooperative stop, raised at a safepoint by
/// [`check_stop`] and the park; the actor layer reads it as a stop, not a
/// panic.
pub(crate) struct StopSignal;

/// Switch from the running actor back to its scheduler with `intent`.
/// Returns when the actor is resumed, possibly on another thread (I2).
#[inline]
pub(super) fn switch_out(intent: Intent) {
    switch_out_observing("a switch", intent, false, false);
}

/// [`switch_out`], observing a stop request on the way (for a park: a stop
/// already requested skips the switch). Returns whether the actor should
/// unwind with a stop now. Inlined: every frame below a parked actor's
/// switch is part of what a resume must bring back into cache.
#[inline]
fn switch_out_observing(
    what: &str,
    intent: Intent,
    observe_stop: bool,
    leave_bounded: bool,
) -> bool {
    crate::lock::assert_no_locks_held();
    assert!(
        preempt::preemption_enabled(),
        "smarm: a blocking call while a NoPreempt guard is open on this thread: \
         drop the guard (and any runtime lock) before blocking; inside a future polled by \
         smarm::future::block_on, await an async operation instead (recv_async, call_async, \
         tokio::time::sleep) or call it outside the future"
    );
    let (slot_sp, to_sp, carried) =
        match with_worker(|w, shared| leave_for(w, shared, intent, observe_stop, leave_bounded)) {
            Some(Some(Some(ptrs))) => ptrs,
            Some(Some(None)) => return true, // stopped before switching
            _ => outside_actor(what),
        };
    // SAFETY: `slot_sp` is the running actor's save cell (we are that
    // actor). `to_sp` is either this scheduler's own context, saved by its
    // switch into us and parked in `run_actor` waiting for exactly this
    // switch, or the next-slot actor's saved context, which this scheduler
    // owns (`direct_target`) and which was suspended inside this function.
    unsafe { crate::context::switch(slot_sp, to_sp) };
    with_worker(|w, shared| back_from_switch(w, shared, carried, observe_stop, leave_bounded))
        == Some(true)
        && !std::thread::panicking()
}

/// What the running actor carries across a switch and restores where it
/// resumes: its section count and its held-lock list.
type Carried = (u32, *const super::life::HeldLocks);

/// The actor's side of leaving its scheduler: `None` if it is no actor,
/// `Some(None)` if a stop it observes ends the wait before the switch,
/// else where to save its context, the context to switch to (its
/// scheduler's, or the next-slot actor's on a direct handoff), and what it
/// carries.
#[inline(always)]
fn leave_for(
    w: &super::Worker,
    shared: &super::Shared,
    intent: Intent,
    observe_stop: bool,
    leave_bounded: bool,
) -> Option<Option<(*mut *mut u8, *mut u8, Carried)>> {
    let pid = w.actor.current.get()?;
    let slot = shared.slots.get(pid.index())?;
    let unwinding = std::thread::panicking();
    if observe_stop && !unwinding && slot.stop.load(crate::loom::Ordering::Acquire) {
        // Stopped before parking: the wait ends here (wait (W2), (W3)).
        w.actor.wait_open.set(false);
        if leave_bounded {
            crate::timer::bounded::leave(slot);
        }
        return Some(None);
    }
    // Unwinding (std's panic count is per thread) or preempted (user
    // code may hold a thread-local borrow it cannot see): resume here.
    let pin = if unwinding || intent == Intent::Preempt {
        (w.id as u32 + 1) | if unwinding { PINNED_UNWINDING } else { 0 }
    } else {
        0
    };
    slot.pinned.store(pin, crate::loom::Ordering::Relaxed);
    #[cfg(feature = "trace")]
    trace_switch_out(shared, pid, slot, intent);
    let carried = (w.actor.sections.get(), w.actor.held_locks.get());
    if intent == Intent::Park
        && pin == 0
        && let Some(next_sp) = worker::direct_target(w, shared)
    {
        w.actor.handed_off.set(Some(pid));
        return Some(Some((slot.sp_ptr(), next_sp, carried)));
    }
    w.actor.intent.set(intent);
    // The section count belongs to this actor: it is restored where the
    // actor resumes. It stays on this worker until the context we switch
    // to sets its own, so a fault in the switch's own pushes still sees it.
    Some(Some((slot.sp_ptr(), w.sched_sp.get(), carried)))
}

/// Resumed, perhaps on another thread: restore what the actor carries,
/// finish a handoff made to it, end a bounded wait (time bounded (B2)),
/// and say whether a stop came while it was away.
#[inline(always)]
fn back_from_switch(
    w: &super::Worker,
    shared: &super::Shared,
    (sections, held_locks): Carried,
    observe_stop: bool,
    leave_bounded: bool,
) -> bool {
    w.actor.sections.set(sections);
    w.actor.held_locks.set(held_locks);
    worker::settle_handoff(w, shared);
    if !observe_stop && !leave_bounded {
        return false; // a yield or a preemption: nothing more to do
    }
    let slot = w
        .actor
        .current
        .get()
        .and_then(|pid| shared.slots.get(pid.index()));
    if leave_bounded && let Some(slot) = slot {
        crate::timer::bounded::leave(slot);
    }
    observe_stop && slot.is_some_and(|slot| slot.stop.load(crate::loom::Ordering::Acquire))
}

/// Record why `pid` leaves its scheduler (feature `trace`).
#[cfg(feature = "trace")]
#[inline(always)]
fn trace_switch_out(
    shared: &super::Shared,
    pid: crate::slot::Pid,
    slot: &crate::slot::Slot,
    intent: Intent,
) {
    let bits = pid.to_bits();
    match intent {
        Intent::Park => trace_event!(
            shared,
            Park,
            bits,
            slot.waiting_on.load(crate::loom::Ordering::Relaxed) as u64
        ),
        Intent::Yield => trace_event!(shared, Yield, bits, 0),
        Intent::Preempt => trace_event!(shared, Preempt, bits, 0),
        Intent::Exit | Intent::Overflow | Intent::Hibernate | Intent::HeapLimit => {}
    }
}

/// Unwind the running actor if a stop was requested: the cooperative stop
/// observed at every safepoint. Not while already unwinding (a second
/// panic would abort the process).
#[inline]
pub(crate) fn check_stop() {
    let stop = with_worker(|w, shared| {
        w.actor
            .current
            .get()
            .and_then(|pid| shared.slots.get(pid.index()))
            .is_some_and(|slot| slot.stop.load(crate::loom::Ordering::Acquire))
    });
    if stop == Some(true) && !std::thread::panicking() {
        std::panic::resume_unwind(Box::new(StopSignal));
    }
}

/// Let every other runnable actor have a turn, observing a stop before
/// and after (the public `yield_now`).
pub(crate) fn yield_now() {
    if switch_out_observing("yield_now", Intent::Yield, true, false) {
        unwind_stop();
    }
}

/// Yield without observing a stop (spawn backpressure: `spawn` never
/// unwinds).
pub(crate) fn yield_without_stop() {
    switch_out(Intent::Yield);
}

/// Park the running actor until a wake for its current wait, without
/// observing a stop request: for a wait the actor must not leave before
/// its waker is done with the actor's stack (a scoped pool job). A stop's
/// wake still ends the park; the caller parks again and checks the stop
/// once it may leave.
pub(super) fn park_deaf_to_stop() {
    let _ = switch_out_observing("park", Intent::Park, false, false);
}

/// Park the running actor until a wake for its current wait, observing a
/// stop before and after; `leave_bounded` ends the actor's bounded wait
/// (time bounded (B2)) once the park is over, on either path. Only
/// [`wait::Wait`] parks (wait (W1)).
#[inline(always)]
pub(super) fn park(leave_bounded: bool) {
    if switch_out_observing("park", Intent::Park, true, leave_bounded) {
        unwind_stop();
    }
}

/// Unwind the running actor with a cooperative stop.
#[cold]
pub(super) fn unwind_stop() -> ! {
    std::panic::resume_unwind(Box::new(StopSignal))
}
