//! A dynamic supervisor: one child template, children started on demand
//! with an argument each, as Erlang's `simple_one_for_one` and Elixir's
//! `DynamicSupervisor`: the shape of a connection supervisor (one child
//! per accepted socket).
//!
//! ```
//! use smarm::net::{TcpListener, TcpStream};
//! use smarm::supervisor::{DynamicSpec, DynamicSupervisor};
//! use std::io::{Read, Write};
//!
//! smarm::run(|| {
//!     let conns = DynamicSupervisor::start(
//!         DynamicSpec::actor(|mut conn: TcpStream| {
//!             let mut buf = [0u8; 64];
//!             while let Ok(n @ 1..) = conn.read(&mut buf) {
//!                 if conn.write_all(&buf[..n]).is_err() {
//!                     return;
//!                 }
//!             }
//!         })
//!         .max_children(10_000),
//!     )
//!     .unwrap();
//!     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
//!     let addr = listener.local_addr().unwrap();
//!     let acceptor = conns.clone();
//!     smarm::spawn(move || {
//!         for stream in listener.incoming().flatten() {
//!             let _ = acceptor.start_child(stream); // at the limit: refused, closed
//!         }
//!     });
//!     let mut client = TcpStream::connect(addr).unwrap();
//!     client.write_all(b"hello").unwrap();
//!     let mut back = [0u8; 5];
//!     client.read_exact(&mut back).unwrap();
//!     assert_eq!(&back, b"hello");
//!     assert_eq!(conns.count_children().unwrap(), 1);
//!     conns.shutdown().unwrap(); // stops every connection, then itself
//! });
//! ```
//!
//! | You call | The dynamic supervisor does |
//! |---|---|
//! | [`DynamicSupervisor::start`], [`start_link`](DynamicSupervisor::start_link) | starts with no children |
//! | [`start_child(arg)`](DynamicSupervisor::start_child) | runs the template's start with `arg`, linked to itself; refuses (handing `arg` back) at `max_children` |
//! | a child exits | temporary children (the default) are forgotten; with [`DynamicSpec::restart`] (for a `Clone` argument) a permanent or transient child is started again with a clone of its argument, within the restart intensity; with [`DynamicSpec::backoff`], after a delay that doubles with each failure in a row |
//! | more than `intensity` restarts within `period` | stops every child and exits abnormally |
//! | [`terminate_child`](DynamicSupervisor::terminate_child) | stops that child by the template's [`Shutdown`] policy |
//! | [`shutdown`](DynamicSupervisor::shutdown), a stop request, its parent exiting | asks every child to stop at once, waits for them all within the shutdown policy, then exits |
//!
//! # Invariants
//!
//! - (D1) `children` holds exactly the running children's pids; an exit
//!   from any other pid is ignored.
//! - (D2) `children.len() <= max_children` after every request: a start is
//!   refused before it runs.
//! - (D3) Stopping many children asks them all first and waits after, so
//!   a shutdown of N children takes one shutdown timeout, not N.
//! - (D4) A child whose restart is delayed by its backoff waits in
//!   `waiting` (its argument, failures and timer) and holds its place
//!   under `max_children`; its failure counted toward the intensity when
//!   it happened. A timer message for a restart no longer waiting is
//!   ignored; stopping the supervisor cancels every waiting timer.

use super::restart::{
    Jitter, RestartLog, give_up_on, is_failure, publish_next_restart, report_child, track_restarts,
};
use super::shutdown::{ask_to_shut_down, stop_children};
use super::spec::{Backoff, Restart, Shutdown};
use crate::gen_server::{
    self, CallError, Ctx, DEFAULT_CALL_TIMEOUT, Flow, GenServer, GenServerRef, InitError, Reply,
    ServerName, StartError, StopReason,
};
use smarm_core::report::SupervisorAction;
use smarm_core::time::{TimerId, cancel_timer};
use smarm_core::{Exit, Pid};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The start function of a dynamic supervisor's children: run in the
/// supervisor with the child's argument, it must link the child to the
/// caller (`spawn_link`, `Builder::link`) and return its pid.
pub type DynamicStartFn<A> = Box<dyn FnMut(A) -> Result<Pid, StartError> + Send>;

/// The registry name of a dynamic supervisor with argument type `A`.
pub type DynamicName<A> = ServerName<DynamicServer<A>>;

/// A dynamic supervisor's child template and limits.
pub struct DynamicSpec<A: Send + 'static> {
    start: DynamicStartFn<A>,
    restart: Restart,
    /// Set (to `A::clone`) when a restartable child keeps its argument.
    clone_arg: Option<fn(&A) -> A>,
    shutdown: Shutdown,
    max_children: usize,
    intensity: u32,
    period: Duration,
    name: Option<DynamicName<A>>,
    backoff: Option<Backoff>,
}

