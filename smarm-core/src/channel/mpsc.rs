//! The multi-producer, single-consumer channel: [`channel`], [`Sender`]
//! (of unbounded and bounded channels) and [`Receiver`] (of an unbounded
//! one). The protocol and its invariants, cited here as (I1) to (I4), are
//! in the `channel` module docs; a bounded channel's receiver is in
//! `bounded_receiver.rs`, its senders' waiting in `room.rs`.

// The channel's loom models (`loom_models.rs` beside this file) test this
// module's internals.
#[cfg(all(test, loom))]
#[path = "loom_models.rs"]
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
use thiserror::Error;

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

/// [`Sender::send`] failed because the [`Receiver`] is gone. The message
/// comes back in `.0`.
#[derive(Debug, PartialEq, Eq, Clone, Copy, Error)]
#[error("smarm: send on a channel whose receiver is gone")]
pub struct SendError<T>(pub T);

/// The channel is closed: every [`Sender`] is gone and nothing is queued.
#[derive(Debug, PartialEq, Eq, Clone, Copy, Error)]
#[error("smarm: receive on a closed channel (every sender is gone)")]
pub struct RecvError;

/// Why [`Receiver::recv_timeout`] returned without a message.
#[derive(Debug, PartialEq, Eq, Clone, Copy, Error)]
pub enum RecvTimeoutError {
    /// The deadline passed with no message.
    #[error("smarm: receive timed out")]
    Timeout,
    /// Every sender is gone and nothing is queued.
    #[error("smarm: receive on a closed channel (every sender is gone)")]
    Disconnected,
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        let mut g = self.inner.lock();
        g.senders = match g.senders.checked_add(1) {
            Some(n) => n,
            None => {
                drop(g);
                panic!("smarm: Sender::clone: more than u32::MAX senders of one channel")
            }
        };
        drop(g);
        Sender {
            inner: self.inner.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut g = self.inner.lock();
        g.senders -= 1;
        if g.senders == 0 {
            // Wake the receiver even on a non-empty queue: a `recv_match`
            // may be parked on messages that do not match, and must see the
            // closure instead of sleeping forever.
            g.wake_receiver();
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        self.inner.close_receiver(); // (`taken` drops after this)
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

impl<T> std::fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender").finish_non_exhaustive()
    }
}

impl<T> std::fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receiver").finish_non_exhaustive()
    }
}

impl<T> Sender<T> {
    /// The first sender of a new channel (its count is already 1).
    pub(super) fn from_chan(inner: Arc<Chan<T>>) -> Sender<T> {
        Sender { inner }
    }

