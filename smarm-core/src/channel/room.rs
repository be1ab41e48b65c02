//! Waiting for room in a full bounded channel: the senders' side of
//! backpressure. The invariants (B1) to (B3) are in the `channel` module
//! docs.
//!
//! A sender that finds the channel full queues its message with its waker
//! in the channel's `blocked` list and parks. The receiver, each time it
//! takes a message, moves the oldest blocked message into the queue and
//! wakes its sender (B2): the wake only tells the sender its message went
//! in, so a wake that comes too late (the sender timed out, was stopped,
//! or was woken early by its cached timer and looked again) changes
//! nothing, and no room is ever handed to a sender that no longer wants
//! it. A sender that gives up takes its message back out of the list under
//! the channel lock, so a message is either delivered or returned, never
//! both, never neither.

use super::mpsc::{Chan, Inner};
use super::queue::Queue;
use crate::lock::thread_wait;
use crate::scheduler::{self, BoundedWaiter, Deadline, Registered, Wait, WaitingOn, WakeToken};
use crate::slot::Pid;
use std::collections::VecDeque;
use std::time::{Duration, Instant};
use thiserror::Error;

/// Why [`Sender::try_send`](super::Sender::try_send) did not queue the
/// message; either way it comes back.
#[derive(Debug, PartialEq, Eq, Clone, Copy, Error)]
pub enum TrySendError<T> {
    /// The bounded channel is full: try later, or wait with `send`.
    #[error("smarm: the bounded channel is full; the message was not sent")]
    Full(T),
    /// The receiver is gone.
    #[error("smarm: send on a channel whose receiver is gone")]
    Disconnected(T),
}

impl<T> TrySendError<T> {
    /// The message that was not sent.
    pub fn into_inner(self) -> T {
        match self {
            TrySendError::Full(v) | TrySendError::Disconnected(v) => v,
        }
    }
}

/// Why [`Sender::send_timeout`](super::Sender::send_timeout) did not queue
/// the message; either way it comes back.
#[derive(Debug, PartialEq, Eq, Clone, Copy, Error)]
pub enum SendTimeoutError<T> {
    /// The bounded channel stayed full until the deadline.
    #[error("smarm: the bounded channel stayed full until the send timed out")]
    Timeout(T),
    /// The receiver is gone.
    #[error("smarm: send on a channel whose receiver is gone")]
    Disconnected(T),
}

impl<T> SendTimeoutError<T> {
    /// The message that was not sent.
    pub fn into_inner(self) -> T {
        match self {
            SendTimeoutError::Timeout(v) | SendTimeoutError::Disconnected(v) => v,
        }
    }
}

/// A bounded channel's own state, under the channel lock (B1, B2).
pub(crate) struct Room<T> {
    /// How many messages may wait in the queue before a send waits.
    pub(super) cap: usize,
    /// Senders waiting for room, oldest first, each with its message.
    blocked: VecDeque<Blocked<T>>,
    /// The ticket of the next sender to wait for room.
    next_ticket: u64,
    /// The last actor that took a message: a send that would wait on a
    /// full channel from that actor would wait for itself.
    pub(super) receiver: Option<Pid>,
}

/// A sender waiting for room, with the message it will send.
struct Blocked<T> {
    ticket: u64,
    waker: SendWaker,
    msg: T,
}

/// Who to wake when a blocked message goes in, or the receiver goes.
pub(crate) enum SendWaker {
    Actor(WakeToken),
    Thread(std::thread::Thread),
    /// A [`SendAsync`] future's task.
    Task(std::task::Waker),
}

impl SendWaker {
    /// Wake the sender (a stale actor wait changes nothing: slot (I3)).
    fn wake(&self) {
        match self {
            SendWaker::Actor(token) => token.wake(),
            SendWaker::Thread(thread) => thread.unpark(),
            SendWaker::Task(waker) => waker.wake_by_ref(),
        }
    }
}

