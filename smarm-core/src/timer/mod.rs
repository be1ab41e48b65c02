//! The timer machinery: the sharded timer heaps behind `sleep`, message
//! timers and every bounded wait. The calls actors make are in `time`
//! (layer 7); this layer knows slots and parking, not actors.
//!
//! # Design
//!
//! A runtime's timers are sharded, one timer heap per regular scheduler,
//! each under a Timers-class lock of its own (`timers.rs`): an actor arms
//! in the shard of the scheduler it runs on, and that scheduler's busy-path
//! due-check fires it, so with every core sleeping and waking actors no
//! two cores share a timer lock or a heap line (one runtime-wide heap cost
//! the timers workload, 100,000 sleepers on two schedulers, a tenth of its
//! time in that lock and its lines). A busy scheduler fires another's
//! shard only once it is a quarter timeslice late (an owner stuck in one
//! long run or a system call), and the timekeeper fires them all (I4). In
//! each heap, entries are ordered by `(deadline, seq)`, each with an
//! action; only those due within the
//! current millisecond sit in the binary heap itself, later ones wait in a
//! bucket per millisecond (`heap.rs`), and armed timers are records in a
//! slab reused last-freed first, so a burst of sleepers costs neither a
//! deep heap nor a hash table's cache misses. Every timed wait (`sleep`,
//! `recv_timeout` and friends) is a bounded wait (`bounded.rs`): the actor
//! keeps one cached timer across its waits instead of arming and cancelling
//! one per wait, and a firing timer wakes the actor's current wait by its
//! `WaitId` (pid, epoch), so it never wakes a wait that already ended
//! (slot (I3)); a wait woken early re-checks its deadline and waits again.
//! Message timers (`send_after_to`, `call_after`) carry a thunk. Timers
//! fire from two places: the busy-path
//! due-check at the top of every scheduler loop, and the timekeeper, the
//! one idle scheduler parked with the earliest deadline as its timeout
//! (see the `park` module). Every insert notes its deadline with the
//! coordinator under its shard's lock. Cancelled entries are
//! compacted out of the heap once they outnumber the armed ones, so a heap
//! of mostly-cancelled deadlines never slows inserts.
//!
//! # Invariants
//!
//! - (I1) An armed timer fires at most once; a cancelled one never fires
//!   (the armed set decides at pop time).
//! - (I2) `sleep(d)` returns no earlier than `d` after it was called: a
//!   wake before the deadline (a stop, a stale notification) re-arms.
//! - (I3) A finished actor's cached timer is cancelled, and the root-exit
//!   sweep counts a cached timer only while its actor is in a timed wait,
//!   so a stopped sleeper's timer does not delay the sweep (bounded (B3)).
//! - (I4) A timer stays in the shard it was armed in until it fires or is
//!   cancelled, and its `seq` names that shard, so a cancel, or the finish
//!   of an actor that has since moved to another scheduler, finds it from
//!   anywhere. A due timer is fired by its shard's scheduler at its next
//!   due-check, by any busy scheduler once it is a quarter timeslice late,
//!   or by the timekeeper, which parks toward the earliest of all shards.

pub(crate) mod bounded;
pub(crate) mod heap;
pub(crate) mod timers;

pub use heap::TimerId;