    /// Queue `value` for the receiver. On an unbounded channel this never
    /// blocks; on a full [`bounded`](super::bounded) one it parks the calling actor (a plain
    /// thread blocks) until there is room. Fails only when the
    /// [`Receiver`] is gone, returning the message in [`SendError`].
    ///
    /// ```
    /// let (tx, rx) = smarm::channel();
    /// tx.send(1).unwrap();
    /// drop(rx);
    /// assert_eq!(tx.send(2), Err(smarm::SendError(2)));
    /// ```
    ///
    /// # Panics
    ///
    /// On a full bounded channel: from a scheduler callback (a timer
    /// thunk, an exit hook), where waiting would block the scheduler (use
    /// [`try_send`](Self::try_send) or
    /// [`send_past_capacity`](Self::send_past_capacity) there), and from
    /// the actor that receives on the channel, which would wait for itself.
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        self.send_as("Sender::send", value)
    }

    /// [`send`](Self::send), naming `what` (the public call a library built
    /// on it, such as `GenServerRef::cast`) in its panics.
    #[doc(hidden)]
    pub fn send_as(&self, what: &'static str, value: T) -> Result<(), SendError<T>> {
        let mut g = self.inner.lock();
        if !g.receiver_alive {
            return Err(SendError(value));
        }
        if g.is_full() {
            drop(g);
            return room::send_waiting(&self.inner, what, value, None)
                .map_err(|e| SendError(e.into_inner()));
        }
        g.push(value);
        Ok(())
    }

    /// Queue `value` if there is room now, without waiting:
    /// [`TrySendError::Full`] on a full [`bounded`](super::bounded) channel,
    /// [`TrySendError::Disconnected`] when the receiver is gone; either
    /// hands the message back. Safe anywhere, scheduler callbacks included.
    ///
    /// ```
    /// use smarm::channel::{bounded, TrySendError};
    ///
    /// let (tx, rx) = bounded::<&str>(1);
    /// assert_eq!(tx.try_send("a"), Ok(()));
    /// assert_eq!(tx.try_send("b"), Err(TrySendError::Full("b")));
    /// drop(rx);
    /// assert_eq!(tx.try_send("c"), Err(TrySendError::Disconnected("c")));
    /// ```
    pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        let mut g = self.inner.lock();
        if !g.receiver_alive {
            return Err(TrySendError::Disconnected(value));
        }
        if g.is_full() {
            return Err(TrySendError::Full(value));
        }
        g.push(value);
        Ok(())
    }

    /// [`send`](Self::send), waiting at most `timeout` for room:
    /// [`SendTimeoutError::Timeout`] hands the message back if none
    /// appeared. Room that appears as the deadline passes wins: the
    /// message is sent. `Duration::ZERO` is [`try_send`](Self::try_send)
    /// with this error type.
    ///
    /// ```
    /// use smarm::channel::{bounded, SendTimeoutError};
    /// use std::time::Duration;
    ///
    /// smarm::run(|| {
    ///     let (tx, rx) = bounded::<u32>(1);
    ///     tx.send(1).unwrap();
    ///     let full = tx.send_timeout(2, Duration::from_millis(5));
    ///     assert_eq!(full, Err(SendTimeoutError::Timeout(2)));
    ///     assert_eq!(rx.recv(), Ok(1));
    ///     assert_eq!(tx.send_timeout(3, Duration::from_millis(5)), Ok(()));
    /// });
    /// ```
    ///
    /// # Panics
    ///
    /// On a full bounded channel, from a scheduler callback (a timer thunk,
    /// an exit hook), where waiting would block the scheduler. (The
    /// receiving actor itself may call it: it waits out the timeout.)
    pub fn send_timeout(&self, value: T, timeout: Duration) -> Result<(), SendTimeoutError<T>> {
        self.send_timeout_as("Sender::send_timeout", value, timeout)
    }

    /// [`send_timeout`](Self::send_timeout), naming `what` in its panics.
    #[doc(hidden)]
    pub fn send_timeout_as(
        &self,
        what: &'static str,
        value: T,
        timeout: Duration,
    ) -> Result<(), SendTimeoutError<T>> {
        let mut g = self.inner.lock();
        if !g.receiver_alive {
            return Err(SendTimeoutError::Disconnected(value));
        }
        if g.is_full() {
            drop(g);
            return room::send_waiting(&self.inner, what, value, Some(timeout));
        }
        g.push(value);
        Ok(())
    }

    /// Queue `value` from async code: at once if there is room (always, on
    /// an unbounded channel), else once the receiver makes room on a full
    /// [`bounded`](super::bounded) channel, without blocking the thread.
    /// Fails only when the [`Receiver`] is gone, returning the message.
    /// The future is `Send`, works on any executor, and takes its message
    /// back out of the channel if dropped while waiting.
    ///
    /// ```
    /// let (tx, rx) = smarm::channel::bounded::<u32>(1);
    /// smarm::future::block_on(tx.send_async(1)).unwrap();
    /// let receiver = std::thread::spawn(move || (rx.recv(), rx.recv()));
    /// smarm::future::block_on(tx.send_async(2)).unwrap(); // waits for room
    /// assert_eq!(receiver.join().unwrap(), (Ok(1), Ok(2)));
    /// ```
    pub fn send_async(&self, value: T) -> room::SendAsync<'_, T> {
        room::SendAsync::new(&self.inner, value)
    }

    /// Queue `value` even if a [`bounded`](super::bounded) channel is full: for messages
    /// that must neither wait nor be dropped, as Erlang never drops an exit
    /// signal or a timer's message. smarm uses it for exit and down notices,
    /// timer messages ([`send_after_to`](crate::time::send_after_to)) and
    /// behaviours' system messages. The message counts toward the channel's
    /// length, so senders waiting for room wait until the receiver is back
    /// under capacity. Fails only when the receiver is gone.
    ///
    /// ```
    /// let (tx, rx) = smarm::channel::bounded::<u32>(1);
    /// tx.send(1).unwrap();
    /// tx.send_past_capacity(2).unwrap();
    /// assert_eq!(rx.len(), 2);
    /// ```
    pub fn send_past_capacity(&self, value: T) -> Result<(), SendError<T>> {
        let mut g = self.inner.lock();
        if !g.receiver_alive {
            return Err(SendError(value));
        }
        g.push(value);
        Ok(())
    }

    /// How many messages the channel holds before a send waits: `None`
    /// for an unbounded channel.
    ///
    /// ```
    /// assert_eq!(smarm::channel::<u8>().0.capacity(), None);
    /// assert_eq!(smarm::channel::bounded::<u8>(8).0.capacity(), Some(8));
    /// ```
    pub fn capacity(&self) -> Option<usize> {
        let cap = self.inner.cap;
        (cap != UNBOUNDED).then_some(cap)
    }

    /// Whether `other` sends on the same channel as `self` (a clone of it).
    ///
    /// ```
    /// let (a, _rx) = smarm::channel::<u8>();
    /// let (b, _rx2) = smarm::channel::<u8>();
    /// assert!(a.same_channel(&a.clone()));
    /// assert!(!a.same_channel(&b));
    /// ```
    pub fn same_channel(&self, other: &Sender<T>) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Whether the receiver is gone (a `send` would fail).
    pub fn is_closed(&self) -> bool {
        !self.inner.lock().receiver_alive
    }

    /// Interrupt the receiver: its
    /// [`recv_or_interrupt`](Receiver::recv_or_interrupt) returns `Ok(None)`
    /// once it has received every message sent before the interrupt, so it
    /// can look at something kept beside the channel (a queue of control
    /// requests, a flag). A plain [`recv`](Receiver::recv) ignores
    /// interrupts.
    ///
    /// Returns the interrupt's number (they count up from 1, wrapping), for
    /// a request kept beside the channel to be taken only once
    /// [`interrupts_seen`](Receiver::interrupts_seen) has reached it;
    /// `None` if the receiver is gone. Interrupts raised before the
    /// receiver looks are seen at once, as the newest.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// smarm::run(|| {
    ///     let (tx, rx) = smarm::channel::<u32>();
    ///     // The interrupt's number, set under the lock held across the
    ///     // interrupt, so the worker finds it once it sees the interrupt.
    ///     let stop = Arc::new(smarm::Mutex::new(None));
    ///     let asked = stop.clone();
    ///     let worker = smarm::spawn(move || {
    ///         let mut sum = 0;
    ///         loop {
    ///             match rx.recv_or_interrupt() {
    ///                 Ok(Some(n)) => sum += n,
    ///                 Ok(None) => {
    ///                     let seen = rx.interrupts_seen();
    ///                     if asked.lock().unwrap().is_some_and(|n| n == seen) {
    ///                         return sum;
    ///                     }
    ///                 }
    ///                 Err(_) => return sum,
    ///             }
    ///         }
    ///     });
    ///     tx.send(1).unwrap();
    ///     tx.send(2).unwrap();
    ///     {
    ///         let mut stop = stop.lock().unwrap();
    ///         *stop = tx.interrupt();
    ///     }
    ///     // Every message sent before the interrupt was received first.
    ///     assert_eq!(worker.join().unwrap(), 3);
    /// });
    /// ```
    pub fn interrupt(&self) -> Option<u32> {
        let mut g = self.inner.lock();
        if !g.receiver_alive {
            return None;
        }
        // Under the lock (see `Chan::interrupts`).
        let n = self
            .inner
            .interrupts
            .load(Ordering::Relaxed)
            .wrapping_add(1);
        self.inner.interrupts.store(n, Ordering::Relaxed);
        g.wake_receiver();
        Some(n)
    }

    /// Messages the receiver has taken so far (for introspection).
    pub fn received_count(&self) -> u64 {
        self.inner.received.load(Ordering::Relaxed)
    }

    /// Messages queued and not yet received (for introspection).
    pub fn queued_len(&self) -> usize {
        self.inner.taken_len.load(Ordering::Relaxed) + self.inner.lock().queue.len()
    }
}

