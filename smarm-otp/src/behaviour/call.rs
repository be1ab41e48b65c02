//! The call machinery, written once: a reply slot per call (core's
//! `await_reply`: the answer lands in the caller's frame, no allocation),
//! a deadline, and failure detection through the reply slot itself. Used by
//! [`GenServerRef::call`](crate::gen_server::GenServerRef::call) and by the typed actors
//! `#[derive(Actor)]` generates.
//!
//! # How a call fails fast
//!
//! The request carries a [`Reply`]: the only way back to the caller. The
//! caller waits on it with a deadline. If the server is already gone, the
//! send of the request fails at once (its mailbox is closed). If it dies
//! before replying, the `Reply` is dropped with it (queued requests are
//! dropped when its mailbox closes; the one being handled unwinds with the
//! handler), and a dropped `Reply` wakes the caller with
//! [`CallError::ServerDown`]. This is what a monitor would report,
//! without setting one up per call, and when: a `Reply` dropped while its
//! server unwinds fails the call only once the server is gone (C3), as
//! Erlang's `call` hears of it from its monitor.
//!
//! A call to a known actor ([`call_to`]) that waits longer than 2 ms also
//! looks for a cycle of callers through it (`behaviour::cycle`): a call
//! that closes one fails with [`CallError::Cycle`] (or
//! [`CallError::CallingSelf`]) instead of waiting out its timeout.
//!
//! # Invariants
//!
//! - (C1) Every call has its own reply slot, dropped by the caller when it
//!   gives up: a reply that arrives after a timeout is discarded, and can
//!   never be taken by a later call.
//! - (C2) A `Reply` is used at most once (`reply` consumes it); dropping it
//!   unused fails the call.
//! - (C3) A `Reply` dropped by an unwinding actor (`smarm::panicking`)
//!   fails its call from the actor's exit hooks, which run once the actor
//!   is no longer alive: the caller never sees the server it called still
//!   alive, still named, or before its `terminate`.

use super::cycle;
use smarm_core::Pid;
use smarm_core::channel::{ReplyError, ReplySender, await_reply_watched_as};
use smarm_core::future::{AsyncReplySender, async_reply};
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use std::time::Duration;
use thiserror::Error;

/// How long [`GenServerRef::call`](crate::gen_server::GenServerRef::call) and the
/// derived actors' calls wait by default (Erlang's default, 5 s).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a call returned no reply. Non-exhaustive: a later kind of failure
/// is not a breaking change; match the kinds you treat apart, then `_`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum CallError {
    /// No reply within the timeout; the server may still be working on it
    /// (its late reply is discarded).
    #[error("smarm: call timed out after {0:?} (the server is alive but did not reply in time)")]
    Timeout(Duration),
    /// The server was down, or went down (or dropped the request's reply
    /// slot) before replying.
    #[error("smarm: call failed: the server is down or exited without replying")]
    ServerDown,
    /// The caller called itself: a server can only answer a call after
    /// the callback making it returns, so the call could never be
    /// answered (Erlang's `calling_self`). Reply from the callback, or
    /// cast to yourself, instead.
    #[error(
        "smarm: call to self: an actor called its own address, which it could only answer \
         after the call returned (use the state directly, or cast to yourself)"
    )]
    CallingSelf,
    /// The call would close a cycle of callers each waiting on the next
    /// (A calls B while B is in a call to A; or A → B → C → A): none of
    /// them could answer before its timeout. The cycle, from the caller.
    #[error("smarm: call cycle: {} each wait on the next, back to the first: none can answer", show_cycle(.0))]
    Cycle(Vec<Pid>),
}

/// `<0.1.1> -> <0.2.1>`, for [`CallError::Cycle`].
fn show_cycle(cycle: &[Pid]) -> String {
    let pids: Vec<String> = cycle.iter().map(Pid::to_string).collect();
    pids.join(" -> ")
}

