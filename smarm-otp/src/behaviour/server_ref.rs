//! The address a client holds for a running gen_server or gen_statem
//! (OTP's `server_ref()`): [`ServerRef`], over the behaviour's mailbox
//! envelope. The client methods both behaviours answer the same way
//! (calls, casts, infos, their async and non-waiting forms, shutdown and
//! drain) are written here once;
//! [`GenServerRef<G>`](crate::gen_server::GenServerRef) and
//! [`StatemRef<M>`](crate::gen_statem::StatemRef) name this type over
//! each behaviour's envelope, and each behaviour adds what is its own
//! (state inspection) in its `handle.rs`.
//!
//! Every method that blocks names the public method the user called in
//! its misuse panic (`GenServerRef::call`, `StatemRef::cast`), through
//! the envelope's [`RefNames`].

use super::address::{Address, PutCall, Requests};
use super::{CallError, CastError, DEFAULT_CALL_TIMEOUT, Reply, TryCastError};
use smarm_core::Pid;
use smarm_core::channel::Sender;
use std::time::Duration;

/// The public names of a ref's blocking methods and of its builder, for
/// misuse panics.
pub struct RefNames {
    pub(crate) name: &'static str,
    pub(crate) builder: &'static str,
    pub(crate) builder_start: &'static str,
    pub(crate) call: &'static str,
    pub(crate) call_timeout: &'static str,
    pub(crate) send_request: &'static str,
    pub(crate) cast: &'static str,
    pub(crate) info: &'static str,
    pub(crate) shutdown: &'static str,
    pub(crate) drain: &'static str,
}

/// The [`RefNames`] of the ref type called `$name`, of the behaviour
/// module `$module`.
macro_rules! ref_names {
    ($name:literal, $module:literal) => {
        $crate::behaviour::server_ref::RefNames {
            name: $name,
            builder: concat!($module, "::Builder"),
            builder_start: concat!($module, "::Builder::start"),
            call: concat!($name, "::call"),
            call_timeout: concat!($name, "::call_timeout"),
            send_request: concat!($name, "::send_request"),
            cast: concat!($name, "::cast"),
            info: concat!($name, "::info"),
            shutdown: concat!($name, "::shutdown"),
            drain: concat!($name, "::drain"),
        }
    };
}
pub(crate) use ref_names;

/// The address of a running gen_server or gen_statem: its pid and a
/// sender to its mailbox. Use it as
/// [`GenServerRef<G>`](crate::gen_server::GenServerRef) or
/// [`StatemRef<M>`](crate::gen_statem::StatemRef); `E` is the
/// behaviour's mailbox envelope.
pub struct ServerRef<E: Requests> {
    pub(crate) addr: Address<E>,
}

impl<E: Requests> Clone for ServerRef<E> {
    fn clone(&self) -> Self {
        ServerRef {
            addr: self.addr.clone(),
        }
    }
}

impl<E: Requests> std::fmt::Debug for ServerRef<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({})", E::NAMES.name, self.addr.pid)
    }
}

impl<E: Requests> ServerRef<E> {
    pub(crate) fn new(pid: Pid, inbox: Sender<E>) -> Self {
        ServerRef {
            addr: Address { pid, inbox },
        }
    }

    /// The address the ref wraps.
    pub(crate) fn address(&self) -> &Address<E> {
        &self.addr
    }

    /// The process's actor.
    pub fn pid(&self) -> Pid {
        self.addr.pid
    }

    /// Whether the process is still running.
    pub fn is_alive(&self) -> bool {
        self.addr.is_alive()
    }

    /// Requests waiting in the process's mailbox (Erlang's
    /// `message_queue_len`; a suspended process's kept messages count); with
    /// a bounded mailbox, at most its capacity unless exits, `Down`s or
    /// timer messages went in past it. A state machine's postponed events
    /// are not in its mailbox.
    pub fn mailbox_len(&self) -> usize {
        self.addr.mailbox_len()
    }

    /// Ask the process and wait for its reply, up to
    /// [`DEFAULT_CALL_TIMEOUT`] (5 s). A call from the process to itself
    /// fails at once with [`CallError::CallingSelf`].
    ///
    /// # Panics
    ///
    /// Outside an actor (from async code, use
    /// [`call_async`](Self::call_async)).
    pub fn call(&self, request: E::Call) -> Result<E::Reply, CallError> {
        self.addr.call(E::NAMES.call, request, DEFAULT_CALL_TIMEOUT)
    }

