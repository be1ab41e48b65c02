//! The scheduler running on this thread: its `Worker`, reached through a
//! thread-local that is re-read after every switch (scheduler (I2)), and
//! the running actor's pid and runtime.

use super::{Intent, Shared};
use crate::slot::Pid;
use std::cell::Cell;

/// Per-scheduler state, on the scheduler thread's stack (I1).
pub(crate) struct Worker {
    pub(crate) id: usize,
    pub(crate) shared: *const Shared,
    /// This scheduler's own entry of `shared.queues`, reached without an
    /// index on the wake and pop paths.
    pub(super) own: *const super::shared::SchedulerQueues,
    /// The scheduler context's saved stack pointer while an actor runs.
    pub(super) sched_sp: Cell<*mut u8>,
    /// Open `with_worker` spans (preempt (I1)).
    pub(crate) busy: Cell<u32>,
    /// The actor running on this thread and what it carries with it.
    pub(crate) actor: RunningActor,
    /// The running actor's timeslice (`preempt.rs`).
    pub(crate) slice: Timeslice,
    /// The pop order's counters (`worker.rs`).
    pub(super) pick: PickState,
    /// Stacks cached by this scheduler, so spawn and finalisation rarely
    /// take the pool lock (`stacks.rs`).
    pub(crate) stack_cache: std::cell::RefCell<Vec<crate::stack::Stack>>,
    /// The delay level this scheduler's own pauses have paid to (feature
    /// `smarm-causal`; scheduler causal).
    #[cfg(feature = "smarm-causal")]
    pub(super) causal_paid: Cell<u64>,
    /// When its latest pause ended (coordinator nanos).
    #[cfg(feature = "smarm-causal")]
    pub(super) causal_paid_at: Cell<u64>,
}

/// The running actor's context on its scheduler: who it is, why it
/// switched back, and the per-actor state that moves with it across
/// switches (restored when it resumes).
pub(crate) struct RunningActor {
    /// The actor running on this thread, if any.
    pub(crate) current: Cell<Option<Pid>>,
    pub(super) intent: Cell<Intent>,
    /// How the finished actor's closure ended (caught at its base frame).
    pub(super) exit_result: Cell<Option<std::thread::Result<crate::slot::table::Value>>>,
    /// The running actor has a `Wait` open (not yet parked on or
    /// retired): no preemption (preempt (I2), wait (W2)).
    pub(crate) wait_open: Cell<bool>,
    /// Runtime sections the running actor is inside (`Section`): its own
    /// count, saved by its switch out and restored when it resumes; set to
    /// 0 by the scheduler when an actor switches back to it.
    pub(crate) sections: Cell<u32>,
    /// The running actor's held `smarm::Mutex` locks (a list in its entry
    /// frame, `life::HeldLocks`), or null: restored with `sections`
    /// when the actor resumes, null on the scheduler.
    pub(crate) held_locks: Cell<*const super::life::HeldLocks>,
    /// An actor that parked by switching straight to the next-slot actor;
    /// its park is committed by that actor once it runs (`settle_handoff`).
    pub(super) handed_off: Cell<Option<Pid>>,
}

/// Timeslice accounting (`preempt.rs`).
pub(crate) struct Timeslice {
    /// Resumes so far; a safepoint that sees a new value starts a slice.
    pub(crate) resumes: Cell<u64>,
    /// The resume the current timeslice belongs to, and its start tick.
    pub(crate) slice_resume: Cell<u64>,
    pub(crate) slice_start: Cell<u64>,
}

/// The pop order's counters: the next slot's streak and the loop tick
/// that spaces fairness, injector, due-check and reclamation turns.
pub(super) struct PickState {
    pub(super) lifo_streak: Cell<u32>,
    pub(super) tick: Cell<u32>,
    /// The clock tick at which the local queue's back was last taken (at
    /// first, when the scheduler started).
    pub(super) back_taken_at: Cell<u64>,
}

