//! The schedulers: one OS thread each, running actors popped from run
//! queues until the runtime's termination verdict.
//!
//! # Design
//!
//! Each scheduler loop (`worker.rs`) does, per iteration: the busy-path
//! timer due-check (one Relaxed load), a pop, and a resume of the popped
//! actor until it yields, parks or finishes. The pop order is:
//!
//! 1. the LIFO **next slot**: the actor most recently woken or spawned by
//!    the running actor, which runs next while its data is cache-warm (a
//!    fresh child runs first: depth-first, so the live set stays small);
//!    at most [`LIFO_STREAK`] times in a row, so a ping-pong pair cannot
//!    starve the queue;
//! 2. the local queue front (every [`FAIRNESS_TICK`]th pop, its back, so a
//!    yielded actor is reached even under a stream of new work); every
//!    [`INJECTOR_TICK`]th pop the global injector comes first;
//! 3. the global injector (work from threads that are not schedulers);
//! 4. this scheduler's pinned queue (also taken first every
//!    [`FAIRNESS_TICK`]th pop);
//! 5. stealing half of another scheduler's local queue (from its back):
//!    at once when it holds a few actors; a backlog of one to three only
//!    once it has persisted for about fifty microseconds without being
//!    served briskly (fewer than 16 actors taken from the queues
//!    meanwhile). A short backlog that is served briskly is
//!    request/response traffic its own scheduler keeps up with; stealing
//!    it moves the actors between cores at every message (call workload
//!    on two schedulers: 175 to about 140-160 ns per call, and no more
//!    600 ns runs when the two cores are far apart). A short backlog that
//!    is not, say two crunchers that yield now and then, is spread. An
//!    idle scheduler looks at the queues soon after it runs dry, then ever
//!    more rarely: each look pulls the busy schedulers' queue lines away
//!    from them.
//!
//! An actor that was switched out while its thread was unwinding a panic
//! (a destructor blocked) is **pinned**: until it next parks normally it is
//! queued only on its own scheduler's pinned queue, because std keeps the
//! panic count per OS thread and the unwind must finish where it started.
//! While it is parked, other actors on that thread see
//! `std::thread::panicking()` return `true`: a stop request to them waits
//! for the unwind to finish, and a `std::sync::Mutex` they unlock in that
//! window may be marked poisoned. Blocking in a destructor is therefore
//! supported but discouraged.
//!
//! A park hands over directly: when the loop would next run the next-slot
//! actor with nothing else due (no timer check, reclamation, fairness or
//! injector turn on that tick, streak not spent), the parking actor
//! switches straight to it instead of through the scheduler stack, having
//! done the loop's bookkeeping for it; the resumed actor then commits the
//! park of the one that handed over (`settle_handoff`), since only then is
//! that stack left and safe to resume elsewhere. A request/response pair
//! on one scheduler thus costs one switch per message, not two (call
//! workload on one scheduler: 162 to 141 ns per call).
//!
//! A waker that puts an actor into its own scheduler's next slot also
//! prefetches the top of that actor's saved stack: the resume that follows
//! shortly would otherwise miss on every line of it (measured: ring from
//! ~450 to ~70 ns per hop). A spawner that has queued 256 children on its
//! scheduler yields to them (see `actor`), so a spawn loop cannot grow the
//! live set without bound.
//!
//! # Where an actor can be switched out
//!
//! Only at safepoints, never elsewhere:
//!
//! - every blocking call (`recv`, `sleep`, `join`, `lock`, IO waits, ...),
//!   `yield_now`, and a spawn past the backlog: the actor may resume on
//!   another thread, so it must not hold a thread-local borrow across one;
//! - `check!()` and, with [`PreemptingAlloc`] installed, every allocation,
//!   once the actor has used its timeslice (`Config::timeslice`, measured
//!   from the first such safepoint after a resume; see [`preempt`]). The
//!   actor is then pinned: it resumes on the same OS thread, so a
//!   thread-local borrow held across the safepoint stays sound (another
//!   actor on that thread can still find it borrowed: pinning prevents data
//!   races, not re-entrancy).
//!
//! Never while a [`NoPreempt`](crate::NoPreempt) guard is open, inside runtime bookkeeping,
//! or while the thread unwinds. A loop with no safepoint keeps its thread
//! until it ends (there is no signal-based preemption).
//!
//! When nothing is found, the scheduler goes idle through the coordination
//! layer ([`crate::park`]): termination verdict, root-exit sweep, then the
//! timekeeper protocol and a futex park with a mandatory re-check.
//!
//! # Invariants
//!
//! - (I1) Only the scheduler thread itself touches its `Worker` (it lives
//!   on that thread's stack and is reached through a thread-local); other
//!   threads reach a scheduler only through `Shared::queues`.
//! - (I2) Actor code never holds a reference derived from the thread-local
//!   across a switch: after a switch the actor may be on another thread.
//!   Every access re-reads it through the `#[inline(never)]`
//!   [`current_worker`] (and the preemption gate through `preempt::gate`):
//!   an inlined thread-local access lets the compiler reuse an address
//!   computed before the switch, on the wrong thread.
//! - (I3) The next slot and the pinned queue hold actors only this
//!   scheduler may run; every other queued actor is reachable by all.
//!
//! # Safety
//!
//! The context switch is called here (scheduler side) and in
//! [`switch_out`] (actor side); see [`crate::context`] for its contract.

