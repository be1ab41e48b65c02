//! A bounded channel: [`bounded`] and its [`BoundedReceiver`]. Senders
//! are the same [`Sender`] as an unbounded channel's; what waits for room
//! is in `room.rs`. The invariants (B1) to (B3) are in the `channel`
//! module docs.
//!
//! The receiver is a type of its own so that the unbounded [`Receiver`]'s
//! receive loop, which every actor's mailbox runs, carries no capacity
//! check: this one takes from the shared queue one message at a time,
//! under the lock, and gives the room to the oldest waiting sender (B1,
//! B2), where the unbounded one moves whole batches into a queue of its
//! own.
//!
//! [`Receiver`]: super::Receiver

use super::mpsc::{
    Chan, RecvError, RecvTimeoutError, Sender, Taken, new_chan, wait_or_park_thread,
};
use super::timed::{Taking, recv_timeout};
use crate::scheduler;
use crate::slot::WaitId;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Create a bounded channel: at most `capacity` messages wait in it. A
/// [`Sender::send`] to a full channel parks the sending actor (a plain
/// thread blocks) until the receiver takes one, so a producer faster than
/// its consumer is slowed to the consumer's pace instead of growing the
/// queue without limit. [`Sender::try_send`] never waits: it hands the
/// message back with [`TrySendError::Full`](super::TrySendError::Full);
/// [`Sender::send_timeout`] waits at most a given time.
///
/// Senders waiting for room are served in arrival order: when the
/// receiver takes a message, the longest-waiting sender's message moves
/// into the channel and that sender returns.
///
/// ```
/// use smarm::channel::{bounded, TrySendError};
///
/// smarm::run(|| {
///     let (tx, rx) = bounded::<u32>(2);
///     tx.send(1).unwrap();
///     tx.send(2).unwrap();
///     assert_eq!(tx.try_send(3), Err(TrySendError::Full(3)));
///
///     // A producer that outpaces the consumer parks until there is room.
///     let producer = smarm::spawn(move || {
///         for n in 3..=100 {
///             tx.send(n).unwrap();
///         }
///     });
///     let got: Vec<u32> = std::iter::from_fn(|| rx.recv().ok()).collect();
///     assert_eq!(got, (1..=100).collect::<Vec<_>>());
///     producer.join().unwrap();
/// });
/// ```
///
/// # Panics
///
/// If `capacity` is 0 (a channel that can hold nothing would make every
/// send wait forever).
pub fn bounded<T>(capacity: usize) -> (Sender<T>, BoundedReceiver<T>) {
    assert!(
        capacity > 0,
        "smarm: channel::bounded(0): a bounded channel needs a capacity of at least 1"
    );
    let chan = new_chan(capacity);
    (
        Sender::from_chan(chan.clone()),
        BoundedReceiver { inner: chan },
    )
}

/// The receiving half of a [`bounded`] channel. Like
/// [`Receiver`](super::Receiver), it is neither `Clone` nor `Sync` (one
/// receiver at a time), works on a plain thread too (blocking it), and
/// can be a [`select`](super::select) arm. Each message it takes makes
/// room for the oldest sender waiting for it.
pub struct BoundedReceiver<T> {
    inner: Arc<Chan<T>>,
}

impl<T> Drop for BoundedReceiver<T> {
    fn drop(&mut self) {
        self.inner.close_receiver();
    }
}

impl<T> std::fmt::Debug for BoundedReceiver<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundedReceiver").finish_non_exhaustive()
    }
}

impl<T> BoundedReceiver<T> {
    /// Wait for the next message, as [`Receiver::recv`](super::Receiver::recv)
    /// does; taking it makes room for a waiting sender.
    ///
    /// # Panics
    ///
    /// On a scheduler thread outside an actor (a timer callback), where
    /// waiting would block the scheduler.
    pub fn recv(&self) -> Result<T, RecvError> {
        self.recv_match_as("BoundedReceiver::recv", |_| true)
    }

    /// Take a message if one is queued, without waiting: `Ok(None)` when
    /// the channel is open but empty.
    pub fn try_recv(&self) -> Result<Option<T>, RecvError> {
        match self.take() {
            Taken::Message(v) => Ok(Some(v)),
            Taken::Empty(g) if g.senders == 0 => Err(RecvError),
            Taken::Empty(_) => Ok(None),
        }
    }