impl<A: Send + 'static> std::fmt::Debug for DynamicSpec<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamicSpec")
            .field("restart", &self.restart)
            .field("shutdown", &self.shutdown)
            .field("max_children", &self.max_children)
            .field("backoff", &self.backoff)
            .finish_non_exhaustive()
    }
}

impl<A: Send + 'static> DynamicSpec<A> {
    /// Children started by `start` (which must link the child to the
    /// caller and return its pid): temporary, stopped with a 5 s timeout,
    /// no limit on their number.
    pub fn new(start: impl FnMut(A) -> Result<Pid, StartError> + Send + 'static) -> Self {
        DynamicSpec {
            start: Box::new(start),
            restart: Restart::Temporary,
            clone_arg: None,
            shutdown: Shutdown::Timeout(Duration::from_secs(5)),
            max_children: usize::MAX,
            intensity: 3,
            period: Duration::from_secs(5),
            name: None,
            backoff: None,
        }
    }

    /// Children that are plain actors running `body(arg)`.
    pub fn actor(body: impl Fn(A) + Send + Sync + 'static) -> Self {
        let body = std::sync::Arc::new(body);
        DynamicSpec::new(move |arg| {
            let body = body.clone();
            Ok(smarm_core::spawn_link(move || body(arg)).pid())
        })
    }

    /// Refuse [`start_child`](DynamicSupervisor::start_child) while `max`
    /// children run (Erlang's `max_children`).
    pub fn max_children(mut self, max: usize) -> Self {
        self.max_children = max;
        self
    }

    /// How children are stopped (default: a 5 s timeout each, all at once).
    pub fn shutdown(mut self, shutdown: Shutdown) -> Self {
        self.shutdown = shutdown;
        self
    }

    /// At most `restarts` restarts within `period` (default: 3 in 5 s, as
    /// Elixir's `DynamicSupervisor`); only restartable children count.
    pub fn intensity(mut self, restarts: u32, period: Duration) -> Self {
        self.intensity = restarts;
        self.period = period;
        self
    }

    /// Register the supervisor under `name` when it starts.
    pub fn name(mut self, name: DynamicName<A>) -> Self {
        self.name = Some(name);
        self
    }
}

impl<A: Clone + Send + 'static> DynamicSpec<A> {
    /// When a child is restarted (default: [`Restart::Temporary`], never).
    /// A permanent or transient child keeps a clone of its argument, and
    /// a restart starts it again with another clone.
    pub fn restart(mut self, restart: Restart) -> Self {
        self.restart = restart;
        self.clone_arg = (restart != Restart::Temporary).then_some(A::clone as fn(&A) -> A);
        self
    }

    /// Restart a child that keeps failing after delays that double, to a
    /// cap, with jitter ([`Backoff`], as
    /// [`ChildSpec::backoff`](super::ChildSpec::backoff)), instead of at
    /// once. Each failure counts toward the intensity when it happens; a
    /// child waiting for its restart holds its place under
    /// `max_children` and is not in
    /// [`which_children`](DynamicSupervisor::which_children); a shutdown
    /// calls the restart off. Restartable children only (see
    /// [`restart`](Self::restart)).
    ///
    /// ```
    /// use smarm::supervisor::{Backoff, DynamicSpec, DynamicSupervisor, Restart};
    /// use std::time::Duration;
    ///
    /// smarm::run(|| {
    ///     let workers = DynamicSupervisor::start(
    ///         DynamicSpec::actor(|job: u32| smarm::sleep(Duration::from_millis(u64::from(job))))
    ///             .restart(Restart::Transient)
    ///             .backoff(Backoff::new(Duration::from_millis(100), Duration::from_secs(30))),
    ///     )
    ///     .unwrap();
    ///     workers.start_child(5).unwrap();
    ///     workers.shutdown().unwrap();
    /// });
    /// ```
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = Some(backoff);
        self
    }
}

/// Why [`DynamicSupervisor::start_child`] did not start a child.
#[derive(thiserror::Error)]
pub enum StartChildError<A> {
    /// `max_children` children run already; `arg` comes back (to answer
    /// the client, say, before closing its connection).
    #[error(
        "smarm: dynamic supervisor already runs its max_children ({max}) children; retry when one exits"
    )]
    MaxChildren {
        /// The limit.
        max: usize,
        /// The argument, not used.
        arg: A,
    },
    /// The template's start function failed.
    #[error("smarm: dynamic supervisor child failed to start: {0}")]
    Start(StartError),
    /// The supervisor is not running.
    #[error("smarm: cannot start a child: the dynamic supervisor is not running")]
    SupervisorDown,
}