impl<T> Receiver<T> {
    /// Wait for the next message. `Err(RecvError)` once every sender is
    /// gone and the queue is empty.
    ///
    /// In an actor the wait parks only the actor. On a plain thread
    /// (outside the runtime) it blocks the thread, as
    /// [`Mutex::lock`](crate::Mutex::lock) does:
    ///
    /// ```
    /// let (tx, rx) = smarm::channel::<u32>();
    /// let waiter = std::thread::spawn(move || rx.recv());
    /// smarm::run(move || tx.send(7).unwrap());
    /// assert_eq!(waiter.join().unwrap(), Ok(7));
    /// ```
    ///
    /// # Panics
    ///
    /// On a scheduler thread outside an actor (a timer callback), where
    /// waiting would block the scheduler.
    pub fn recv(&self) -> Result<T, RecvError> {
        loop {
            let wait = {
                let mut taken = self.taken();
                let mut g = match take_one(&mut taken, &self.inner) {
                    Taken::Message(v) => return Ok(self.count(v)),
                    Taken::Empty(g) => g,
                };
                if g.senders == 0 {
                    return Err(RecvError);
                }
                wait_or_park_thread!(g, "Receiver::recv", taken)
            };
            wait.park();
        }
    }

    /// [`recv`](Self::recv) that also returns, with `Ok(None)`, when a
    /// sender has [`interrupt`](Sender::interrupt)ed it: after every message
    /// sent before the interrupt, and before every message sent after the
    /// receive returns. [`interrupts_seen`](Self::interrupts_seen) then
    /// says which interrupts it has seen. Costs a receive nothing more than
    /// [`recv`](Self::recv) until an interrupt is raised.
    ///
    /// # Panics
    ///
    /// As [`recv`](Self::recv).
    pub fn recv_or_interrupt(&self) -> Result<Option<T>, RecvError> {
        // `take_one` open-coded: the interrupt check goes between the swap
        // and the pop (through a `take_one`-like helper, the typed call
        // loop measured 8 instructions a call more).
        loop {
            let wait = {
                let mut taken = self.taken();
                if let Some(v) = taken.pop() {
                    return Ok(Some(self.count(v)));
                }
                let mut g = self.inner.lock();
                // `taken` is empty: the swap leaves its buffer to the senders.
                std::mem::swap(&mut *taken, &mut g.queue);
                // Under the lock (see `Chan::interrupts`).
                let raised = self.inner.interrupts.load(Ordering::Relaxed);
                if raised != self.interrupts.taken.get()
                    && self.interrupts.found(raised, taken.is_empty())
                {
                    return Ok(None);
                }
                if let Some(v) = taken.pop() {
                    return Ok(Some(self.count(v)));
                }
                if g.senders == 0 {
                    return Err(RecvError);
                }
                wait_or_park_thread!(g, "Receiver::recv_or_interrupt", taken)
            };
            wait.park();
        }
    }

