//! A supervisor's address and what it can be asked ([`SupervisorRef`]),
//! and starting one ([`start`], [`start_link`]).

use super::server::{Request, Response, Supervisor};
use super::{ChildKind, ChildSpec, Restart, StartError, SupFlags};
use crate::gen_server::{self, CallError, DEFAULT_CALL_TIMEOUT, GenServerRef};
use smarm_core::Pid;
use std::time::Duration;

/// One child, as [`SupervisorRef::which_children`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChildInfo {
    /// Its id.
    pub id: String,
    /// Its actor, if running.
    pub pid: Option<Pid>,
    /// Worker or supervisor.
    pub kind: ChildKind,
    /// Its restart type.
    pub restart: Restart,
    /// When its delayed restart is due, while it waits for one
    /// ([`ChildSpec::backoff`](super::ChildSpec::backoff)).
    pub restarting_at: Option<std::time::Instant>,
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

/// The address of a running supervisor.
#[derive(Clone)]
pub struct SupervisorRef {
    server: GenServerRef<Supervisor>,
}

impl std::fmt::Debug for SupervisorRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SupervisorRef({})", self.server.pid())
    }
}

impl SupervisorRef {
    /// The supervisor's actor.
    pub fn pid(&self) -> Pid {
        self.server.pid()
    }

    /// Whether the supervisor is still running.
    pub fn is_alive(&self) -> bool {
        self.server.is_alive()
    }

    /// The children, in start order.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn which_children(&self) -> Result<Vec<ChildInfo>, CallError> {
        match self.server.call_as(
            "SupervisorRef::which_children",
            Request::WhichChildren,
            DEFAULT_CALL_TIMEOUT,
        )? {
            Response::Children(children) => Ok(children),
            _ => unreachable!("a supervisor answers which_children with its children"),
        }
    }

    /// Start `spec` as the last child and return its pid.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn start_child(&self, spec: ChildSpec) -> Result<Pid, StartError> {
        match self.server.call_as(
            "SupervisorRef::start_child",
            Request::StartChild(spec),
            DEFAULT_CALL_TIMEOUT,
        ) {
            Ok(Response::Started(started)) => started,
            Ok(_) => unreachable!("a supervisor answers start_child with the start's result"),
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
        // Stopping may wait out the child's shutdown timeout.
        let request = Request::TerminateChild(child.into());
        match self.server.call_as(
            "SupervisorRef::terminate_child",
            request,
            DEFAULT_CALL_TIMEOUT * 2,
        )? {
            Response::Terminated(found) => Ok(found),
            _ => unreachable!("a supervisor answers terminate_child with whether it found one"),
        }
    }

    /// Stop every child in reverse start order, then the supervisor;
    /// returns once it has.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn shutdown(&self) -> Result<(), CallError> {
        smarm_core::require_actor("SupervisorRef::shutdown");
        self.server.shutdown_timeout(Duration::from_secs(60))
    }

    /// Stop the supervisor, draining its children: each gen_server,
    /// gen_statem or nested supervisor child handles what is already in
    /// its mailbox before its `terminate` (within its
    /// [`Shutdown`](super::Shutdown) timeout; past it, it is stopped), in
    /// reverse start order; other children are stopped by their policy.
    /// The request queues behind the supervisor's own pending requests. A
    /// drain past `timeout` is cut short by a stop request. Returns once
    /// the supervisor is gone.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn drain(&self, timeout: Duration) -> Result<(), CallError> {
        self.server
            .drain_with("SupervisorRef::drain", Request::Drain, timeout)
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
    smarm_core::require_actor("supervisor::start");
    let server = gen_server::Builder::<Supervisor>::new()
        .label("supervisor")
        .start((flags, children))?;
    Ok(SupervisorRef { server })
}

/// [`start`], linked to the caller: a supervisor's way to start a child
/// supervisor (see [`ChildSpec::supervisor`]). It stops when the caller
/// exits.
///
/// # Panics
///
/// Outside an actor.
pub fn start_link(flags: SupFlags, children: Vec<ChildSpec>) -> Result<SupervisorRef, StartError> {
    smarm_core::require_actor("supervisor::start_link");
    start_link_labelled(flags, children, "supervisor")
}

/// [`start_link`], labelled `label` (a nested supervisor takes its child
/// id).
pub(crate) fn start_link_labelled(
    flags: SupFlags,
    children: Vec<ChildSpec>,
    label: &str,
) -> Result<SupervisorRef, StartError> {
    let server = gen_server::Builder::<Supervisor>::new()
        .link()
        .label(label)
        .start((flags, children))?;
    Ok(SupervisorRef { server })
}

impl crate::sys::System for SupervisorRef {
    fn system_call<R: Send + 'static>(
        &self,
        what: &'static str,
        request: impl FnOnce(gen_server::Reply<R>) -> crate::sys::Request,
    ) -> Result<R, CallError> {
        self.server.system_call(what, request)
    }
}
