//! smarm-core: the smarm runtime.
//!
//! Stackful actors on a few scheduler threads that park on per-thread
//! futexes: spawning and cooperative stop, timers, channels and select, an
//! actor-aware Mutex, monitors and links, and IO that parks only the actor.
//! Users depend on the `smarm` facade, which re-exports this crate.
//!
//! # Layers
//!
//! The crate is built in layers, each using only the layers below it (and
//! modules of its own layer). Where a lower layer must call up (a timer
//! that wakes an actor, a scheduler that asks whether the runtime is done),
//! it owns a small trait or function value that the upper layer installs.
//! `tests/layers.rs` reads this table and fails on any `crate::` or
//! `super::` path that reaches a layer above its module's, and on a
//! folder whose modules sit on two layers: each row names folders (and
//! single-file modules), and a folder is one room. `docs/architecture.md`
//! in the repository describes every room of every crate.
//!
//! ```text layers
//! 0 loom clock config context errno hash heap json lock locals mapping reclaim stack
//! 1 slot
//! 2 park recorder causal
//! 3 timer
//! 4 scheduler
//! 5 allocator channel sync future
//! 6 actor signal stop report
//! 7 io time profiler
//! 8 introspect trace
//! 9 runtime
//! 10 sim
//! ```
//!
//! - 0, foundations: the sync facade, `Config`, the context switch, memory
//!   mappings, heap accounts, stacks, JSON strings, futexes, the
//!   asymmetric fence, the internal locks and the preemption gate
//!   (`lock`), deferred drops for lock-free readers (`reclaim`) and
//!   per-runtime values (`locals`), and `errno` read on the thread that
//!   failed (`errno`).
//! - 1, the slot table: a slot per actor, its state word and its runner.
//! - 2, the coordination of idle schedulers (futex parkers, timekeeper);
//!   the trace recorder's rings; causal profiling's progress points.
//! - 3, the timer heap, a runtime's `Timers` around it, and the per-actor
//!   wait timer.
//! - 4, the schedulers: run queues, next slot, stealing, preemption, the
//!   system monitor that keeps a blocked scheduler's work moving, and the
//!   one wait protocol every blocking call goes through.
//! - 5, the primitives built on that protocol: channels, call replies and
//!   select, the actor-aware `Mutex`, awaiting a future (`block_on`, the
//!   tokio runtime beside smarm); the global allocator that preempts and
//!   counts heaps at allocation (`allocator`).
//! - 6, actors: spawn, join, stop, outcomes, and the signals an exit sends
//!   (monitors, links, exit trapping), through channels or the watcher's
//!   own function; the crash report of an actor that panicked.
//! - 7, IO that parks only the actor; `sleep` and message timers; causal
//!   profiling's regions and sessions (`profiler`).
//! - 8, introspection of a running system.
//! - 9, the runtime that assembles the layers, runs them, and keeps
//!   per-runtime state for libraries built on smarm.
//! - 10, deterministic simulation (feature `sim`): a runtime's scheduler
//!   loops driven on one thread, every choice from a seed.

/// Record a runtime trace event on `shared` (feature `trace`): the
/// operands are evaluated only while recording, in the out-of-line
/// recording function (the event point itself is a load and a branch);
/// without the feature the point compiles to nothing.
macro_rules! trace_event {
    ($shared:expr, $kind:ident, $a:expr, $b:expr) => {{
        #[cfg(feature = "trace")]
        {
            if $crate::recorder::any_active() {
                $shared.trace_record($crate::recorder::Kind::$kind, || ($a, $b));
            }
        }
        #[cfg(not(feature = "trace"))]
        {
            let _ = &$shared;
        }
    }};
}