    /// The number of the newest interrupt
    /// [`recv_or_interrupt`](Self::recv_or_interrupt) has returned for
    /// (0 before the first): every interrupt up to it (wrapping) has been
    /// seen.
    pub fn interrupts_seen(&self) -> u32 {
        self.interrupts.seen.get()
    }

    /// Receive from async code: a future of the next message, or of
    /// [`RecvError`] once every sender is gone and nothing is queued. It is
    /// `Send`, works on any executor (a tokio task, `block_on`), and is
    /// woken by the send, from whatever thread sends. A `Receiver` is also
    /// a [`Stream`](futures_core::Stream) of its messages.
    ///
    /// ```
    /// let (tx, mut rx) = smarm::channel::<u32>();
    /// std::thread::spawn(move || {
    ///     tx.send(1).unwrap();
    ///     tx.send(2).unwrap();
    /// });
    /// let sum = smarm::future::block_on(async move {
    ///     let mut sum = 0;
    ///     while let Ok(n) = rx.recv_async().await {
    ///         sum += n;
    ///     }
    ///     sum
    /// });
    /// assert_eq!(sum, 3);
    /// ```
    pub fn recv_async(&mut self) -> RecvAsync<'_, T> {
        RecvAsync::new(self)
    }

    /// Poll for the next message: `Ready(Ok)` with one, `Ready(Err)` once
    /// the channel is closed and empty, else `Pending` with `cx`'s waker
    /// registered for the next send (I2).
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, RecvError>> {
        let mut taken = self.taken();
        let mut g = match take_one(&mut taken, &self.inner) {
            Taken::Message(v) => return Poll::Ready(Ok(self.count(v))),
            Taken::Empty(g) => g,
        };
        if g.senders == 0 {
            return Poll::Ready(Err(RecvError));
        }
        g.parked = None; // a receiver that moved from an actor to a task
        if !g.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            g.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }

    /// Take a message if one is queued, without waiting: `Ok(None)` when
    /// the channel is open but empty. Works outside actors too.
    pub fn try_recv(&self) -> Result<Option<T>, RecvError> {
        let mut taken = self.taken();
        match take_one(&mut taken, &self.inner) {
            Taken::Message(v) => Ok(Some(self.count(v))),
            Taken::Empty(g) if g.senders == 0 => Err(RecvError),
            Taken::Empty(_) => Ok(None),
        }
    }

    /// Like [`recv`](Self::recv), but give up after `timeout`. A message
    /// that arrives as the deadline passes wins: it is returned, never
    /// lost. `Duration::ZERO` is valid: it takes a queued message, else
    /// reports `Timeout` at once; a timeout too long to be an `Instant`
    /// (`Duration::MAX`) waits with no deadline, as `recv` does.
    ///
    /// ```
    /// use smarm::RecvTimeoutError;
    /// use std::time::Duration;
    ///
    /// smarm::run(|| {
    ///     let (tx, rx) = smarm::channel::<u32>();
    ///     assert_eq!(rx.recv_timeout(Duration::from_millis(5)), Err(RecvTimeoutError::Timeout));
    ///     tx.send(7).unwrap();
    ///     assert_eq!(rx.recv_timeout(Duration::ZERO), Ok(7));
    ///     drop(tx);
    ///     assert_eq!(rx.recv_timeout(Duration::from_secs(1)), Err(RecvTimeoutError::Disconnected));
    /// });
    /// ```
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        recv_timeout(self, "Receiver::recv_timeout", timeout)
    }

    /// Selective receive: take the first queued message for which `pred`
    /// holds, leaving the others queued in order; wait if none matches.
    /// `Err(RecvError)` once every sender is gone and nothing matches.
    /// `pred` runs under the channel lock: keep it cheap and do not touch
    /// this channel from it.
    ///
    /// ```
    /// smarm::run(|| {
    ///     let (tx, rx) = smarm::channel::<(u8, &str)>();
    ///     tx.send((1, "low")).unwrap();
    ///     tx.send((9, "urgent")).unwrap();
    ///     assert_eq!(rx.recv_match(|m| m.0 > 5).unwrap(), (9, "urgent"));
    ///     assert_eq!(rx.recv().unwrap(), (1, "low"));
    /// });
    /// ```
    pub fn recv_match<F>(&self, pred: F) -> Result<T, RecvError>
    where
        F: Fn(&T) -> bool,
    {
        loop {
            let wait = {
                let mut taken = self.taken();
                if let Some(v) = taken.take_first(&pred) {
                    return Ok(self.count(v));
                }
                let mut g = self.inner.lock();
                if let Some(v) = g.queue.take_first(&pred) {
                    return Ok(self.count(v));
                }
                if g.senders == 0 {
                    return Err(RecvError);
                }
                wait_or_park_thread!(g, "Receiver::recv_match", taken)
            };
            wait.park();
        }
    }

    /// Non-blocking [`recv_match`](Self::recv_match): `Ok(None)` when the
    /// channel is open and nothing matches.
    pub fn try_recv_match<F>(&self, pred: F) -> Result<Option<T>, RecvError>
    where
        F: Fn(&T) -> bool,
    {
        let mut taken = self.taken();
        if let Some(v) = taken.take_first(&pred) {
            return Ok(Some(self.count(v)));
        }
        let mut g = self.inner.lock();
        if let Some(v) = g.queue.take_first(&pred) {
            return Ok(Some(self.count(v)));
        }
        if g.senders == 0 {
            return Err(RecvError);
        }
        Ok(None)
    }

    /// Messages queued and not yet received.
    pub fn len(&self) -> usize {
        self.inner.taken_len.load(Ordering::Relaxed) + self.inner.lock().queue.len()
    }

    /// Whether no message is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Count a message taken (single writer: this receiver).
    #[inline]
    fn count(&self, v: T) -> T {
        let n = &self.inner.received;
        n.store(n.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        v
    }

    /// The receiver's own queue (see the type docs).
    fn taken(&self) -> TakenGuard<'_, T> {
        match self.taken.try_borrow_mut() {
            Ok(queue) => TakenGuard {
                queue,
                len: &self.inner.taken_len,
            },
            Err(_) => {
                panic!("smarm: a recv_match predicate used its own channel; keep predicates pure")
            }
        }
    }

    /// Whether a receive would not block: a message is queued, or the
    /// channel is closed.
    pub(crate) fn is_ready(&self) -> bool {
        if !self.taken().is_empty() {
            return true;
        }
        let g = self.inner.lock();
        !g.queue.is_empty() || g.senders == 0
    }
}