pub(crate) mod alloc;
pub(crate) mod clock;
mod live;
mod locals;
pub(crate) mod preempt;
mod reclaim;
mod run_queue;
mod shared;
pub(crate) mod wait;
mod worker;

use crate::slot::Pid;
use std::cell::Cell;

pub use alloc::PreemptingAlloc;
pub(crate) use live::LiveCount;
pub(crate) use locals::RuntimeLocals;
pub use preempt::check_timeslice;
pub(crate) use reclaim::Reclaimer;
pub(crate) use run_queue::RunQueue;
pub(crate) use shared::{Counters, Shared, Verdict};
pub(crate) use wait::{bounded_wait, BoundedWaiter, Deadline, Registered, Wait, WakeToken};
pub(crate) use worker::run_worker;

/// Most consecutive pops from the next slot.
pub(crate) const LIFO_STREAK: u32 = 16;
/// Every this many pops, take the local queue's back instead of its front.
pub(crate) const FAIRNESS_TICK: u32 = 31;
/// Every this many pops, look at the injector before the local queue.
pub(crate) const INJECTOR_TICK: u32 = 61;

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
}

/// Per-scheduler state, on the scheduler thread's stack (I1).
pub(crate) struct Worker {
    pub(crate) id: usize,
    pub(crate) shared: *const Shared,
    /// The scheduler context's saved stack pointer while an actor runs.
    sched_sp: Cell<*mut u8>,
    /// The actor running on this thread, if any.
    pub(crate) current: Cell<Option<Pid>>,
    intent: Cell<Intent>,
    /// How the finished actor's closure ended (caught at its base frame).
    exit_result: Cell<Option<std::thread::Result<()>>>,
    /// The LIFO next slot (I3).
    pub(crate) next: Cell<Option<Pid>>,
    lifo_streak: Cell<u32>,
    tick: Cell<u32>,
    /// Resumes so far; a safepoint that sees a new value starts a slice.
    pub(crate) resumes: Cell<u64>,
    /// The resume the current timeslice belongs to, and its start tick.
    pub(crate) slice_resume: Cell<u64>,
    pub(crate) slice_start: Cell<u64>,
    /// Open `with_worker` spans (preempt (I1)).
    pub(crate) busy: Cell<u32>,
    /// The running actor has a wait open (`begin_wait` without its park
    /// or `retire_wait` yet): no preemption (preempt (I2)).
    pub(crate) wait_open: Cell<bool>,
    /// An actor that parked by switching straight to the next-slot actor;
    /// its park is committed by that actor once it runs (`settle_handoff`).
    handed_off: Cell<Option<Pid>>,
    /// Stacks cached by this scheduler, so spawn and finalisation rarely
    /// take the pool lock.
    pub(crate) stack_cache: std::cell::RefCell<Vec<crate::stack::Stack>>,
}

