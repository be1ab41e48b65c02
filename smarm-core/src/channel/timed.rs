//! The timed receive of both receivers (`recv_timeout`): the actor's
//! bounded wait, or a plain thread's wait (lock::thread_wait), over the
//! [`Taking`] view of an unbounded or a bounded receiver.

use super::mpsc::{Chan, RecvTimeoutError, Taken};
use crate::lock::thread_wait::{self, thread_waker};
use crate::scheduler::{self, BoundedWaiter, Deadline, Registered, Wait, WaitingOn};
use crate::slot::WaitId;
use std::time::Duration;

/// A channel's receiving end, as the timed receive sees it: an unbounded
/// [`Receiver`] or a [`BoundedReceiver`](super::BoundedReceiver), which
/// take messages differently (the unbounded `recv` loop is written out in
/// full, not through this).
pub(super) trait Taking {
    /// The message type.
    type Msg;
    /// The channel.
    fn chan(&self) -> &Chan<Self::Msg>;
    /// The next message (counted as received), or the channel lock held
    /// over an empty queue.
    fn take(&self) -> Taken<'_, Self::Msg>;
    /// Register the running actor's open wait if there is nothing to take
    /// (I2); `false` means look again.
    fn register_if_empty(&self, wait: WaitId) -> bool;
}

/// `recv_timeout` for either receiver: `what` names the call for the
/// panic on a scheduler thread outside an actor.
pub(super) fn recv_timeout<T>(
    rx: &impl Taking<Msg = T>,
    what: &str,
    timeout: Duration,
) -> Result<T, RecvTimeoutError> {
    if scheduler::current_worker().is_null() {
        return recv_timeout_on_thread(rx, timeout);
    }
    let deadline = crate::clock::instant()
        .checked_add(timeout)
        .map(Deadline::At);
    let mut waiter = TimedRecv { rx };
    scheduler::bounded_wait(what, &mut waiter, deadline, timeout.is_zero())
}

/// `recv_timeout` on a plain thread (lock::thread_wait): until a send, the
/// last sender's drop, or the deadline.
fn recv_timeout_on_thread<T>(
    rx: &impl Taking<Msg = T>,
    timeout: Duration,
) -> Result<T, RecvTimeoutError> {
    thread_wait::wait_until(crate::clock::instant().checked_add(timeout), |expired| {
        let mut g = match rx.take() {
            Taken::Message(v) => return Some(Ok(v)),
            Taken::Empty(g) => g,
        };
        if g.senders == 0 {
            return Some(Err(RecvTimeoutError::Disconnected));
        }
        if expired {
            g.waker = None;
            return Some(Err(RecvTimeoutError::Timeout));
        }
        g.waker = Some(thread_waker());
        None
    })
}

/// `recv_timeout`'s side of the bounded-wait loop.
struct TimedRecv<'a, R> {
    rx: &'a R,
}

impl<R: Taking> BoundedWaiter for TimedRecv<'_, R> {
    const WAITS_ON: WaitingOn = WaitingOn::Message;
    type Output = Result<R::Msg, RecvTimeoutError>;

    fn ready(&mut self) -> Option<Self::Output> {
        match self.rx.take() {
            Taken::Message(v) => Some(Ok(v)),
            Taken::Empty(g) if g.senders == 0 => Some(Err(RecvTimeoutError::Disconnected)),
            Taken::Empty(_) => None,
        }
    }

    fn timed_out(&mut self) -> Option<Self::Output> {
        Some(Err(RecvTimeoutError::Timeout))
    }

    fn register(&mut self, wait: &Wait) -> Registered<Self::Output> {
        if self.rx.register_if_empty(wait.id()) {
            Registered::Yes
        } else {
            Registered::Ready
        }
    }

    const UNREGISTERS: bool = true;

    fn unregister(&mut self, wait: WaitId) {
        // Whatever woke us, this wait is over: drop a registration the
        // sender did not take.
        let mut g = self.rx.chan().lock();
        if g.parked == Some(wait) {
            g.parked = None;
        }
    }
}
