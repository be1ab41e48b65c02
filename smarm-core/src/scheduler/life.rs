//! The actor's life on its stack: the entry frame every actor stack starts
//! with ([`actor_entry`]), the finalisation of an actor that has switched
//! away for the last time ([`finalize`]), hibernation (waiting with no
//! stack), and the end of an actor abandoned where it stands after a stack
//! overflow or past its heap limit. The scheduler loop (`worker.rs`) calls
//! in here; the actor layer supplies the exit hook and the hibernation
//! payloads.
//!
//! # Hibernation
//!
//! An actor that waits holding no stack (Erlang's `erlang:hibernate/3`).
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
//! ## Invariants
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
//!
//! # Ending an actor where it stands
//!
//! An actor whose stack overflowed is ended, and only that actor; and, by
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
//! ## When it is sound
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
use super::{Intent, Shared, Wait, WaitingOn, current_worker, preempt, with_worker};
use crate::loom::Ordering;
use crate::slot::table::{Entry, Value};
use crate::slot::{Pid, Slot, WaitId};

/// The actor has switched away for the last time: release its stack and
/// its wait timer, hand the rest of its exit to the actor layer (outcome,
/// joiner, monitors and links, recycling the slot: the exit hook),
/// and only then count it out of `live_actors` (the termination verdict's
/// soundness rests on this order, runtime (I2)).
#[inline(always)]
pub(super) fn finalize(
    shared: &Shared,
    worker_id: usize,
    pid: Pid,
    slot: &Slot,
    result: std::thread::Result<crate::slot::table::Value>,
) {
    // SAFETY: the actor has switched away for the last time, so this
    // scheduler is its exclusive owner (slot (I2)) and nothing runs on the
    // stack any more (stack (I2)).
    let runner = unsafe { slot.runner() };
    if let Some(stack) = runner.stack.take() {
        forget_stack(shared, pid);
        shared.release_stack(stack);
    }
    runner.entry = None;
    #[cfg(feature = "tracing")]
    super::spans::clear(slot);
    shared.finish_actor_timers(slot);
    slot.word.finish();
    let failed = result.is_err();
    trace_event!(shared, Exit, pid.to_bits(), failed as u64);
    // Every wake the exit makes (monitors, links, the joiner) happens
    // before the actor stops counting as live (runtime (I2)); a detached
    // actor's panic payload is dropped in there too.
    shared.run_exit_hook(pid, slot, result);
    shared.count_finished(pid, worker_id);
    if failed && shared.is_root(pid) {
        // A root that did not return ends the run now (runtime (I4)).
        shared.root_exit_sweep();
    }
}

/// Run an actor's entry closure, catching every unwind (context (I1)).
#[inline]
fn run_entry(
    entry: Option<crate::slot::table::Entry>,
) -> std::thread::Result<crate::slot::table::Value> {
    match entry {
        Some(f) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)),
        None => Ok(Box::new(()) as crate::slot::table::Value),
    }
}

/// The entry function of every actor stack: run the closure, catch every
/// unwind (context (I1)), hand the outcome to the scheduler, switch away
/// for good.
///
/// # Safety
///
/// `arg` must point to the `Slot` of the actor this stack belongs to, and
/// the calling context must be that actor's first resume by a scheduler.
pub(crate) unsafe extern "C" fn actor_entry(arg: *mut u8) -> ! {
    // SAFETY: per the contract, `arg` is this actor's slot; slots outlive
    // their actors (the table is dropped after the runtime finishes).
    let slot = unsafe { &*arg.cast::<Slot>() };
    // SAFETY: this actor is running, so it owns its runner cells (slot (I2)).
    let entry = unsafe { slot.runner() }.entry.take();
    // A new actor holds no section and no lock; the worker may still show
    // those of the context that switched here (current.rs). Its held-lock
    // list lives in this frame, which lasts as long as the actor.
    let held_locks = HeldLocks::default();
    with_worker(|w, _| {
        w.actor.sections.set(0);
        w.actor.held_locks.set(&held_locks);
    });
    let mut result = run_entry(entry);
    if hibernates(&result) {
        // SAFETY: this is the running actor's entry frame; the closure
        // has returned or unwound, so nothing is above it, and
        // `held_locks` (empty) is all it holds.
        result = unsafe { hibernate_from_entry(slot, result, &held_locks) };
    }
    let sched_sp = with_worker(|w, _| {
        w.actor.held_locks.set(std::ptr::null());
        w.actor.exit_result.set(Some(result));
        w.actor.intent.set(Intent::Exit);
        w.sched_sp.get()
    });
    // Every guard is gone by now; free the list before the last switch,
    // which never returns to drop it.
    drop(held_locks);
    if let Some(sched_sp) = sched_sp {
        crate::lock::assert_no_locks_held();
        // SAFETY: `sched_sp` is the scheduler that resumed us, parked in
        // `run_actor` waiting for this switch; our own save cell is written
        // but never read again (the stack is released).
        unsafe { crate::context::switch(slot.sp_ptr(), sched_sp) };
    }
    // Unreachable: a finished actor is never resumed.
    std::process::abort()
}

/// `pid` no longer has its stack: its account stops pointing at it.
#[inline]
pub(super) fn forget_stack(shared: &Shared, pid: Pid) {
    if let Some(account) = shared.accounts.as_ref().and_then(|a| a.cell(pid.index())) {
        account.set_stack(std::ptr::null_mut(), 0);
    }
}

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
        with_worker(|w, _| w.actor.held_locks.set(std::ptr::null()));
        // SAFETY: per the contract.
        let entry = unsafe { settle(slot, arm) };
        with_worker(|w, _| w.actor.held_locks.set(held_locks));
        result = run_entry(Some(entry));
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
    let stopping = slot.stop.load(Ordering::Acquire);
    if !registered || stopping {
        drop(wait); // retired: no unwind from here (wait (W4))
        return arm.into_entry();
    }
    // SAFETY: the running actor owns its runner cells (slot (I2)).
    unsafe { slot.runner() }.entry = Some(arm.into_entry());
    wait.hand_to_scheduler();
    let sched_sp = with_worker(|w, _| {
        w.actor.held_locks.set(std::ptr::null());
        w.actor.intent.set(Intent::Hibernate);
        w.sched_sp.get()
    });
    slot.pinned.store(0, Ordering::Relaxed);
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
    let held = w.actor.held_locks.get();
    if !held.is_null() {
        // SAFETY: a non-null `held_locks` points to the running actor's
        // list in its entry frame, alive while it runs (current.rs).
        unsafe { &*held }.borrow_mut().push((lock, release));
    }
}

/// Record that the running actor on `w` no longer holds the lock at
/// `lock`.
pub(crate) fn unhold_lock(w: &Worker, lock: usize) {
    let held = w.actor.held_locks.get();
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
    let pid = w.actor.current.get()?;
    let slot = shared.slots.get(pid.index())?;
    // SAFETY: this thread runs `pid` (it is `current`), and the actor's
    // code, interrupted here, holds no `&mut Runner`: it borrows the runner
    // only inside the runtime (`actor_entry`'s first lines), outside of
    // which the checks below would fail anyway.
    let guard = unsafe { slot.stack_guard() }?;
    let contained = guard.contains(&fault_addr)
        && shared.config().contain_stack_overflow
        && preempt::preemption_enabled()
        && w.actor.sections.get() == 0
        && w.actor.handed_off.get().is_none()
        && !std::thread::panicking();
    if !contained {
        return None;
    }
    w.actor.intent.set(Intent::Overflow);
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
    finalize(shared, worker_id, pid, slot, Err(why));
}
