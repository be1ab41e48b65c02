//! A behaviour's address, written once: the actor's pid and a sender to
//! its mailbox, with the ways a client puts a message there (waiting for
//! room in a bounded mailbox, never waiting for a system message, not
//! waiting at all) and the call made through it.
//! [`ServerRef`](super::server_ref::ServerRef) (gen_server's
//! `GenServerRef`, gen_statem's `StatemRef`) wraps one, over the
//! behaviour's envelope type.
//!
//! # Invariants
//!
//! - (A1) A call whose target is the calling actor fails at once with
//!   [`CallError::CallingSelf`], before anything is sent: the server
//!   could only answer it after the call returned (Erlang's
//!   `calling_self`).

use super::{CallError, Reply, call_to};
use smarm_core::channel::{SendTimeoutError, Sender, TrySendError};
use smarm_core::{Down, Exit, MonitorRef, Pid};
use std::time::Duration;

/// The server is down: a cast or info was not delivered, and comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("smarm: the server is down; the message was not delivered")]
pub struct CastError<M>(pub M);

/// Why [`GenServerRef::try_cast`](crate::gen_server::GenServerRef::try_cast) or
/// [`try_info`](crate::gen_server::GenServerRef::try_info) (or a
/// [`StatemRef`](crate::gen_statem::StatemRef)'s) did not
/// deliver; either way the message comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TryCastError<M> {
    /// The server's bounded mailbox
    /// ([`Builder::mailbox_capacity`](crate::gen_server::Builder::mailbox_capacity)) is
    /// full.
    #[error("smarm: the server's mailbox is full; the message was not delivered")]
    Full(M),
    /// The server is down.
    #[error("smarm: the server is down; the message was not delivered")]
    Down(M),
}

impl<M> TryCastError<M> {
    /// The message that was not delivered.
    pub fn into_inner(self) -> M {
        match self {
            TryCastError::Full(m) | TryCastError::Down(m) => m,
        }
    }

    pub(crate) fn map<N>(self, f: impl FnOnce(M) -> N) -> TryCastError<N> {
        match self {
            TryCastError::Full(m) => TryCastError::Full(f(m)),
            TryCastError::Down(m) => TryCastError::Down(f(m)),
        }
    }
}

/// Why a message was not put in the mailbox without waiting: full or
/// closed; the message comes back either way.
pub(crate) enum NotDelivered<E> {
    Full(E),
    Down(E),
}

/// A behaviour actor's pid and its mailbox's sender.
pub(crate) struct Address<E> {
    pub(crate) pid: Pid,
    pub(crate) inbox: Sender<E>,
}

impl<E> Clone for Address<E> {
    fn clone(&self) -> Self {
        Address {
            pid: self.pid,
            inbox: self.inbox.clone(),
        }
    }
}

