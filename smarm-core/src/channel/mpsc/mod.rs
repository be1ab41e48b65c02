//! The multi-producer, single-consumer channel: [`channel`], [`Sender`]
//! (of unbounded and bounded channels) and [`Receiver`] (of an unbounded
//! one). The protocol and its invariants, cited here as (I1) to (I4), are
//! in the `channel` module docs; a bounded channel's receiver is in
//! `bounded_receiver.rs`, its senders' waiting in `room.rs`.
//!
//! By role: the channel's state (`Chan`, `Inner`) and the receive step
//! here, the sending half in `sender.rs`, the receiving half in
//! `receiver.rs`, the errors in `error.rs`.

// The channel's loom models (`loom_models.rs` beside this file) test this
// module's internals.
#[cfg(all(test, loom))]
#[path = "../loom_models.rs"]
mod loom_models;

use super::queue::Queue;
use super::recv_async::RecvAsync;
use super::room::{self, Room, SendTimeoutError, TrySendError};
use super::timed::{Taking, recv_timeout};
use crate::lock::{LockClass, RawMutex};
use crate::scheduler::Shared;
use crate::scheduler::{self, Wait, WaitingOn};
use crate::slot::WaitId;
use std::cell::{Cell, RefCell, RefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

mod error;
mod receiver;
mod sender;

pub use error::{RecvError, RecvTimeoutError, SendError};

/// In a receive loop, with the channel's lock held in `$g`: the running
/// actor's wait, registered on the channel, for the loop to park on; on a
/// plain thread, register its waker instead, drop `$g` and the other
/// guards, park the thread (lock::thread_wait (T1)) and `continue` the
/// loop. Inline in the loop, not through `wait_until`: moving the guards
/// into a helper costs the actor path 9 to 14 instructions per receive
/// (callgrind, pingpong1).
macro_rules! wait_or_park_thread {
    ($g:ident, $what:expr $(, $guard:ident)*) => {
        match $crate::channel::mpsc::register_current(&mut $g, $what) {
            Some(wait) => wait,
            None => {
                $g.waker = Some($crate::lock::thread_wait::thread_waker());
                drop($g);
                $(drop($guard);)*
                $crate::lock::thread_wait::park_until(None);
                continue;
            }
        }
    };
}
pub(super) use wait_or_park_thread;

/// Create a channel and return its `(Sender, Receiver)` halves. The channel
/// is unbounded and open until every `Sender` is dropped.
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let chan = new_chan(UNBOUNDED);
    (
        Sender {
            inner: chan.clone(),
        },
        Receiver {
            inner: chan,
            taken: RefCell::new(Queue::default()),
            interrupts: Interrupts::default(),
        },
    )
}

/// The capacity of an unbounded channel.
pub(super) const UNBOUNDED: usize = usize::MAX;

/// A new channel's shared state, with one sender counted.
pub(super) fn new_chan<T>(cap: usize) -> Arc<Chan<T>> {
    Arc::new(Chan {
        shared: RawMutex::new(
            LockClass::Channel,
            Inner {
                queue: Queue::default(),
                room: (cap != UNBOUNDED).then(|| Box::new(Room::new(cap))),
                parked: None,
                waker: None,
                runtime: None,
                senders: 1,
                receiver_alive: true,
            },
        ),
        cap,
        interrupts: AtomicU32::new(0),
        _gap: [0; 44],
        taken_len: AtomicUsize::new(0),
        received: AtomicU64::new(0),
    })
}

/// A channel's shared state. Senders push to the queue in `shared`; the
/// receiver moves everything there into its own queue at once when that
/// runs dry (see [`Receiver`]). Derefs to `shared`.
#[repr(C)]
pub(crate) struct Chan<T> {
    pub(super) shared: RawMutex<Inner<T>>,
    /// The capacity ([`UNBOUNDED`] for [`channel`]), read without the
    /// lock: it never changes.
    pub(super) cap: usize,
    /// The number of the last interrupt raised (wrapping; see
    /// [`Sender::interrupt`]). Read and written only under `shared`'s
    /// lock, which orders it (so `Relaxed`): kept here, where it costs no
    /// room, as `Inner` has none left in its allocation class. Written
    /// rarely, so it does not undo the gap's work.
    interrupts: AtomicU32,
    /// Keeps the receiver's counters below, which change at every
    /// receive, off the cache lines the senders write (the lock word and
    /// the queue, at the start of `shared`): with the read-only `cap` and
    /// `interrupts` beside it, at least 56 bytes past `shared`'s end. No
    /// larger, so the whole `Arc<Chan>` stays within a 200-byte
    /// allocation, which is what every parked actor's mailbox costs.
    _gap: [u8; 44],
    /// How many messages the receiver holds in its own queue, for
    /// `Sender::queued_len`.
    taken_len: AtomicUsize,
    /// Messages the receiver has taken (written only by the receiver).
    pub(super) received: AtomicU64,
}

