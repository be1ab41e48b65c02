//! gen_server: an actor that owns some state and serves requests, the way
//! Erlang/OTP's `gen_server` does.
//!
//! Implement [`GenServer`] for the state, start it with [`start`] (or
//! [`Builder`] for a name or a link), and talk to it through the
//! [`GenServerRef`] you get back: [`call`](GenServerRef::call) waits for a
//! reply, [`cast`](GenServerRef::cast) does not.
//!
//! ```
//! use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError, Reply};
//!
//! struct Counter(u64);
//!
//! impl GenServer for Counter {
//!     type Args = u64;
//!     type Call = ();        // "what is the count?"
//!     type Reply = u64;
//!     type Cast = u64;       // "add this"
//!     type Info = ();
//!
//!     fn init(start: u64, _ctx: &mut Ctx<Self>) -> Result<Self, InitError> {
//!         Ok(Counter(start))
//!     }
//!     fn handle_call(&mut self, _: (), reply: Reply<u64>, _ctx: &mut Ctx<Self>) -> Flow {
//!         reply.reply(self.0);
//!         Flow::Continue
//!     }
//!     fn handle_cast(&mut self, n: u64, _ctx: &mut Ctx<Self>) -> Flow {
//!         self.0 += n;
//!         Flow::Continue
//!     }
//! }
//!
//! smarm::run(|| {
//!     let counter = gen_server::start::<Counter>(10).unwrap();
//!     counter.cast(5).unwrap();
//!     assert_eq!(counter.call(()), Ok(15));
//!     counter.shutdown().unwrap();
//! });
//! ```
//!
//! | You call | The server runs | Its return value means |
//! |---|---|---|
//! | [`start`], [`Builder::start`] | [`GenServer::init`] in the new actor; `start` returns when it has | `Ok(state)`: serving; `Err(e)`: `start` fails with [`StartError::Init`] |
//! | [`GenServerRef::call`] | [`GenServer::handle_call`] with a [`Reply`] | [`Flow`]; the caller gets what is passed to `Reply::reply` (now, or later from another callback) |
//! | [`GenServerRef::cast`] | [`GenServer::handle_cast`] | [`Flow`] |
//! | [`GenServerRef::info`], [`Ctx::send_after`] firing | [`GenServer::handle_info`] | [`Flow`] |
//! | a linked actor exits, once [`Ctx::trap_exits`] was called | [`GenServer::handle_exit`] with its [`Exit`](smarm_core::Exit) | [`Flow`] |
//! | an actor watched with [`Ctx::monitor`] goes down | [`GenServer::handle_down`] with its [`Down`](smarm_core::Down) | [`Flow`] |
//! | [`GenServerRef::shutdown`], a stop request, a callback's `Flow::Stop`, a panic in a callback, the parent's exit (while trapping) | [`GenServer::terminate`] with the [`StopReason`] | (nothing: the server then exits) |
//! | [`GenServerRef::get_state`], [`GenServerRef::inspect`] | nothing: the state is read between callbacks | |
//! | [`sys::get_status`](crate::sys::get_status), [`sys::suspend`](crate::sys::suspend), the rest of [`sys`](crate::sys) | [`GenServer::format_status`] for a status; the loop answers the rest between callbacks | |
//!
//! # Design
//!
//! A server is one actor looping over its mailbox (calls, casts, infos,
//! system requests, and the trapped exits and monitors' `Down`s that core
//! delivers there, in order with the rest) and a system channel that only
//! its own timers ([`Ctx::send_after`]) write to, taken first. The
//! supervisor is such a server: it traps exits, and its requests are
//! calls. Calls go through the
//! one call implementation ([`call()`]): every call has its own reply slot,
//! so a call to a dead or dying server fails at once with
//! [`CallError::ServerDown`], a timed-out call's late reply is discarded,
//! and a deferred reply is just a [`Reply`] kept in the state.
//!
//! How a server ends, and what its monitors and supervisor see: `Flow::Stop`
//! with [`StopReason::Normal`] or [`StopReason::Shutdown`], or
//! [`GenServerRef::shutdown`], is a normal exit; `StopReason::Error` is an
//! abnormal one (the actor unwinds with the reason, without the panic hook's
//! message); a stop request ([`request_stop`](smarm_core::request_stop), as
//! a supervisor sends) runs `terminate` and still ends as stopped; a panic in
//! a callback runs `terminate` and then continues as that panic. A server
//! that does not trap exits is stopped by a linked actor's failure
//! (`terminate` runs); one that traps them stops when its parent (the
//! actor that started it linked) exits, as OTP's does.

mod behaviour;
mod builder;
mod handle;
mod server;

pub use crate::behaviour::{
    CallError, CastError, DEFAULT_CALL_TIMEOUT, InitError, ReplaceStateError, Reply, ServerBuilder,
    ServerRef, StartError, StopReason, TryCastError, call, call_as, call_async, call_to,
};
pub use behaviour::{Flow, GenServer, Message};
pub use builder::{Builder, start, start_link, start_named};
pub use handle::{GenServerRef, Request, ServerName, whereis_server, whereis_server_in};
pub use server::{Ctx, Envelope};