impl<E: Send + 'static> Address<E> {
    /// Whether the actor still runs (its mailbox is open).
    pub(crate) fn is_alive(&self) -> bool {
        !self.inbox.is_closed()
    }

    /// Messages waiting in the mailbox.
    pub(crate) fn mailbox_len(&self) -> usize {
        self.inbox.queued_len()
    }

    /// Make the calling actor (this address's) reachable by pid for `sys`
    /// until it exits, its system requests put in the mailbox as
    /// `wrap(request)`.
    pub(crate) fn note_system(&self, wrap: fn(crate::sys::Request) -> E) {
        let me = self.clone();
        crate::sys::note(
            self.pid,
            std::sync::Arc::new(move |request| {
                let _ = me.deliver_system(wrap(request));
            }),
        );
    }

    /// Trap exits for the calling actor (the behaviour itself), each exit
    /// delivered to this mailbox as `wrap(exit)`, in order with the rest.
    pub(crate) fn trap_exits_as(&self, wrap: fn(Exit) -> E) -> bool {
        let me = self.clone();
        smarm_core::trap_exit_with(move |exit| {
            let _ = me.deliver_system(wrap(exit));
        })
    }

    /// Monitor `pid` for the calling actor, its `Down` delivered to this
    /// mailbox as `wrap(down)`.
    pub(crate) fn monitor_as<A>(&self, pid: Pid<A>, wrap: fn(Down) -> E) -> MonitorRef {
        let me = self.clone();
        smarm_core::monitor_with(pid, move |down| {
            let _ = me.deliver_system(wrap(down));
        })
    }

    /// Deliver a request, waiting for room in a bounded mailbox; `what`
    /// names the public call for the misuse panics.
    pub(crate) fn deliver(&self, what: &'static str, msg: E) -> Result<(), E> {
        self.inbox.send_as(what, msg).map_err(|e| e.0)
    }

    /// [`deliver`](Self::deliver) from async code: on a full bounded
    /// mailbox the future waits for room without blocking its thread.
    pub(crate) async fn deliver_async(&self, msg: E) -> Result<(), E> {
        self.inbox.send_async(msg).await.map_err(|e| e.0)
    }

    /// Deliver a message core hands over from a callback (an exit, a
    /// `Down`, a timer's wake): never waits, past a bounded mailbox's
    /// capacity if need be, as Erlang never drops a signal.
    pub(crate) fn deliver_system(&self, msg: E) -> Result<(), E> {
        self.inbox.send_past_capacity(msg).map_err(|e| e.0)
    }

    /// Deliver without waiting: the message back if the mailbox is full or
    /// the actor down.
    pub(crate) fn try_deliver(&self, msg: E) -> Result<(), NotDelivered<E>> {
        self.inbox.try_send(msg).map_err(|e| match e {
            TrySendError::Full(msg) => NotDelivered::Full(msg),
            TrySendError::Disconnected(msg) => NotDelivered::Down(msg),
        })
    }

    /// Make a call whose request `request` builds: the send waits for
    /// room in a bounded mailbox within the call's `timeout`, and a
    /// mailbox still full at its end fails the call with
    /// [`CallError::Timeout`]. A call to the caller itself fails at once
    /// (A1).
    pub(crate) fn call_within<R: Send + 'static>(
        &self,
        what: &'static str,
        request: impl FnOnce(Reply<R>) -> E,
        timeout: Duration,
    ) -> Result<R, CallError> {
        match smarm_core::try_self_pid() {
            Some(me) if me == self.pid => return Err(CallError::CallingSelf),
            Some(_) => {}
            None => smarm_core::require_actor(what), // panics, naming the call
        }
        if self.inbox.capacity().is_some() {
            return self.call_bounded(what, request, timeout);
        }
        call_to(
            what,
            || Some(self.pid),
            request,
            |msg| self.inbox.send(msg).map_err(|e| e.0),
            timeout,
        )
    }

    /// Stop the actor after it has handled what is already in its mailbox:
    /// `shutdown` (the behaviour's shutdown request, answered after its
    /// `terminate`) queues behind the mail. A drain still running after
    /// `timeout` is cut short by a stop request (the actor unwinds at its
    /// next blocking call, `terminate` still runs once), and this waits up
    /// to `timeout` again for the exit. Returns once the actor is gone.
    pub(crate) fn drain<R: Send + 'static>(
        &self,
        what: &'static str,
        shutdown: impl FnOnce(Reply<R>) -> E,
        timeout: Duration,
    ) -> Result<(), CallError> {
        smarm_core::require_actor(what);
        let down = smarm_core::monitor(self.pid);
        let asked = self.call_within(what, shutdown, timeout);
        if let Err(CallError::Timeout(_)) = asked {
            smarm_core::request_stop(self.pid);
        }
        match down.rx.recv_timeout(timeout) {
            Ok(_) => Ok(()),
            Err(_) => Err(CallError::Timeout(timeout)),
        }
    }

    /// [`call_within`](Self::call_within) on a bounded mailbox.
    #[inline(never)]
    fn call_bounded<R: Send + 'static>(
        &self,
        what: &'static str,
        request: impl FnOnce(Reply<R>) -> E,
        timeout: Duration,
    ) -> Result<R, CallError> {
        let mut full = false;
        let result = call_to(
            what,
            || Some(self.pid),
            request,
            |msg| match self.inbox.try_send(msg) {
                Ok(()) => Ok(()),
                Err(TrySendError::Disconnected(msg)) => Err(msg),
                Err(TrySendError::Full(msg)) => self.wait_for_room(what, msg, timeout, &mut full),
            },
            timeout,
        );
        if full {
            return Err(CallError::Timeout(timeout));
        }
        result
    }

    /// A call's request found the bounded mailbox full: wait for room
    /// within the call's timeout; `full` says it stayed full.
    #[cold]
    #[inline(never)]
    fn wait_for_room(
        &self,
        what: &'static str,
        msg: E,
        timeout: Duration,
        full: &mut bool,
    ) -> Result<(), E> {
        match self.inbox.send_timeout_as(what, msg, timeout) {
            Ok(()) => Ok(()),
            Err(SendTimeoutError::Timeout(msg)) => {
                *full = true;
                Err(msg)
            }
            Err(SendTimeoutError::Disconnected(msg)) => Err(msg),
        }
    }
}