impl<T> std::ops::Deref for Chan<T> {
    type Target = RawMutex<Inner<T>>;
    fn deref(&self) -> &RawMutex<Inner<T>> {
        &self.shared
    }
}

pub(crate) struct Inner<T> {
    pub(super) queue: Queue<T>,
    /// A bounded channel's capacity and waiting senders (B1, B2); `None`
    /// for [`channel`]. Boxed: an unbounded channel pays one word for it,
    /// and the fields every message touches stay on as few cache lines
    /// as before.
    pub(super) room: Option<Box<Room<T>>>,
    /// The registered receiver's wait (I2).
    pub(super) parked: Option<WaitId>,
    /// A receiver that is not an actor: a plain thread parked in
    /// `std::thread::park` (a waker that unparks it), or an async
    /// receive's task; woken by a send or the last sender's drop.
    pub(super) waker: Option<Waker>,
    /// The runtime of the last actor that registered here.
    runtime: Option<Arc<Shared>>,
    /// Live senders. 32 bits: the channel stays in its allocation class
    /// (the size test below), and a clone past `u32::MAX` panics.
    pub(super) senders: u32,
    pub(super) receiver_alive: bool,
}

impl<T> Inner<T> {
    /// Whether a send must wait for room (B1). One compare on an unbounded
    /// channel.
    #[inline]
    pub(super) fn is_full(&self) -> bool {
        self.room
            .as_ref()
            .is_some_and(|room| self.queue.len() >= room.cap)
    }

    /// Queue a message and wake the receiver (the channel is open).
    #[inline]
    pub(super) fn push(&mut self, value: T) {
        self.queue.push(value);
        self.wake_receiver();
    }

    /// The receiver took a message: give the room to the oldest sender
    /// waiting for it (B2), and note the receiving actor, for the panic of
    /// a send that would wait for itself.
    pub(super) fn refill(&mut self) {
        if let Some(room) = &mut self.room {
            room.receiver = scheduler::current_pid();
            room.refill(&mut self.queue);
        }
    }

    /// Take the registration and wake it (called under the channel lock:
    /// Channel → Queue is the lock order).
    fn wake_receiver(&mut self) {
        if let (Some(wait), Some(rt)) = (self.parked.take(), &self.runtime) {
            rt.wake(wait);
        } else if self.waker.is_some() {
            self.wake_waker();
        }
    }

    /// Wake a receiver that is not an actor (out of line: the actor path
    /// is hot).
    #[cold]
    #[inline(never)]
    fn wake_waker(&mut self) {
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }

    /// Register the running actor's wait. Only the one receiver registers
    /// (I1), so this overwrites a stale registration.
    pub(super) fn register(&mut self, wait: WaitId, shared: &Shared) {
        let same_runtime = self
            .runtime
            .as_ref()
            .is_some_and(|rt| std::ptr::eq(Arc::as_ptr(rt), shared));
        if !same_runtime {
            self.runtime = Some(shared.to_arc());
        }
        self.parked = Some(wait);
        self.waker = None; // a receiver that moved from a thread to an actor
    }
}

/// The sending half of a channel. Clone it to give more actors the right
/// to send; the channel closes when the last clone is dropped, which wakes
/// a parked [`Receiver`] so it sees the closure.
pub struct Sender<T> {
    inner: Arc<Chan<T>>,
}

/// The receiving half of a channel. A channel has one receiver: it is
/// neither `Clone` nor `Sync`, so it can move from actor to actor but two
/// actors can never receive on it at once; that misuse does not compile:
///
/// ```compile_fail
/// use std::sync::Arc;
///
/// smarm::run(|| {
///     let (_tx, rx) = smarm::channel::<u32>();
///     let rx = Arc::new(rx);
///     let rx2 = rx.clone();
///     smarm::spawn(move || drop(rx2.recv())); // Arc<Receiver> is not Send
///     let _ = rx.recv();
/// });
/// ```
///
/// It keeps a queue of its own: when that runs dry, a receive moves the
/// whole shared queue into it under one lock hold, so under a stream of
/// sends (fan-in) it contends with the senders once per batch, not once
/// per message. Everything in its own queue is older than everything still
/// shared.
pub struct Receiver<T> {
    inner: Arc<Chan<T>>,
    /// Messages already taken from the shared queue. A `RefCell`: only this
    /// receiver's actor touches it, and a `recv_match` predicate that
    /// re-enters the channel panics instead of aliasing it.
    taken: RefCell<Queue<T>>,
    /// What `recv_or_interrupt` knows of the interrupts.
    interrupts: Interrupts,
}

