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
//! - (U5) A child with a backoff that is to restart gets a timer instead
//!   (its failure counted toward the intensity at once); while it waits,
//!   `pending` holds its due time and timer, cleared when the timer's
//!   message comes, when the child is started with its group first, when
//!   it is terminated, or when the supervisor stops (which cancels every
//!   pending timer). A timer message for a child no longer pending is
//!   ignored.

use super::restart::{
    Jitter, RestartLog, give_up_on, is_failure, publish_next_restart, report_child, track_restarts,
};
use super::shutdown::{ask_to_shut_down, stop_children};
use super::spec::{ChildSpec, Restart, Strategy, SupFlags};
use super::{ChildInfo, ChildRef};
use crate::gen_server::{Ctx, Flow, GenServer, InitError, Reply, StartError, StopReason};
use smarm_core::report::SupervisorAction;
use smarm_core::time::{TimerId, cancel_timer};
use smarm_core::{Exit, Pid};
use std::collections::HashMap;
use std::time::{Duration, Instant};

struct Child {
    spec: ChildSpec,
    pid: Option<Pid>,
    /// Unique among the supervisor's children: what its restart timer
    /// names it by (indexes move when removed children are compacted).
    serial: u64,
    /// Failures in a row, without a quiet period between (its backoff).
    failures: u32,
    /// When it was last started.
    started_at: Option<Instant>,
    /// A delayed restart waiting (U5).
    pending: Option<Pending>,
}

/// A child's restart, delayed by its backoff.
struct Pending {
    at: Instant,
    timer: TimerId,
    /// The exit that led to it, for the reports.
    exit: Exit,
}

/// A delayed restart is due: the child's serial.
pub(super) struct RestartDue(u64);

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
    next_serial: u64,
    /// The jitter's random state (xorshift).
    jitter: Jitter,
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
    type Info = RestartDue;

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
            next_serial: 0,
            jitter: Jitter::new(ctx.me().pid()),
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
            Request::TerminateChild(target) => {
                let done = self.terminate_child(&target);
                self.publish_pending();
                Response::Terminated(done)
            }
            Request::Drain => {
                self.drain = Some(reply);
                return Flow::Stop(StopReason::Shutdown);
            }
        };
        let _ = reply.reply(response);
        Flow::Continue
    }

    /// A child exited: restart it by its restart type and the strategy.
    /// Giving up (the report made) stops the children and ends the
    /// supervisor with `shutdown` (U6).
    fn handle_exit(&mut self, exit: Exit, ctx: &mut Ctx<Self>) -> Flow {
        let outcome = self.on_exit(exit, ctx);
        self.publish_pending();
        give_up_on(outcome)
    }

    /// A delayed restart is due.
    fn handle_info(&mut self, due: RestartDue, ctx: &mut Ctx<Self>) -> Flow {
        let outcome = self.restart_due(due.0, ctx);
        self.publish_pending();
        give_up_on(outcome)
    }

    /// Its children, for `sys::get_status`.
    fn format_status(&self) -> String {
        let children: Vec<String> = self
            .which_children()
            .into_iter()
            .map(|c| match (c.pid, c.restarting_at) {
                (Some(pid), _) => format!("{} {pid}", c.id),
                (None, Some(_)) => format!("{} (restart pending)", c.id),
                (None, None) => format!("{} (not running)", c.id),
            })
            .collect();
        format!(
            "{:?}, children: [{}]",
            self.flags.strategy,
            children.join(", ")
        )
    }

    const BEHAVIOUR: &'static str = "supervisor";

    fn terminate(&mut self, _: &StopReason, _: &mut Ctx<Self>) {
        self.cancel_pending();
        self.stop_all();
        if let Some(ack) = self.drain.take() {
            let _ = ack.reply(Response::Drained);
        }
    }
}

impl Supervisor {
    /// A child exited: restart it by its restart type and the strategy.
    /// `Err(why)`: more restarts than the intensity allows.
    fn on_exit(&mut self, exit: Exit, ctx: &Ctx<Self>) -> Result<(), String> {
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
        self.recover(i, i, &exit, ctx)
    }

    /// Restart `failing` (stopped) after `exit` of child `first`: each
    /// attempt counts toward the intensity when it is made; a child with a
    /// backoff is restarted later by its timer (U5); one that fails to
    /// start is tried again the same way.
    fn recover(
        &mut self,
        mut failing: usize,
        first: usize,
        exit: &Exit,
        ctx: &Ctx<Self>,
    ) -> Result<(), String> {
        loop {
            if let Err(why) = self.restarts.count(self.flags.intensity, self.flags.period) {
                self.report(failing, exit, SupervisorAction::GaveUp);
                return Err(why);
            }
            if let Some(delay) = self.delay(failing, exit, ctx) {
                self.report(failing, exit, SupervisorAction::RestartDelayed(delay));
                return Ok(());
            }
            match self.restart(failing) {
                Ok(()) => {
                    self.report(first, exit, SupervisorAction::Restarted);
                    return Ok(());
                }
                Err((next, e)) => {
                    self.report(next, exit, SupervisorAction::RestartFailed(e.to_string()));
                    failing = next; // a child failed to start: again
                }
            }
        }
    }

