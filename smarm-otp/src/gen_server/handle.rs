//! Addressing a server: [`GenServerRef`] (by pid, holding its mailbox's
//! sender) and [`ServerName`] (through the registry, resolved on each use).

use super::call::{call_as, CallError, Reply, DEFAULT_CALL_TIMEOUT};
use super::server::{Envelope, Msg};
use super::{GenServer, StartError};
use crate::registry::{self, Name};
use smarm_core::channel::Sender;
use smarm_core::Pid;
use std::time::Duration;
use thiserror::Error;

/// A server's name: a registry [`Name`] for its mailbox.
/// `const ECHO: ServerName<Echo> = ServerName::new("echo");`
pub type ServerName<G> = Name<Envelope<G>>;

/// The server is down: a cast or info was not delivered, and comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("smarm: the server is down; the message was not delivered")]
pub struct CastError<M>(pub M);

/// The address of a running server of type `G`.
pub struct GenServerRef<G: GenServer> {
    pid: Pid,
    inbox: Sender<Envelope<G>>,
}

impl<G: GenServer> Clone for GenServerRef<G> {
    fn clone(&self) -> Self {
        GenServerRef {
            pid: self.pid,
            inbox: self.inbox.clone(),
        }
    }
}

impl<G: GenServer> std::fmt::Debug for GenServerRef<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GenServerRef({})", self.pid)
    }
}

impl<G: GenServer> GenServerRef<G> {
    pub(super) fn new(pid: Pid, inbox: Sender<Envelope<G>>) -> Self {
        GenServerRef { pid, inbox }
    }

    /// The server's actor.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// Whether the server is still running.
    pub fn is_alive(&self) -> bool {
        !self.inbox.is_closed()
    }

    /// Wake the server's loop for its system channel.
    pub(super) fn wake_for_sys(&self) -> Result<(), Msg<G>> {
        self.deliver(Msg::SysWake)
    }

    pub(super) fn deliver(&self, msg: Msg<G>) -> Result<(), Msg<G>> {
        self.inbox.send(Envelope(msg)).map_err(|e| e.0 .0)
    }

    /// Ask the server and wait for its reply, up to
    /// [`DEFAULT_CALL_TIMEOUT`] (5 s).
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn call(&self, request: G::Call) -> Result<G::Reply, CallError> {
        self.call_as("GenServerRef::call", request, DEFAULT_CALL_TIMEOUT)
    }

    /// [`call`](GenServerRef::call) with a timeout of your choosing.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn call_timeout(&self, request: G::Call, timeout: Duration) -> Result<G::Reply, CallError> {
        self.call_as("GenServerRef::call_timeout", request, timeout)
    }

    /// A call, naming `what` (the public call made through it) in the
    /// outside-an-actor panic.
    pub(crate) fn call_as(
        &self,
        what: &'static str,
        request: G::Call,
        timeout: Duration,
    ) -> Result<G::Reply, CallError> {
        call_as(
            what,
            |reply| Msg::Call(request, reply),
            |msg| self.deliver(msg),
            timeout,
        )
    }

    /// Send the server a message that needs no reply.
    pub fn cast(&self, msg: G::Cast) -> Result<(), CastError<G::Cast>> {
        match self.deliver(Msg::Cast(msg)) {
            Ok(()) => Ok(()),
            Err(Msg::Cast(msg)) => Err(CastError(msg)),
            Err(_) => unreachable!("a failed send hands back the message sent"),
        }
    }

    /// Send the server a message for its `handle_info`.
    pub fn info(&self, msg: G::Info) -> Result<(), CastError<G::Info>> {
        match self.deliver(Msg::Info(msg)) {
            Ok(()) => Ok(()),
            Err(Msg::Info(msg)) => Err(CastError(msg)),
            Err(_) => unreachable!("a failed send hands back the message sent"),
        }
    }

    /// Stop the server in order: it finishes the message it is handling,
    /// runs `terminate` with [`StopReason::Shutdown`](super::StopReason),
    /// and exits; this returns once it has (or fails after the default
    /// call timeout).
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn shutdown(&self) -> Result<(), CallError> {
        self.shutdown_timeout(DEFAULT_CALL_TIMEOUT)
    }

    /// [`shutdown`](GenServerRef::shutdown), waiting up to `timeout` for
    /// `terminate` to finish (a supervisor's takes as long as stopping its
    /// children does).
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn shutdown_timeout(&self, timeout: Duration) -> Result<(), CallError> {
        call_as(
            "GenServerRef::shutdown",
            Msg::Shutdown,
            |msg| self.deliver(msg),
            timeout,
        )
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
        call_as(
            "GenServerRef::inspect",
            |reply: Reply<T>| {
                Msg::Inspect(Box::new(move |state: &G| {
                    let _ = reply.reply(f(state));
                }))
            },
            |msg| self.deliver(msg),
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

/// Register `server` under `name` (from inside the server, before init).
pub(super) fn register_server<G: GenServer>(
    name: ServerName<G>,
    server: &GenServerRef<G>,
) -> Result<(), StartError> {
    registry::register(name, server.inbox.clone()).map_err(StartError::from)
}
