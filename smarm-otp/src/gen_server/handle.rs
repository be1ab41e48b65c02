//! Addressing a server: [`GenServerRef`] (by pid, holding its mailbox's
//! sender) and [`ServerName`] (through the registry, resolved on each use).

use super::GenServer;
use super::server::{Envelope, Msg};
use crate::behaviour::server_ref::ServerRef;
use crate::behaviour::{CallError, DEFAULT_CALL_TIMEOUT, Reply};
use crate::registry::{self, Name};
use std::time::Duration;

/// A server's name: a registry [`Name`] for its mailbox.
/// `const ECHO: ServerName<Echo> = ServerName::new("echo");`
pub type ServerName<G> = Name<Envelope<G>>;

/// A call put with [`GenServerRef::send_request`]: the request and the
/// slot its answer goes to.
pub type Request<G> = (<G as GenServer>::Call, Reply<<G as GenServer>::Reply>);

/// The address of a running server of type `G`: its pid and a sender to
/// its mailbox. The client methods (call, cast, info, shutdown, drain and
/// their forms) are [`ServerRef`]'s, shared with
/// [`StatemRef`](crate::gen_statem::StatemRef); a server's own are below.
pub type GenServerRef<G> = ServerRef<Envelope<G>>;

impl<G: GenServer> GenServerRef<G> {
    /// Wake the server's loop for its system channel.
    pub(super) fn wake_for_sys(&self) -> Result<(), Msg<G>> {
        self.deliver_system(Msg::SysWake)
    }

    /// Deliver a message core hands over from a callback (an exit, a
    /// `Down`, a timer's wake): never waits, past a bounded mailbox's
    /// capacity if need be.
    pub(super) fn deliver_system(&self, msg: Msg<G>) -> Result<(), Msg<G>> {
        self.addr.deliver_system(Envelope(msg)).map_err(|e| e.0)
    }

    /// A call whose request `request` builds, through the address's one
    /// call path (bounded mailboxes, calling oneself).
    fn call_within<R: Send + 'static>(
        &self,
        what: &'static str,
        request: impl FnOnce(Reply<R>) -> Msg<G>,
        timeout: Duration,
    ) -> Result<R, CallError> {
        self.addr
            .call_within(what, |reply| Envelope(request(reply)), timeout)
    }

    /// A call, naming `what` (the public call made through it) in the
    /// outside-an-actor panic.
    pub(crate) fn call_as(
        &self,
        what: &'static str,
        request: G::Call,
        timeout: Duration,
    ) -> Result<G::Reply, CallError> {
        self.addr.call(what, request, timeout)
    }

    /// [`drain`](Self::drain) with a call of the server's own as the
    /// request that ends it (a supervisor's drain request).
    pub(crate) fn drain_with(
        &self,
        what: &'static str,
        request: G::Call,
        timeout: Duration,
    ) -> Result<(), CallError> {
        self.addr
            .drain(what, |reply| Envelope(Msg::Call(request, reply)), timeout)
    }

    /// Run `f` on the server's state between two callbacks and return its
    /// result: `sys:get_state`-style debugging access.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn inspect<T: Send + 'static>(
        &self,
        f: impl FnOnce(&G) -> T + Send + 'static,
    ) -> Result<T, CallError> {
        self.call_within(
            "GenServerRef::inspect",
            |reply: Reply<T>| {
                Msg::Inspect(Box::new(move |state: &mut G| {
                    let _ = reply.reply(f(state));
                }))
            },
            DEFAULT_CALL_TIMEOUT,
        )
    }

    /// A copy of the server's state (Erlang's `sys:get_state`).
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn get_state(&self) -> Result<G, CallError>
    where
        G: Clone,
    {
        self.inspect(G::clone)
    }
}

/// The running server registered as `name`, if any.
///
/// # Panics
///
/// Outside an actor.
pub fn whereis_server<G: GenServer>(name: ServerName<G>) -> Option<GenServerRef<G>> {
    let (pid, inbox) = registry::resolve_sender(name)?;
    Some(GenServerRef::new(pid, inbox))
}

/// [`whereis_server`] from outside the runtime (a tokio task, an axum
/// handler, a plain thread): the server holding `name` in `rt` now, so a
/// caller reaches a supervised server across its restarts by looking it
/// up per request, then [`call_async`](GenServerRef::call_async).
pub fn whereis_server_in<G: GenServer>(
    rt: &smarm_core::runtime::RuntimeHandle,
    name: ServerName<G>,
) -> Option<GenServerRef<G>> {
    let (pid, inbox) = registry::resolve_in(rt, name)?;
    Some(GenServerRef::new(pid, inbox))
}

/// The server registered under the name, when the request is made.
impl<G: GenServer> crate::sys::SystemState for ServerName<G> {
    type State = G;

    fn with_state<T: Send + 'static>(
        &self,
        what: &'static str,
        f: impl FnOnce(&mut G) -> T + Send + 'static,
    ) -> Result<T, CallError> {
        smarm_core::require_actor(what);
        let server = whereis_server(*self).ok_or(CallError::ServerDown)?;
        server.with_state(what, f)
    }
}

impl<G: GenServer> crate::sys::SystemState for GenServerRef<G> {
    type State = G;

    fn with_state<T: Send + 'static>(
        &self,
        what: &'static str,
        f: impl FnOnce(&mut G) -> T + Send + 'static,
    ) -> Result<T, CallError> {
        self.call_within(
            what,
            |reply: Reply<T>| {
                Msg::Inspect(Box::new(move |state: &mut G| {
                    let _ = reply.reply(f(state));
                }))
            },
            DEFAULT_CALL_TIMEOUT,
        )
    }
}
