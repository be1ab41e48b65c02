//! The schedulers' side of a simulation (feature `sim`, `crate::sim`): the
//! points where a scheduler loop running inside a simulation hands a
//! choice to the simulation instead of making it itself.
//!
//! A simulated runtime (`Shared::simulated`) runs every scheduler loop on
//! a context of its own on one OS thread; the simulation (the layer
//! above) installs a [`Driver`] on that thread and switches between the
//! loops. The loop is the ordinary one (`worker.rs`) with these changes:
//!
//! - between two actors it hands the thread back to the driver
//!   ([`between`]), which picks the scheduler that goes on, and fires the
//!   timers that simulated time has made due;
//! - its pop takes any actor it could reach (its next slot, its pinned and
//!   local queues, the injector, its siblings' local queues: a steal of
//!   one), as the driver picks ([`pop`]);
//! - idle, it parks in the driver instead of spinning and parking on its
//!   futex ([`idle`]);
//! - preemption at a safepoint is the driver's coin ([`preempt`]), not the
//!   timeslice; parks never hand over directly; due timers with the same
//!   deadline fire in the driver's order ([`order_due`]).
//!
//! # Invariants
//!
//! - (S1) Only the simulation's thread runs a simulated runtime's code,
//!   one context at a time, and a loop hands the thread over only between
//!   two actors (never while an actor runs or a queue lock is held).
//! - (S2) `pop` takes an actor from exactly one place, and only from a
//!   place this scheduler may take from (scheduler (I3)): its own next
//!   slot and pinned queue, the injector and every local queue.
//! - (S3) Every choice here comes from the installed driver; with none
//!   installed (a simulated runtime is never run without one) the loop
//!   falls back to the first candidate and never preempts.