impl<T> Room<T> {
    pub(super) fn new(cap: usize) -> Room<T> {
        Room {
            cap,
            blocked: VecDeque::new(),
            next_ticket: 0,
            receiver: None,
        }
    }

    /// The receiver took messages out of `queue`: move blocked messages in
    /// while there is room, oldest first, and wake their senders (B2).
    #[inline]
    pub(super) fn refill(&mut self, queue: &mut Queue<T>) {
        while queue.len() < self.cap {
            let Some(blocked) = self.blocked.pop_front() else {
                break;
            };
            queue.push(blocked.msg);
            blocked.waker.wake(); // Channel → Queue: allowed under the lock
        }
    }

    /// The receiver is gone: every blocked sender takes its message back
    /// (B3).
    pub(super) fn wake_all(&self) {
        for blocked in &self.blocked {
            blocked.waker.wake();
        }
    }

    /// Queue `msg` for a sender waiting for room; its ticket names it.
    pub(super) fn block(&mut self, msg: T, waker: SendWaker) -> u64 {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        self.blocked.push_back(Blocked { ticket, waker, msg });
        ticket
    }

    /// Whether the message of `ticket` still waits for room. Tickets leave
    /// the list in order or by their own sender, so it is there exactly
    /// when the oldest ticket left is no newer.
    pub(super) fn is_blocked(&self, ticket: u64) -> bool {
        self.blocked.front().is_some_and(|b| b.ticket <= ticket)
    }

    /// Take back the message of `ticket` (its sender gives up); `None` if
    /// it went in.
    pub(super) fn unblock(&mut self, ticket: u64) -> Option<T> {
        let at = self.blocked.iter().position(|b| b.ticket == ticket)?;
        self.blocked.remove(at).map(|b| b.msg)
    }

    /// Wake `ticket`'s sender through `waker` from now on (its new wait
    /// after an early wake).
    fn set_waker(&mut self, ticket: u64, waker: SendWaker) {
        if let Some(b) = self.blocked.iter_mut().find(|b| b.ticket == ticket) {
            b.waker = waker;
        }
    }
}

impl<T> Inner<T> {
    /// [`Room::is_blocked`] (`false` on an unbounded channel).
    pub(super) fn is_blocked(&self, ticket: u64) -> bool {
        self.room.as_ref().is_some_and(|r| r.is_blocked(ticket))
    }

    /// [`Room::unblock`].
    pub(super) fn unblock(&mut self, ticket: u64) -> Option<T> {
        self.room.as_mut()?.unblock(ticket)
    }
}

/// A send that found the channel full: wait for room (at most `timeout`),
/// parking the running actor, or blocking a plain thread.
#[cold]
#[inline(never)]
pub(super) fn send_waiting<T>(
    chan: &Chan<T>,
    what: &'static str,
    value: T,
    timeout: Option<Duration>,
) -> Result<(), SendTimeoutError<T>> {
    let deadline = timeout.and_then(|t| crate::clock::instant().checked_add(t));
    match scheduler::with_worker(|w, _| w.actor.current.get()) {
        None => send_on_thread(chan, value, deadline),
        Some(None) => panic!(
            "smarm: `{what}` on a full bounded channel from a scheduler callback (a timer or an \
             exit hook) would block the scheduler: use try_send, or send_past_capacity for a \
             message that must not be dropped"
        ),
        Some(Some(me)) => {
            let mut waiter = SendWait {
                chan,
                what,
                me,
                forever: timeout.is_none(),
                state: Holding::Message(value),
            };
            scheduler::bounded_wait(
                what,
                &mut waiter,
                deadline.map(Deadline::At),
                timeout.is_some_and(|t| t.is_zero()),
            )
        }
    }
}

/// What a waiting send holds.
enum Holding<T> {
    /// The message, not yet queued anywhere.
    Message(T),
    /// The message waits in the blocked list under this ticket.
    Blocked(u64),
    /// The outcome was returned.
    Finished,
}

