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
//!    at most [`LIFO_STREAK`](worker::LIFO_STREAK) times in a row, so a ping-pong pair cannot
//!    starve the queue;
//! 2. the local queue front (on every [`FAIRNESS_TICK`](worker::FAIRNESS_TICK)th pop its back, at
//!    most once in ten timeslices, so a yielded actor is reached even under
//!    a stream of new work, while the oldest new work there, a spawning
//!    tree's shallow nodes, is not started early and often: that grew
//!    skynet's live set threefold); every
//!    [`INJECTOR_TICK`](worker::INJECTOR_TICK)th pop the global injector comes first;
//! 3. the global injector (work from threads that are not schedulers);
//! 4. this scheduler's pinned queue (also taken first every
//!    [`FAIRNESS_TICK`](worker::FAIRNESS_TICK)th pop);
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
//! window may be marked poisoned. `smarm::panicking()` answers for the
//! running actor alone: an actor pinned mid-unwind is marked so in its
//! slot (`PINNED_UNWINDING`), which says whether the thread's count may be
//! another's. Blocking in a destructor is therefore
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
//!   threads reach a scheduler only through its `Schedulers::queues` entry.
//! - (I2) Actor code never holds a reference derived from the thread-local
//!   across a switch: after a switch the actor may be on another thread.
//!   Every access re-reads it through the `#[inline(never)]`
//!   [`current_worker`] (and the preemption gate through `preempt::gate`):
//!   an inlined thread-local access lets the compiler reuse an address
//!   computed before the switch, on the wrong thread.
//! - (I3) The next slot and the pinned queue hold actors only this
//!   scheduler may run; every other queued actor is reachable by all. The
//!   one exception: the system monitor ([`sysmon`]) moves the next-slot
//!   actor of a scheduler blocked inside one actor's run to the injector
//!   (next slot (N1), (N2)).
//!
//! # Safety
//!
//! The context switch is called here (scheduler side) and in
//! [`switch_out`](switch::switch_out) (actor side); see [`crate::context`] for its contract.

#[cfg(feature = "smarm-causal")]
pub(crate) mod causal;
mod current;
mod diag;
mod life;
mod live;
pub(crate) mod netpoll;
mod next_slot;
pub(crate) mod preempt;
mod run_queue;
mod shared;
#[cfg(feature = "sim")]
pub(crate) mod simulated;
#[cfg(feature = "tracing")]
mod spans;
mod stacks;
mod stats;
mod switch;
pub(crate) mod sysmon;
mod termination;
mod thread_context;
mod timer_dispatch;
pub(crate) mod wait;
mod worker;

pub(crate) use current::{
    Section, Worker, actor_unwinding, current_pid, current_worker, in_actor, outside_actor,
    with_current_actor, with_current_actor_in_section, with_worker, worker_busy,
};
pub use life::Hibernation;
pub(crate) use life::{
    Arm, HeapLimitKilled, Hibernating, Overflowed, hold_lock, recover as recover_overflow,
    unhold_lock,
};
pub(crate) use live::LiveCount;
pub(crate) use preempt::alloc_safepoint;
pub use preempt::check_timeslice;
pub(crate) use run_queue::RunQueue;
pub(crate) use shared::Shared;
pub(crate) use stats::Counters;
pub(crate) use switch::{Intent, StopSignal, check_stop, yield_now, yield_without_stop};
use switch::{park, park_deaf_to_stop, switch_out, unwind_stop};
pub(crate) use termination::Verdict;
#[cfg(feature = "tokio")]
pub(crate) use thread_context::Enter;
pub(crate) use thread_context::ThreadContext;
pub use wait::WaitingOn;
pub(crate) use wait::{BoundedWaiter, Deadline, Registered, Wait, WakeToken, bounded_wait};
pub(crate) use worker::run_worker;
#[cfg(feature = "sim")]
pub(crate) use worker::run_worker_simulated;
