//! The scheduler's side of causal profiling (feature `smarm-causal`):
//! where actors pay the delay a virtual speedup makes them owe, where an
//! actor's time in the selected region is counted, and where a wake
//! passes the waker's level on (`causal::delay` has the accounting).
//!
//! - Before it resumes an actor, a scheduler pays what the actor owes by
//!   pausing itself: the delay really removes capacity, and every actor
//!   queued behind it waits too, so the scheduler keeps the level it
//!   paid to, and an actor that was runnable before the pause ended owes
//!   only from there (one that was waiting was not delayed by it). The
//!   pause is taken before the resume is recorded (no actor is running),
//!   so the system monitor never reads a paying scheduler as blocked nor
//!   starts a spare for it. An actor that never parks pays at its region
//!   boundaries instead, in pauses far shorter than the monitor's
//!   threshold (C2).
//! - When an actor switches back (or opens or closes a region), the time
//!   since its resume counts toward the selected region if it ran in it,
//!   as a user region or as an actor region; the actors queued behind it
//!   meanwhile count as paid to its level, as behind a pause.
//! - A woken actor is credited the delay inserted while it waited, as far
//!   as its waker (the running actor) had paid it: an actor that had paid
//!   before it sent, replied, unlocked or signalled passes that on, and
//!   one that still owes passes its debt on (Coz's rule after a blocking
//!   call, `delay::woken_level`); a wake from outside any actor (a timer,
//!   an IO event, a thread) credits all of it.
//!
//! A profiling session turns off the direct handoff of a park, so the
//! actor that switches back to a scheduler is always the one it resumed.
//!
//! # Invariants
//!
//! - (C1) While no runtime in the process is profiled, each hook is one
//!   relaxed load of a static (`delay::any_session`).
//! - (C2) A pause is at most `MAX_PAUSE_NANOS`, well under the system
//!   monitor's threshold; a larger debt is paid over several resumes.

use super::{Shared, Worker};
use crate::causal::delay::{self, Delays};
use crate::loom::Ordering;
use crate::slot::Slot;

/// Before `w` resumes the actor of `slot`: pay its debt, then start
/// counting its region time (C1).
#[inline(always)]
pub(super) fn before_resume(shared: &Shared, w: &Worker, slot: &Slot) {
    if shared.coord.causal.active() {
        pay_and_start(shared, w, slot);
    }
}

#[inline(never)]
fn pay_and_start(shared: &Shared, w: &Worker, slot: &Slot) {
    pay(shared, w, slot);
    let cell = &slot.causal;
    let actor_region = cell.actor_region.load(Ordering::Relaxed);
    if actor_region != 0 {
        shared.coord.causal.entered(actor_region - 1);
    }
    if actor_region != 0 || cell.region.load(Ordering::Relaxed) != 0 {
        cell.since
            .store(shared.coord.now_nanos(), Ordering::Relaxed);
    }
}

/// Pay what the actor of `slot` owes by pausing this scheduler `w`, and
/// raise its level (and the scheduler's, if it paused).
fn pay(shared: &Shared, w: &Worker, slot: &Slot) {
    let delays = &shared.coord.causal;
    let cell = &slot.causal;
    // Queued here while this scheduler last paused: delayed by it too.
    let queued_through_pause = cell.runnable_at.load(Ordering::Relaxed) <= w.causal_paid_at.get();
    let paid = if queued_through_pause {
        w.causal_paid.get()
    } else {
        0
    };
    let owed = delays.owed(cell.level.load(Ordering::Relaxed), paid);
    let level = if owed.pause > 0 {
        let paused = pause(shared, owed.pause);
        delays.paused(paused);
        // An overshoot of the pause counts as paid: it delayed everyone
        // queued here just as much.
        let level = owed.level - owed.pause + paused;
        w.causal_paid.set(w.causal_paid.get().max(level));
        w.causal_paid_at.set(shared.coord.now_nanos());
        level
    } else {
        owed.level
    };
    delay::credit(&cell.level, level);
}

/// Pause this scheduler for about `nanos`: sleep for most of it, spin the
/// rest (a sleep overshoots by the timer slack). Returns the time paused.
fn pause(shared: &Shared, nanos: u64) -> u64 {
    const SLEEP_SLACK: u64 = 100_000;
    let start = shared.coord.now_nanos();
    let end = start + nanos;
    if nanos > 2 * SLEEP_SLACK {
        std::thread::sleep(std::time::Duration::from_nanos(nanos - SLEEP_SLACK));
    }
    let mut now = shared.coord.now_nanos();
    while now < end {
        std::hint::spin_loop();
        now = shared.coord.now_nanos();
    }
    now - start
}

/// The actor of `slot` switched back to its scheduler: count its time in
/// the selected region (C1).
#[inline(always)]
pub(super) fn after_run(shared: &Shared, w: &Worker, slot: &Slot) {
    if shared.coord.causal.active() {
        let now = shared.coord.now_nanos();
        count_region_time(&shared.coord.causal, w, slot, now);
        // Runnable from here on if it yielded or was preempted; a wake
        // after a park sets it again, later.
        slot.causal.runnable_at.store(now, Ordering::Relaxed);
    }
}

