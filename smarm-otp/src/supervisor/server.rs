//! The supervisor itself: a gen_server ([`Supervisor`]) that traps exits
//! and links its children to it, as OTP's supervisor is a gen_server. Its
//! `init` starts the children in order; each child's exit reaches
//! `handle_exit` and becomes a restart by the strategy, within the restart
//! intensity; the requests of a [`SupervisorRef`](super::SupervisorRef)
//! are calls; `terminate`, however the supervisor ends (a shutdown, its
//! parent's exit, a stop request, giving up), stops the children in
//! reverse order.
//!
//! # Invariants
//!
//! - (U1) `by_pid` maps exactly the running children's pids to their
//!   place; an exit from a pid not in it (a child this supervisor already
//!   stopped or replaced) is ignored.
//! - (U2) A child is stopped by monitoring it, unlinking it, then
//!   requesting its stop: its exit arrives as the monitor's `Down`, never
//!   as an `Exit` mistaken for a crash.
//! - (U3) Children start in `children` order and stop in reverse.
//! - (U4) A supervisor asked to drain stops each behaviour child by the
//!   child's own drain (its mailbox handled first, within the child's
//!   shutdown timeout), in reverse start order; other children, and
//!   `BrutalKill` ones, are stopped as usual.

use super::spec::{ChildSpec, Restart, Shutdown, Strategy, SupFlags};
use super::{ChildInfo, ChildRef};
use crate::gen_server::{Ctx, Flow, GenServer, InitError, Reply, StartError, StopReason};
use smarm_core::report::{self, SupervisorAction};
use smarm_core::{DownReason, Exit, Pid};
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

struct Child {
    spec: ChildSpec,
    pid: Option<Pid>,
}

/// A supervisor's state: its children and its restart history.
pub(super) struct Supervisor {
    me: Pid,
    flags: SupFlags,
    /// Start order; `None` marks a removed child (U3).
    children: Vec<Option<Child>>,
    by_pid: HashMap<Pid, usize>,
    restarts: RestartLog,
    /// Asked to drain: its children are drained as it stops.
    drain: Option<Reply<Response>>,
}

/// What a [`SupervisorRef`](super::SupervisorRef) asks (a call).
pub(super) enum Request {
    WhichChildren,
    StartChild(ChildSpec),
    TerminateChild(ChildRef),
    /// Stop, draining the children (answered once they are stopped).
    Drain,
}

/// The answer to a [`Request`], one variant per request.
pub(super) enum Response {
    Children(Vec<ChildInfo>),
    Started(Result<Pid, StartError>),
    Terminated(bool),
    Drained,
}

impl GenServer for Supervisor {
    type Args = (SupFlags, Vec<ChildSpec>);
    type Call = Request;
    type Reply = Response;
    type Cast = ();
    type Info = ();

    /// Start the children in order; if one fails, stop those started (in
    /// reverse) and fail with its [`StartError::Child`].
    fn init((flags, specs): Self::Args, ctx: &mut Ctx<Self>) -> Result<Self, InitError> {
        ctx.trap_exits();
        track_restarts(ctx.me().pid());
        let mut sup = Supervisor {
            me: ctx.me().pid(),
            flags,
            children: Vec::new(),
            by_pid: HashMap::new(),
            restarts: RestartLog::default(),
            drain: None,
        };
        for spec in specs {
            if let Err(e) = sup.add(spec) {
                sup.stop_all();
                return Err(Box::new(e));
            }
        }
        Ok(sup)
    }

    fn handle_call(&mut self, request: Request, reply: Reply<Response>, _: &mut Ctx<Self>) -> Flow {
        let response = match request {
            Request::WhichChildren => Response::Children(self.which_children()),
            Request::StartChild(spec) => Response::Started(self.add(spec)),
            Request::TerminateChild(target) => Response::Terminated(self.terminate_child(&target)),
            Request::Drain => {
                self.drain = Some(reply);
                return Flow::Stop(StopReason::Shutdown);
            }
        };
        let _ = reply.reply(response);
        Flow::Continue
    }

    /// A child exited: restart it by its restart type and the strategy.
    /// Giving up is a panic, so the report reaches the operator and the
    /// supervisor's own supervisor sees a failure (`terminate` still stops
    /// the children first).
    fn handle_exit(&mut self, exit: Exit, _: &mut Ctx<Self>) -> Flow {
        if let Err(why) = self.on_exit(exit) {
            panic!("smarm: supervisor {} gave up: {why}", self.me);
        }
        Flow::Continue
    }

    fn terminate(&mut self, _: &StopReason, _: &mut Ctx<Self>) {
        self.stop_all();
        if let Some(ack) = self.drain.take() {
            let _ = ack.reply(Response::Drained);
        }
    }
}

