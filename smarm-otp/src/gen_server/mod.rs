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
//! | [`GenServerRef::shutdown`], a stop request, a callback's `Flow::Stop`, a panic in a callback | [`GenServer::terminate`] with the [`StopReason`] | (nothing: the server then exits) |
//! | [`GenServerRef::get_state`], [`GenServerRef::inspect`] | nothing: the state is read between callbacks | |
//!
//! # Design
//!
//! A server is one actor looping over two channels: its mailbox (calls,
//! casts, infos, system requests) and a system channel that only its own
//! timers ([`Ctx::send_after`]) write to, taken first. Calls go through the
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
//! a callback runs `terminate` and then continues as that panic.

mod handle;
mod server;

pub use crate::gen::{
    call, CallError, InitError, Reply, StartError, StopReason, DEFAULT_CALL_TIMEOUT,
};
pub use handle::{whereis_server, CastError, GenServerRef, ServerName};
pub use server::{Ctx, Envelope};

use smarm_core::channel::channel;

/// A server's behaviour: its state type and the callbacks that run on it.
/// Only [`init`](GenServer::init) and
/// [`handle_call`](GenServer::handle_call) are required.
pub trait GenServer: Send + Sized + 'static {
    /// What [`start`] passes to [`init`](GenServer::init).
    type Args: Send + 'static;
    /// A request that expects a reply.
    type Call: Send + 'static;
    /// The reply to a [`Call`](GenServer::Call).
    type Reply: Send + 'static;
    /// A message that expects no reply.
    type Cast: Send + 'static;
    /// Any other message: from [`GenServerRef::info`] and the server's own
    /// timers.
    type Info: Send + 'static;

    /// Build the state, in the server's own actor. [`start`] returns once
    /// this has: with the server, or with this error.
    fn init(args: Self::Args, ctx: &mut Ctx<Self>) -> Result<Self, InitError>;

    /// Handle a call: answer through `reply` now, or keep it and answer
    /// later (dropping it unanswered fails the call).
    fn handle_call(
        &mut self,
        request: Self::Call,
        reply: Reply<Self::Reply>,
        ctx: &mut Ctx<Self>,
    ) -> Flow;

    /// Handle a cast. By default: ignore it.
    fn handle_cast(&mut self, msg: Self::Cast, ctx: &mut Ctx<Self>) -> Flow {
        let _ = (msg, ctx);
        Flow::Continue
    }

    /// Handle an info message. By default: ignore it.
    fn handle_info(&mut self, msg: Self::Info, ctx: &mut Ctx<Self>) -> Flow {
        let _ = (msg, ctx);
        Flow::Continue
    }

    /// Clean up before the server exits, for any reason. By default:
    /// nothing (the state is dropped after this).
    fn terminate(&mut self, reason: &StopReason, ctx: &mut Ctx<Self>) {
        let _ = (reason, ctx);
    }
}

/// What a callback tells the server loop.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum Flow {
    /// Keep serving.
    Continue,
    /// Run [`terminate`](GenServer::terminate), then exit for this reason.
    Stop(StopReason),
}

/// Start a server with `args`: spawn it, run [`GenServer::init`] there,
/// and return its address once init has succeeded.
///
/// # Panics
///
/// Outside an actor.
pub fn start<G: GenServer>(args: G::Args) -> Result<GenServerRef<G>, StartError> {
    Builder::new().start(args)
}

/// [`start`], registered under `name` before `init` runs, so the name
/// resolves the moment this returns.
///
/// # Panics
///
/// Outside an actor.
pub fn start_named<G: GenServer>(
    name: ServerName<G>,
    args: G::Args,
) -> Result<GenServerRef<G>, StartError> {
    Builder::new().name(name).start(args)
}

/// [`start`], linked to the caller (a supervisor's way to start a child).
///
/// # Panics
///
/// Outside an actor.
pub fn start_link<G: GenServer>(args: G::Args) -> Result<GenServerRef<G>, StartError> {
    Builder::new().link().start(args)
}

/// How to start a server: with a name, linked to the caller, or both.
///
/// ```
/// use smarm::gen_server::{Builder, Ctx, Flow, GenServer, InitError, Reply, ServerName};
///
/// struct Echo;
/// impl GenServer for Echo {
///     type Args = ();
///     type Call = String;
///     type Reply = String;
///     type Cast = ();
///     type Info = ();
///     fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> {
///         Ok(Echo)
///     }
///     fn handle_call(&mut self, s: String, reply: Reply<String>, _: &mut Ctx<Self>) -> Flow {
///         reply.reply(s);
///         Flow::Continue
///     }
/// }
///
/// const ECHO: ServerName<Echo> = ServerName::new("echo");
///
/// smarm::run(|| {
///     let echo = Builder::new().name(ECHO).start(()).unwrap();
///     let found = smarm::gen_server::whereis_server(ECHO).unwrap();
///     assert_eq!(found.pid(), echo.pid());
///     assert_eq!(found.call("hi".to_string()).unwrap(), "hi");
///     echo.shutdown().unwrap();
/// });
/// ```
pub struct Builder<G: GenServer> {
    name: Option<ServerName<G>>,
    link: bool,
}

impl<G: GenServer> Default for Builder<G> {
    fn default() -> Self {
        Builder::new()
    }
}

impl<G: GenServer> Builder<G> {
    /// An unnamed, unlinked server.
    pub fn new() -> Self {
        Builder {
            name: None,
            link: false,
        }
    }

    /// Register the server under `name` before its `init` runs.
    pub fn name(mut self, name: ServerName<G>) -> Self {
        self.name = Some(name);
        self
    }

    /// Link the server to the caller.
    pub fn link(mut self) -> Self {
        self.link = true;
        self
    }

    /// Spawn the server, run its `init`, and return its address (or why it
    /// did not start).
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn start(self, args: G::Args) -> Result<GenServerRef<G>, StartError> {
        let (inbox_tx, inbox_rx) = channel::<Envelope<G>>();
        let me = inbox_tx.clone();
        let name = self.name;
        let pid = crate::gen::start(self.link, move |started| {
            server::serve::<G>(args, inbox_rx, me, name, started)
        })?;
        Ok(GenServerRef::new(pid, inbox_tx))
    }
}