/// The reply slot of one call: give the caller its answer with
/// [`Reply::reply`], now or later (keep it in the server's state to reply
/// after other messages: a deferred reply). Dropping it unanswered fails
/// the call with [`CallError::ServerDown`] (C2): at once, or, if the
/// server is going down (its actor unwinding), once it is gone (C3).
///
/// A call that arrives from outside the runtime's own callers (another
/// node, a socket) carries a slot made by [`Reply::forward`]: its answer
/// goes to a function instead.
#[must_use = "a dropped Reply fails the caller's call: reply, or keep it to reply later"]
pub struct Reply<T: Send + 'static> {
    to: ReplyTo<T>,
}

enum ReplyTo<T: Send + 'static> {
    /// A caller waiting in `call` (C1).
    Caller(ReplySender<T>),
    /// A caller awaiting `call_async` (C1).
    Task(AsyncReplySender<T>),
    /// A caller elsewhere: `forward`'s function.
    Forward(Box<dyn FnOnce(T) -> bool + Send>),
    /// A reply counted as it is sent, for `sys`'s `messages_out`.
    Counted(Box<Reply<T>>, Arc<AtomicU64>),
    /// Answered, or handed on: nothing left to do.
    Spent,
}

impl<T: Send + 'static> Reply<T> {
    /// Answer the call. `false` if the caller is no longer waiting (it
    /// timed out or went down): the value is discarded (C1).
    pub fn reply(self, value: T) -> bool {
        // Taken apart without its drop, which only matters unanswered.
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped or read again, so `to` is moved
        // out exactly once.
        let to = unsafe { std::ptr::read(&this.to) };
        match to {
            ReplyTo::Caller(tx) => tx.send(value).is_ok(),
            ReplyTo::Task(tx) => tx.send(value).is_ok(),
            ReplyTo::Forward(f) => f(value),
            ReplyTo::Counted(reply, sent) => {
                sent.fetch_add(1, Ordering::Relaxed);
                reply.reply(value)
            }
            ReplyTo::Spent => false,
        }
    }

    /// Count this reply in `sent` when it is sent (while `sys`'s
    /// statistics are on). In place, so the serving loop that owns the
    /// message keeps it where it is.
    pub(crate) fn count_in(&mut self, sent: Arc<AtomicU64>) {
        let to = std::mem::replace(&mut self.to, ReplyTo::Spent);
        self.to = ReplyTo::Counted(Box::new(Reply { to }), sent);
    }

    /// The call this answers, while its caller (an actor) waits: for the
    /// records of who owes whom a reply (`behaviour::cycle`).
    pub(crate) fn call_id(&self) -> Option<(Pid, u64)> {
        match &self.to {
            ReplyTo::Caller(tx) => tx.call_id(),
            ReplyTo::Task(_) | ReplyTo::Forward(_) | ReplyTo::Spent => None,
            ReplyTo::Counted(reply, _) => reply.call_id(),
        }
    }

    /// Whether the caller still waits for this reply (a forwarded reply's
    /// caller is assumed to).
    pub fn is_waited_on(&self) -> bool {
        match &self.to {
            ReplyTo::Caller(tx) => tx.is_waited_on(),
            ReplyTo::Task(tx) => tx.is_waited_on(),
            ReplyTo::Forward(_) => true,
            ReplyTo::Counted(reply, _) => reply.is_waited_on(),
            ReplyTo::Spent => false,
        }
    }

    /// A reply slot whose answer is handed to `deliver` (which says
    /// whether it reached a caller), for a request made without
    /// [`call`]: how a bridge from another transport puts a request to a
    /// server with [`GenServerRef::send_request`](crate::gen_server::GenServerRef::send_request)
    /// and sends the answer on when the server gives it, without waiting.
    /// Dropped unanswered, it calls nothing: the far caller's own timeout
    /// or monitor tells it, as for an Erlang server that never replies.
    ///
    /// `deliver` runs in the server's actor, at its `reply`: it must not
    /// block for long.
    ///
    /// ```
    /// use smarm::gen_server::Reply;
    ///
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let reply = Reply::forward(move |answer: u32| tx.send(answer).is_ok());
    /// assert!(reply.reply(42));
    /// assert_eq!(rx.recv(), Ok(42));
    /// ```
    pub fn forward(deliver: impl FnOnce(T) -> bool + Send + 'static) -> Reply<T> {
        Reply {
            to: ReplyTo::Forward(Box::new(deliver)),
        }
    }
}

