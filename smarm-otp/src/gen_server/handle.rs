//! Addressing a server: [`GenServerRef`] (by pid, holding its mailbox's
//! sender) and [`ServerName`] (through the registry, resolved on each use).

use super::GenServer;
use super::server::{Envelope, Msg};
use crate::behaviour::address::Address;
use crate::behaviour::{CallError, CastError, DEFAULT_CALL_TIMEOUT, Reply, TryCastError};
use crate::registry::{self, Name};
use smarm_core::Pid;
use smarm_core::channel::Sender;
use std::time::Duration;

/// A server's name: a registry [`Name`] for its mailbox.
/// `const ECHO: ServerName<Echo> = ServerName::new("echo");`
pub type ServerName<G> = Name<Envelope<G>>;

/// A call put with [`GenServerRef::send_request`]: the request and the
/// slot its answer goes to.
pub type Request<G> = (<G as GenServer>::Call, Reply<<G as GenServer>::Reply>);

/// The address of a running server of type `G`.
pub struct GenServerRef<G: GenServer> {
    addr: Address<Envelope<G>>,
}

impl<G: GenServer> Clone for GenServerRef<G> {
    fn clone(&self) -> Self {
        GenServerRef {
            addr: self.addr.clone(),
        }
    }
}

impl<G: GenServer> std::fmt::Debug for GenServerRef<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GenServerRef({})", self.addr.pid)
    }
}

impl<G: GenServer> GenServerRef<G> {
    pub(super) fn new(pid: Pid, inbox: Sender<Envelope<G>>) -> Self {
        GenServerRef {
            addr: Address { pid, inbox },
        }
    }

    /// The address the ref wraps.
    pub(super) fn address(&self) -> &Address<Envelope<G>> {
        &self.addr
    }

    /// The server's actor.
    pub fn pid(&self) -> Pid {
        self.addr.pid
    }

    /// Whether the server is still running.
    pub fn is_alive(&self) -> bool {
        self.addr.is_alive()
    }

    /// Requests waiting in the server's mailbox (Erlang's
    /// `message_queue_len`); with a bounded mailbox, at most its capacity
    /// unless exits, `Down`s or timer messages went in past it.
    pub fn mailbox_len(&self) -> usize {
        self.addr.mailbox_len()
    }

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
    fn call_within<R: Send>(
        &self,
        what: &'static str,
        request: impl FnOnce(Reply<R>) -> Msg<G>,
        timeout: Duration,
    ) -> Result<R, CallError> {
        self.addr
            .call_within(what, |reply| Envelope(request(reply)), timeout)
    }

    /// Ask the server and wait for its reply, up to
    /// [`DEFAULT_CALL_TIMEOUT`] (5 s).
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn call(&self, request: G::Call) -> Result<G::Reply, CallError> {
        self.addr
            .call("GenServerRef::call", request, DEFAULT_CALL_TIMEOUT)
    }