impl<A> std::fmt::Debug for StartChildError<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartChildError::MaxChildren { max, .. } => f
                .debug_struct("MaxChildren")
                .field("max", max)
                .finish_non_exhaustive(),
            StartChildError::Start(e) => f.debug_tuple("Start").field(e).finish(),
            StartChildError::SupervisorDown => f.write_str("SupervisorDown"),
        }
    }
}

impl<A> StartChildError<A> {
    /// The argument, if it came back unused.
    pub fn into_arg(self) -> Option<A> {
        match self {
            StartChildError::MaxChildren { arg, .. } => Some(arg),
            _ => None,
        }
    }
}

/// The address of a running dynamic supervisor whose children take an `A`.
pub struct DynamicSupervisor<A: Send + 'static> {
    server: GenServerRef<DynamicServer<A>>,
}

impl<A: Send + 'static> Clone for DynamicSupervisor<A> {
    fn clone(&self) -> Self {
        DynamicSupervisor {
            server: self.server.clone(),
        }
    }
}

impl<A: Send + 'static> std::fmt::Debug for DynamicSupervisor<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DynamicSupervisor({})", self.server.pid())
    }
}

impl<A: Send + 'static> DynamicSupervisor<A> {
    /// Start a dynamic supervisor with no children.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn start(spec: DynamicSpec<A>) -> Result<Self, StartError> {
        smarm_core::require_actor("DynamicSupervisor::start");
        Self::start_with(spec, false)
    }

    /// [`start`](Self::start), linked to the caller (a supervisor's way to
    /// start it as a child; see
    /// [`ChildSpec::dynamic_supervisor`](super::ChildSpec::dynamic_supervisor)).
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn start_link(spec: DynamicSpec<A>) -> Result<Self, StartError> {
        smarm_core::require_actor("DynamicSupervisor::start_link");
        Self::start_with(spec, true)
    }

    fn start_with(mut spec: DynamicSpec<A>, link: bool) -> Result<Self, StartError> {
        let mut builder =
            gen_server::Builder::<DynamicServer<A>>::new().label("dynamic supervisor");
        if let Some(name) = spec.name.take() {
            builder = builder.name(name);
        }
        if link {
            builder = builder.link();
        }
        Ok(DynamicSupervisor {
            server: builder.start(spec)?,
        })
    }

    /// The running dynamic supervisor registered as `name`, if any.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn whereis(name: DynamicName<A>) -> Option<Self> {
        gen_server::whereis_server(name).map(|server| DynamicSupervisor { server })
    }

    /// The supervisor's actor.
    pub fn pid(&self) -> Pid {
        self.server.pid()
    }

    /// Whether the supervisor is still running.
    pub fn is_alive(&self) -> bool {
        self.server.is_alive()
    }

    /// Start a child with `arg`; its pid once the template's start has run.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn start_child(&self, arg: A) -> Result<Pid, StartChildError<A>> {
        match self.server.call_as(
            "DynamicSupervisor::start_child",
            Request::Start(arg),
            DEFAULT_CALL_TIMEOUT,
        ) {
            Ok(Response::Started(started)) => started,
            Ok(_) => unreachable!("a dynamic supervisor answers start_child with the start"),
            Err(_) => Err(StartChildError::SupervisorDown),
        }
    }

    /// Stop the child `pid` by the shutdown policy; `false` if it is not
    /// a running child of this supervisor.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn terminate_child(&self, pid: Pid) -> Result<bool, CallError> {
        match self.server.call_as(
            "DynamicSupervisor::terminate_child",
            Request::Terminate(pid),
            DEFAULT_CALL_TIMEOUT * 2,
        )? {
            Response::Terminated(found) => Ok(found),
            _ => unreachable!("a dynamic supervisor answers terminate_child with a bool"),
        }
    }

    /// How many children run.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn count_children(&self) -> Result<usize, CallError> {
        match self.server.call_as(
            "DynamicSupervisor::count_children",
            Request::Count,
            DEFAULT_CALL_TIMEOUT,
        )? {
            Response::Count(n) => Ok(n),
            _ => unreachable!("a dynamic supervisor answers count_children with a count"),
        }
    }

    /// The running children's pids (in no particular order).
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn which_children(&self) -> Result<Vec<Pid>, CallError> {
        match self.server.call_as(
            "DynamicSupervisor::which_children",
            Request::Which,
            DEFAULT_CALL_TIMEOUT,
        )? {
            Response::Which(pids) => Ok(pids),
            _ => unreachable!("a dynamic supervisor answers which_children with pids"),
        }
    }

    /// Stop every child (all at once, each within the shutdown policy),
    /// then the supervisor; returns once it has.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn shutdown(&self) -> Result<(), CallError> {
        smarm_core::require_actor("DynamicSupervisor::shutdown");
        self.server.shutdown_timeout(Duration::from_secs(60))
    }
}

