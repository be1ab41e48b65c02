//! Futures from blocking-style code: [`block_on`] awaits a future on the
//! calling actor's stack, parking only that actor while it is pending, so
//! async crates can be used from actors; with the `tokio` feature the
//! runtime keeps a tokio runtime beside it, and every scheduler thread
//! runs inside its context, so `tokio::net`, `tokio::time`, `tokio::spawn`
//! and the crates on them (reqwest, sqlx, hyper, tonic) work in actors.
//!
//! # Design
//!
//! `block_on` polls the future in a loop. Between polls the actor parks
//! through the one wait protocol ([`WaitingOn::Future`](crate::WaitingOn)),
//! and the future's [`Waker`](std::task::Waker) makes it runnable again
//! through the runtime's wake path (`Shared::wake`, as a `WakeToken`
//! does): from a smarm scheduler, a tokio thread or any plain thread.
//!
//! The waker points at a reference-counted record per await (`waker.rs`)
//! holding a handshake word (`cell.rs`, `NOTIFIED | ARMED | epoch`), the
//! actor's pid and a count of its runtime. Records are cached per
//! scheduler thread and reused while no clone of their waker outlives an
//! await, so a steady stream of awaits allocates nothing.
//!
//! The handshake, per round: the actor clears the word (`begin_poll`) and
//! polls; on `Pending` it opens a wait and CASes `0 → ARMED | epoch`
//! (`arm`); a failed CAS means a wake came during the poll, so it retires
//! the wait and polls again, else it parks. A waker `fetch_or`s
//! `NOTIFIED` and delivers a wake to the epoch it found only if it found
//! `ARMED` and not `NOTIFIED` (`notify`).
//!
//! Which thread runs what: the future's `poll` runs on the actor's
//! scheduler thread, with the actor's stack; a task given to
//! `tokio::spawn` (from actor code or from inside a future) runs on the
//! tokio threads; tokio's IO driver and timers run there too and wake the
//! actor through its waker. The tokio context is the scheduler thread's,
//! entered for the thread's life (`scheduler::ThreadContext`), not the
//! actor's: every actor on every scheduler of one runtime finds the same
//! tokio runtime, whichever thread it resumes on. A plain thread's
//! `block_on` has no tokio context but its own.
//!
//! What not to do:
//!
//! - Hold a `std::sync::Mutex` guard, a `RefCell` borrow or any other
//!   thread-bound state across `block_on`: the actor may resume on
//!   another thread, and other actors run on this one meanwhile (as
//!   across any blocking call).
//! - Call tokio's `Handle::block_on`, `Runtime::block_on` or
//!   `futures::executor::block_on` inside an actor: they block the
//!   scheduler thread, and every actor queued on it waits.
//! - Call a blocking smarm operation (`recv`, `sleep`, `join`, a gen_server
//!   `call`) inside a future's `poll`: it would park the actor mid-poll,
//!   with whatever the poll holds in thread-locals. It panics, naming the
//!   fix: await the async form instead, or call it outside the future.
//! - Hold a guard of tokio's `Handle::enter` across a blocking call: it is
//!   thread-local, and the actor may resume on another thread.
//!
//! # Invariants
//!
//! - (F1) A wake is never lost: one that lands before `arm` makes the arm
//!   fail and the actor poll again; one after it finds `ARMED` and wakes
//!   the wait (or the slot word's `RunningNotified` makes the park return
//!   at once, slot (I3)).
//! - (F2) A poll sees what a waker wrote before its wake: `notify` is a
//!   Release RMW, `begin_poll` an Acquire RMW on the same word.
//! - (F3) A wake is delivered at most once per round: only the first
//!   `notify` after an `arm` finds `NOTIFIED` clear; repeated and spurious
//!   wakes only set a bit.
//! - (F4) A wake after the await ended reaches nobody: the end disarms
//!   the record, and a disarmed record delivers nothing.
//! - (F5) A record is reused by a later await (of any actor) only when its
//!   count is 1, held by the ending await alone: no waker of it exists,
//!   and none can be made. With a waker still out, the record is left to
//!   that waker, disarmed for good, and freed by the last one. So a stale
//!   waker never reaches a later wait or a later tenant of the slot.
//! - (F6) An await counts as work in flight for the root-exit sweep
//!   (runtime (I3)), as a blocking-pool job does: an actor awaiting a
//!   tokio timer is not stopped as if it could never wake. A future that
//!   never completes keeps `run` from ending.
//!
//! # Memory ordering
//!
//! All of the handshake is RMWs on one word, so the word's modification
//! order decides every race (F1, F3); the Acquire/Release pairing of
//! `begin_poll` and `notify` is what (F2) needs, and the loom model in
//! `loom_models.rs` fails without it. The reference count is `Arc`'s
//! (Relaxed increment, Release decrement, an Acquire fence before the
//! free).
//!
//! # Safety
//!
//! `waker.rs` implements a `RawWaker` over a manually counted record; each
//! function names the count that keeps the record alive.

mod arm;
mod block_on;
mod cell;
mod reply;
mod timer;
#[cfg(feature = "tokio")]
mod tokio;
mod waker;

#[cfg(all(test, loom))]
mod loom_models;

#[cfg(feature = "tokio")]
pub use self::tokio::{DEFAULT_TOKIO_THREADS, TokioError};
#[cfg(feature = "tokio")]
pub(crate) use self::tokio::{TokioSlot, prepare as prepare_tokio};
pub use arm::FutureArm;
pub use block_on::{Elapsed, block_on, block_on_timeout};
pub use reply::{AsyncReply, AsyncReplySender, async_reply};
#[doc(hidden)] // for smarm-otp's call timeouts
pub use timer::{SleepUntil, sleep_until};