/// Access to the receiver's own queue; publishes its length on release.
struct TakenGuard<'a, T> {
    queue: RefMut<'a, Queue<T>>,
    len: &'a AtomicUsize,
}

impl<T> std::ops::Deref for TakenGuard<'_, T> {
    type Target = Queue<T>;
    fn deref(&self) -> &Queue<T> {
        &self.queue
    }
}

impl<T> std::ops::DerefMut for TakenGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut Queue<T> {
        &mut self.queue
    }
}

impl<T> Drop for TakenGuard<'_, T> {
    fn drop(&mut self) {
        self.len.store(self.queue.len(), Ordering::Relaxed);
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

impl<T> Taking for Receiver<T> {
    type Msg = T;

    fn chan(&self) -> &Chan<T> {
        &self.inner
    }

    fn take(&self) -> Taken<'_, T> {
        let mut taken = self.taken();
        match take_one(&mut taken, &self.inner) {
            Taken::Message(v) => Taken::Message(self.count(v)),
            Taken::Empty(g) => Taken::Empty(g),
        }
    }

    fn register_if_empty(&self, wait: WaitId) -> bool {
        Receiver::register_if_empty(self, wait)
    }
}

impl<T> Receiver<T> {
    /// Register the running actor's open wait `wait` on this channel, under
    /// its lock, if there is nothing to take (I2): `false` means look again
    /// (a message or a disconnect is there). A `select`'s arms share one
    /// wait; a timed receive registers after its deadline check.
    fn register_if_empty(&self, wait: WaitId) -> bool {
        if !self.taken().is_empty() {
            return false;
        }
        let mut g = self.inner.lock();
        if !g.queue.is_empty() || g.senders == 0 {
            return false;
        }
        scheduler::with_current_actor("a channel wait", |_, shared| g.register(wait, shared));
        true
    }
}

impl<T> super::select::sealed::Sealed for Receiver<T> {}

/// A receiver as a `select` arm: registered under the channel lock, like a
/// receive that found nothing (I2).
impl<T> super::select::Selectable for Receiver<T> {
    fn sel_register(&self, pid: crate::slot::Pid, epoch: u32) -> std::io::Result<bool> {
        Ok(self.register_if_empty(WaitId { pid, epoch }))
    }

    fn sel_ready(&self) -> bool {
        self.is_ready()
    }
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