/// The dynamic supervisor's server (a gen_server, as the supervisor is);
/// it appears in user code only as the type of a [`DynamicName`].
pub struct DynamicServer<A: Send + 'static> {
    me: Pid,
    spec: DynamicSpec<A>,
    /// Running children (D1).
    children: HashMap<Pid, Running<A>>,
    /// Restarts delayed by the backoff, by serial (D4).
    waiting: HashMap<u64, Waiting<A>>,
    next_serial: u64,
    jitter: Jitter,
    restarts: RestartLog,
}

/// A running child.
struct Running<A> {
    /// A restartable child's argument, kept for its restart.
    arg: Option<A>,
    /// Failures in a row, without a quiet period between (its backoff).
    failures: u32,
    started_at: Instant,
}

/// A child waiting for its delayed restart (D4).
struct Waiting<A> {
    arg: A,
    failures: u32,
    at: Instant,
    timer: TimerId,
    /// The exit that led to it, for the reports.
    exit: Exit,
}

/// A delayed restart is due: its serial.
#[doc(hidden)]
pub struct RestartDue(u64);

/// A dynamic supervisor request (a call).
#[doc(hidden)]
pub enum Request<A> {
    Start(A),
    Terminate(Pid),
    Count,
    Which,
}

/// The answer to a [`Request`].
#[doc(hidden)]
pub enum Response<A> {
    Started(Result<Pid, StartChildError<A>>),
    Terminated(bool),
    Count(usize),
    Which(Vec<Pid>),
}

impl<A: Send + 'static> GenServer for DynamicServer<A> {
    type Args = DynamicSpec<A>;
    type Call = Request<A>;
    type Reply = Response<A>;
    type Cast = ();
    type Info = RestartDue;

    fn init(spec: DynamicSpec<A>, ctx: &mut Ctx<Self>) -> Result<Self, InitError> {
        ctx.trap_exits();
        let me = ctx.me().pid();
        track_restarts(me);
        Ok(DynamicServer {
            me,
            spec,
            children: HashMap::new(),
            waiting: HashMap::new(),
            next_serial: 0,
            jitter: Jitter::new(me),
            restarts: RestartLog::default(),
        })
    }

    fn handle_call(
        &mut self,
        request: Request<A>,
        reply: Reply<Response<A>>,
        _: &mut Ctx<Self>,
    ) -> Flow {
        let response = match request {
            Request::Start(arg) => Response::Started(self.start_child(arg)),
            Request::Terminate(pid) => Response::Terminated(self.terminate_child(pid)),
            Request::Count => Response::Count(self.children.len()),
            Request::Which => Response::Which(self.children.keys().copied().collect()),
        };
        let _ = reply.reply(response);
        Flow::Continue
    }

    fn handle_exit(&mut self, exit: Exit, ctx: &mut Ctx<Self>) -> Flow {
        let Some(child) = self.children.remove(&exit.from) else {
            return Flow::Continue; // (D1)
        };
        let failed = is_failure(&exit.reason);
        let restart = match self.spec.restart {
            Restart::Permanent => true,
            Restart::Transient => failed,
            Restart::Temporary => false,
        };
        match (restart, child.arg) {
            (true, Some(arg)) => {
                let outcome =
                    self.restart_child(&exit, arg, child.failures, Some(child.started_at), ctx);
                self.gave_up_on(outcome, &exit)
            }
            _ if failed => {
                self.report(&exit, SupervisorAction::Removed);
                Flow::Continue
            }
            _ => Flow::Continue,
        }
    }

    fn handle_info(&mut self, due: RestartDue, ctx: &mut Ctx<Self>) -> Flow {
        let Some(waiting) = self.waiting.remove(&due.0) else {
            return Flow::Continue; // called off meanwhile (D4)
        };
        self.publish_waiting();
        let outcome = match self.start_again(waiting.arg, waiting.failures) {
            Ok(()) => {
                self.report(&waiting.exit, SupervisorAction::Restarted);
                Ok(())
            }
            Err((arg, e)) => {
                let why = SupervisorAction::RestartFailed(e.to_string());
                self.report(&waiting.exit, why);
                self.restart_child(&waiting.exit, arg, waiting.failures, None, ctx)
            }
        };
        self.gave_up_on(outcome, &waiting.exit)
    }

    fn terminate(&mut self, _: &StopReason, _: &mut Ctx<Self>) {
        for (_, waiting) in self.waiting.drain() {
            cancel_timer(waiting.timer); // (D4)
        }
        self.publish_waiting();
        let pids: Vec<Pid> = self.children.drain().map(|(pid, _)| pid).collect();
        stop_all(&pids, self.spec.shutdown);
    }
}