pub mod actor; //         spawn, Pid, JoinHandle, yield_now, request_stop
mod allocator; //         PreemptingAlloc: preemption and heap accounting at allocation
#[cfg_attr(not(feature = "smarm-causal"), doc(hidden))]
pub mod causal; //        progress points (feature `smarm-causal`)
pub mod channel; //       channels and select
mod clock; //             the timeslice and trace clock (cycle counter)
pub mod config; //        Config and its limits
mod context; //           the assembly context switch
mod errno; //             errno read where it is read (never across a park)
pub mod future; //        block_on: futures awaited by actors; the tokio runtime beside
pub mod hash; //          the hash for smarm's own keys (names, timer ids)
mod heap; //              per-actor heap accounts and limits
pub mod introspect; //    snapshot, actor_info, tree
pub mod io; //            blocking pool, fd readiness, FdArm, net sockets
#[cfg(any(feature = "trace", feature = "smarm-causal"))]
mod json; //              JSON string literals for the exports
mod locals; //            per-runtime state of the layers above, one value per type
mod lock; //              futex, RawMutex, lock classes, the no-preempt gate
mod loom; //              the sync facade (loom or std)
mod mapping; //           anonymous mmap: the one place it is called
mod park; //              scheduler park/wake coordination
#[cfg(feature = "smarm-causal")]
pub mod profiler; //      causal profiling sessions and regions
mod reclaim; //           deferred drops for lock-free readers
#[cfg(feature = "trace")]
mod recorder; //          the per-scheduler trace rings events are recorded into
pub mod report; //        crash and supervisor reports, and where they go
pub mod runtime; //       run, Runtime, the termination verdict
mod scheduler; //         worker loop, run queues, preemption gate
pub mod signal; //        monitors, links, exit trapping, on_exit
#[cfg(feature = "sim")]
pub mod sim; //           deterministic simulation: seeded schedulers, simulated time
mod slot; //              slot table, state word, park/wake protocol
mod stack; //             mmap'ed stacks, guard pages, overflow report
pub mod stop; //          telling a stop from a panic, and cleanup that blocks
pub mod sync; //          the actor-aware Mutex
pub mod time; //          sleep, message timers
mod timer; //             the sharded timer heaps, bounded waits
#[cfg(feature = "trace")]
pub mod trace; //         runtime trace events, Chrome Trace export

/// Whether smarm's own fault site `site` (a short description of the
/// fault: "a bounded mailbox reports full") fires now: only inside a
/// simulation whose [`Sim::runtime_faults`](crate::sim::Sim::runtime_faults)
/// is on, as FoundationDB's BUGGIFY; a constant `false` without the `sim`
/// feature. For smarm's crates: a site may only make an operation fail
/// or come up short in a way its contract already allows.
#[doc(hidden)]
#[inline(always)]
pub fn fault_site(site: &'static str) -> bool {
    #[cfg(feature = "sim")]
    {
        scheduler::simulated::any_installed() && scheduler::simulated::runtime_fault(site)
    }
    #[cfg(not(feature = "sim"))]
    {
        let _ = site;
        false
    }
}

/// Maybe switch the running actor out here, as a preempted thread would
/// be: smarm's own scheduling fault site `site` (see [`fault_site`]), for
/// a place where another actor running in the gap matters (between a
/// behaviour's end and its cleanup). Never observes a stop.
#[doc(hidden)]
#[inline(always)]
pub fn fault_pause(site: &'static str) {
    if fault_site(site) && scheduler::in_actor() {
        scheduler::yield_without_stop();
    }
}

pub use actor::{
    Addressable, Builder, ExitReason, JoinError, JoinFuture, JoinHandle, JoinTimeoutError,
    ParsePidError, Pid, SpawnError, exit_with, hibernate, in_actor, is_alive, panicking,
    request_stop, request_stop_all, require_actor, self_pid, spawn, spawn_under, try_self_pid,
    try_spawn, yield_now,
};
pub use allocator::PreemptingAlloc;
pub use channel::{
    BoundedReceiver, Receiver, RecvError, RecvTimeoutError, Selectable, SendError,
    SendTimeoutError, Sender, TrySendError, channel, select, select_timeout, try_select,
    try_select_timeout,
};
pub use introspect::{
    ActorInfo, ActorState, RuntimeSnapshot, RuntimeTree, SchedulerStats, TreeNode, WaitingOn,
    actor_info, heap_accounting, snapshot, tree, tree_from,
};
pub use lock::no_preempt::NoPreempt;
pub use runtime::run;
pub use scheduler::check_timeslice;
pub use signal::{
    Down, DownReason, Ended, Exit, ExitSignal, LinkedExit, Monitor, MonitorId, MonitorRef,
    demonitor, exit, link, monitor, monitor_with, spawn_link, trap_exit, trap_exit_with, unlink,
};
pub use sync::{LockTimeout, Mutex, MutexGuard};
pub use time::sleep;
