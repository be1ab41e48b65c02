//! The sending half: cloning and dropping senders (the count that closes
//! the channel), sending with and without waiting for room, and what a
//! sender can tell of its channel.

use super::*;

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

impl<T> std::fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender").finish_non_exhaustive()
    }
}

impl<T> Sender<T> {
    /// The first sender of a new channel (its count is already 1).
    pub(in crate::channel) fn from_chan(inner: Arc<Chan<T>>) -> Sender<T> {
        Sender { inner }
    }

    /// Queue `value` for the receiver. On an unbounded channel this never
    /// blocks; on a full [`bounded`](crate::channel::bounded) one it parks the calling actor (a plain
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
    /// [`TrySendError::Full`] on a full [`bounded`](crate::channel::bounded) channel,
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
        if g.is_full() || (g.room.is_some() && crate::fault_site("a bounded mailbox reports full"))
        {
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
    /// [`bounded`](crate::channel::bounded) channel, without blocking the thread.
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

    /// Queue `value` even if a [`bounded`](crate::channel::bounded) channel is full: for messages
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