/// The client requests a behaviour's mailbox carries: how its envelope
/// wraps a call, a cast, an info, a shutdown request and a `sys` request,
/// and unwraps what a failed send hands back. The client methods both
/// refs offer are written once, on an [`Address`] of such an envelope and
/// on [`ServerRef`](super::server_ref::ServerRef). Public only to bound
/// `ServerRef`'s parameter: nothing outside this crate can name or
/// implement it (this module is private).
pub trait Requests: Send + Sized + 'static {
    /// A call's request.
    type Call: Send + 'static;
    /// A call's reply.
    type Reply: Send + 'static;
    /// A cast.
    type Cast: Send + 'static;
    /// An info message.
    type Info: Send + 'static;

    /// The ref's public method names, for misuse panics.
    const NAMES: super::server_ref::RefNames;

    /// A call.
    fn call(request: Self::Call, reply: Reply<Self::Reply>) -> Self;
    /// A cast.
    fn cast(msg: Self::Cast) -> Self;
    /// An info message.
    fn info(msg: Self::Info) -> Self;
    /// A shutdown request.
    fn shutdown(reply: Reply<()>) -> Self;
    /// A `sys` request.
    fn system(request: Box<crate::sys::Request>) -> Self;

    /// A call handed back by a failed send (only ever given a call).
    fn into_call(self) -> (Self::Call, Reply<Self::Reply>);
    /// A cast handed back by a failed send.
    fn into_cast(self) -> Self::Cast;
    /// An info handed back by a failed send.
    fn into_info(self) -> Self::Info;
}

/// A call put without waiting, as a failed send hands it back: the
/// request and its reply slot.
pub(crate) type PutCall<E> = (<E as Requests>::Call, Reply<<E as Requests>::Reply>);

/// The client methods of `GenServerRef` and `StatemRef`; each names the
/// public method made through it (`what`) in its misuse panics.
impl<E: Requests> Address<E> {
    /// A call, waiting up to `timeout` for the reply.
    pub(crate) fn call(
        &self,
        what: &'static str,
        request: E::Call,
        timeout: Duration,
    ) -> Result<E::Reply, CallError> {
        self.call_within(what, |reply| E::call(request, reply), timeout)
    }

    /// [`call`](Self::call) from async code: a `Send` future on any
    /// executor, the request sent at its first poll.
    pub(crate) fn call_async(
        &self,
        request: E::Call,
        timeout: Duration,
    ) -> impl std::future::Future<Output = Result<E::Reply, CallError>> + Send + '_ {
        let inbox = &self.inbox;
        super::call_async(
            |reply| E::call(request, reply),
            move |msg| async move { inbox.send_async(msg).await.map_err(|e| e.0) },
            timeout,
        )
    }

    /// Put a call whose answer goes to `reply`, without waiting for it.
    pub(crate) fn send_request(
        &self,
        what: &'static str,
        request: E::Call,
        reply: Reply<E::Reply>,
    ) -> Result<(), CastError<PutCall<E>>> {
        super::cycle::passed_on(&reply, self.pid);
        self.deliver(what, E::call(request, reply))
            .map_err(|back| CastError(back.into_call()))
    }

    /// A cast, waiting for room in a bounded mailbox.
    pub(crate) fn cast(&self, what: &'static str, msg: E::Cast) -> Result<(), CastError<E::Cast>> {
        self.deliver(what, E::cast(msg))
            .map_err(|back| CastError(back.into_cast()))
    }

    /// [`cast`](Self::cast) from async code.
    pub(crate) async fn cast_async(&self, msg: E::Cast) -> Result<(), CastError<E::Cast>> {
        self.deliver_async(E::cast(msg))
            .await
            .map_err(|back| CastError(back.into_cast()))
    }

    /// A cast without waiting.
    pub(crate) fn try_cast(&self, msg: E::Cast) -> Result<(), TryCastError<E::Cast>> {
        self.try_deliver(E::cast(msg))
            .map_err(|e| TryCastError::from(e).map(E::into_cast))
    }

    /// An info, waiting for room in a bounded mailbox.
    pub(crate) fn info(&self, what: &'static str, msg: E::Info) -> Result<(), CastError<E::Info>> {
        self.deliver(what, E::info(msg))
            .map_err(|back| CastError(back.into_info()))
    }

    /// An info without waiting.
    pub(crate) fn try_info(&self, msg: E::Info) -> Result<(), TryCastError<E::Info>> {
        self.try_deliver(E::info(msg))
            .map_err(|e| TryCastError::from(e).map(E::into_info))
    }

    /// Stop the behaviour in order (its shutdown request queues behind
    /// its mail), waiting up to `timeout` for its `terminate` to have run.
    pub(crate) fn shutdown(&self, what: &'static str, timeout: Duration) -> Result<(), CallError> {
        self.call_within(what, E::shutdown, timeout)
    }

    /// Stop the behaviour once it has handled its mail ([`drain`](Self::drain)
    /// with its shutdown request).
    pub(crate) fn drain_mail(
        &self,
        what: &'static str,
        timeout: Duration,
    ) -> Result<(), CallError> {
        self.drain(what, E::shutdown, timeout)
    }
}

impl<E> From<NotDelivered<E>> for TryCastError<E> {
    fn from(not: NotDelivered<E>) -> Self {
        match not {
            NotDelivered::Full(msg) => TryCastError::Full(msg),
            NotDelivered::Down(msg) => TryCastError::Down(msg),
        }
    }
}
