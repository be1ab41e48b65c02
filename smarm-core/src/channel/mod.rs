//! Multi-producer, single-consumer channels: how actors talk to each
//! other.
//!
//! A channel is a queue with any number of [`Sender`] clones on one end and
//! one [`Receiver`] on the other. On a [`channel`] (unbounded) `send` never
//! blocks; on a [`bounded`] one it parks the sender while the channel is
//! full (backpressure). `recv` parks only the receiving actor. For one value back there are [`oneshot`] (a
//! channel for a single value) and [`await_reply`] (a call's reply,
//! written straight into the waiting caller's frame).
//!
//! ```
//! use smarm::{channel, run, spawn};
//!
//! run(|| {
//!     let (tx, rx) = channel::<u64>();
//!
//!     let worker = spawn(move || {
//!         // Blocks until a message arrives.
//!         let n = rx.recv().unwrap();
//!         assert_eq!(n, 42);
//!
//!         // Once every Sender is dropped, recv() reports the channel closed
//!         // instead of blocking forever.
//!         assert!(rx.recv().is_err());
//!     });
//!
//!     tx.send(42).unwrap();
//!     drop(tx); // last sender gone: the channel is now closed
//!     worker.join().unwrap();
//! });
//! ```
//!
//! # Design
//!
//! The shared queue lives in an `Arc<Chan<T>>`, behind a `RawMutex` of
//! lock class Channel. A receiver that finds the queue empty opens a
//! `scheduler::Wait`, registers its `WaitId` (pid, epoch) in the channel,
//! and parks; a sender pushes, takes the registration and wakes that wait.
//! Every other wake of that wait (a `recv_timeout` deadline, a
//! losing `select` arm) carries the same epoch, so whichever comes second
//! dies at the slot word's CAS: nothing is cancelled. The registration also
//! carries the receiver's runtime (cached per channel), so a sender on any
//! thread, inside or outside the runtime, can wake it. A receiver on a
//! plain thread (not a scheduler) registers its `std::thread::Thread`
//! instead and parks the thread, as `Mutex::lock` blocks one; the same
//! push or last-sender drop unparks it.
//!
//! The receiver keeps a second queue of its own (no lock: it is not
//! `Sync`): when it runs dry, it moves the whole shared queue there in one
//! lock hold, so under a stream of sends (fan-in) it contends with the
//! senders once per batch, not once per message. Each queue keeps its
//! oldest message inline (`Queue`), so a one-message handoff touches no
//! separate buffer.
//!
//! # Invariants
//!
//! - (I1) At most one actor receives at a time: `Receiver` is neither
//!   `Clone` nor `Sync`, so only its current owner can call it.
//! - (I2) A receiver is registered only while the queue holds nothing it
//!   will take (empty, or nothing matching for `recv_match`) and the
//!   channel is open; every push and the last sender's drop take the
//!   registration and wake it.
//! - (I3) Messages leave in arrival order; `recv_match` takes the first
//!   match and leaves the rest in order. Everything in the receiver's own
//!   queue is older than everything in the shared one.
//! - (I4) Dropping the receiver closes the channel to senders and drops the
//!   queued messages outside the lock (their destructors may touch other
//!   channels).
//!
//! A [`bounded`] channel adds (its receiver is `bounded_receiver.rs`, the
//! senders' side `room.rs`):
//!
//! - (B1) A send queues its message only while the queue holds fewer than
//!   `cap` messages (`send_past_capacity` excepted); otherwise it waits
//!   for room. Its receiver, a [`BoundedReceiver`], takes from the shared
//!   queue one message at a time (no batch into a queue of its own), so
//!   every message counts until it is received. Being a type of its own,
//!   it keeps the capacity check out of the unbounded receive loop.
//! - (B2) A sender waiting for room leaves its message, its waker and a
//!   ticket in the channel's `blocked` list, oldest first. Whenever the
//!   receiver takes a message, under the same lock hold, it moves blocked
//!   messages into the queue while there is room and wakes their senders.
//!   So the list is non-empty only while the queue is full, room is never
//!   left free while a sender waits (no lost wake: the loom model in
//!   `loom_models.rs`), and a wake only reports a delivery that already
//!   happened. A sender that gives up (a timeout, a stop) takes its message
//!   back out under the lock: each message is delivered or returned, once.
//! - (B3) Dropping the receiver wakes every blocked sender; each takes its
//!   message back as `Disconnected`.
//!
//! # Memory ordering
//!
//! The channel lock orders the queue and the registration; the slot word's
//! AcqRel CAS orders the wake (slot (I3)). The loom models in
//! `loom_models.rs` check the send/park and close/park races.

mod bounded_receiver;
mod handoff;
mod mpsc;
mod oneshot;
mod queue;
mod recv_async;
mod reply;
mod room;
pub(crate) mod select;
mod timed;

pub use bounded_receiver::{BoundedReceiver, bounded};
pub use mpsc::{Receiver, RecvError, RecvTimeoutError, SendError, Sender, channel};
pub use oneshot::{OneshotError, OneshotReceiver, OneshotSender, oneshot};
pub use recv_async::RecvAsync;
pub use reply::{
    FIRST_WATCH, ReplyError, ReplySender, await_reply, await_reply_as, await_reply_watched_as,
};
pub use room::{SendAsync, SendTimeoutError, TrySendError};
pub use select::{Selectable, select, select_timeout, try_select, try_select_timeout};