impl Supervisor {
    /// A child exited: restart it by its restart type and the strategy.
    /// `Err(why)`: more restarts than the intensity allows.
    fn on_exit(&mut self, exit: Exit) -> Result<(), String> {
        let Some(i) = self.by_pid.remove(&exit.from) else {
            return Ok(()); // (U1)
        };
        let Some(child) = self.children[i].as_mut() else {
            return Ok(());
        };
        child.pid = None;
        let failed = is_failure(&exit.reason);
        let restart = match child.spec.restart {
            Restart::Permanent => true,
            Restart::Transient => failed,
            Restart::Temporary => false,
        };
        if !restart {
            if failed {
                self.report(i, &exit, SupervisorAction::Removed);
            }
            if self.children[i]
                .as_ref()
                .is_some_and(|c| c.spec.restart == Restart::Temporary)
            {
                self.children[i] = None;
                self.compact();
            }
            return Ok(());
        }
        let mut failing = i;
        loop {
            if let Err(why) = self.restarts.count(self.flags.intensity, self.flags.period) {
                self.report(failing, &exit, SupervisorAction::GaveUp);
                return Err(why);
            }
            match self.restart(failing) {
                Ok(()) => {
                    self.report(i, &exit, SupervisorAction::Restarted);
                    return Ok(());
                }
                Err((next, e)) => {
                    self.report(next, &exit, SupervisorAction::RestartFailed(e.to_string()));
                    failing = next; // a child failed to start: again
                }
            }
        }
    }

    /// Report `action` on child `i` after `exit`.
    fn report(&self, i: usize, exit: &Exit, action: SupervisorAction) {
        let child = self.children[i]
            .as_ref()
            .map_or_else(String::new, |c| c.spec.id.clone());
        report_child(self.me, child, exit, self.restarts.len(), action);
    }

    /// Restart child `i` (stopped) by the strategy. `Err((j, why))`: child
    /// `j` failed to start (and is stopped).
    fn restart(&mut self, i: usize) -> Result<(), (usize, StartError)> {
        let from = match self.flags.strategy {
            Strategy::OneForOne => return self.start_at(i).map(|_| ()).map_err(|e| (i, e)),
            Strategy::OneForAll => 0,
            Strategy::RestForOne => i,
        };
        for j in (from..self.children.len()).rev() {
            self.stop_at(j);
        }
        for j in from..self.children.len() {
            if self.children[j].is_some() {
                self.start_at(j).map_err(|e| (j, e))?;
            }
        }
        Ok(())
    }

    /// Start child `i` (not running).
    fn start_at(&mut self, i: usize) -> Result<Pid, StartError> {
        let Some(child) = self.children[i].as_mut() else {
            unreachable!("start_at on a removed child");
        };
        let pid = (child.spec.start)()?;
        child.pid = Some(pid);
        self.by_pid.insert(pid, i);
        Ok(pid)
    }

    /// Start `spec` as the last child; on failure it is not kept.
    fn add(&mut self, spec: ChildSpec) -> Result<Pid, StartError> {
        let id = spec.id.clone();
        self.children.push(Some(Child { spec, pid: None }));
        let i = self.children.len() - 1;
        match self.start_at(i) {
            Ok(pid) => Ok(pid),
            Err(e) => {
                self.children.pop();
                Err(StartError::Child {
                    id,
                    error: Box::new(e),
                })
            }
        }
    }

    /// Stop child `i` if it runs, by its shutdown policy (U2).
    fn stop_at(&mut self, i: usize) {
        let Some(child) = self.children[i].as_mut() else {
            return;
        };
        let Some(pid) = child.pid.take() else {
            return;
        };
        self.by_pid.remove(&pid);
        let m = smarm_core::monitor(pid);
        smarm_core::unlink(pid);
        // Draining: a behaviour handles its mailbox first (U4).
        let drain = child.spec.drain.as_mut().filter(|_| self.drain.is_some());
        match (drain, child.spec.shutdown) {
            (_, Shutdown::BrutalKill) | (None, _) => smarm_core::request_stop(pid),
            (Some(drain), Shutdown::Timeout(d)) => drain(pid, d),
            (Some(drain), Shutdown::Infinity) => drain(pid, Duration::MAX),
        }
        match child.spec.shutdown {
            Shutdown::BrutalKill => {}
            Shutdown::Timeout(d) => {
                let _ = m.rx.recv_timeout(d);
            }
            Shutdown::Infinity => {
                let _ = m.rx.recv();
            }
        }
    }

    /// Stop every child, in reverse start order (U3).
    fn stop_all(&mut self) {
        for i in (0..self.children.len()).rev() {
            self.stop_at(i);
        }
    }