    /// If child `i` backs off: stop the children restarted with it (by
    /// the strategy) now, arm its restart timer, and return the delay.
    fn delay(&mut self, i: usize, exit: &Exit, ctx: &Ctx<Self>) -> Option<Duration> {
        let unit = self.jitter.next_unit();
        let child = self.children[i].as_mut()?;
        let backoff = child.spec.backoff?;
        if child
            .started_at
            .is_some_and(|at| at.elapsed() >= backoff.reset_after)
        {
            child.failures = 0; // a quiet period: start over
        }
        child.failures = child.failures.saturating_add(1);
        let delay = backoff.delay(child.failures, unit);
        let timer = ctx.send_after(delay, RestartDue(child.serial));
        child.pending = Some(Pending {
            at: smarm_core::time::now() + delay,
            timer,
            exit: exit.clone(),
        });
        self.stop_group(i);
        Some(delay)
    }

    /// Child `serial`'s delayed restart is due: start it (and those stopped
    /// with it), as at once.
    fn restart_due(&mut self, serial: u64, ctx: &Ctx<Self>) -> Result<(), String> {
        let found = self.children.iter().position(|c| {
            c.as_ref()
                .is_some_and(|c| c.serial == serial && c.pending.is_some())
        });
        let Some(i) = found else {
            return Ok(()); // called off meanwhile
        };
        let Some(Pending { exit, .. }) = self.children[i].as_mut().and_then(|c| c.pending.take())
        else {
            return Ok(());
        };
        match self.start_group(i) {
            Ok(()) => {
                self.report(i, &exit, SupervisorAction::Restarted);
                Ok(())
            }
            Err((next, e)) => {
                self.report(next, &exit, SupervisorAction::RestartFailed(e.to_string()));
                self.recover(next, i, &exit, ctx)
            }
        }
    }

    /// Call off every delayed restart (the supervisor is stopping).
    fn cancel_pending(&mut self) {
        for child in self.children.iter_mut().flatten() {
            if let Some(pending) = child.pending.take() {
                cancel_timer(pending.timer);
            }
        }
        self.publish_pending();
    }

    /// Show the first delayed restart due to introspection.
    fn publish_pending(&self) {
        let next = self
            .children
            .iter()
            .flatten()
            .filter_map(|c| c.pending.as_ref().map(|p| p.at))
            .min();
        publish_next_restart(self.me, next);
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
        self.stop_group(i);
        self.start_group(i)
    }

    /// The first child restarted with child `i`, by the strategy.
    fn group_from(&self, i: usize) -> usize {
        match self.flags.strategy {
            Strategy::OneForOne => i,
            Strategy::OneForAll => 0,
            Strategy::RestForOne => i,
        }
    }

    /// Stop the children restarted with child `i` (in reverse order).
    fn stop_group(&mut self, i: usize) {
        if self.flags.strategy == Strategy::OneForOne {
            return;
        }
        for j in (self.group_from(i)..self.children.len()).rev() {
            self.stop_at(j);
        }
    }

    /// Start child `i` and, by the strategy, those stopped with it.
    fn start_group(&mut self, i: usize) -> Result<(), (usize, StartError)> {
        if self.flags.strategy == Strategy::OneForOne {
            return self.start_at(i).map(|_| ()).map_err(|e| (i, e));
        }
        for j in self.group_from(i)..self.children.len() {
            if self.children[j].as_ref().is_some_and(|c| c.pid.is_none()) {
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
        if let Some(pending) = child.pending.take() {
            cancel_timer(pending.timer); // started with its group first
        }
        let pid = (child.spec.start)()?;
        child.pid = Some(pid);
        child.started_at = Some(smarm_core::time::now());
        self.by_pid.insert(pid, i);
        Ok(pid)
    }

    /// Start `spec` as the last child; on failure it is not kept.
    fn add(&mut self, spec: ChildSpec) -> Result<Pid, StartError> {
        let id = spec.id.clone();
        self.next_serial += 1;
        self.children.push(Some(Child {
            spec,
            pid: None,
            serial: self.next_serial,
            failures: 0,
            started_at: None,
            pending: None,
        }));
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
        let shutdown = child.spec.shutdown;
        // Draining: a behaviour handles its mailbox first (U4).
        match child.spec.drain.as_mut().filter(|_| self.drain.is_some()) {
            Some(drain) => stop_children(&[pid], shutdown, |pid| {
                drain(pid, shutdown.timeout().unwrap_or(Duration::MAX))
            }),
            None => stop_children(&[pid], shutdown, ask_to_shut_down),
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
        if let Some(pending) = self.children[i].as_mut().and_then(|c| c.pending.take()) {
            cancel_timer(pending.timer);
        }
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
                restarting_at: c.pending.as_ref().map(|p| p.at),
            })
            .collect()
    }
}
