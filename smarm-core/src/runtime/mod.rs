//! `run(f)`, `Runtime`, and the termination verdict.
//!
//! # Design
//!
//! [`init`] builds a [`Runtime`] from a [`Config`]: the schedulers' shared
//! state (slot table, run queues, coordination layer, timer heap, stack
//! pool, termination counters; `scheduler::Shared`), which the runtime
//! assembles and the layers above reach through the running scheduler.
//! [`Runtime::run`] spawns `f` as the root actor, starts `threads - 1`
//! scheduler threads, runs scheduler 0 on the calling thread, and returns
//! when the verdict says every actor is done. A runtime can `run` again
//! after that; separate runtimes on separate OS threads share nothing but
//! the process-wide stack pools.
//!
//! # Invariants
//!
//! - (I1) `live_actors` counts actors from spawn (before their first
//!   enqueue) to the very end of finalisation.
//! - (I2) Termination: `live_actors == 0` and no IO in flight means no
//!   work can ever appear again. Every enqueue targets a live actor, a
//!   spawner is itself live, and finalisation decrements only after every
//!   wake it produces; so once the count reads 0, nothing can raise it.
//!   The deciding scheduler `wake_all`s its siblings, which re-run the
//!   verdict and leave too.
//! - (I3) Root-exit sweep: once the root has finished, if every scheduler
//!   is idle, no queue holds work, no timer is armed and no blocking call
//!   is in flight, no remaining actor can be woken except, perhaps, by an
//!   fd that may never become ready. They are stopped (a
//!   cooperative unwind: destructors run), so a forgotten server cannot
//!   hang `run`. An actor that is sleeping or waiting on a timeout is not
//!   swept: it will wake; nor is one awaiting a future (`block_on`),
//!   whose waker may come from any thread (future (F6)). One waiting on an
//!   fd is: an fd may never become ready.
//! - (I4) A root that ends without returning (a panic, an exit signal, a
//!   stop) sweeps at once: every remaining actor is stopped, timers and
//!   all, and `run` re-raises the root's failure once they have unwound,
//!   as a Rust `main` that panics ends its program. A forgotten server
//!   with a periodic timer (a distribution connection ticking) cannot
//!   hold a failed run open.
//!
//! # Memory ordering
//!
//! `live_actors` is AcqRel on both sides; a scheduler reading 0 has seen
//! every finalisation's effects. The idle path's re-check reads the queue
//! lengths and counters after the coordination layer's SeqCst fence (park
//! (I2)).

mod handle;
mod local;
mod run;
#[cfg(feature = "sim")]
mod simulated;

pub use crate::config::{Config, ConfigError};
pub use handle::{Running, RunningFuture, RuntimeHandle, current};
pub use local::{RuntimeRef, defer_drop, with_runtime_local};
pub use run::{Runtime, init, run};
