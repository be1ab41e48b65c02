//! Addressing a state machine: [`StatemRef`] (by pid, holding its
//! mailbox's sender) and [`StatemName`] (through the registry).

use super::GenStatem;
use super::machine::{Envelope, Msg};
use crate::behaviour::server_ref::ServerRef;
use crate::behaviour::{CallError, DEFAULT_CALL_TIMEOUT, ReplaceStateError, Reply};
use crate::registry::{self, Name};

/// A state machine's name: a registry [`Name`] for its mailbox.
/// `const DOOR: StatemName<Door> = StatemName::new("door");`
pub type StatemName<M> = Name<Envelope<M>>;

/// The address of a running state machine of type `M`: its pid and a
/// sender to its mailbox. The client methods (call, cast, info, shutdown,
/// drain and their forms) are [`ServerRef`]'s, shared with
/// [`GenServerRef`](crate::gen_server::GenServerRef); a machine's own are
/// below.
pub type StatemRef<M> = ServerRef<Envelope<M>>;

impl<M: GenStatem> StatemRef<M> {
    /// Deliver without waiting for room (a timer, an exit, a `Down`).
    pub(super) fn deliver_system(&self, msg: Msg<M>) -> Result<(), Msg<M>> {
        self.addr.deliver_system(Envelope(msg)).map_err(|e| e.0)
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
