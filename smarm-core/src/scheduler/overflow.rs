//! Ending an actor whose stack overflowed, and only that actor; and, by
//! the same means, an actor that allocates on past its heap limit.
//!
//! The stack layer's fault handler asks [`recover`] whether the actor that
//! hit its guard page may be ended where it stands. If so, the handler
//! returns into this scheduler's saved context with [`Intent::Overflow`]
//! set, and the loop finalises the actor as `DownReason::StackOverflow`
//! ([`finalize_overflowed`]) without unwinding it: no destructor of the
//! actor runs, and its stack is leaked, never reused, discarded or
//! unmapped, since pinned values and scoped borrows of other threads may
//! point into it.
//!
//! # When it is sound
//!
//! Abandoning code mid-way is sound only where nothing outside the actor
//! depends on that code finishing. `recover` says yes only when all hold:
//!
//! - the fault is in the guard page of the stack of the actor this thread
//!   is running (not the scheduler's stack, not another actor's);
//! - no runtime lock, std lock taken by the runtime (`lock_std`) or
//!   `NoPreempt` guard is held (the preemption gate is open), and no
//!   `with_worker` span is open: runtime bookkeeping happens under these;
//! - the actor is not inside a runtime call: its section count is zero
//!   (`current.rs`: `with_current_actor` bodies, a `smarm::Mutex` being
//!   waited for, locked or unlocked, a call's reply cell, the send of a
//!   reply or oneshot, an fd wait, the inner allocator under
//!   `PreemptingAlloc` each hold a section), so no wait registration,
//!   spawn or wake of the runtime's is half done; and no park handed over
//!   to it directly is left to commit;
//! - it is not unwinding a panic (std's per-thread panic count would stay
//!   raised for every later actor on the thread);
//! - the faulting instruction is in the program's own code, not in a
//!   shared library such as the C library, whose allocator or stdio may be
//!   mid-update under its own lock (checked by the stack layer);
//! - `Config::contain_stack_overflow` is on (the default).
//!
//! Otherwise the process aborts with the message, as Rust does for a
//! thread's overflow.
//!
//! The `smarm::Mutex` locks it held (listed in its entry frame, see
//! `HeldLocks`) are released to their next holders marked poisoned.
//!
//! An actor past its heap limit (`heap` module) is asked to stop, and
//! unwinds at its next blocking call. One that instead allocates on for a
//! whole timeslice is ended the same way, at the allocation safepoint
//! where it would have been preempted (`preempt.rs`), with
//! `DownReason::HeapLimit`. The conditions above hold there by
//! construction: the safepoint runs after the inner allocator returned,
//! outside every section, with the gate open, no wait open and no panic
//! in flight; and a global allocator is called only from Rust code. What
//! the actor held is leaked, its heap included: the limit bounds how much
//! that is (the limit plus one timeslice of allocation).
//!
//! What an ended actor leaves behind, by design (the guide says so): its
//! values are never dropped, so channel endpoints it held stay open (a
//! receiver waiting on its sender does not see the channel close: monitor
//! or link to it, as in Erlang), and locks outside smarm's knowledge stay
//! held: a `std::sync::Mutex` guard, a `RefCell` borrow of a thread-local,
//! stdout's lock. A global allocator compiled into the program (not the C
//! library's) is program code to this check: with such an allocator, turn
//! containment off.

use super::current::Worker;
use super::{current_worker, preempt, Intent, Shared};
use crate::slot::{Pid, Slot};

/// The unwind-result payload that tells the actor layer an actor ended by
/// overflowing its stack.
pub(crate) struct Overflowed;

/// The unwind-result payload of an actor ended at an allocation past its
/// heap limit (module docs).
pub(crate) struct HeapLimitKilled;

/// How a lock the actor holds is released for it if it is ended by an
/// overflow: called with the lock's address, once.
pub(crate) type ReleasePoisoned = unsafe fn(usize);

/// The `smarm::Mutex` locks an actor holds, in its entry frame (so on its
/// own stack, which outlives the actor if it is ended by an overflow).
/// Touched only inside `with_worker` spans.
pub(crate) type HeldLocks = std::cell::RefCell<Vec<(usize, ReleasePoisoned)>>;