/// Count the time since `slot`'s actor last started counting toward the
/// selected region, if it ran in it (as a user region or as an actor
/// region), and start counting again from `now`. Run by the scheduler `w`
/// that runs the actor: the actors queued on it meanwhile waited the
/// region out, which a faster region would have shortened, so they count
/// as paid to the region's actor's level, as behind a pause.
fn count_region_time(delays: &Delays, w: &Worker, slot: &Slot, now: u64) {
    let cell = &slot.causal;
    let region = cell.region.load(Ordering::Relaxed);
    let actor_region = cell.actor_region.load(Ordering::Relaxed);
    if region == 0 && actor_region == 0 {
        return;
    }
    let since = cell.since.swap(now, Ordering::Relaxed);
    let inserted = delays.ran(region, actor_region, now.saturating_sub(since));
    if inserted > 0 {
        // The region's own actor is not delayed by its own speedup (D1).
        let level = cell.level.fetch_add(inserted, Ordering::Relaxed) + inserted;
        w.causal_paid.set(w.causal_paid.get().max(level));
        w.causal_paid_at.set(now);
    }
}

/// The running actor of `slot` opens a wait: note the delay inserted so
/// far, the start of what its wake may credit (C1).
#[inline(always)]
pub(super) fn note_wait(shared: &Shared, slot: &Slot) {
    if shared.coord.causal.active() {
        slot.causal
            .waited_at
            .store(shared.coord.causal.global(), Ordering::Relaxed);
    }
}

/// `slot`'s actor is being woken on this thread (the one wake that ends
/// its wait): credit it the delay inserted while it waited, as far as its
/// waker (the running actor) has paid it; a wake from outside any actor
/// (a timer, an IO event, a thread) credits all of it (C1).
#[inline(always)]
pub(super) fn credit_wake(shared: &Shared, slot: &Slot) {
    if shared.coord.causal.active() {
        credit_from_waker(shared, slot);
    }
}

#[inline(never)]
fn credit_from_waker(shared: &Shared, slot: &Slot) {
    let delays = &shared.coord.causal;
    let waker = shared
        .local_worker_unspanned(|w| w.actor.current.get())
        .flatten()
        .and_then(|pid| shared.slots.get(pid.index()));
    let waker_level = match waker {
        Some(waker) => waker.causal.level.load(Ordering::Relaxed),
        None => delays.outside_level(),
    };
    let cell = &slot.causal;
    cell.runnable_at
        .store(shared.coord.now_nanos(), Ordering::Relaxed);
    let level = delay::woken_level(
        cell.level.load(Ordering::Relaxed),
        cell.waited_at.load(Ordering::Relaxed),
        delays.global(),
        waker_level,
    );
    delay::credit(&cell.level, level);
}

/// Open a region for the running actor, if a profiling session is on:
/// `id_of` interns its name (and counts the visit). Time from here counts
/// toward that region (the innermost open one). Returns what to hand
/// [`close_region`]: the region it replaced, as id + 1.
#[inline]
pub(crate) fn open_region(id_of: impl FnOnce() -> u32) -> Option<u32> {
    if !delay::any_session() {
        return None;
    }
    open_region_in_session(id_of)
}

#[inline(never)]
fn open_region_in_session(id_of: impl FnOnce() -> u32) -> Option<u32> {
    super::with_worker(|w, shared| {
        if !shared.coord.causal.active() {
            return None;
        }
        let slot = running_slot(w, shared)?;
        let id = id_of();
        shared.coord.causal.entered(id);
        region_boundary(shared, w, slot);
        Some(slot.causal.region.swap(id + 1, Ordering::Relaxed))
    })
    .flatten()
}

/// Close the region [`open_region`] opened, back to `outer` (id + 1 or 0).
#[inline(never)]
pub(crate) fn close_region(outer: u32) {
    let _ = super::with_worker(|w, shared| {
        let slot = running_slot(w, shared)?;
        if shared.coord.causal.active() {
            region_boundary(shared, w, slot);
        }
        slot.causal.region.store(outer, Ordering::Relaxed);
        Some(())
    });
}

/// At a region boundary of the running actor of `slot`: the time so far
/// counts toward what was open until now, and the actor pays what it
/// owes (a safepoint: one that runs without parking is resumed too
/// rarely to pay there); its region clock restarts after the pause.
fn region_boundary(shared: &Shared, w: &Worker, slot: &Slot) {
    count_region_time(&shared.coord.causal, w, slot, shared.coord.now_nanos());
    pay(shared, w, slot);
    slot.causal
        .since
        .store(shared.coord.now_nanos(), Ordering::Relaxed);
}

/// The slot of the actor running on `w`, if any.
fn running_slot<'a>(w: &Worker, shared: &'a Shared) -> Option<&'a Slot> {
    w.actor
        .current
        .get()
        .and_then(|pid| shared.slots.get(pid.index()))
}

/// Give the running actor its region as an actor (`id_of` interns the
/// name), unless it has one already.
pub(crate) fn name_running_actor(id_of: impl FnOnce() -> u32) {
    let _ = super::with_worker(|w, shared| {
        let slot = running_slot(w, shared)?;
        if slot.causal.actor_region.load(Ordering::Relaxed) == 0 {
            slot.causal
                .actor_region
                .store(id_of() + 1, Ordering::Relaxed);
        }
        Some(())
    });
}