impl Worker {
    /// Scheduler `id` of `shared`, before its first actor.
    pub(super) fn new(id: usize, shared: &std::sync::Arc<Shared>) -> Self {
        Worker {
            id,
            shared: std::sync::Arc::as_ptr(shared),
            own: &*shared.sched.queues[id],
            sched_sp: Cell::new(std::ptr::null_mut()),
            busy: Cell::new(0),
            actor: RunningActor {
                current: Cell::new(None),
                intent: Cell::new(Intent::Exit),
                exit_result: Cell::new(None),
                wait_open: Cell::new(false),
                sections: Cell::new(0),
                held_locks: Cell::new(std::ptr::null()),
                handed_off: Cell::new(None),
            },
            slice: Timeslice {
                resumes: Cell::new(0),
                slice_resume: Cell::new(u64::MAX),
                slice_start: Cell::new(0),
            },
            pick: PickState {
                lifo_streak: Cell::new(0),
                tick: Cell::new(0),
                back_taken_at: Cell::new(crate::clock::now()),
            },
            stack_cache: std::cell::RefCell::new(Vec::new()),
            #[cfg(feature = "smarm-causal")]
            causal_paid: Cell::new(0),
            #[cfg(feature = "smarm-causal")]
            causal_paid_at: Cell::new(0),
        }
    }

    /// This scheduler's queues, next slot and counters.
    #[inline(always)]
    pub(crate) fn own(&self) -> &super::shared::SchedulerQueues {
        // SAFETY: `own` points into `shared.sched.queues`, which lives in the Arc
        // that run_worker holds for as long as this Worker exists.
        unsafe { &*self.own }
    }
}

std::thread_local! {
    pub(super) static CURRENT: Cell<*const Worker> = const { Cell::new(std::ptr::null()) };
}

/// An open runtime section of the running actor: while one is open, a
/// stack overflow aborts the process instead of ending only the actor
/// (`life.rs`). The count lives on the worker running the actor
/// (`Worker::sections`) and moves with the actor across switches. Closes on
/// drop, on whichever scheduler the actor has moved to. Off a scheduler
/// thread it counts nothing.
pub(crate) struct Section(());

impl Section {
    /// Open a section on the current scheduler, if any.
    #[inline]
    pub(crate) fn enter() -> Self {
        add_sections(current_worker(), 1);
        Section(())
    }

    /// Open a section on `w`, the current scheduler, already at hand.
    #[inline]
    pub(crate) fn enter_on(w: &Worker) -> Self {
        w.actor.sections.set(w.actor.sections.get() + 1);
        Section(())
    }
}

impl Drop for Section {
    #[inline]
    fn drop(&mut self) {
        add_sections(current_worker(), u32::MAX); // minus one
    }
}

