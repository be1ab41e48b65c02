//! gen_statem: an actor that is a state machine, the way Erlang/OTP's
//! `gen_statem` is: events (calls, casts, infos, inserted events,
//! timeouts) are handled in the current state, and each handler says
//! where the machine goes next and what it does on the way.
//!
//! Implement [`GenStatem`] for the machine's data, with its state as a
//! type of its own, start it with [`start`] (or [`Builder`]), and talk to
//! it through the [`StatemRef`] you get back.
//!
//! ```
//! use smarm::gen_statem::{self, Ctx, Event, GenStatem, Init, InitError, Transition};
//! use std::time::Duration;
//!
//! /// A push button: every push toggles it, and it counts the turns on.
//! struct Button {
//!     pushes: u32,
//! }
//!
//! #[derive(Debug, PartialEq)]
//! enum Light {
//!     Off,
//!     On,
//! }
//!
//! impl GenStatem for Button {
//!     type Args = ();
//!     type State = Light;
//!     type Call = ();    // "push"; the reply says the light after it
//!     type Reply = &'static str;
//!     type Cast = ();
//!     type Info = ();
//!     type Internal = ();
//!     type Timeout = ();
//!
//!     fn init(_: (), _: &mut Ctx<Self>) -> Result<Init<Self>, InitError> {
//!         Ok(Init::new(Light::Off, Button { pushes: 0 }))
//!     }
//!
//!     fn handle_event(&mut self, state: &Light, event: Event<Self>, _: &mut Ctx<Self>) -> Transition<Self> {
//!         match (state, event) {
//!             (Light::Off, Event::Call((), reply)) => {
//!                 self.pushes += 1;
//!                 Transition::next_state(Light::On).reply(reply, "on")
//!             }
//!             (Light::On, Event::Call((), reply)) => {
//!                 Transition::next_state(Light::Off).reply(reply, "off")
//!             }
//!             _ => Transition::keep_state(),
//!         }
//!     }
//! }
//!
//! smarm::run(|| {
//!     let button = gen_statem::start::<Button>(()).unwrap();
//!     assert_eq!(button.call(()), Ok("on"));
//!     assert_eq!(button.call(()), Ok("off"));
//!     assert_eq!(button.call(()), Ok("on"));
//!     assert_eq!(button.inspect(|_, b| b.pushes), Ok(2));
//!     button.shutdown().unwrap();
//! });
//! ```
//!
//! | You call, or the machine asks for | The machine runs | Its return value means |
//! |---|---|---|
//! | [`start`], [`Builder::start`] | [`GenStatem::init`] in the new actor; `start` returns when it has | `Ok(`[`Init`]`)`: the initial state, the data, and actions; then the initial state's [`GenStatem::state_enter`] |
//! | [`StatemRef::call`] | [`GenStatem::handle_event`] with [`Event::Call`] and a [`Reply`] | a [`Transition`]; the caller gets what is passed to [`Transition::reply`] or `Reply::reply` |
//! | [`StatemRef::cast`], [`StatemRef::info`] | `handle_event` with [`Event::Cast`], [`Event::Info`] | [`Transition`] |
//! | [`Transition::next_event`] | `handle_event` with the event, before any other | [`Transition`] |
//! | [`Transition::event_timeout`], [`Transition::state_timeout`], [`Transition::timeout`] firing | `handle_event` with [`Event::EventTimeout`], [`Event::StateTimeout`], [`Event::Timeout`] | [`Transition`] |
//! | a linked actor exits, once [`Ctx::trap_exits`] was called; a monitor set with [`Ctx::monitor`] fires | `handle_event` with [`Event::Exit`], [`Event::Down`] | [`Transition`] |
//! | a transition to another state, or [`Transition::repeat_state`] | [`GenStatem::state_enter`] with the old and the new state | an [`Enter`]: stay, repeat, or stop, with enter actions |
//! | [`StatemRef::shutdown`], a stop request, [`Transition::stop`], a panic in a callback, the parent's exit (while trapping) | [`GenStatem::terminate`] with the [`StopReason`] and the state | (nothing: the machine then exits) |
//! | [`StatemRef::get_state`], [`StatemRef::inspect`], [`StatemRef::replace_state`] | nothing: the state and data are read (or replaced) between events | |
//!
//! # Semantics
//!
//! OTP's, step for step (the machine module lists the transition's
//! steps): actions are done in order, replies sent at once; the state
//! enter call runs on the initial state, on every state change and on
//! `repeat_state`, and may not change the state, postpone or insert
//! events (its result type, [`Enter`], has no way to); a postponed event
//! is retried after the next state change, the oldest first; inserted
//! events go ahead of the queue in the order given; any event cancels the
//! event timeout; a state change cancels the state timeout, and one
//! started in that transition runs in the new state; generic timeouts
//! survive state changes, and starting a running one restarts it; a
//! zero-time timeout is handled after the events already queued, before
//! any message not yet received.
//!
//! A state machine is supervised like any server
//! ([`ChildSpec::statem`](crate::supervisor::ChildSpec::statem)), its
//! callbacks get `tracing` spans and causal-profiling regions as a
//! gen_server's do, and its crash report names the last event's kind and
//! the state it was handled in.

mod behaviour;
mod builder;
mod handle;
mod machine;
mod timers;

pub use crate::behaviour::{
    CallError, CastError, DEFAULT_CALL_TIMEOUT, InitError, ReplaceStateError, Reply, ServerBuilder,
    ServerRef, StartError, StopReason, TryCastError,
};
pub use behaviour::{Enter, Event, GenStatem, Init, Payload, Transition};
pub use builder::{Builder, start, start_link, start_named};
pub use handle::{StatemName, StatemRef, whereis};
pub use machine::{Ctx, Envelope};