/// Record that the running actor on `w` holds the lock at `lock`.
pub(crate) fn hold_lock(w: &Worker, lock: usize, release: ReleasePoisoned) {
    let held = w.held_locks.get();
    if !held.is_null() {
        // SAFETY: a non-null `held_locks` points to the running actor's
        // list in its entry frame, alive while it runs (current.rs).
        unsafe { &*held }.borrow_mut().push((lock, release));
    }
}

/// Record that the running actor on `w` no longer holds the lock at
/// `lock`.
pub(crate) fn unhold_lock(w: &Worker, lock: usize) {
    let held = w.held_locks.get();
    if !held.is_null() {
        // SAFETY: as in `hold_lock`.
        let mut held = unsafe { &*held }.borrow_mut();
        if let Some(i) = held.iter().rposition(|&(l, _)| l == lock) {
            held.swap_remove(i);
        }
    }
}

/// The stack layer's recovery hook (async-signal-safe: it reads and writes
/// only this thread's cells): if the overflow at `fault_addr` may end only
/// the running actor, record that and return the scheduler's saved stack
/// pointer to resume.
pub(crate) fn recover(fault_addr: usize) -> Option<*mut u8> {
    let w = current_worker();
    if w.is_null() {
        return None;
    }
    // SAFETY: a non-null CURRENT is this thread's live Worker (current
    // (I1)); we only read its cells and set its intent, on its own thread,
    // while the actor code it runs is interrupted outside every
    // `with_worker` span (checked below before anything is written).
    let (w, shared): (&Worker, &Shared) = unsafe { (&*w, &*(*w).shared) };
    let pid = w.current.get()?;
    let slot = shared.slots.get(pid.index())?;
    // SAFETY: this thread runs `pid` (it is `current`), and the actor's
    // code, interrupted here, holds no `&mut Runner`: it borrows the runner
    // only inside the runtime (`actor_entry`'s first lines), outside of
    // which the checks below would fail anyway.
    let guard = unsafe { slot.stack_guard() }?;
    let contained = guard.contains(&fault_addr)
        && shared.config().contain_stack_overflow
        && preempt::preemption_enabled()
        && w.sections.get() == 0
        && w.handed_off.get().is_none()
        && !std::thread::panicking();
    if !contained {
        return None;
    }
    w.intent.set(Intent::Overflow);
    Some(w.sched_sp.get())
}

/// Finalise `pid`, ended where it stands (it overflowed its stack, or
/// allocated on past its heap limit): as a normal finalisation, but its
/// stack is leaked (the module docs say why) and its outcome is `why`
/// ([`Overflowed`] or [`HeapLimitKilled`]).
pub(super) fn finalize_abandoned(
    shared: &Shared,
    worker_id: usize,
    pid: Pid,
    slot: &Slot,
    held_locks: *const HeldLocks,
    why: Box<dyn std::any::Any + Send>,
) {
    // Its smarm locks go to their next holders, marked poisoned: what they
    // guard may be half-updated.
    if !held_locks.is_null() {
        // SAFETY: the list is in the ended actor's entry frame, on its
        // leaked stack, which stays mapped and untouched (module docs); it
        // was not borrowed when the actor was interrupted (only inside
        // `with_worker` spans, where `recover` refuses).
        let held = std::mem::take(&mut *unsafe { &*held_locks }.borrow_mut());
        for (lock, release) in held {
            // SAFETY: `lock` was registered by the mutex layer with its own
            // release function, and the lock it names is alive: the guard
            // that holds it borrows a handle that the ended actor's stack
            // owns or that outlives it.
            unsafe { release(lock) };
        }
    }
    // SAFETY: the actor will never run again and this scheduler owns its
    // runner cells (slot (I2)).
    let runner = unsafe { slot.runner() };
    // Leaked: taken from the slot and never given back to a pool, so it is
    // never reused, discarded or unmapped (module docs).
    let _abandoned = runner.stack.take();
    super::worker::finalize(shared, worker_id, pid, slot, Err(why));
}