/// The receiver's side of the interrupts (see [`Sender::interrupt`]).
#[derive(Default)]
struct Interrupts {
    /// The last interrupt number taken from the channel at a batch swap.
    taken: Cell<u32>,
    /// An interrupt found at the last swap, with a batch: every message
    /// sent before it is in that batch or was received before, so it is
    /// seen at the next swap, once the batch is done.
    pending: Cell<Option<u32>>,
    /// The last interrupt seen.
    seen: Cell<u32>,
}

impl Interrupts {
    /// At a batch swap, the channel's last interrupt is `raised`, not the
    /// last taken: whether `recv_or_interrupt` sees one now (the one
    /// pending since the last swap, or `raised` if the batch is empty).
    /// Out of line: receives pay only for the compare that leads here.
    #[cold]
    #[inline(never)]
    fn found(&self, raised: u32, batch_empty: bool) -> bool {
        let now = match self.pending.take() {
            Some(n) => n,
            None if batch_empty => raised,
            None => {
                self.pending.set(Some(raised));
                return false;
            }
        };
        self.taken.set(now);
        self.seen.set(now);
        true
    }
}

impl<T> Chan<T> {
    /// The receiver is gone: close the channel to senders (a bounded
    /// channel's waiting senders take their messages back, (B3)) and drop
    /// the queued messages outside the lock (I4).
    pub(super) fn close_receiver(&self) {
        let drained = {
            let mut g = self.lock();
            g.receiver_alive = false;
            g.parked = None;
            g.waker = None;
            if let Some(room) = &g.room {
                room.wake_all();
            }
            std::mem::take(&mut g.queue)
        };
        drop(drained);
    }
}

pub(super) enum Taken<'a, T> {
    Message(T),
    /// Nothing queued; the shared lock is still held.
    Empty(crate::lock::RawMutexGuard<'a, Inner<T>>),
}

/// The receive step: the oldest message from `taken`, else move the whole
/// shared queue into `taken` (one contended lock hold per batch) and take
/// from there.
/// Marked `#[inline]`: left unmarked, the compiler kept it out of line in
/// the gen_server loop's `recv` once that loop grew (+5% instructions in
/// the `call` workload, callgrind); `#[inline(always)]` inlines it into
/// every receive and costs +2%.
#[inline]
fn take_one<'a, T>(taken: &mut Queue<T>, chan: &'a Chan<T>) -> Taken<'a, T> {
    if let Some(v) = taken.pop() {
        return Taken::Message(v);
    }
    let mut g = chan.lock();
    // `taken` is empty: the swap leaves its (empty) buffer to the senders.
    std::mem::swap(taken, &mut g.queue);
    match taken.pop() {
        Some(v) => Taken::Message(v),
        None => Taken::Empty(g),
    }
}

/// Open a wait for the running actor and register it on the channel whose
/// lock is held; `None` on a plain thread (not a scheduler), which the
/// caller parks itself. `what` names the call for the panic on a
/// scheduler thread outside an actor.
#[inline(always)]
pub(super) fn register_current<T>(g: &mut Inner<T>, what: &str) -> Option<Wait> {
    Wait::open_on_scheduler(what, WaitingOn::Message, |wait, shared| {
        g.register(wait, shared)
    })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Every parked actor's mailbox is an `Arc<Chan>`: a field that grows
    /// it past 184 bytes moves it into the next allocation size class,
    /// 16 bytes more per actor (the `memory` workload).
    #[test]
    fn a_channel_fits_its_allocation_class() {
        assert!(
            std::mem::size_of::<Chan<u64>>() <= 184,
            "{}",
            std::mem::size_of::<Chan<u64>>()
        );
        assert!(
            std::mem::offset_of!(Chan<u64>, taken_len)
                >= std::mem::size_of::<RawMutex<Inner<u64>>>() + 56
        );
    }
}
