//! Supervisors: actors that start children, watch them, and restart them
//! when they exit, as Erlang/OTP's `supervisor` does. Supervisors nest into
//! trees; a subtree that keeps failing gives up and lets its own supervisor
//! decide.
//!
//! ```
//! use smarm::supervisor::{self, ChildSpec, Restart, Strategy, SupFlags};
//! use std::time::Duration;
//!
//! smarm::run(|| {
//!     let (seen_tx, seen_rx) = smarm::channel::<&str>();
//!     let flags = SupFlags::new(Strategy::OneForOne).intensity(3, Duration::from_secs(5));
//!     let sup = supervisor::start(
//!         flags,
//!         vec![
//!             ChildSpec::actor("flaky", move || {
//!                 seen_tx.send("started").unwrap();
//!                 smarm::sleep(Duration::from_millis(5));
//!                 panic!("flaky worker failed");
//!             })
//!             .restart(Restart::Transient),
//!         ],
//!     )
//!     .unwrap();
//!     // Started, failed, restarted: twice in a row.
//!     for _ in 0..3 {
//!         assert_eq!(seen_rx.recv().unwrap(), "started");
//!     }
//!     assert_eq!(sup.which_children().unwrap()[0].id, "flaky");
//!     sup.shutdown().unwrap();
//! });
//! ```
//!
//! | You call | The supervisor does |
//! |---|---|
//! | [`start`], [`start_link`] | starts each child in order (its [`ChildSpec`]'s start function, in the supervisor); if one fails, stops the ones started (in reverse) and fails with [`StartError::Child`] |
//! | a child exits | [`Restart`]: permanent children always restart, transient ones after a failure (a panic, a kill by a link), temporary ones never (and are forgotten); the [`Strategy`] says which siblings restart with it |
//! | more than `intensity` restarts within `period` | stops every child in reverse order and exits abnormally (its own supervisor sees a failure) |
//! | [`SupervisorRef::start_child`] | starts one more child, last in order (a dynamic supervisor is one started with no children) |
//! | [`SupervisorRef::terminate_child`] | stops that child by its [`Shutdown`] policy and forgets it |
//! | [`SupervisorRef::which_children`] | lists the children in start order, with their pids |
//! | [`SupervisorRef::shutdown`], a stop request, its parent exiting | stops every child in reverse start order, each by its [`Shutdown`] policy, then exits |
//!
//! # Stopping a child
//!
//! A child is stopped with a stop request
//! ([`request_stop`](smarm_core::request_stop)): it unwinds at its next
//! safepoint, running destructors (and a gen_server's `terminate`). The
//! supervisor waits for it up to the child's [`Shutdown::Timeout`]; a child
//! that has not exited by then keeps its stop pending and the supervisor
//! moves on (smarm cannot end an actor that never reaches a safepoint; a
//! loop of pure computation should call `check!()`).

mod run;
mod spec;

pub use spec::{ChildKind, ChildSpec, Restart, Shutdown, StartFn, Strategy, SupFlags};

pub use crate::gen_server::StartError;
use crate::gen_server::{call, CallError, Reply, DEFAULT_CALL_TIMEOUT};
use smarm_core::channel::{channel, Sender};
use smarm_core::Pid;

/// One child, as [`SupervisorRef::which_children`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildInfo {
    /// Its id.
    pub id: String,
    /// Its actor, if running.
    pub pid: Option<Pid>,
    /// Worker or supervisor.
    pub kind: ChildKind,
    /// Its restart type.
    pub restart: Restart,
}

/// Which child [`SupervisorRef::terminate_child`] stops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChildRef {
    /// The child with this id (the first, if several share it).
    Id(String),
    /// The child running as this actor.
    Pid(Pid),
}

impl From<&str> for ChildRef {
    fn from(id: &str) -> Self {
        ChildRef::Id(id.to_string())
    }
}

impl From<Pid> for ChildRef {
    fn from(pid: Pid) -> Self {
        ChildRef::Pid(pid)
    }
}

pub(super) enum Request {
    WhichChildren(Reply<Vec<ChildInfo>>),
    StartChild(ChildSpec, Reply<Result<Pid, StartError>>),
    TerminateChild(ChildRef, Reply<bool>),
    Shutdown(Reply<()>),
}

/// The address of a running supervisor.
#[derive(Clone)]
pub struct SupervisorRef {
    pid: Pid,
    requests: Sender<Request>,
}

impl std::fmt::Debug for SupervisorRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SupervisorRef({})", self.pid)
    }
}

impl SupervisorRef {
    /// The supervisor's actor.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    fn ask<T: Send>(&self, request: impl FnOnce(Reply<T>) -> Request) -> Result<T, CallError> {
        call(
            request,
            |r| self.requests.send(r).map_err(|e| e.0),
            DEFAULT_CALL_TIMEOUT,
        )
    }

    /// The children, in start order.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn which_children(&self) -> Result<Vec<ChildInfo>, CallError> {
        self.ask(Request::WhichChildren)
    }

    /// Start `spec` as the last child and return its pid.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn start_child(&self, spec: ChildSpec) -> Result<Pid, StartError> {
        match self.ask(|reply| Request::StartChild(spec, reply)) {
            Ok(started) => started,
            Err(_) => Err(StartError::SupervisorDown),
        }
    }

    /// Stop a child by its shutdown policy and forget it; `false` if no
    /// child matches.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn terminate_child(&self, child: impl Into<ChildRef>) -> Result<bool, CallError> {
        let child = child.into();
        call(
            |reply| Request::TerminateChild(child, reply),
            |r| self.requests.send(r).map_err(|e| e.0),
            // Stopping may wait out the child's shutdown timeout.
            DEFAULT_CALL_TIMEOUT * 2,
        )
    }

    /// Stop every child in reverse start order, then the supervisor;
    /// returns once it has.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn shutdown(&self) -> Result<(), CallError> {
        call(
            Request::Shutdown,
            |r| self.requests.send(r).map_err(|e| e.0),
            std::time::Duration::from_secs(60),
        )
    }
}

/// Start a supervisor with `flags` and `children` (started in order) and
/// return once every child has started, or with the first child's start
/// error (the children already started are stopped again).
///
/// # Panics
///
/// Outside an actor.
pub fn start(flags: SupFlags, children: Vec<ChildSpec>) -> Result<SupervisorRef, StartError> {
    spawn_supervisor(flags, children, false)
}

/// [`start`], linked to the caller: a supervisor's way to start a child
/// supervisor (see [`ChildSpec::supervisor`]). It stops when the caller
/// exits.
///
/// # Panics
///
/// Outside an actor.
pub fn start_link(flags: SupFlags, children: Vec<ChildSpec>) -> Result<SupervisorRef, StartError> {
    spawn_supervisor(flags, children, true)
}

fn spawn_supervisor(
    flags: SupFlags,
    children: Vec<ChildSpec>,
    link: bool,
) -> Result<SupervisorRef, StartError> {
    let (requests_tx, requests) = channel::<Request>();
    let me = requests_tx.clone();
    let parent = link.then(smarm_core::self_pid);
    let pid = crate::gen::start(link, move |started| {
        run::serve(flags, children, requests, me, parent, started)
    })?;
    Ok(SupervisorRef {
        pid,
        requests: requests_tx,
    })
}
