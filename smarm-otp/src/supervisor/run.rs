//! The supervisor actor: start the children in order, then turn each
//! child's exit (it traps exits; its children are linked to it) into a
//! restart by the strategy, within the restart intensity; stop children in
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

use super::spec::{ChildSpec, Restart, Shutdown, Strategy, SupFlags};
use super::{ChildInfo, Request};
use crate::gen_server::{StartError, StopReason};
use smarm_core::channel::{select, Receiver, Sender};
use smarm_core::{DownReason, Exit, Pid};
use std::collections::{HashMap, VecDeque};
use std::time::Instant;

struct Child {
    spec: ChildSpec,
    pid: Option<Pid>,
}

/// Why the supervisor stops serving.
enum End {
    /// Asked to (a shutdown request): exit normally.
    Shutdown(Option<crate::gen_server::Reply<()>>),
    /// Its parent exited: exit too.
    ParentExit(DownReason),
    /// More restarts than its intensity allows: exit abnormally.
    GaveUp(String),
}

struct Sup {
    me: Pid,
    flags: SupFlags,
    /// Start order; `None` marks a removed child (U3).
    children: Vec<Option<Child>>,
    by_pid: HashMap<Pid, usize>,
    restarts: VecDeque<Instant>,
    parent: Option<Pid>,
}

/// The supervisor actor's body.
pub(super) fn serve(
    flags: SupFlags,
    specs: Vec<ChildSpec>,
    requests: Receiver<Request>,
    me_tx: Sender<Request>,
    parent: Option<Pid>,
    started: Sender<Result<(), StartError>>,
) {
    let Some(exits) = smarm_core::trap_exit(true) else {
        unreachable!("a fresh actor does not trap exits yet");
    };
    let mut sup = Sup {
        me: smarm_core::self_pid(),
        flags,
        children: Vec::new(),
        by_pid: HashMap::new(),
        restarts: VecDeque::new(),
        parent,
    };
    for spec in specs {
        if let Err(e) = sup.add(spec) {
            sup.stop_all();
            let _ = started.send(Err(e));
            return;
        }
    }
    let _ = started.send(Ok(()));
    drop(started);
    let _keep_open = me_tx; // the request channel never reads as closed

    let mut end = None;
    let ended = crate::gen::termination::run(|| {
        let e = sup.serve_loop(&exits, &requests);
        let reason = match &e {
            End::Shutdown(_) => StopReason::Shutdown,
            End::ParentExit(reason) if reason.is_abnormal() => {
                StopReason::Error(format!("parent exited: {reason}"))
            }
            End::ParentExit(_) => StopReason::Normal,
            End::GaveUp(why) => StopReason::Error(why.clone()),
        };
        end = Some(e);
        reason
    });
    sup.stop_all();
    match end {
        Some(End::Shutdown(Some(ack))) => {
            let _ = ack.reply(());
        }
        // Said out loud (the panic hook prints it): a supervisor giving up
        // is what an operator needs to see.
        Some(End::GaveUp(why)) => panic!("smarm: supervisor {} gave up: {why}", sup.me),
        _ => {}
    }
    ended.finish();
}

impl Sup {
    fn serve_loop(&mut self, exits: &Receiver<Exit>, requests: &Receiver<Request>) -> End {
        loop {
            if let Ok(Some(exit)) = exits.try_recv() {
                if let Some(end) = self.on_exit(exit) {
                    return end;
                }
                continue;
            }
            if let Ok(Some(req)) = requests.try_recv() {
                if let Some(end) = self.on_request(req) {
                    return end;
                }
                continue;
            }
            // Neither channel can close: the supervisor holds a sender to
            // each (its own request sender is kept in `serve`).
            select(&[exits, requests]);
        }
    }

    fn on_request(&mut self, req: Request) -> Option<End> {
        match req {
            Request::WhichChildren(reply) => {
                let _ = reply.reply(self.which_children());
            }
            Request::StartChild(spec, reply) => {
                let _ = reply.reply(self.add(spec));
            }
            Request::TerminateChild(target, reply) => {
                let _ = reply.reply(self.terminate_child(&target));
            }
            Request::Shutdown(reply) => return Some(End::Shutdown(Some(reply))),
        }
        None
    }

    /// A linked actor exited: the parent (stop too) or a child (restart it
    /// by its restart type and the strategy).
    fn on_exit(&mut self, exit: Exit) -> Option<End> {
        if Some(exit.from) == self.parent {
            return Some(End::ParentExit(exit.reason));
        }
        let i = self.by_pid.remove(&exit.from)?; // (U1)
        let child = self.children[i].as_mut()?;
        child.pid = None;
        let restart = match child.spec.restart {
            Restart::Permanent => true,
            Restart::Transient => is_failure(exit.reason),
            Restart::Temporary => false,
        };
        if !restart {
            if child.spec.restart == Restart::Temporary {
                self.children[i] = None;
                self.compact();
            }
            return None;
        }
        let mut failing = i;
        loop {
            if let Err(why) = self.count_restart() {
                return Some(End::GaveUp(why));
            }
            match self.restart(failing) {
                Ok(()) => return None,
                Err(next) => failing = next, // a child failed to start: again
            }
        }
    }

    /// Note one restart; an error once more than `intensity` fall within
    /// `period`.
    fn count_restart(&mut self) -> Result<(), String> {
        let now = Instant::now();
        self.restarts.push_back(now);
        while self
            .restarts
            .front()
            .is_some_and(|t| now.duration_since(*t) > self.flags.period)
        {
            self.restarts.pop_front();
        }
        if self.restarts.len() > self.flags.intensity as usize {
            return Err(format!(
                "more than {} restart(s) within {:?}",
                self.flags.intensity, self.flags.period
            ));
        }
        Ok(())
    }

    /// Restart child `i` (stopped) by the strategy. `Err(j)`: child `j`
    /// failed to start (and is stopped).
    fn restart(&mut self, i: usize) -> Result<(), usize> {
        let from = match self.flags.strategy {
            Strategy::OneForOne => return self.start_at(i).map(|_| ()).map_err(|_| i),
            Strategy::OneForAll => 0,
            Strategy::RestForOne => i,
        };
        for j in (from..self.children.len()).rev() {
            self.stop_at(j);
        }
        for j in from..self.children.len() {
            if self.children[j].is_some() && self.start_at(j).is_err() {
                return Err(j);
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
        smarm_core::request_stop(pid);
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

    fn terminate_child(&mut self, target: &super::ChildRef) -> bool {
        let found = self.children.iter().position(|c| {
            c.as_ref().is_some_and(|c| match target {
                super::ChildRef::Id(id) => c.spec.id == *id,
                super::ChildRef::Pid(pid) => c.pid == Some(*pid),
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

/// Whether an exit is a failure (a transient child restarts after one):
/// a panic, or a kill by a linked actor's failure; not a normal exit or a
/// stop.
fn is_failure(reason: DownReason) -> bool {
    matches!(reason, DownReason::Panic | DownReason::Killed { .. })
}
