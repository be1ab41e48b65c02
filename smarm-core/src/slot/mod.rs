//! The slot table: one slot per actor, a packed state word per slot, and
//! the park/wake protocol every blocking primitive is built on.
//!
//! # Design
//!
//! A fixed-capacity slab ([`Config::max_actors`](crate::runtime::Config))
//! of slots, allocated in 4,096-slot segments as the high-water mark grows.
//! A [`Pid`](crate::Pid) is (index, generation): a slot's generation is
//! bumped each time it is recycled, so a stale pid never reaches the slot's
//! next tenant.
//!
//! Each slot has one `AtomicU64` state word, `generation:32 | epoch:28 |
//! state:4` (`word.rs`), with states Vacant, Queued, Running,
//! RunningNotified, Parked and Done. Every wake-up goes through the word:
//!
//! 1. The actor opens a wait with `begin_wait` (only through
//!    `scheduler::Wait`), which bumps the epoch and returns it, and
//!    registers the `WaitId` (pid, epoch) with whoever will wake it.
//! 2. A waker calls `unpark_at(generation, epoch)` (through
//!    `Shared::wake`): Parked→Queued (the waker
//!    enqueues the actor) or Running→RunningNotified (the actor has not
//!    finished parking yet), only if generation and epoch still match.
//! 3. The actor switches to its scheduler, which commits the park:
//!    Running→Parked, or, finding RunningNotified, re-queues it at once.
//!
//! A waker whose wait is over (a losing `select` arm, a timer that fired
//! after the message came) fails the epoch compare and does nothing:
//! nothing needs cancelling. `retire_wait` closes a wait without parking.
//!
//! Beside the word, a slot keeps the data of its runner (saved stack
//! pointer, stack, entry closure: touched only by whoever holds the actor
//! Running or Queued) and "cold" data under a Leaf-class lock (parent,
//! joiner, outcome, whether a `JoinHandle` still exists).
//!
//! `debugger.rs` publishes where each table's slots are and how a slot
//! is laid out, for a debugger to list the actors from outside the
//! process (`smarm-core/debugger/smarm-gdb.py`).
//!
//! # Invariants
//!
//! - (I1) An actor is in at most one run queue at a time: only the
//!   transitions into Queued (spawn, Parked→Queued, the scheduler's
//!   re-queue of a yield or a notified park) enqueue, and each is a CAS (or
//!   a store by the exclusive owner) out of a non-Queued state.
//! - (I2) Only the scheduler that popped an actor moves it out of Queued
//!   and out of Running, and only after the actor's context is saved (the
//!   park commit runs on the scheduler stack after the switch).
//! - (I3) A wake for epoch `e` is delivered iff the actor is still in wait
//!   `e`: a matching wake that lands before the park commit leaves
//!   RunningNotified and the commit re-queues; one after it finds Parked
//!   and enqueues. A wake with another epoch or generation changes nothing.
//! - (I4) A slot is recycled (generation bumped, Vacant) only once it is
//!   Done and no `JoinHandle` refers to it.
//!
//! # Memory ordering
//!
//! All transitions are AcqRel RMWs on the one word, so the last writer's
//! effects (the saved context, the registration data) are visible to the
//! next transition's owner. The run queue's lock carries the Queued→Running
//! handoff between threads. The loom model in `loom_models.rs` checks
//! (I3): a wake landing between `begin_wait` and the park commit is never
//! lost, and a stale epoch never wakes.
//!
//! # Safety
//!
//! The runner-owned cells are `UnsafeCell`s whose exclusive access follows
//! from (I1) and (I2); each access names that argument.

mod cold;
#[cfg(not(loom))]
mod debugger;
mod exit;
mod pid;
pub(crate) mod table;
mod wait_id;
pub(crate) mod word;

#[cfg(all(test, loom))]
mod loom_models;

pub(crate) use cold::{Cold, Joiner};
pub(crate) use exit::Outcome;
pub use exit::{DownReason, ExitReason, LinkedExit};
pub use pid::{Addressable, ParsePidError, Pid};
pub(crate) use table::{Slot, SlotTable};
pub(crate) use wait_id::WaitId;

/// Why no slot could be had; the actor layer reports it as a
/// [`SpawnError`](crate::SpawnError).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SlotError {
    /// Every slot up to `Config::max_actors` is taken.
    AtCapacity { max_actors: usize },
    /// The kernel refused memory for a new segment of the table.
    TableOutOfMemory { bytes: usize },
}
