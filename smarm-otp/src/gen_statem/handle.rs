//! Addressing a state machine: [`StatemRef`] (by pid, holding its
//! mailbox's sender) and [`StatemName`] (through the registry).

use super::GenStatem;
use super::machine::{Envelope, Msg};
use crate::behaviour::address::Address;
use crate::behaviour::{
    CallError, CastError, DEFAULT_CALL_TIMEOUT, ReplaceStateError, Reply, TryCastError,
};
use crate::registry::{self, Name};
use smarm_core::Pid;
use smarm_core::channel::Sender;
use std::time::Duration;

/// A state machine's name: a registry [`Name`] for its mailbox.
/// `const DOOR: StatemName<Door> = StatemName::new("door");`
pub type StatemName<M> = Name<Envelope<M>>;

/// A call put with [`StatemRef::send_request`]: the request and the slot
/// its answer goes to.
pub type Request<M> = (<M as GenStatem>::Call, Reply<<M as GenStatem>::Reply>);

/// The address of a running state machine of type `M`.
pub struct StatemRef<M: GenStatem> {
    addr: Address<Envelope<M>>,
}

impl<M: GenStatem> Clone for StatemRef<M> {
    fn clone(&self) -> Self {
        StatemRef {
            addr: self.addr.clone(),
        }
    }
}

impl<M: GenStatem> std::fmt::Debug for StatemRef<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StatemRef({})", self.addr.pid)
    }
}

impl<M: GenStatem> StatemRef<M> {
    pub(super) fn new(pid: Pid, inbox: Sender<Envelope<M>>) -> Self {
        StatemRef {
            addr: Address { pid, inbox },
        }
    }

    /// The address the ref wraps.
    pub(super) fn address(&self) -> &Address<Envelope<M>> {
        &self.addr
    }

    /// The machine's actor.
    pub fn pid(&self) -> Pid {
        self.addr.pid
    }

    /// Whether the machine is still running.
    pub fn is_alive(&self) -> bool {
        self.addr.is_alive()
    }

    /// Messages waiting in the machine's mailbox (not counting events it
    /// has postponed or queued itself).
    pub fn mailbox_len(&self) -> usize {
        self.addr.mailbox_len()
    }

    /// Deliver without waiting for room (a timer, an exit, a `Down`).
    pub(super) fn deliver_system(&self, msg: Msg<M>) -> Result<(), Msg<M>> {
        self.addr.deliver_system(Envelope(msg)).map_err(|e| e.0)
    }

    /// Call the machine ([`Event::Call`](super::Event::Call)) and wait for its reply, up to
    /// [`DEFAULT_CALL_TIMEOUT`] (5 s). A call to the machine from its own
    /// callbacks fails at once with [`CallError::CallingSelf`].
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn call(&self, request: M::Call) -> Result<M::Reply, CallError> {
        self.addr
            .call("StatemRef::call", request, DEFAULT_CALL_TIMEOUT)
    }

