//! Starting a server: [`start`], [`start_named`], [`start_link`], and the
//! [`Builder`] behind them.

use super::server::Server;
use super::{GenServer, GenServerRef, ServerName, StartError};
use crate::behaviour::{Options, launch};
use std::time::Duration;

/// Start a server with `args`: spawn it, run [`GenServer::init`] there,
/// and return its address once init has succeeded.
///
/// # Panics
///
/// Outside an actor.
pub fn start<G: GenServer>(args: G::Args) -> Result<GenServerRef<G>, StartError> {
    smarm_core::require_actor("gen_server::start");
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
    smarm_core::require_actor("gen_server::start_named");
    Builder::new().name(name).start(args)
}

/// [`start`], linked to the caller (a supervisor's way to start a child).
///
/// # Panics
///
/// Outside an actor.
pub fn start_link<G: GenServer>(args: G::Args) -> Result<GenServerRef<G>, StartError> {
    smarm_core::require_actor("gen_server::start_link");
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
    options: Options,
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
            options: Options::default(),
        }
    }

    /// Register the server under `name` before its `init` runs.
    pub fn name(mut self, name: ServerName<G>) -> Self {
        self.name = Some(name);
        self
    }

    /// Link the server to the caller.
    pub fn link(mut self) -> Self {
        self.options.link = true;
        self
    }

    /// Label the server's actor, as [`smarm::Builder::name`](smarm_core::Builder::name)
    /// does: what introspection, crash reports and the observer show for
    /// it besides a registered name.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.options.label = Some(label.into());
        self
    }

    /// Bound the server's mailbox to `capacity` requests: a client's
    /// [`cast`](GenServerRef::cast), [`info`](GenServerRef::info) and
    /// [`call`](GenServerRef::call) wait while it is full (a call within
    /// its timeout, failing with [`CallError::Timeout`](super::CallError)
    /// if it stays full), and
    /// [`try_cast`](GenServerRef::try_cast) hands the message back with
    /// [`TryCastError::Full`](super::TryCastError). Exit signals, `Down`s
    /// and the server's timer messages never wait: they go in past the
    /// capacity. Unbounded by default, as an Erlang mailbox is.
    ///
    /// # Panics
    ///
    /// If `capacity` is 0.
    pub fn mailbox_capacity(mut self, capacity: usize) -> Self {
        self.options
            .set_mailbox_capacity("gen_server::Builder", capacity);
        self
    }

    /// Hibernate the server whenever it has had no message for `idle`
    /// (OTP's `hibernate_after` start option): it then waits holding no
    /// stack, as after [`Flow::Hibernate`](super::Flow::Hibernate), and
    /// handles its next message on a fresh one.
    pub fn hibernate_after(mut self, idle: Duration) -> Self {
        self.options.hibernate_after = Some(idle);
        self
    }

    /// Stop the server if the heap it holds grows past `bytes`, as
    /// [`smarm::Builder::max_heap_size`](smarm_core::Builder::max_heap_size)
    /// stops an actor (Erlang's `max_heap_size` spawn option): it ends
    /// with [`DownReason::HeapLimit`](smarm_core::DownReason::HeapLimit),
    /// after its `terminate`. 0 means no limit.
    ///
    /// # Panics
    ///
    /// If `bytes` is not 0 and
    /// [`PreemptingAlloc::with_heap_accounting`](smarm_core::PreemptingAlloc::with_heap_accounting)
    /// is not the global allocator.
    pub fn max_heap_size(mut self, bytes: usize) -> Self {
        self.options.set_max_heap_size("gen_server::Builder", bytes);
        self
    }

    /// Spawn the server, run its `init`, and return its address (or why it
    /// did not start).
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn start(self, args: G::Args) -> Result<GenServerRef<G>, StartError> {
        smarm_core::require_actor("gen_server::Builder::start");
        let (pid, inbox) = launch::<Server<G>>(self.options, self.name, args)?;
        Ok(GenServerRef::new(pid, inbox))
    }
}