impl<T: Send + 'static> Drop for Reply<T> {
    /// Unanswered: the call fails (C2). A server going down keeps the
    /// failure back until it is gone (C3): its caller, as Erlang's (whose
    /// `call` learns from its monitor), sees the server's `terminate` done
    /// and its names released by the time the call fails, so a
    /// `whereis` right after finds the restarted server or none.
    fn drop(&mut self) {
        if matches!(self.to, ReplyTo::Spent | ReplyTo::Forward(_)) || !smarm_core::panicking() {
            return;
        }
        let Some(me) = smarm_core::try_self_pid() else {
            return;
        };
        let to = std::mem::replace(&mut self.to, ReplyTo::Spent);
        // Not hooked only if the actor is already past its end: then it
        // is gone, and `to` fails the call as it drops here.
        smarm_core::signal::on_exit(me, move |_, _| drop(to));
    }
}

impl<T: Send + 'static> std::fmt::Debug for Reply<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reply")
    }
}

/// Make a call: build the request around a fresh [`Reply`] with
/// `request`, hand it to `deliver` (which sends it to the server and
/// returns the request back if the server's mailbox is closed), and wait
/// up to `timeout` for the answer.
///
/// This is the one implementation of call semantics; typed wrappers build
/// on it.
///
/// ```
/// use smarm::gen_server::{call, Reply};
/// use std::time::Duration;
///
/// smarm::run(|| {
///     // A hand-written server: requests carry their reply slot.
///     let (tx, rx) = smarm::channel::<(u32, Reply<u32>)>();
///     let server = smarm::spawn(move || {
///         while let Ok((n, reply)) = rx.recv() {
///             reply.reply(n * 2);
///         }
///     });
///     let doubled = call(
///         |reply| (21, reply),
///         |req| tx.send(req).map_err(|e| e.0),
///         Duration::from_secs(5),
///     );
///     assert_eq!(doubled, Ok(42));
///     drop(tx);
///     server.join().unwrap();
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn call<Req, R: Send + 'static>(
    request: impl FnOnce(Reply<R>) -> Req,
    deliver: impl FnOnce(Req) -> Result<(), Req>,
    timeout: Duration,
) -> Result<R, CallError> {
    call_as("gen_server::call", request, deliver, timeout)
}

/// [`call`], naming `what` (the public call built on it, such as
/// `GenServerRef::call` or a derived client method) in the
/// outside-an-actor panic.
#[doc(hidden)]
pub fn call_as<Req, R: Send + 'static>(
    what: &'static str,
    request: impl FnOnce(Reply<R>) -> Req,
    deliver: impl FnOnce(Req) -> Result<(), Req>,
    timeout: Duration,
) -> Result<R, CallError> {
    call_to(what, || None, request, deliver, timeout)
}

/// [`call_as`] to a known actor, `callee()` (asked only if the call is
/// slow to answer: it may look a name up): a call that has waited
/// [`FIRST_WATCH`](smarm_core::channel::FIRST_WATCH) looks for a cycle of
/// callers through it and fails with [`CallError::Cycle`] (or
/// [`CallError::CallingSelf`]) if it closes one (`behaviour::cycle`).
#[doc(hidden)]
pub fn call_to<Req, R: Send + 'static>(
    what: &'static str,
    callee: impl Fn() -> Option<Pid>,
    request: impl FnOnce(Reply<R>) -> Req,
    deliver: impl FnOnce(Req) -> Result<(), Req>,
    timeout: Duration,
) -> Result<R, CallError> {
    // The caller's end of this call alone (C1).
    let mut delivered = true;
    let mut noted = None;
    let mut cycle = None;
    let reply = await_reply_watched_as(
        what,
        |tx| {
            delivered = deliver(request(Reply {
                to: ReplyTo::Caller(tx),
            }))
            .is_ok()
        },
        timeout,
        |tag, began| {
            let Some(callee) = callee() else {
                return false;
            };
            cycle = cycle::look(smarm_core::self_pid(), callee, tag, began, &mut noted);
            cycle.is_some()
        },
    );
    drop(noted); // (Y1)
    outcome(reply, delivered, timeout, cycle)
}