    /// [`recv`](Self::recv), giving up after `timeout` (as
    /// [`Receiver::recv_timeout`](super::Receiver::recv_timeout)).
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        recv_timeout(self, "BoundedReceiver::recv_timeout", timeout)
    }

    /// Selective receive (as [`Receiver::recv_match`](super::Receiver::recv_match)):
    /// the first queued message for which `pred` holds, the others staying
    /// queued in order; taking it makes room for a waiting sender.
    pub fn recv_match<F>(&self, pred: F) -> Result<T, RecvError>
    where
        F: Fn(&T) -> bool,
    {
        self.recv_match_as("BoundedReceiver::recv_match", pred)
    }

    /// Non-blocking [`recv_match`](Self::recv_match): `Ok(None)` when the
    /// channel is open and nothing matches.
    pub fn try_recv_match<F>(&self, pred: F) -> Result<Option<T>, RecvError>
    where
        F: Fn(&T) -> bool,
    {
        let mut g = self.inner.lock();
        if let Some(v) = g.queue.take_first(&pred) {
            g.refill();
            return Ok(Some(self.count(v)));
        }
        if g.senders == 0 {
            return Err(RecvError);
        }
        Ok(None)
    }

    /// Messages queued and not yet received, at most the capacity (plus
    /// any sent past it); senders still waiting for room are not counted.
    pub fn len(&self) -> usize {
        self.inner.lock().queue.len()
    }

    /// Whether no message is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many messages the channel holds before a send waits.
    pub fn capacity(&self) -> usize {
        self.inner.cap
    }

    /// The receive loop: take the first message `pred` accepts from the
    /// shared queue, making room (B2), else park until a send or the last
    /// sender's drop. `what` names the call for the panic on a scheduler
    /// thread outside an actor.
    fn recv_match_as<F>(&self, what: &str, pred: F) -> Result<T, RecvError>
    where
        F: Fn(&T) -> bool,
    {
        loop {
            let wait = {
                let mut g = self.inner.lock();
                if let Some(v) = g.queue.take_first(&pred) {
                    g.refill();
                    return Ok(self.count(v));
                }
                if g.senders == 0 {
                    return Err(RecvError);
                }
                wait_or_park_thread!(g, what)
            };
            wait.park();
        }
    }

    /// Count a message taken (single writer: this receiver).
    #[inline]
    fn count(&self, v: T) -> T {
        let n = &self.inner.received;
        n.store(n.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        v
    }

    /// Register the running actor's open wait `wait` if nothing is queued
    /// and the channel is open (I2); `false` means look again.
    fn register_if_empty(&self, wait: WaitId) -> bool {
        let mut g = self.inner.lock();
        if !g.queue.is_empty() || g.senders == 0 {
            return false;
        }
        scheduler::with_current_actor("a channel wait", |_, shared| g.register(wait, shared));
        true
    }
}

impl<T> Taking for BoundedReceiver<T> {
    type Msg = T;

    fn chan(&self) -> &Chan<T> {
        &self.inner
    }

    fn take(&self) -> Taken<'_, T> {
        let mut g = self.inner.lock();
        match g.queue.pop() {
            Some(v) => {
                g.refill();
                Taken::Message(self.count(v))
            }
            None => Taken::Empty(g),
        }
    }

    fn register_if_empty(&self, wait: WaitId) -> bool {
        BoundedReceiver::register_if_empty(self, wait)
    }
}

impl<T> super::select::sealed::Sealed for BoundedReceiver<T> {}

/// A bounded receiver as a `select` arm: registered under the channel
/// lock, like a receive that found nothing (I2).
impl<T> super::select::Selectable for BoundedReceiver<T> {
    fn sel_register(&self, pid: crate::slot::Pid, epoch: u32) -> std::io::Result<bool> {
        Ok(self.register_if_empty(WaitId { pid, epoch }))
    }

    fn sel_ready(&self) -> bool {
        let g = self.inner.lock();
        !g.queue.is_empty() || g.senders == 0
    }
}