use super::current::CURRENT;
use super::{Counters, Shared, Worker};
use crate::slot::Pid;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What a simulation does at the loop's decision points (S3).
pub(crate) trait Driver {
    /// Scheduler `id` is between two actors: hand the thread back; returns
    /// when the driver resumes this scheduler.
    fn between(&self, id: usize);
    /// Scheduler `id` found nothing to run: park until resumed.
    fn idle(&self, id: usize);
    /// Scheduler `id` may run any of `candidates` (never empty), each
    /// from the place in `from`: which?
    fn pick(&self, id: usize, candidates: &[Pid], from: &[Source]) -> usize;
    /// Switch the running actor out at this safepoint?
    fn preempt(&self) -> bool;
    /// A number below `n` (`n` > 0), for orders the runtime leaves open.
    fn below(&self, n: usize) -> usize;
    /// A random number for the simulated program (its fault injection).
    fn random(&self) -> u64;
    /// Whether the fault site `site` fires now (BUGGIFY).
    fn buggify(&self, site: &'static str) -> bool;
    /// Whether smarm's own fault site `site` fires now (off unless the
    /// simulation turns smarm's sites on).
    fn runtime_fault(&self, site: &'static str) -> bool;
}

std::thread_local! {
    static DRIVER: RefCell<Option<Rc<dyn Driver>>> = const { RefCell::new(None) };
}

/// Drivers installed in the process: while none is, a fault site answers
/// without a thread-local lookup (the call path asks on every call).
static INSTALLED: AtomicUsize = AtomicUsize::new(0);

/// Install `driver` for the simulated runtimes run on this thread.
pub(crate) fn install(driver: Rc<dyn Driver>) {
    DRIVER.with(|d| {
        if d.borrow_mut().replace(driver).is_none() {
            INSTALLED.fetch_add(1, Ordering::Relaxed);
        }
    });
}

/// Remove this thread's driver.
pub(crate) fn uninstall() {
    DRIVER.with(|d| {
        if d.borrow_mut().take().is_some() {
            INSTALLED.fetch_sub(1, Ordering::Relaxed);
        }
    });
}

/// This thread's driver, cloned out so no borrow is held across a switch.
fn driver() -> Option<Rc<dyn Driver>> {
    DRIVER.with(|d| d.borrow().clone())
}

/// A random number from this thread's simulation, if one runs.
pub(crate) fn random() -> Option<u64> {
    driver().map(|d| d.random())
}

/// Whether fault site `site` fires now, if a simulation runs.
pub(crate) fn buggify(site: &'static str) -> Option<bool> {
    driver().map(|d| d.buggify(site))
}

/// Whether any thread of the process runs a simulation: one load, for
/// the fault sites on hot paths to ask first.
#[inline(always)]
pub(crate) fn any_installed() -> bool {
    INSTALLED.load(Ordering::Relaxed) != 0
}

/// Whether smarm's own fault site `site` fires now, if a simulation runs
/// on this thread.
#[cold]
#[inline(never)]
pub(crate) fn runtime_fault(site: &'static str) -> bool {
    driver().is_some_and(|d| d.runtime_fault(site))
}

/// Whether this thread runs a simulation.
pub(crate) fn active() -> bool {
    DRIVER.with(|d| d.borrow().is_some())
}

/// Whether idle scheduler `id` has something to do if resumed: an actor
/// it could take (S2), a due timer, or the end of the run or its sweep.
pub(crate) fn idle_has_work(shared: &Shared, id: usize) -> bool {
    let own = &shared.sched.queues[id];
    own.next.is_occupied()
        || own.pinned.len() > 0
        || shared.sched.injector.len() > 0
        || shared.present_queues().any(|q| q.local.len() > 0)
        || shared.coord.deadline_due()
        || !matches!(shared.verdict(id), super::Verdict::Idle)
}

/// Forget the scheduler that ran last on this thread: the simulation is
/// over, or abandoned with its loops suspended.
pub(crate) fn leave() {
    CURRENT.with(|c| c.set(std::ptr::null()));
}

/// The loop's turn between two actors (S1): the driver may run other
/// schedulers first; then fire what simulated time has made due.
pub(super) fn between(shared: &Shared, w: &Worker) {
    if let Some(driver) = driver() {
        driver.between(w.id);
    }
    // Other loops ran meanwhile, each setting its own worker.
    CURRENT.with(|c| c.set(w));
    if shared.coord.deadline_due() {
        shared.fire_due_timers(false);
    }
}

/// Park idle scheduler `w` in the driver until it is resumed (work, a due
/// timer or the run's end is visible to it then).
pub(super) fn idle(shared: &Shared, w: &Worker) {
    if shared.reclaim.has_pending() {
        shared.reclaim.reclaim();
    }
    // Idle and off the reclamation's books, as a parked scheduler is.
    shared.reclaim.offline(w.id);
    if let Some(driver) = driver() {
        driver.idle(w.id);
    }
    CURRENT.with(|c| c.set(w));
    shared.reclaim.online(w.id);
    if shared.coord.deadline_due() {
        shared.fire_due_timers(false);
    }
}

/// Where a candidate actor waits.
#[derive(Clone, Copy)]
enum Place {
    Next,
    Pinned,
    Local(usize),
    Injector,
}

/// Where a candidate comes from, as the scheduler that may take it sees
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// Its own next slot.
    NextSlot,
    /// Its own pinned queue.
    Pinned,
    /// Its own local queue.
    Local,
    /// A sibling's local queue (a steal).
    Sibling,
    /// The injector.
    Injector,
}

impl Place {
    fn source(self, own: usize) -> Source {
        match self {
            Place::Next => Source::NextSlot,
            Place::Pinned => Source::Pinned,
            Place::Local(id) if id == own => Source::Local,
            Place::Local(_) => Source::Sibling,
            Place::Injector => Source::Injector,
        }
    }
}

/// Take the actor the driver picks among every one this scheduler could
/// run (S2); `None` if there is none.
pub(super) fn pop(shared: &Shared, w: &Worker) -> Option<Pid> {
    let own = w.own();
    let mut places = Vec::new();
    let mut pids = Vec::new();
    if let Some(pid) = own.next.take() {
        places.push(Place::Next);
        pids.push(pid);
    }
    for pid in own.pinned.snapshot() {
        places.push(Place::Pinned);
        pids.push(pid);
    }
    for (id, queues) in shared.sched.queues.iter().enumerate() {
        if shared.is_present(id) {
            for pid in queues.local.snapshot() {
                places.push(Place::Local(id));
                pids.push(pid);
            }
        }
    }
    for pid in shared.sched.injector.snapshot() {
        places.push(Place::Injector);
        pids.push(pid);
    }
    if pids.is_empty() {
        return None;
    }
    let at = match driver() {
        Some(driver) => {
            let from: Vec<Source> = places.iter().map(|p| p.source(w.id)).collect();
            driver.pick(w.id, &pids, &from).min(pids.len() - 1)
        }
        None => 0,
    };
    let pid = pids[at];
    match places[at] {
        Place::Next => {}
        Place::Pinned => own.pinned.remove(pid),
        Place::Local(id) => {
            shared.sched.queues[id].local.remove(pid);
            if id != w.id {
                Counters::bump(&own.stats.steals);
                trace_event!(shared, Steal, id as u64, 1);
            }
        }
        Place::Injector => shared.sched.injector.remove(pid),
    }
    // The next slot's occupant, if another was picked, stays for later.
    if !matches!(places[at], Place::Next)
        && let Some(Place::Next) = places.first()
    {
        own.next.replace(pids[0], || {});
    }
    Some(pid)
}

/// The driver's coin for a preemption at this safepoint.
pub(super) fn preempt() -> bool {
    driver().is_some_and(|d| d.preempt())
}

/// Shuffle runs of due timers with equal deadlines (the order the runtime
/// leaves open), keeping deadline order.
pub(super) fn order_due(due: &mut [crate::timer::heap::Entry]) {
    let Some(driver) = driver() else {
        return;
    };
    // From several shards: in deadline order first.
    due.sort();
    let mut start = 0;
    while start < due.len() {
        let deadline = due[start].deadline;
        let end = due[start..]
            .iter()
            .position(|e| e.deadline != deadline)
            .map_or(due.len(), |n| start + n);
        // Fisher-Yates over the run.
        for i in (start + 1..end).rev() {
            let j = start + driver.below(i - start + 1);
            due.swap(i, j);
        }
        start = end;
    }
}