/// An actor's side of the bounded-wait loop for room. It keeps its place
/// in the blocked list across early wakes, updating the wait it is woken
/// for; dropped while blocked (a stop unwinds its park), it takes its
/// message back.
struct SendWait<'a, T> {
    chan: &'a Chan<T>,
    what: &'static str,
    me: Pid,
    /// No deadline: waiting on its own channel would never end.
    forever: bool,
    state: Holding<T>,
}

type Outcome<T> = Result<(), SendTimeoutError<T>>;

impl<T> SendWait<'_, T> {
    /// Whether the send is over, under the channel lock.
    fn look(&mut self, g: &mut Inner<T>) -> Option<Outcome<T>> {
        match std::mem::replace(&mut self.state, Holding::Finished) {
            Holding::Message(msg) => {
                if !g.receiver_alive {
                    return Some(Err(SendTimeoutError::Disconnected(msg)));
                }
                if !g.is_full() {
                    g.push(msg);
                    return Some(Ok(()));
                }
                self.state = Holding::Message(msg);
                None
            }
            Holding::Blocked(ticket) => {
                if !g.is_blocked(ticket) {
                    return Some(Ok(())); // the receiver moved it in
                }
                if !g.receiver_alive {
                    return Some(
                        g.unblock(ticket)
                            .map_or(Ok(()), |msg| Err(SendTimeoutError::Disconnected(msg))),
                    );
                }
                self.state = Holding::Blocked(ticket);
                None
            }
            Holding::Finished => Some(Ok(())),
        }
    }
}

impl<T> BoundedWaiter for SendWait<'_, T> {
    const WAITS_ON: WaitingOn = WaitingOn::Room;
    type Output = Outcome<T>;

    fn ready(&mut self) -> Option<Outcome<T>> {
        let mut g = self.chan.lock();
        self.look(&mut g)
    }

    fn timed_out(&mut self) -> Option<Outcome<T>> {
        let mut g = self.chan.lock();
        Some(
            match std::mem::replace(&mut self.state, Holding::Finished) {
                Holding::Message(msg) => Err(SendTimeoutError::Timeout(msg)),
                // Moved in as the deadline passed: the send wins.
                Holding::Blocked(ticket) => g
                    .unblock(ticket)
                    .map_or(Ok(()), |msg| Err(SendTimeoutError::Timeout(msg))),
                Holding::Finished => Ok(()),
            },
        )
    }

    fn register(&mut self, wait: &Wait) -> Registered<Outcome<T>> {
        let mut g = self.chan.lock();
        if let Some(out) = self.look(&mut g) {
            return Registered::Done(out);
        }
        let Some(room) = g.room.as_mut() else {
            return Registered::Ready; // never full: the next look sends
        };
        let waker = SendWaker::Actor(wait.token());
        match std::mem::replace(&mut self.state, Holding::Finished) {
            Holding::Message(msg) => {
                if self.forever && room.receiver == Some(self.me) {
                    drop(g);
                    drop(msg);
                    panic!(
                        "smarm: `{}` on a full bounded channel by the actor that receives on it \
                         would wait for itself forever: use try_send, or give the channel more \
                         capacity",
                        self.what
                    );
                }
                self.state = Holding::Blocked(room.block(msg, waker));
            }
            Holding::Blocked(ticket) => {
                room.set_waker(ticket, waker);
                self.state = Holding::Blocked(ticket);
            }
            Holding::Finished => {}
        }
        Registered::Yes
    }
}

impl<T> Drop for SendWait<'_, T> {
    fn drop(&mut self) {
        if let Holding::Blocked(ticket) = self.state {
            // An unwind out of the park (a stop request): take the message
            // back, and drop it outside the lock.
            let msg = self.chan.lock().unblock(ticket);
            drop(msg);
        }
    }
}

