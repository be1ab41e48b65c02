//! A supervisor's address and what it can be asked ([`SupervisorRef`]),
//! and starting one ([`start`], [`start_link`]).

use super::{run, ChildKind, ChildSpec, Restart, StartError, SupFlags};
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
