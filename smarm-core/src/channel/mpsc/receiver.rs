//! The receiving half: receiving (waiting, timed, matching, interruptible,
//! async), the receiver's own queue, and a receiver as a `select` arm.

use super::*;

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        self.inner.close_receiver(); // (`taken` drops after this)
    }
}

impl<T> std::fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receiver").finish_non_exhaustive()
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
    // Always inlined: a loop that also waits on it out of line (a typed
    // actor's suspended loop) would otherwise keep it from being inlined
    // into the hot one, a call more per message.
    #[inline(always)]
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

impl<T> crate::channel::select::sealed::Sealed for Receiver<T> {}

/// A receiver as a `select` arm: registered under the channel lock, like a
/// receive that found nothing (I2).
impl<T> crate::channel::select::Selectable for Receiver<T> {
    fn sel_register(&self, pid: crate::slot::Pid, epoch: u32) -> std::io::Result<bool> {
        Ok(self.register_if_empty(WaitId { pid, epoch }))
    }

    fn sel_ready(&self) -> bool {
        self.is_ready()
    }
}