/// A plain thread's wait for room (lock::thread_wait): until the receiver
/// moves its message in, the receiver goes, or the deadline.
fn send_on_thread<T>(chan: &Chan<T>, value: T, deadline: Option<Instant>) -> Outcome<T> {
    let ticket = {
        let mut g = chan.lock();
        if !g.receiver_alive {
            return Err(SendTimeoutError::Disconnected(value));
        }
        if !g.is_full() {
            g.push(value);
            return Ok(());
        }
        if deadline.is_some_and(|d| crate::clock::instant() >= d) {
            return Err(SendTimeoutError::Timeout(value));
        }
        let waker = SendWaker::Thread(std::thread::current());
        match g.room.as_mut() {
            Some(room) => room.block(value, waker),
            None => {
                g.push(value); // never full: unreachable, but never lose it
                return Ok(());
            }
        }
    };
    // Blocked (B2): the receiver that moves the message in unparks us.
    thread_wait::wait_until(deadline, |expired| {
        let mut g = chan.lock();
        if !g.is_blocked(ticket) {
            return Some(Ok(()));
        }
        let gone = !g.receiver_alive;
        if !gone && !expired {
            return None;
        }
        Some(match g.unblock(ticket) {
            None => Ok(()),
            Some(msg) if gone => Err(SendTimeoutError::Disconnected(msg)),
            Some(msg) => Err(SendTimeoutError::Timeout(msg)),
        })
    })
}

/// The future of [`Sender::send_async`](super::Sender::send_async): the
/// message is queued at once if there is room, else it waits in the
/// channel's blocked list (B2) until the receiver makes room, as a parked
/// sender's does. Dropped while waiting, it takes its message back.
#[must_use = "a send future does nothing until awaited"]
pub struct SendAsync<'a, T> {
    chan: &'a Chan<T>,
    state: Holding<T>,
}

impl<'a, T> SendAsync<'a, T> {
    pub(super) fn new(chan: &'a Chan<T>, value: T) -> Self {
        SendAsync {
            chan,
            state: Holding::Message(value),
        }
    }
}

// The message is only moved, never pinned: the future may move freely.
impl<T> Unpin for SendAsync<'_, T> {}

impl<T> std::future::Future for SendAsync<'_, T> {
    type Output = Result<(), super::SendError<T>>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        use std::task::Poll;
        let this = &mut *self;
        let mut g = this.chan.lock();
        match std::mem::replace(&mut this.state, Holding::Finished) {
            Holding::Message(msg) => {
                if !g.receiver_alive {
                    return Poll::Ready(Err(super::SendError(msg)));
                }
                if !g.is_full() {
                    g.push(msg);
                    return Poll::Ready(Ok(()));
                }
                let waker = SendWaker::Task(cx.waker().clone());
                match g.room.as_mut() {
                    Some(room) => this.state = Holding::Blocked(room.block(msg, waker)),
                    None => {
                        g.push(msg); // never full: unreachable, but never lose it
                        return Poll::Ready(Ok(()));
                    }
                }
                Poll::Pending
            }
            Holding::Blocked(ticket) => {
                if !g.is_blocked(ticket) {
                    return Poll::Ready(Ok(())); // the receiver moved it in
                }
                if !g.receiver_alive {
                    return Poll::Ready(
                        g.unblock(ticket)
                            .map_or(Ok(()), |m| Err(super::SendError(m))),
                    );
                }
                if let Some(room) = g.room.as_mut() {
                    room.set_waker(ticket, SendWaker::Task(cx.waker().clone()));
                }
                this.state = Holding::Blocked(ticket);
                Poll::Pending
            }
            Holding::Finished => Poll::Ready(Ok(())),
        }
    }
}

impl<T> Drop for SendAsync<'_, T> {
    fn drop(&mut self) {
        if let Holding::Blocked(ticket) = self.state {
            // Given up (dropped unfinished): take the message back, and
            // drop it outside the lock.
            let msg = self.chan.lock().unblock(ticket);
            drop(msg);
        }
    }
}

impl<T> std::fmt::Debug for SendAsync<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SendAsync")
    }
}