    /// [`call`](Self::call) with a timeout of your choosing.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn call_timeout(&self, request: M::Call, timeout: Duration) -> Result<M::Reply, CallError> {
        self.addr.call("StatemRef::call_timeout", request, timeout)
    }

    /// [`call`](Self::call) from async code: a `Send` future of the reply,
    /// on any executor, with the same timeout and errors.
    pub fn call_async(
        &self,
        request: M::Call,
    ) -> impl std::future::Future<Output = Result<M::Reply, CallError>> + Send + '_ {
        self.call_async_timeout(request, DEFAULT_CALL_TIMEOUT)
    }

    /// [`call_async`](Self::call_async) with a timeout of your choosing.
    pub fn call_async_timeout(
        &self,
        request: M::Call,
        timeout: Duration,
    ) -> impl std::future::Future<Output = Result<M::Reply, CallError>> + Send + '_ {
        self.addr.call_async(request, timeout)
    }

    /// Put a call without waiting for its answer, which goes to `reply`
    /// (typically [`Reply::forward`]), as Erlang's
    /// `gen_statem:send_request/2`.
    ///
    /// # Panics
    ///
    /// On a full bounded mailbox, from a scheduler callback or from the
    /// machine itself.
    pub fn send_request(
        &self,
        request: M::Call,
        reply: Reply<M::Reply>,
    ) -> Result<(), CastError<Request<M>>> {
        self.addr
            .send_request("StatemRef::send_request", request, reply)
    }

    /// Send the machine a cast ([`Event::Cast`](super::Event::Cast)), waiting for room in a
    /// bounded mailbox.
    ///
    /// # Panics
    ///
    /// On a full bounded mailbox, from a scheduler callback or from the
    /// machine itself (use [`try_cast`](Self::try_cast) there).
    pub fn cast(&self, msg: M::Cast) -> Result<(), CastError<M::Cast>> {
        self.addr.cast("StatemRef::cast", msg)
    }

    /// [`cast`](Self::cast) from async code: on a full bounded mailbox the
    /// future waits for room without blocking its thread. The future is
    /// `Send` and runs on any executor.
    pub fn cast_async(
        &self,
        msg: M::Cast,
    ) -> impl std::future::Future<Output = Result<(), CastError<M::Cast>>> + Send + '_ {
        self.addr.cast_async(msg)
    }

    /// [`cast`](Self::cast) without waiting.
    pub fn try_cast(&self, msg: M::Cast) -> Result<(), TryCastError<M::Cast>> {
        self.addr.try_cast(msg)
    }

    /// Send the machine an info message ([`Event::Info`](super::Event::Info)).
    ///
    /// # Panics
    ///
    /// As [`cast`](Self::cast).
    pub fn info(&self, msg: M::Info) -> Result<(), CastError<M::Info>> {
        self.addr.info("StatemRef::info", msg)
    }

    /// [`info`](Self::info) without waiting, as [`try_cast`](Self::try_cast).
    pub fn try_info(&self, msg: M::Info) -> Result<(), TryCastError<M::Info>> {
        self.addr.try_info(msg)
    }

    /// Stop the machine in order: the request queues behind the messages
    /// already in its mailbox, which it handles first; then it runs
    /// `terminate` with [`StopReason::Shutdown`](crate::behaviour::StopReason)
    /// and exits; this returns once it has (or fails after the default
    /// call timeout). [`drain`](Self::drain) bounds the whole by a
    /// deadline.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn shutdown(&self) -> Result<(), CallError> {
        self.shutdown_timeout(DEFAULT_CALL_TIMEOUT)
    }

    /// [`shutdown`](Self::shutdown), waiting up to `timeout`.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn shutdown_timeout(&self, timeout: Duration) -> Result<(), CallError> {
        self.addr.shutdown("StatemRef::shutdown", timeout)
    }

    /// Stop the machine once it has handled what is already in its
    /// mailbox, as [`GenServerRef::drain`](crate::gen_server::GenServerRef::drain):
    /// the request queues behind the mail, a drain past `timeout` is cut
    /// short by a stop request, and this returns once the machine is gone.
    /// Events it has postponed are not handled (their callers fail).
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn drain(&self, timeout: Duration) -> Result<(), CallError> {
        self.addr.drain_mail("StatemRef::drain", timeout)
    }

    /// Run `f` on the machine's state and data between two events and
    /// return its result (debugging access, as `sys:get_state`). Not an
    /// event: the event timeout keeps running.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn inspect<T: Send + 'static>(
        &self,
        f: impl FnOnce(&M::State, &M) -> T + Send + 'static,
    ) -> Result<T, CallError> {
        self.addr.call_within(
            "StatemRef::inspect",
            |reply: Reply<T>| {
                Envelope(Msg::Inspect(Box::new(move |state, data| {
                    let _ = reply.reply(f(state, data));
                })))
            },
            DEFAULT_CALL_TIMEOUT,
        )
    }

    /// A copy of the machine's state and data (Erlang's `sys:get_state`;
    /// [`sys::get_state`](crate::sys::get_state)).
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn get_state(&self) -> Result<(M::State, M), CallError>
    where
        M: Clone,
        M::State: Clone,
    {
        crate::sys::get_state(self)
    }

    /// Change the machine's state and data with `f`, between two events,
    /// and return the new ones (Erlang's `sys:replace_state`;
    /// [`sys::replace_state`](crate::sys::replace_state)). `f` works on
    /// copies: if it panics the machine keeps them as they were, goes on,
    /// and this returns [`ReplaceStateError::Panicked`]. A new state set
    /// this way is not a state change: no enter call runs, and postponed
    /// events and the state timeout stay as they are.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn replace_state(
        &self,
        f: impl FnOnce(&mut M::State, &mut M) + Send + 'static,
    ) -> Result<(M::State, M), ReplaceStateError>
    where
        M: Clone,
        M::State: Clone,
    {
        crate::sys::replace_state(self, move |(state, data)| f(state, data))
    }
}

/// The running state machine registered as `name`, if any.
///
/// # Panics
///
/// Outside an actor.
pub fn whereis<M: GenStatem>(name: StatemName<M>) -> Option<StatemRef<M>> {
    let (pid, inbox) = registry::resolve_sender(name)?;
    Some(StatemRef::new(pid, inbox))
}

impl<M: GenStatem> crate::sys::System for StatemRef<M> {
    fn system_call<R: Send>(
        &self,
        what: &'static str,
        request: impl FnOnce(Reply<R>) -> crate::sys::Request,
    ) -> Result<R, CallError> {
        self.addr.call_within(
            what,
            |reply| Envelope(Msg::System(Box::new(request(reply)))),
            DEFAULT_CALL_TIMEOUT,
        )
    }
}

/// The state machine registered under the name, when the request is made.
impl<M: GenStatem + Clone> crate::sys::SystemState for StatemName<M>
where
    M::State: Clone,
{
    type State = (M::State, M);

    fn with_state<T: Send + 'static>(
        &self,
        what: &'static str,
        f: impl FnOnce(&mut (M::State, M)) -> T + Send + 'static,
    ) -> Result<T, CallError> {
        smarm_core::require_actor(what);
        let machine = whereis(*self).ok_or(CallError::ServerDown)?;
        machine.with_state(what, f)
    }
}

/// A state machine's state, for `sys`, is its state and its data.
impl<M: GenStatem + Clone> crate::sys::SystemState for StatemRef<M>
where
    M::State: Clone,
{
    type State = (M::State, M);

    fn with_state<T: Send + 'static>(
        &self,
        what: &'static str,
        f: impl FnOnce(&mut (M::State, M)) -> T + Send + 'static,
    ) -> Result<T, CallError> {
        self.addr.call_within(
            what,
            |reply: Reply<T>| {
                Envelope(Msg::Inspect(Box::new(
                    move |state: &mut M::State, data: &mut M| {
                        let mut pair = (state.clone(), data.clone());
                        let answer = f(&mut pair);
                        (*state, *data) = pair;
                        let _ = reply.reply(answer);
                    },
                )))
            },
            DEFAULT_CALL_TIMEOUT,
        )
    }
}
