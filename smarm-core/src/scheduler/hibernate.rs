//! Hibernation, the scheduler's side: an actor that waits holding no
//! stack (Erlang's `erlang:hibernate/3`).
//!
//! The actor layer's `hibernate` unwinds the actor's stack (its
//! destructors run) with a [`Hibernating`] payload. The entry frame at the
//! bottom of the stack, where every unwind ends (context (I1)), hands it
//! to [`settle`]: it opens a wait, lets the payload register it with what
//! the actor waits on, stores the payload's continuation as the actor's
//! entry, and switches away for good with `Intent::Hibernate`. The
//! scheduler then gives the stack back (the pool returns its pages to the
//! kernel in time) and commits the park like any other. The wake resumes
//! the actor as a new one: `run_actor` takes a fresh stack for it, and the
//! entry frame runs the continuation.
//!
//! # Invariants
//!
//! - (H1) A hibernated actor owns no stack: its runner's `sp` is null and
//!   its `stack` is `None` (a stack of another size than the runtime's is
//!   kept, its pages given back), so its next resume starts from the entry
//!   frame, never by a direct handoff (`direct_target` skips a null `sp`).
//! - (H2) The wait is registered before the stack is left, under the same
//!   wait protocol as a park (wait (W1)-(W4)): a wake that lands between
//!   the registration and the scheduler's commit re-queues the actor.
//!   When the payload finds what it waits for ready (or a stop is pending),
//!   no switch happens: the continuation runs in place, on the stack the
//!   unwind left empty.

use super::{with_worker, Intent, Wait, WaitingOn};
use crate::scheduler::overflow::HeldLocks;
use crate::slot::table::{Entry, Value};
use crate::slot::{Slot, WaitId};

/// What a hibernating actor waits on and what it runs next.
pub(crate) trait Arm: Send {
    /// Register the actor's open `wait` with what it waits on: `false` if
    /// that is ready already (the continuation runs at once).
    fn register(&self, wait: WaitId) -> bool;
    /// The continuation: the actor's entry once it wakes.
    fn into_entry(self: Box<Self>) -> Entry;
}

/// The unwind payload of a hibernation (see the module docs).
pub(crate) struct Hibernating(pub(crate) Box<dyn Arm>);

/// A hibernation as a value, for a behaviour's loop: an actor whose
/// closure returns one hibernates (as `smarm::hibernate` would have it)
/// or, if it holds none, ends with `()`. Returning instead of unwinding
/// saves the unwind's cost (microseconds through a few frames) on every
/// hibernation of a server that hibernates often. Made by the actor
/// layer (`Hibernation::until`, `Hibernation::none`).
#[doc(hidden)]
pub struct Hibernation(pub(crate) Option<Box<dyn Arm>>);

/// Whether an actor's closure ended by hibernating: it returned a
/// [`Hibernation`] or unwound with [`Hibernating`]. One type check on a
/// plain exit.
#[inline]
pub(crate) fn hibernates(result: &std::thread::Result<Value>) -> bool {
    match result {
        Ok(value) => value.is::<Hibernation>(),
        Err(payload) => payload.is::<Hibernating>(),
    }
}

/// The entry frame's loop while the actor hibernates: settle each
/// hibernation (which parks it, or returns the continuation to run in
/// place) and run the continuation, until it ends otherwise. Returns that
/// end. `held_locks` is the entry frame's held-lock list, registered with
/// the worker while the actor's code runs.
///
/// # Safety
///
/// As [`settle`]: called from the running actor's entry frame, with
/// nothing above it.
#[cold]
#[inline(never)]
pub(crate) unsafe fn hibernate_from_entry(
    slot: &Slot,
    mut result: std::thread::Result<Value>,
    held_locks: &HeldLocks,
) -> std::thread::Result<Value> {
    loop {
        let arm = match result {
            Ok(value) => match value.downcast::<Hibernation>() {
                Ok(h) => match h.0 {
                    Some(arm) => arm,
                    None => return Ok(Box::new(())), // ended, as `()`
                },
                Err(value) => return Ok(value),
            },
            Err(payload) => match payload.downcast::<Hibernating>() {
                Ok(h) => h.0,
                Err(payload) => return Err(payload),
            },
        };
        // Every frame above the entry frame is gone, and so are its
        // guards: the held-lock list is empty.
        with_worker(|w, _| w.held_locks.set(std::ptr::null()));
        // SAFETY: per the contract.
        let entry = unsafe { settle(slot, arm) };
        with_worker(|w, _| w.held_locks.set(held_locks));
        result = super::worker::run_entry(Some(entry));
    }
}

/// The entry frame's part (H2): register the wait, then either return the
/// continuation to run in place (ready, or a stop pending) or switch away
/// for good, leaving the continuation as the actor's entry.
///
/// # Safety
///
/// Called only from the entry frame at the bottom of the running actor's
/// stack, which owns `slot`'s runner cells (slot (I2)), with no lock, no
/// section and no live value above it on that stack: after the switch the
/// stack is released and never resumed.
unsafe fn settle(slot: &Slot, arm: Box<dyn Arm>) -> Entry {
    let wait = Wait::open("smarm::hibernate", WaitingOn::Hibernating);
    let registered = arm.register(wait.id());
    let stopping = slot.stop.load(crate::loom::Ordering::Acquire);
    if !registered || stopping {
        drop(wait); // retired: no unwind from here (wait (W4))
        return arm.into_entry();
    }
    // SAFETY: the running actor owns its runner cells (slot (I2)).
    unsafe { slot.runner() }.entry = Some(arm.into_entry());
    wait.hand_to_scheduler();
    let sched_sp = with_worker(|w, _| {
        w.held_locks.set(std::ptr::null());
        w.intent.set(Intent::Hibernate);
        w.sched_sp.get()
    });
    slot.pinned.store(0, crate::loom::Ordering::Relaxed);
    if let Some(sched_sp) = sched_sp {
        crate::lock::assert_no_locks_held();
        // SAFETY: `sched_sp` is the scheduler that resumed this actor,
        // parked in `run_actor` waiting for this switch. The save cell is
        // written but never read: the scheduler clears `sp` (H1) and
        // releases this stack, which nothing on it outlives (the contract).
        unsafe { crate::context::switch(slot.sp_ptr(), sched_sp) };
    }
    // Unreachable: a hibernated actor resumes from a fresh entry frame.
    std::process::abort()
}