impl<A: Send + 'static> DynamicServer<A> {
    fn start_child(&mut self, arg: A) -> Result<Pid, StartChildError<A>> {
        if self.children.len() + self.waiting.len() >= self.spec.max_children {
            return Err(StartChildError::MaxChildren {
                max: self.spec.max_children,
                arg,
            }); // (D2)
        }
        let kept = self.spec.clone_arg.map(|clone| clone(&arg));
        let pid = (self.spec.start)(arg).map_err(StartChildError::Start)?;
        self.children.insert(
            pid,
            Running {
                arg: kept,
                failures: 0,
                started_at: smarm_core::time::now(),
            },
        );
        Ok(pid)
    }

    /// Start an exited restartable child again with `arg` (after
    /// `failures` in a row; it last started at `started_at`, if it did),
    /// counting each attempt against the intensity; with a backoff, arm
    /// its timer instead (D4). `Err(why)`: too many restarts.
    fn restart_child(
        &mut self,
        exit: &Exit,
        mut arg: A,
        mut failures: u32,
        mut started_at: Option<Instant>,
        ctx: &Ctx<Self>,
    ) -> Result<(), String> {
        loop {
            self.restarts.count(self.spec.intensity, self.spec.period)?;
            if let Some(backoff) = self.spec.backoff {
                if started_at.is_some_and(|at| at.elapsed() >= backoff.reset_after) {
                    failures = 0; // a quiet period: start over
                }
                failures = failures.saturating_add(1);
                let delay = backoff.delay(failures, self.jitter.next_unit());
                let serial = self.next_serial;
                self.next_serial += 1;
                let waiting = Waiting {
                    arg,
                    failures,
                    at: smarm_core::time::now() + delay,
                    timer: ctx.send_after(delay, RestartDue(serial)),
                    exit: exit.clone(),
                };
                self.waiting.insert(serial, waiting);
                self.publish_waiting();
                self.report(exit, SupervisorAction::RestartDelayed(delay));
                return Ok(());
            }
            match self.start_again(arg, failures) {
                Ok(()) => {
                    self.report(exit, SupervisorAction::Restarted);
                    return Ok(());
                }
                Err((back, e)) => {
                    self.report(exit, SupervisorAction::RestartFailed(e.to_string()));
                    (arg, started_at) = (back, None);
                }
            }
        }
    }

    /// Start a restartable child with a clone of `arg`; on failure, `arg`
    /// back with the error.
    fn start_again(&mut self, arg: A, failures: u32) -> Result<(), (A, StartError)> {
        let Some(clone) = self.spec.clone_arg else {
            return Ok(()); // only restartable children keep an argument
        };
        match (self.spec.start)(clone(&arg)) {
            Ok(pid) => {
                let running = Running {
                    arg: Some(arg),
                    failures,
                    started_at: smarm_core::time::now(),
                };
                self.children.insert(pid, running);
                Ok(())
            }
            Err(e) => Err((arg, e)),
        }
    }

    /// A restart's outcome: past the intensity, report and give up
    /// (server's `give_up_on`).
    fn gave_up_on(&self, outcome: Result<(), String>, exit: &Exit) -> Flow {
        if outcome.is_err() {
            self.report(exit, SupervisorAction::GaveUp);
        }
        give_up_on(outcome)
    }

    /// The next delayed restart's due time, for introspection.
    fn publish_waiting(&self) {
        publish_next_restart(self.me, self.waiting.values().map(|w| w.at).min());
    }

    /// Report `action` on the child `exit` is from. Its children share
    /// one template: the child is named by it.
    fn report(&self, exit: &Exit, action: SupervisorAction) {
        let child = "dynamic child".to_string();
        report_child(self.me, child, exit, self.restarts.len(), action);
    }

    fn terminate_child(&mut self, pid: Pid) -> bool {
        if self.children.remove(&pid).is_none() {
            return false;
        }
        stop_all(&[pid], self.spec.shutdown);
        true
    }
}

/// Stop `pids` by `shutdown`, together, within one timeout (D3).
fn stop_all(pids: &[Pid], shutdown: Shutdown) {
    stop_children(pids, shutdown, ask_to_shut_down);
}