    /// [`call`](Self::call) with a timeout of your choosing.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn call_timeout(&self, request: E::Call, timeout: Duration) -> Result<E::Reply, CallError> {
        self.addr.call(E::NAMES.call_timeout, request, timeout)
    }

    /// [`call`](Self::call) from async code: a future of the reply, for a
    /// tokio task, an axum handler or any executor (no actor needed, and
    /// it never blocks its thread). The same [`DEFAULT_CALL_TIMEOUT`], the
    /// same [`CallError`]s, and a late reply is discarded as `call`'s is.
    /// The request is sent when the future is first polled; on a full
    /// bounded mailbox the future waits for room within the timeout. The
    /// future is `Send`.
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
        request: E::Call,
    ) -> impl std::future::Future<Output = Result<E::Reply, CallError>> + Send + '_ {
        self.call_async_timeout(request, DEFAULT_CALL_TIMEOUT)
    }

    /// [`call_async`](Self::call_async) with a timeout of your choosing.
    pub fn call_async_timeout(
        &self,
        request: E::Call,
        timeout: Duration,
    ) -> impl std::future::Future<Output = Result<E::Reply, CallError>> + Send + '_ {
        self.addr.call_async(request, timeout)
    }

    /// Put a call without waiting for its answer: the answer goes to
    /// `reply` (typically [`Reply::forward`]) when the process gives it,
    /// as Erlang's `gen_server:send_request/2` and
    /// `gen_statem:send_request/2`. A bounded mailbox applies backpressure
    /// as for [`cast`](Self::cast). A process that is down hands back the
    /// request and the reply slot.
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
    /// callback or from the process itself.
    pub fn send_request(
        &self,
        request: E::Call,
        reply: Reply<E::Reply>,
    ) -> Result<(), CastError<PutCall<E>>> {
        self.addr
            .send_request(E::NAMES.send_request, request, reply)
    }

    /// Send the process a message that needs no reply (a gen_server's
    /// `handle_cast`, a state machine's cast event).
    ///
    /// A process started with a bounded mailbox
    /// ([`Builder::mailbox_capacity`](crate::gen_server::Builder::mailbox_capacity))
    /// applies backpressure: while its mailbox is full, `cast` parks the
    /// caller until there is room, so a fast client slows to the process's
    /// pace. [`try_cast`](Self::try_cast) hands the message back instead.
    ///
    /// # Panics
    ///
    /// On a full bounded mailbox: from a scheduler callback (a timer, an
    /// exit hook), or from the process itself (it would wait for itself);
    /// use `try_cast` there.
    pub fn cast(&self, msg: E::Cast) -> Result<(), CastError<E::Cast>> {
        self.addr.cast(E::NAMES.cast, msg)
    }

    /// [`cast`](Self::cast) from async code: on a full bounded mailbox the
    /// future waits for room without blocking its thread. The future is
    /// `Send` and runs on any executor.
    pub fn cast_async(
        &self,
        msg: E::Cast,
    ) -> impl std::future::Future<Output = Result<(), CastError<E::Cast>>> + Send + '_ {
        self.addr.cast_async(msg)
    }

    /// [`cast`](Self::cast) without waiting:
    /// [`TryCastError::Full`] when a bounded mailbox is full,
    /// [`TryCastError::Down`] when the process is gone.
    ///
    /// ```
    /// use smarm::gen_server::{Builder, Ctx, Flow, GenServer, InitError, Reply, TryCastError};
    ///
    /// struct Slow;
    /// impl GenServer for Slow {
    ///     type Args = ();
    ///     type Call = ();
    ///     type Reply = ();
    ///     type Cast = u32;
    ///     type Info = ();
    ///     fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> { Ok(Slow) }
    ///     fn handle_call(&mut self, _: (), reply: Reply<()>, _: &mut Ctx<Self>) -> Flow {
    ///         smarm::sleep(std::time::Duration::from_millis(50));
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
    pub fn try_cast(&self, msg: E::Cast) -> Result<(), TryCastError<E::Cast>> {
        self.addr.try_cast(msg)
    }

    /// Send the process a message for its `handle_info` (a state
    /// machine's info event), waiting for room in a bounded mailbox as
    /// [`cast`](Self::cast) does.
    ///
    /// # Panics
    ///
    /// As [`cast`](Self::cast).
    pub fn info(&self, msg: E::Info) -> Result<(), CastError<E::Info>> {
        self.addr.info(E::NAMES.info, msg)
    }

    /// [`info`](Self::info) without waiting, as [`try_cast`](Self::try_cast).
    pub fn try_info(&self, msg: E::Info) -> Result<(), TryCastError<E::Info>> {
        self.addr.try_info(msg)
    }

    /// Stop the process in order: the request queues behind the messages
    /// already in its mailbox, which it handles first; then it runs
    /// `terminate` with [`StopReason::Shutdown`](crate::behaviour::StopReason)
    /// and exits; this returns once it has (or fails after the default
    /// call timeout, leaving it to finish). [`drain`](Self::drain) bounds
    /// the whole by a deadline.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn shutdown(&self) -> Result<(), CallError> {
        self.shutdown_timeout(DEFAULT_CALL_TIMEOUT)
    }

    /// [`shutdown`](Self::shutdown), waiting up to `timeout` for
    /// `terminate` to finish (a supervisor's takes as long as stopping its
    /// children does).
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn shutdown_timeout(&self, timeout: Duration) -> Result<(), CallError> {
        self.addr.shutdown(E::NAMES.shutdown, timeout)
    }

    /// Stop the process once it has handled what is already in its
    /// mailbox (a draining shutdown): the request queues behind the mail,
    /// as [`shutdown`](Self::shutdown)'s does, and `terminate` runs after
    /// the last message queued before it. A drain still running after
    /// `timeout` is cut short by a stop request
    /// ([`request_stop`](smarm_core::request_stop): the process unwinds at
    /// its next blocking call, `terminate` still runs once), and this
    /// waits up to `timeout` again for the exit. Returns once the process
    /// is gone. A state machine's postponed events are not handled (their
    /// callers fail).
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
        self.addr.drain_mail(E::NAMES.drain, timeout)
    }
}

/// `sys` requests reach either behaviour as a system message of its
/// mailbox.
impl<E: Requests> crate::sys::System for ServerRef<E> {
    fn system_call<R: Send + 'static>(
        &self,
        what: &'static str,
        request: impl FnOnce(Reply<R>) -> crate::sys::Request,
    ) -> Result<R, CallError> {
        self.addr.call_within(
            what,
            |reply| E::system(Box::new(request(reply))),
            DEFAULT_CALL_TIMEOUT,
        )
    }
}