/// The unwind payload of a cooperative stop, raised at a safepoint by
/// [`check_stop`] and the park; the actor layer reads it as a stop, not a
/// panic.
pub(crate) struct StopSignal;

/// What the actor layer does when an actor has finished: record its
/// outcome, tell its joiner, monitors and links, recycle its slot. Run by
/// the scheduler during finalisation, with the actor's catch result.
pub(crate) type ExitHook = fn(&Shared, Pid, &crate::slot::Slot, std::thread::Result<()>);

/// Stacks a scheduler fetches from the pool at once.
pub(crate) const STACK_BATCH: usize = 32;
/// A scheduler's cache spills `STACK_BATCH` stacks back beyond this.
pub(crate) const STACK_CACHE_MAX: usize = 2 * STACK_BATCH;

std::thread_local! {
    static CURRENT: Cell<*const Worker> = const { Cell::new(std::ptr::null()) };
}

/// The scheduler running on this thread, or null. Never inlined, so the
/// thread-local address is recomputed on every call (I2).
#[inline(never)]
pub(crate) fn current_worker() -> *const Worker {
    CURRENT.with(|c| c.get())
}

/// Run `f` with the current scheduler and its runtime, if this thread is
/// one. The references must not outlive `f` and `f` must not switch (I2).
#[inline]
pub(crate) fn with_worker<R>(f: impl FnOnce(&Worker, &Shared) -> R) -> Option<R> {
    let w = current_worker();
    if w.is_null() {
        return None;
    }
    // SAFETY: a non-null CURRENT points to the Worker on this thread's
    // scheduler stack frame, which outlives all actor code run on this
    // thread (run_worker clears CURRENT before returning); `shared` points
    // into the Arc that run_worker holds for the same span.
    let (worker, shared) = unsafe { (&*w, &*(*w).shared) };
    // `f` holds a borrow derived from the thread-local: no preemption
    // while it runs, even if it allocates (preempt (I1)).
    let _busy = Busy::enter(worker);
    Some(f(worker, shared))
}

/// Marks a `with_worker` span on its worker (a plain counter: cheaper than
/// the thread-local gate, and the worker is already at hand).
struct Busy<'a>(&'a Worker);

impl<'a> Busy<'a> {
    #[inline]
    fn enter(w: &'a Worker) -> Self {
        w.busy.set(w.busy.get() + 1);
        Busy(w)
    }
}

impl Drop for Busy<'_> {
    #[inline]
    fn drop(&mut self) {
        self.0.busy.set(self.0.busy.get() - 1);
    }
}

/// Whether this thread's scheduler is inside a `with_worker` span.
pub(crate) fn worker_busy() -> bool {
    let w = current_worker();
    // SAFETY: as in `with_worker`: a non-null CURRENT is this thread's live
    // Worker; `busy` is a Cell read on its own thread.
    !w.is_null() && unsafe { (*w).busy.get() } > 0
}

/// The running actor's pid and runtime, or a panic naming `what` that says
/// how to fix the call.
#[inline]
pub(crate) fn with_current_actor<R>(what: &str, f: impl FnOnce(Pid, &Shared) -> R) -> R {
    match with_worker(|w, shared| w.current.get().map(|pid| (pid, shared as *const Shared))) {
        Some(Some((pid, shared))) => {
            // SAFETY: as in `with_worker`: the runtime outlives the actor.
            f(pid, unsafe { &*shared })
        }
        _ => outside_actor(what),
    }
}

#[cold]
#[inline(never)]
pub(crate) fn outside_actor(what: &str) -> ! {
    panic!(
        "smarm: `{what}` must be called from inside an actor: start the runtime with \
         smarm::run(|| ...) (or Runtime::run) and call it from that closure or an actor it spawns"
    )
}

/// Switch from the running actor back to its scheduler with `intent`.
/// Returns when the actor is resumed, possibly on another thread (I2).
#[inline]
fn switch_out(intent: Intent) {
    switch_out_observing(intent, false, false);
}