/// Add `delta` to the section count of `w` (this thread's worker, or null).
#[inline]
fn add_sections(w: *const Worker, delta: u32) {
    if !w.is_null() {
        // SAFETY: a non-null CURRENT is this thread's live Worker (I1);
        // `sections` is a Cell read and written on its own thread.
        let sections = unsafe { &(*w).actor.sections };
        sections.set(sections.get().wrapping_add(delta));
    }
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

/// Whether this thread is running an actor (not a plain thread, not the
/// scheduler loop itself).
#[inline]
pub(crate) fn in_actor() -> bool {
    with_worker(|w, _| w.actor.current.get().is_some()).unwrap_or(false)
}

/// The running actor's pid, if this thread is running one.
pub(crate) fn current_pid() -> Option<Pid> {
    with_worker(|w, _| w.actor.current.get()).flatten()
}

/// Whether the running actor is itself unwinding (a panic, a stop, an
/// exit): `std::thread::panicking()`, unless another actor that switched
/// out mid-unwind left its count on this thread (one pinned to this
/// scheduler, or to any scheduler of a simulation, which share one
/// thread): then `false`, as which of them unwinds cannot be told. Scans
/// the slots, but only while the thread is unwinding.
pub(crate) fn actor_unwinding() -> bool {
    if !std::thread::panicking() {
        return false;
    }
    with_worker(|w, shared| {
        let me = w.actor.current.get();
        let mine = w.id as u32 + 1;
        !(0..shared.slots.high_water() as u32).any(|i| {
            shared.slots.get(i).is_some_and(|slot| {
                use crate::slot::table::{PINNED_UNWINDING, pinned_scheduler};
                let pin = slot.pinned.load(std::sync::atomic::Ordering::Relaxed);
                pin & PINNED_UNWINDING != 0
                    && (shared.is_simulated() || pinned_scheduler(pin) == mine)
                    && me.is_none_or(|me| me.index() != i)
            })
        })
    })
    .unwrap_or(true)
}

/// The running actor's pid and runtime, or a panic naming `what` that says
/// how to fix the call.
#[inline]
pub(crate) fn with_current_actor<R>(what: &str, f: impl FnOnce(Pid, &Shared) -> R) -> R {
    with_current_actor_in_section(what, f).0
}

/// [`with_current_actor`], handing back its runtime section (`Section`)
/// for the caller to keep open past `f`, over a runtime call that goes on
/// after it.
#[inline]
pub(crate) fn with_current_actor_in_section<R>(
    what: &str,
    f: impl FnOnce(Pid, &Shared) -> R,
) -> (R, Section) {
    // A runtime call: an overflow inside it must not end only the actor
    // (`life.rs`).
    match with_worker(|w, shared| {
        w.actor
            .current
            .get()
            .map(|pid| (pid, shared as *const Shared, Section::enter_on(w)))
    }) {
        Some(Some((pid, shared, section))) => {
            // SAFETY: as in `with_worker`: the runtime outlives the actor.
            (f(pid, unsafe { &*shared }), section)
        }
        _ => outside_actor(what),
    }
}

#[cold]
#[inline(never)]
pub(crate) fn outside_actor(what: &str) -> ! {
    panic!(
        "smarm: `{what}` must be called from inside an actor: start the runtime with \
         smarm::run(|| ...) (or Runtime::run) and call it from that closure or an actor it \
         spawns{}{}",
        in_async_code(),
        what_works_outside(what)
    )
}

/// What to call instead of `what` from a plain thread or async code, where
/// there is something (the guide's "Calling actors from async code").
fn what_works_outside(what: &str) -> String {
    let instead = match what {
        "spawn" | "try_spawn" | "Builder::spawn" => {
            "spawn through the runtime's handle: RuntimeHandle::spawn (Runtime::handle, \
             Running::handle)"
        }
        "smarm::exit" => "send it through the runtime's handle: RuntimeHandle::exit",
        "sleep" => "in async code, await tokio::time::sleep (or another executor's timer)",
        "select" => "await the receivers' recv_async futures (tokio::select!)",
        _ => {
            // A behaviour's blocking call has an async twin of the same
            // name: `GenServerRef::call` -> `GenServerRef::call_async`.
            return match what
                .strip_suffix("::call")
                .or(what.strip_suffix("::call_timeout"))
            {
                Some(owner) => {
                    let timed = if what.ends_with("_timeout") {
                        "_timeout"
                    } else {
                        ""
                    };
                    format!(
                        "; from async code or a plain thread, await {owner}::call_async{timed} \
                         instead (smarm::future::block_on(it) on a plain thread)"
                    )
                }
                None => String::new(),
            };
        }
    };
    format!("; from async code or a plain thread, {instead}")
}

/// A note that the caller is a task of an async runtime, where the
/// feature `tokio` can tell.
fn in_async_code() -> &'static str {
    #[cfg(feature = "tokio")]
    if tokio::runtime::Handle::try_current().is_ok() {
        return " (this thread runs async code: a tokio runtime)";
    }
    ""
}
