//! How a gen_server or gen_statem is started: [`ServerBuilder`], named,
//! linked, labelled, with a bounded mailbox, hibernating when idle or
//! with a heap limit, written once over the behaviour's envelope.
//! `gen_server::Builder<G>` and `gen_statem::Builder<M>` name it; each
//! behaviour's `start`, `start_link` and `start_named` are shorthands.

use super::address::Requests;
use super::server_ref::ServerRef;
use super::{Options, StartError};
use crate::registry::Name;
use smarm_core::Pid;
use smarm_core::channel::Sender;
use std::time::Duration;

/// A behaviour a [`ServerBuilder`] starts, named by its mailbox envelope:
/// the arguments its init takes and how its actor is launched. Public
/// only to bound `ServerBuilder`'s parameter: nothing outside this crate
/// can name or implement it (this module is private).
pub trait Starts: Requests {
    /// What its init takes.
    type Args: Send + 'static;

    /// Spawn the behaviour as `options` say, registered as `name`, and
    /// wait for its init: its pid and a sender to its mailbox.
    fn launch(
        options: Options,
        name: Option<Name<Self>>,
        args: Self::Args,
    ) -> Result<(Pid, Sender<Self>), StartError>;
}

/// How to start a server or a state machine: with a name, linked to the
/// caller, labelled, with a bounded mailbox, hibernating when idle, with a
/// heap limit. Use it as [`gen_server::Builder<G>`](crate::gen_server::Builder)
/// or [`gen_statem::Builder<M>`](crate::gen_statem::Builder).
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
pub struct ServerBuilder<E: Starts> {
    name: Option<Name<E>>,
    options: Options,
}

impl<E: Starts> Default for ServerBuilder<E> {
    fn default() -> Self {
        ServerBuilder::new()
    }
}

impl<E: Starts> ServerBuilder<E> {
    /// An unnamed, unlinked process.
    pub fn new() -> Self {
        ServerBuilder {
            name: None,
            options: Options::default(),
        }
    }

    /// Register the process under `name` (a `ServerName` or
    /// `StatemName`) before its `init` runs, so the name resolves the
    /// moment [`start`](Self::start) returns.
    pub fn name(mut self, name: Name<E>) -> Self {
        self.name = Some(name);
        self
    }

    /// Link the process to the caller (a supervisor's way to start a
    /// child).
    pub fn link(mut self) -> Self {
        self.options.link = true;
        self
    }

    /// Label the process's actor, as [`smarm::Builder::name`](smarm_core::Builder::name)
    /// does: what introspection, crash reports and the observer show for
    /// it besides a registered name.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.options.label = Some(label.into());
        self
    }

    /// Bound the process's mailbox to `capacity` requests: a client's
    /// [`cast`](ServerRef::cast), [`info`](ServerRef::info) and
    /// [`call`](ServerRef::call) wait while it is full (a call within its
    /// timeout, failing with [`CallError::Timeout`](super::CallError) if it
    /// stays full), and [`try_cast`](ServerRef::try_cast) hands the
    /// message back with [`TryCastError::Full`](super::TryCastError). Exit
    /// signals, `Down`s and the process's timer messages (a state
    /// machine's timeouts too) never wait: they go in past the capacity.
    /// Unbounded by default, as an Erlang mailbox is.
    ///
    /// # Panics
    ///
    /// If `capacity` is 0.
    pub fn mailbox_capacity(mut self, capacity: usize) -> Self {
        self.options
            .set_mailbox_capacity(E::NAMES.builder, capacity);
        self
    }

    /// Hibernate the process whenever it has had no message for `idle`
    /// (OTP's `hibernate_after` start option): it then waits holding no
    /// stack, and handles its next message on a fresh one.
    pub fn hibernate_after(mut self, idle: Duration) -> Self {
        self.options.hibernate_after = Some(idle);
        self
    }

    /// Stop the process if the heap it holds grows past `bytes`, as
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
        self.options.set_max_heap_size(E::NAMES.builder, bytes);
        self
    }

    /// Spawn the process, run its `init`, and return its address (or why
    /// it did not start).
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn start(self, args: E::Args) -> Result<ServerRef<E>, StartError> {
        smarm_core::require_actor(E::NAMES.builder_start);
        let (pid, inbox) = E::launch(self.options, self.name, args)?;
        Ok(ServerRef::new(pid, inbox))
    }
}