/// [`switch_out`], observing a stop request on the way (for a park: a stop
/// already requested skips the switch). Returns whether the actor should
/// unwind with a stop now. Inlined: every frame below a parked actor's
/// switch is part of what a resume must bring back into cache.
#[inline]
fn switch_out_observing(intent: Intent, observe_stop: bool, leave_bounded: bool) -> bool {
    crate::sync::assert_no_locks_held();
    assert!(
        preempt::preemption_enabled(),
        "smarm: a blocking call while a NoPreempt guard is open on this thread: \
         drop the guard (and any runtime lock) before blocking"
    );
    let (slot_sp, to_sp) = match with_worker(|w, shared| {
        let pid = w.current.get()?;
        let slot = shared.slots.get(pid.index())?;
        let unwinding = std::thread::panicking();
        if observe_stop && !unwinding && slot.stop.load(crate::loom::Ordering::Acquire) {
            if leave_bounded {
                crate::time::bounded::leave(slot);
            }
            return Some(None);
        }
        // Unwinding (std's panic count is per thread) or preempted (user
        // code may hold a thread-local borrow it cannot see): resume here.
        let pin = if unwinding || intent == Intent::Preempt {
            w.id as u32 + 1
        } else {
            0
        };
        slot.pinned.store(pin, crate::loom::Ordering::Relaxed);
        if intent == Intent::Park && pin == 0 {
            if let Some(next_sp) = worker::direct_target(w, shared) {
                w.handed_off.set(Some(pid));
                return Some(Some((slot.sp_ptr(), next_sp)));
            }
        }
        w.intent.set(intent);
        Some(Some((slot.sp_ptr(), w.sched_sp.get())))
    }) {
        Some(Some(Some(ptrs))) => ptrs,
        Some(Some(None)) => return true, // stopped before switching
        _ => outside_actor("park"),
    };
    // SAFETY: `slot_sp` is the running actor's save cell (we are that
    // actor). `to_sp` is either this scheduler's own context, saved by its
    // switch into us and parked in `run_actor` waiting for exactly this
    // switch, or the next-slot actor's saved context, which this scheduler
    // owns (`direct_target`) and which was suspended inside this function.
    unsafe { crate::context::switch(slot_sp, to_sp) };
    // Resumed, perhaps on another thread: finish a handoff made to us, end
    // a bounded wait (time bounded (B2)), and see whether a stop came while
    // we were away.
    with_worker(|w, shared| {
        worker::settle_handoff(w, shared);
        let slot = w
            .current
            .get()
            .and_then(|pid| shared.slots.get(pid.index()));
        if leave_bounded {
            if let Some(slot) = slot {
                crate::time::bounded::leave(slot);
            }
        }
        observe_stop && slot.is_some_and(|slot| slot.stop.load(crate::loom::Ordering::Acquire))
    }) == Some(true)
        && !std::thread::panicking()
}

/// Unwind the running actor if a stop was requested: the cooperative stop
/// observed at every safepoint. Not while already unwinding (a second
/// panic would abort the process).
#[inline]
pub(crate) fn check_stop() {
    let stop = with_worker(|w, shared| {
        w.current
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
    check_stop();
    with_current_actor("yield_now", |_, _| ());
    switch_out(Intent::Yield);
    check_stop();
}

/// Yield without observing a stop (spawn backpressure: `spawn` never
/// unwinds).
pub(crate) fn yield_without_stop() {
    switch_out(Intent::Yield);
}

/// Park the running actor until a wake for its current wait, observing a
/// stop before and after; `leave_bounded` ends the actor's bounded wait
/// (time bounded (B2)) once the park is over, on either path. Only
/// [`wait::Wait`] parks (wait (W1)).
#[inline(always)]
fn park(leave_bounded: bool) {
    if switch_out_observing(Intent::Park, true, leave_bounded) {
        unwind_stop();
    }
}

/// Unwind the running actor with a cooperative stop.
#[cold]
fn unwind_stop() -> ! {
    std::panic::resume_unwind(Box::new(StopSignal))
}