    fn terminate_child(&mut self, target: &ChildRef) -> bool {
        let found = self.children.iter().position(|c| {
            c.as_ref().is_some_and(|c| match target {
                ChildRef::Id(id) => c.spec.id == *id,
                ChildRef::Pid(pid) => c.pid == Some(*pid),
            })
        });
        let Some(i) = found else {
            return false;
        };
        self.stop_at(i);
        self.children[i] = None;
        self.compact();
        true
    }

    /// Drop removed children once they are most of the list (keeps
    /// `terminate_child` and temporary exits cheap over a long run).
    fn compact(&mut self) {
        let live = self.children.iter().filter(|c| c.is_some()).count();
        if self.children.len() < 64 || live * 2 > self.children.len() {
            return;
        }
        self.children.retain(Option::is_some);
        self.by_pid.clear();
        for (i, c) in self.children.iter().enumerate() {
            if let Some(pid) = c.as_ref().and_then(|c| c.pid) {
                self.by_pid.insert(pid, i);
            }
        }
    }

    fn which_children(&self) -> Vec<ChildInfo> {
        self.children
            .iter()
            .flatten()
            .map(|c| ChildInfo {
                id: c.spec.id.clone(),
                pid: c.pid,
                kind: c.spec.kind,
                restart: c.spec.restart,
            })
            .collect()
    }
}

/// The restarts of a supervisor within its intensity window (shared by
/// the static and the dynamic supervisor).
#[derive(Default)]
pub(super) struct RestartLog(VecDeque<Instant>);

impl RestartLog {
    /// Restarts within the window at the last count.
    pub(super) fn len(&self) -> u32 {
        u32::try_from(self.0.len()).unwrap_or(u32::MAX)
    }

    /// Note one restart; an error once more than `intensity` fall within
    /// `period`.
    pub(super) fn count(&mut self, intensity: u32, period: Duration) -> Result<(), String> {
        let now = Instant::now();
        self.0.push_back(now);
        while self
            .0
            .front()
            .is_some_and(|t| now.duration_since(*t) > period)
        {
            self.0.pop_front();
        }
        if self.0.len() > intensity as usize {
            return Err(format!(
                "more than {intensity} restart(s) within {period:?}"
            ));
        }
        Ok(())
    }
}

/// Report, through `smarm::report`, `action` by supervisor `me` on its
/// child `child` after `exit` (shared by the static and the dynamic
/// supervisor).
pub(super) fn report_child(
    me: Pid,
    child: String,
    exit: &Exit,
    restarts: u32,
    action: SupervisorAction,
) {
    if action == SupervisorAction::Restarted {
        count_restart(me);
    }
    let name = smarm_core::introspect::actor_info(me).and_then(|info| info.names.first().copied());
    report::emit(report::Report::Supervisor(report::SupervisorReport::new(
        me,
        name,
        child,
        exit.from,
        exit.reason.clone(),
        restarts,
        action,
    )));
}

/// Restarts each supervisor of a runtime has made, for introspection
/// (`ActorInfo::restarts`); an entry goes when its supervisor exits.
#[derive(Default)]
struct RestartCounts(std::sync::Mutex<HashMap<Pid, u64>>);

fn count_restart(me: Pid) {
    smarm_core::runtime::with_runtime_local::<RestartCounts, ()>(|counts, _| {
        let mut counts = counts.0.lock().unwrap_or_else(|e| e.into_inner());
        *counts.entry(me).or_default() += 1;
    });
}

/// Restarts supervisor `pid` has made (0 for any other actor).
pub(crate) fn restarts_of(pid: Pid) -> u64 {
    smarm_core::runtime::with_runtime_local::<RestartCounts, u64>(|counts, _| {
        let counts = counts.0.lock().unwrap_or_else(|e| e.into_inner());
        counts.get(&pid).copied().unwrap_or(0)
    })
}

/// A supervisor starts: make its restarts visible to introspection, and
/// forget them when it exits.
pub(super) fn track_restarts(me: Pid) {
    crate::registry::ensure_introspection_hook();
    smarm_core::signal::on_exit(me, move |_, _| {
        smarm_core::runtime::with_runtime_local::<RestartCounts, ()>(|counts, _| {
            let mut counts = counts.0.lock().unwrap_or_else(|e| e.into_inner());
            counts.remove(&me);
        });
    });
}

/// Whether an exit is a failure (a transient child restarts after one):
/// every reason but a normal exit or a stop (Erlang's `normal` and
/// `shutdown`): a panic, a kill by a linked actor's failure, a stack
/// overflow, a reason of the child's own.
pub(super) fn is_failure(reason: &DownReason) -> bool {
    !matches!(reason, DownReason::Exit | DownReason::Stopped)
}
