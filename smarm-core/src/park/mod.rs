//! Scheduler park/wake coordination: how idle schedulers sleep and exactly
//! one of them is woken when work appears.
//!
//! # Design
//!
//! Schedulers never sleep on a shared fd. Each parks on its own [`Parker`]
//! and is woken through an idle-mask protocol the runtime owns. Producers
//! (an actor waking another, a timer, an IO poll) follow a two-call
//! contract: make the actor runnable (push it on a queue), then run the
//! enqueue wake tail ([`Coordinator::wake_one_if_idle`]).
//!
//! - **Parker** (one per scheduler): permit semantics in the shape of
//!   `std::thread::park`. An unpark delivered before the park leaves a
//!   permit; the next park consumes it and returns at once. Linux: a private
//!   futex with a nanosecond relative timeout. Loom and other targets: a
//!   `Mutex` + `Condvar`. A *polling* park blocks in the IO poll instead
//!   ([`Coordinator::park_polling`]); an unpark that finds the parker
//!   polling writes the poll's wake eventfd.
//! - **Idle mask**: an `AtomicU64` of parked scheduler ids. A scheduler
//!   parks by publishing its bit, re-checking every work source, then
//!   blocking. [`Coordinator::wake_one`] picks the highest set bit, CASes it
//!   clear and unparks that one scheduler: one wake, one scheduler.
//! - **Chain rule**: a scheduler that pops work and sees more queued wakes
//!   one more sibling, so one producer wake fans out to as many schedulers
//!   as there is work.
//! - **Timekeeper**: at most one parked scheduler holds the earliest timer
//!   deadline (of every timer shard) and parks with that timeout; the rest
//!   park with none. An expiry wakes one scheduler, never a herd. An insert
//!   of an earlier deadline wakes the holder to re-peek; an insert with no
//!   holder wakes one idle scheduler to take the role.
//! - **Busy-path due-check**: each timer shard's earliest deadline, one
//!   word per shard on a line of its own, read with a Relaxed load per
//!   shard every few scheduler loops, so timers fire even when no scheduler
//!   ever parks (and so no timekeeper exists).
//! - **Terminal wake**: [`Coordinator::wake_all`] permits every parker.
//!
//! # Invariants
//!
//! - (I1) A scheduler's idle bit is set only by itself, between the start
//!   of [`Coordinator::park`] and its return; it is cleared by a waker's CAS
//!   or by the scheduler on return.
//! - (I2) Work published before a producer's wake tail is seen either by
//!   the producer's mask load (it wakes someone) or by the parking
//!   scheduler's re-check (it does not block). No lost wake.
//! - (I3) `wake_one` wakes at most one scheduler per call: the CAS that
//!   clears a bit owns the wake.
//! - (I4) A shard's deadline word is written only under that shard's
//!   lock, and is its heap's minimum (lowered by an insert, re-anchored by
//!   a pop). The role is claimed without a lock: the claimer publishes the
//!   holder and its armed deadline, then re-reads every shard's word and
//!   re-arms for anything earlier; an insert that lowers its shard's word
//!   publishes it, then reads the armed deadline and wakes the holder if
//!   it is later. Both sides are SeqCst, a store-buffer pair: an earlier
//!   insert is seen by the claimer's re-read or sees the armed deadline.
//!   So the holder is armed no later than every shard's earliest timer,
//!   and an insert no earlier than a timer already pending in its shard
//!   needs no check at all.
//! - (I5) A pending timer always has a scheduler that will fire it: a
//!   parked timekeeper, or a busy scheduler's due-check, or (when an insert
//!   finds no timekeeper) an idle scheduler woken to become one. A
//!   scheduler whose park re-check sees a timer with no timekeeper does not
//!   block: it loops and takes the role. So a busy scheduler that blocks
//!   its thread (a system call, a std lock) cannot strand the timers while
//!   another scheduler idles. A scheduler that stops without parking again
//!   (a spare leaving) may be the one an insert woke to keep time: if a
//!   timer is then unkept, it wakes another idle scheduler in its place.
//! - (I6) A polling park is a park: the same idle bit, re-check and permit,
//!   so (I1)-(I3) hold for it unchanged; it also ends when the poll finds
//!   work. `wake_one` picks the polling scheduler only when no other is
//!   idle, so the poll goes on while a futex-parked sibling takes the work.
//!
//! # Memory ordering
//!
//! The publish/re-check pair is a store-buffer (Dekker) shape, resolved two
//! ways by call-site cost:
//!
//! - Producer hot path, [`Coordinator::wake_one_if_idle`]: push work;
//!   `fence(SeqCst)`; one Relaxed load of the mask. Consumer:
//!   `fetch_or(bit)`; `fence(SeqCst)`; re-check. The two SeqCst fences are
//!   totally ordered: if the producer's fence is first, the consumer's
//!   re-check (after its fence) sees the push; if the consumer's is first,
//!   the producer's mask load (after its fence) sees the bit. (I2) When
//!   everyone is busy the producer pays a fence and a load of a line nobody
//!   writes.
//! - Rare paths ([`Coordinator::wake_one`] on its own): an RMW read
//!   (`fetch_or(0)`) of the mask, which reads the latest value in the
//!   mask's modification order.
//!
//! Every race is biased towards over-waking: a spurious permit costs one
//! failed pop; a missed wake would strand an actor. The loom models in
//! `loom_models.rs` (no lost wake, chain propagation, timekeeper handoff,
//! termination) check these claims under `--cfg loom`.
//!
//! # Safety
//!
//! The only unsafe code is the futex syscall in `parker/futex.rs` (see
//! [`crate::lock::futex`]) and the 8-byte `write` to a polling parker's
//! wake eventfd, which the runtime keeps open (netpoll (P2)).

mod coordinator;
mod parker;

#[cfg(all(test, loom))]
mod loom_models;
#[cfg(all(test, not(loom)))]
mod tests;

pub(crate) use coordinator::{Coordinator, NO_DEADLINE, ParkResult};
#[allow(unused_imports)] // the Parker name is documented above
pub(crate) use parker::Parker;