/// A call's result from its wait's.
fn outcome<R>(
    reply: Result<R, ReplyError>,
    delivered: bool,
    timeout: Duration,
    cycle: Option<Vec<Pid>>,
) -> Result<R, CallError> {
    match reply {
        Ok(value) => Ok(value),
        Err(_) if !delivered => Err(CallError::ServerDown),
        // Given up by the watch, on finding the cycle.
        Err(ReplyError::Timeout) => match cycle {
            Some(cycle) if cycle.len() == 1 => Err(CallError::CallingSelf),
            Some(cycle) => Err(CallError::Cycle(cycle)),
            None => Err(CallError::Timeout(timeout)),
        },
        Err(ReplyError::Closed) => Err(CallError::ServerDown),
    }
}

/// [`call`] from async code: build the request around a fresh [`Reply`],
/// hand it to `deliver` (a future that sends it, and gives the request
/// back if the server's mailbox is closed), and await the answer, all
/// within `timeout`. The same outcomes as `call`: the reply,
/// [`CallError::Timeout`] (a late reply is discarded, C1), or
/// [`CallError::ServerDown`] when the server is or goes down first. It
/// waits on any executor, with no actor: inside a tokio context its
/// timeout is a tokio timer, elsewhere smarm's timer thread.
///
/// ```
/// use smarm::gen_server::{call_async, Reply};
/// use std::time::Duration;
///
/// let (tx, rx) = smarm::channel::<(u32, Reply<u32>)>();
/// let server = std::thread::spawn(move || {
///     while let Ok((n, reply)) = rx.recv() {
///         reply.reply(n * 2);
///     }
/// });
/// let doubled = smarm::future::block_on(call_async(
///     |reply| (21, reply),
///     |req| std::future::ready(tx.send(req).map_err(|e| e.0)),
///     Duration::from_secs(5),
/// ));
/// assert_eq!(doubled, Ok(42));
/// drop(tx);
/// server.join().unwrap();
/// ```
pub async fn call_async<Req, R, D>(
    request: impl FnOnce(Reply<R>) -> Req,
    deliver: impl FnOnce(Req) -> D,
    timeout: Duration,
) -> Result<R, CallError>
where
    R: Send + 'static,
    D: Future<Output = Result<(), Req>>,
{
    let mut deadline = pin!(
        smarm_core::time::now()
            .checked_add(timeout)
            .map(smarm_core::future::sleep_until)
    );
    let mut timed_out = std::future::poll_fn(|cx| match deadline.as_mut().as_pin_mut() {
        Some(sleep) => sleep.poll(cx),
        None => Poll::Pending, // too far away to represent: never
    });
    let (tx, rx) = async_reply();
    let mut delivering = pin!(deliver(request(Reply {
        to: ReplyTo::Task(tx),
    })));
    let mut rx = pin!(rx);
    let mut delivered = false;
    std::future::poll_fn(|cx| {
        if !delivered {
            match delivering.as_mut().poll(cx) {
                Poll::Ready(Ok(())) => delivered = true,
                Poll::Ready(Err(_)) => return Poll::Ready(Err(CallError::ServerDown)),
                Poll::Pending => {}
            }
        }
        if delivered {
            match rx.as_mut().poll(cx) {
                Poll::Ready(Ok(value)) => return Poll::Ready(Ok(value)),
                Poll::Ready(Err(_)) => return Poll::Ready(Err(CallError::ServerDown)),
                Poll::Pending => {}
            }
        }
        match std::pin::Pin::new(&mut timed_out).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(CallError::Timeout(timeout))),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}