    /// [`call`](GenServerRef::call) with a timeout of your choosing.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn call_timeout(&self, request: G::Call, timeout: Duration) -> Result<G::Reply, CallError> {
        self.addr
            .call("GenServerRef::call_timeout", request, timeout)
    }

    /// [`call`](GenServerRef::call) from async code: a future of the
    /// server's reply, for a tokio task, an axum handler or any executor
    /// (no actor needed, and it never blocks its thread). The same
    /// [`DEFAULT_CALL_TIMEOUT`], the same [`CallError`]s, and a late reply
    /// is discarded as `call`'s is. The request is sent when the future is
    /// first polled; on a full bounded mailbox the future waits for room
    /// within the timeout. The future is `Send`.
    ///
    /// ```
    /// use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError, Reply};
    ///
    /// struct Counter(u64);
    /// impl GenServer for Counter {
    ///     type Args = ();
    ///     type Call = u64;
    ///     type Reply = u64;
    ///     type Cast = ();
    ///     type Info = ();
    ///     fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> {
    ///         Ok(Counter(0))
    ///     }
    ///     fn handle_call(&mut self, by: u64, reply: Reply<u64>, _: &mut Ctx<Self>) -> Flow {
    ///         self.0 += by;
    ///         reply.reply(self.0);
    ///         Flow::Continue
    ///     }
    /// }
    ///
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let (stop_tx, stop_rx) = smarm::channel::<()>();
    /// let runtime = std::thread::spawn(move || smarm::run(move || {
    ///     let server = gen_server::start::<Counter>(()).unwrap();
    ///     tx.send(server.clone()).unwrap();
    ///     stop_rx.recv().ok();
    /// }));
    /// let server = rx.recv().unwrap();
    /// // A plain thread awaits the server's answers: no actor involved.
    /// assert_eq!(smarm::future::block_on(server.call_async(2)), Ok(2));
    /// assert_eq!(smarm::future::block_on(server.call_async(3)), Ok(5));
    /// drop(stop_tx);
    /// runtime.join().unwrap();
    /// ```
    pub fn call_async(
        &self,
        request: G::Call,
    ) -> impl std::future::Future<Output = Result<G::Reply, CallError>> + Send + '_ {
        self.call_async_timeout(request, DEFAULT_CALL_TIMEOUT)
    }

    /// [`call_async`](GenServerRef::call_async) with a timeout of your
    /// choosing.
    pub fn call_async_timeout(
        &self,
        request: G::Call,
        timeout: Duration,
    ) -> impl std::future::Future<Output = Result<G::Reply, CallError>> + Send + '_ {
        self.addr.call_async(request, timeout)
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

    /// Send the server a message that needs no reply.
    ///
    /// A server started with a bounded mailbox
    /// ([`Builder::mailbox_capacity`](super::Builder::mailbox_capacity))
    /// applies backpressure: while its mailbox is full, `cast` parks the
    /// caller until there is room, so a fast client slows to the server's
    /// pace. [`try_cast`](Self::try_cast) hands the message back instead.
    ///
    /// # Panics
    ///
    /// On a full bounded mailbox: from a scheduler callback (a timer, an
    /// exit hook), or from the server itself (it would wait for itself);
    /// use `try_cast` there.
    pub fn cast(&self, msg: G::Cast) -> Result<(), CastError<G::Cast>> {
        self.addr.cast("GenServerRef::cast", msg)
    }

    /// [`cast`](Self::cast) from async code: on a full bounded mailbox the
    /// future waits for room without blocking its thread. The future is
    /// `Send` and runs on any executor.
    pub fn cast_async(
        &self,
        msg: G::Cast,
    ) -> impl std::future::Future<Output = Result<(), CastError<G::Cast>>> + Send + '_ {
        self.addr.cast_async(msg)
    }

    /// Put a call to the server without waiting for its answer: the
    /// answer goes to `reply` (typically [`Reply::forward`]) when the
    /// server gives it, as Erlang's `gen_server:send_request/2`. A bounded
    /// mailbox applies backpressure as for [`cast`](Self::cast). A server
    /// that is down hands back the request and the reply slot.
    ///
    /// ```
    /// use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError, Reply};
    ///
    /// struct Double;
    /// impl GenServer for Double {
    ///     type Args = ();
    ///     type Call = u32;
    ///     type Reply = u32;
    ///     type Cast = ();
    ///     type Info = ();
    ///     fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> { Ok(Double) }
    ///     fn handle_call(&mut self, n: u32, reply: Reply<u32>, _: &mut Ctx<Self>) -> Flow {
    ///         reply.reply(n * 2);
    ///         Flow::Continue
    ///     }
    /// }
    ///
    /// smarm::run(|| {
    ///     let server = gen_server::start::<Double>(()).unwrap();
    ///     let (tx, rx) = smarm::channel();
    ///     let reply = Reply::forward(move |n| tx.send(n).is_ok());
    ///     server.send_request(21, reply).unwrap();
    ///     assert_eq!(rx.recv(), Ok(42));
    /// });
    /// ```
    ///
    /// # Panics
    ///
    /// As [`cast`](Self::cast), on a full bounded mailbox from a scheduler
    /// callback or from the server itself.
    pub fn send_request(
        &self,
        request: G::Call,
        reply: Reply<G::Reply>,
    ) -> Result<(), CastError<Request<G>>> {
        self.addr
            .send_request("GenServerRef::send_request", request, reply)
    }

    /// [`cast`](Self::cast) without waiting:
    /// [`TryCastError::Full`] when a bounded mailbox is full,
    /// [`TryCastError::Down`] when the server is gone.
    ///
    /// ```
    /// use smarm::gen_server::{self, Builder, Ctx, Flow, GenServer, InitError, Reply, TryCastError};
    ///
    /// struct Slow;
    /// impl GenServer for Slow {
    ///     type Args = ();
    ///     type Call = ();
    ///     type Reply = ();
    ///     type Cast = u32;
    ///     type Info = ();
    ///     fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> {
    ///         Ok(Slow)
    ///     }
    ///     fn handle_call(&mut self, _: (), reply: Reply<()>, _: &mut Ctx<Self>) -> Flow {
    ///         smarm::sleep(std::time::Duration::from_millis(50)); // busy for a while
    ///         reply.reply(());
    ///         Flow::Continue
    ///     }
    /// }
    ///
    /// smarm::run(|| {
    ///     let server = Builder::<Slow>::new().mailbox_capacity(1).start(()).unwrap();
    ///     let busy = server.clone();
    ///     let caller = smarm::spawn(move || busy.call(()).unwrap());
    ///     smarm::sleep(std::time::Duration::from_millis(10)); // the call is being handled
    ///     server.try_cast(1).unwrap(); // the one place in the mailbox
    ///     assert_eq!(server.try_cast(2), Err(TryCastError::Full(2)));
    ///     caller.join().unwrap();
    ///     server.shutdown().unwrap();
    /// });
    /// ```
    pub fn try_cast(&self, msg: G::Cast) -> Result<(), TryCastError<G::Cast>> {
        self.addr.try_cast(msg)
    }

    /// Send the server a message for its `handle_info` (waiting for room in
    /// a bounded mailbox, as [`cast`](Self::cast) does).
    ///
    /// # Panics
    ///
    /// As [`cast`](Self::cast).
    pub fn info(&self, msg: G::Info) -> Result<(), CastError<G::Info>> {
        self.addr.info("GenServerRef::info", msg)
    }

    /// [`info`](Self::info) without waiting, as [`try_cast`](Self::try_cast).
    pub fn try_info(&self, msg: G::Info) -> Result<(), TryCastError<G::Info>> {
        self.addr.try_info(msg)
    }

    /// Stop the server in order: the request queues behind the messages
    /// already in its mailbox, which it handles first; then it runs
    /// `terminate` with [`StopReason::Shutdown`](super::StopReason) and
    /// exits; this returns once it has (or fails after the default call
    /// timeout, leaving it to finish). [`drain`](Self::drain) bounds the
    /// whole by a deadline.
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
        self.addr.shutdown("GenServerRef::shutdown", timeout)
    }

    /// Stop the server once it has handled what is already in its
    /// mailbox (a draining shutdown): the request queues behind the mail,
    /// as [`shutdown`](Self::shutdown)'s does, and `terminate` runs after
    /// the last message queued before it. A drain still running after
    /// `timeout` is cut short by a stop request ([`request_stop`](smarm_core::request_stop):
    /// the server unwinds at its next blocking call, `terminate` still runs
    /// once), and this waits up to `timeout` again for the exit. Returns
    /// once the server is gone.
    ///
    /// ```
    /// use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError, Reply};
    /// use std::time::Duration;
    ///
    /// struct Sum(u64);
    /// impl GenServer for Sum {
    ///     type Args = ();
    ///     type Call = ();
    ///     type Reply = ();
    ///     type Cast = u64;
    ///     type Info = ();
    ///     fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> { Ok(Sum(0)) }
    ///     fn handle_call(&mut self, _: (), reply: Reply<()>, _: &mut Ctx<Self>) -> Flow {
    ///         reply.reply(());
    ///         Flow::Continue
    ///     }
    ///     fn handle_cast(&mut self, n: u64, _: &mut Ctx<Self>) -> Flow {
    ///         self.0 += n;
    ///         Flow::Continue
    ///     }
    /// }
    ///
    /// smarm::run(|| {
    ///     let sum = gen_server::start::<Sum>(()).unwrap();
    ///     for n in 1..=100 {
    ///         sum.cast(n).unwrap();
    ///     }
    ///     sum.drain(Duration::from_secs(5)).unwrap(); // all 100 handled first
    ///     assert!(!sum.is_alive());
    /// });
    /// ```
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn drain(&self, timeout: Duration) -> Result<(), CallError> {
        self.addr.drain_mail("GenServerRef::drain", timeout)
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

impl<G: GenServer> crate::sys::System for GenServerRef<G> {
    fn system_call<R: Send>(
        &self,
        what: &'static str,
        request: impl FnOnce(Reply<R>) -> crate::sys::Request,
    ) -> Result<R, CallError> {
        self.call_within(
            what,
            |reply| Msg::System(Box::new(request(reply))),
            DEFAULT_CALL_TIMEOUT,
        )
    }
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
