//! Look inside a running system: which actors exist, what each is doing,
//! who spawned whom (Erlang's `i()` and `observer`, in library form).
//!
//! ```
//! use smarm::{actor_info, channel, run, snapshot, spawn, ActorState};
//!
//! run(|| {
//!     let (ready_tx, ready_rx) = channel::<()>();
//!     let (gate_tx, gate_rx) = channel::<()>();
//!
//!     let worker = spawn(move || {
//!         ready_tx.send(()).unwrap();
//!         gate_rx.recv().unwrap(); // blocks here until released
//!     });
//!     ready_rx.recv().unwrap();
//!
//!     // `snapshot` sees every actor, including this one and the worker.
//!     let snap = snapshot();
//!     assert!(snap.actors.len() >= 2);
//!
//!     // `actor_info` gives a coherent view of just the worker. It is
//!     // blocked on the gate channel, so it must be Parked.
//!     let pid = worker.pid();
//!     let info = actor_info(pid).expect("worker is still alive");
//!     assert_eq!(info.state, ActorState::Parked);
//!
//!     gate_tx.send(()).unwrap();
//!     worker.join().unwrap();
//!
//!     // Once joined, the pid no longer names a live actor.
//!     assert!(actor_info(pid).is_none());
//! });
//! ```
//!
//! # Design
//!
//! [`snapshot`] walks the slot table: per actor one lock-free load of the
//! state word, then a brief hold of that actor's cold lock to copy its
//! relations (re-checking the generation, so the fields are coherent for
//! that one actor). Nothing is held across actors, so a snapshot is a
//! series of per-actor views, not a frozen instant (`ps` semantics).
//! [`actor_info`] is coherent for its one actor. [`tree`] folds a snapshot
//! into the spawn forest; an actor whose parent is gone is re-rooted and
//! marked orphaned. Names and mailbox depth come from the hook a layer
//! above installs in the runtime ([`set_extras_hook`]: the registry does).
//!
//! # Invariants
//!
//! - (I1) An `ActorInfo` describes one incarnation: every field was read
//!   while its generation matched the pid.
//! - (I2) At most one lock is held at a time while reading (a cold lock;
//!   the hook runs with none held).

mod display;

use crate::scheduler;
use crate::slot::word::State;
use crate::slot::Pid;
use crate::slot::Slot;
use std::sync::atomic::Ordering;

/// The version of the [`RuntimeSnapshot`] / [`RuntimeTree`] shape; it
/// changes when their fields do.
pub const SNAPSHOT_FORMAT_VERSION: u16 = 2;

/// What an actor is doing, from the scheduler's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActorState {
    /// Runnable, waiting for a scheduler.
    Queued,
    /// Running on a scheduler thread.
    Running,
    /// Running, and woken for the wait it is about to start.
    Notified,
    /// Blocked: on a channel, a timer, a lock, IO, a join.
    Parked,
    /// Finished; kept until its `JoinHandle` is joined or dropped.
    Done,
}

/// One actor, as seen at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActorInfo {
    /// The actor.
    pub pid: Pid,
    /// Names it is registered under (from the registry's hook).
    pub names: Vec<&'static str>,
    /// What it is doing.
    pub state: ActorState,
    /// Who spawned it (or the pid given to `spawn_under`); the root's is
    /// itself.
    pub supervisor: Pid,
    /// Whether it traps exits.
    pub trap_exit: bool,
    /// How many monitors watch it.
    pub monitors: u32,
    /// How many actors it is linked to.
    pub links: u32,
    /// How many actors are blocked joining it.
    pub joiners: u32,
    /// Messages queued on the channels it published through the registry.
    pub mailbox_depth: u32,
    /// Times a preempting safepoint (`check!()` or an allocation under
    /// [`PreemptingAlloc`](crate::PreemptingAlloc)) switched it out for
    /// overrunning its timeslice.
    pub overruns: u64,
    /// Messages it has taken from the channels it published through the
    /// registry.
    pub messages_received: u64,
    /// Timeslice-clock ticks it has run for (CPU cycles where the cycle
    /// counter is invariant, else nanoseconds), with the
    /// `budget-accounting` feature; `None` without it.
    pub budget_cycles: Option<u64>,
}

/// Every actor of the runtime (see the module docs on consistency).
#[derive(Debug, Clone)]
pub struct RuntimeSnapshot {
    /// [`SNAPSHOT_FORMAT_VERSION`].
    pub format_version: u16,
    /// One entry per actor, in slot order.
    pub actors: Vec<ActorInfo>,
    /// One entry per scheduler thread.
    pub schedulers: Vec<SchedulerStats>,
}

/// What one scheduler thread has done since the runtime was built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedulerStats {
    /// Its index.
    pub id: usize,
    /// Actor resumes.
    pub actors_run: u64,
    /// Times it parked with nothing to do.
    pub parks: u64,
    /// Parks that ended with a wake (the rest reached a timer deadline).
    pub wakes: u64,
    /// Successful steals from other schedulers.
    pub steals: u64,
}

/// One node of the spawn forest.
#[derive(Debug, Clone)]
pub struct TreeNode {
    /// The actor.
    pub info: ActorInfo,
    /// Its parent was not in the snapshot (it had finished), so the actor
    /// was placed at the top instead of being lost.
    pub orphaned: bool,
    /// The actors it spawned.
    pub children: Vec<TreeNode>,
}

/// The spawn forest: roots are actors without a parent in the snapshot.
#[derive(Debug, Clone)]
pub struct RuntimeTree {
    /// [`SNAPSHOT_FORMAT_VERSION`].
    pub format_version: u16,
    /// The top-level actors.
    pub roots: Vec<TreeNode>,
}

/// Every actor that currently exists: running, queued, parked, or finished
/// and not yet joined.
///
/// # Panics
///
/// Outside an actor.
pub fn snapshot() -> RuntimeSnapshot {
    let (actors, schedulers) = scheduler::with_current_actor("snapshot", |_, shared| {
        let actors = (0..shared.slots.high_water())
            .filter_map(|i| {
                shared
                    .slots
                    .get(i as u32)
                    .and_then(|slot| read(shared, slot, i as u32, None))
            })
            .collect::<Vec<_>>();
        let schedulers = shared
            .queues
            .iter()
            .enumerate()
            .map(|(id, q)| SchedulerStats {
                id,
                actors_run: q.stats.actors_run.load(Ordering::Relaxed),
                parks: q.stats.parks.load(Ordering::Relaxed),
                wakes: q.stats.wakes.load(Ordering::Relaxed),
                steals: q.stats.steals.load(Ordering::Relaxed),
            })
            .collect::<Vec<_>>();
        (actors, schedulers)
    });
    let actors = actors.into_iter().map(with_extras).collect();
    RuntimeSnapshot {
        format_version: SNAPSHOT_FORMAT_VERSION,
        actors,
        schedulers,
    }
}

/// A coherent view of one actor, or `None` if `pid` does not name a live
/// (or finished but unjoined) actor.
///
/// # Panics
///
/// Outside an actor.
pub fn actor_info<A>(pid: Pid<A>) -> Option<ActorInfo> {
    let pid = pid.erase();
    let info = scheduler::with_current_actor("actor_info", |_, shared| {
        shared
            .slots
            .get(pid.index())
            .and_then(|slot| read(shared, slot, pid.index(), Some(pid.generation())))
    })?;
    Some(with_extras(info))
}

/// A fresh [`snapshot`] folded into the spawn forest.
///
/// # Panics
///
/// Outside an actor.
pub fn tree() -> RuntimeTree {
    tree_from(snapshot())
}

/// Fold `snap` into the spawn forest, re-rooting orphans.
pub fn tree_from(snap: RuntimeSnapshot) -> RuntimeTree {
    let present: std::collections::HashSet<Pid> = snap.actors.iter().map(|a| a.pid).collect();
    let mut children: std::collections::HashMap<Pid, Vec<ActorInfo>> =
        std::collections::HashMap::new();
    let mut roots = Vec::new();
    for info in snap.actors {
        if info.supervisor == info.pid {
            roots.push((info, false));
        } else if present.contains(&info.supervisor) {
            children.entry(info.supervisor).or_default().push(info);
        } else {
            roots.push((info, true));
        }
    }
    fn build(
        info: ActorInfo,
        orphaned: bool,
        children: &mut std::collections::HashMap<Pid, Vec<ActorInfo>>,
    ) -> TreeNode {
        let kids = children.remove(&info.pid).unwrap_or_default();
        let kids = kids
            .into_iter()
            .map(|k| build(k, false, children))
            .collect();
        TreeNode {
            info,
            orphaned,
            children: kids,
        }
    }
    let roots = roots
        .into_iter()
        .map(|(info, orphaned)| build(info, orphaned, &mut children))
        .collect();
    RuntimeTree {
        format_version: snap.format_version,
        roots,
    }
}

/// Read one slot, if it holds an actor (of `generation`, when given).
fn read(
    shared: &crate::scheduler::Shared,
    slot: &Slot,
    index: u32,
    generation: Option<u32>,
) -> Option<ActorInfo> {
    let word = slot.word.load();
    if generation.is_some_and(|g| g != word.generation()) {
        return None;
    }
    let state = match word.state() {
        State::Vacant => return None,
        State::Queued => ActorState::Queued,
        State::Running => ActorState::Running,
        State::RunningNotified => ActorState::Notified,
        State::Parked => ActorState::Parked,
        State::Done => ActorState::Done,
    };
    let pid = Pid::from_parts(index, word.generation());
    let (trap_exit, monitors, links, joiners) = {
        let cold = slot.cold.lock();
        if slot.word.load().generation() != pid.generation() {
            return None; // recycled meanwhile (I1)
        }
        let sig = crate::signal::signals_of(&cold);
        (
            sig.is_some_and(|s| s.trap.is_some()),
            sig.map_or(0, |s| s.monitors.len() as u32),
            sig.map_or(0, |s| s.links.len() as u32),
            u32::from(
                cold.joiner
                    .is_some_and(|j| is_waiting(shared, j.pid, j.epoch)),
            ),
        )
    };
    let supervisor = match slot.parent.load(Ordering::Relaxed) {
        0 => pid,
        bits => Pid::from_bits(bits),
    };
    Some(ActorInfo {
        pid,
        names: Vec::new(),
        state,
        supervisor,
        trap_exit,
        monitors,
        links,
        joiners,
        mailbox_depth: 0,
        overruns: slot.overruns.load(Ordering::Relaxed),
        messages_received: 0,
        budget_cycles: cfg!(feature = "budget-accounting")
            .then(|| slot.budget.load(Ordering::Relaxed)),
    })
}

/// Whether the joiner registered as `(pid, epoch)` is still in that wait.
fn is_waiting(shared: &crate::scheduler::Shared, pid: Pid, epoch: u32) -> bool {
    shared.slots.get(pid.index()).is_some_and(|s| {
        let w = s.word.load();
        w.generation() == pid.generation() && w.epoch() == epoch && w.state() == State::Parked
    })
}

/// What an upper layer knows about an actor, for introspection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ActorExtras {
    /// Names the actor is registered under.
    pub names: Vec<&'static str>,
    /// Messages queued on the channels it published.
    pub mailbox_depth: u32,
    /// Messages taken from the channels it published.
    pub messages_received: u64,
}

/// The runtime's extras hook, if a layer above installed one.
#[derive(Default)]
struct ExtrasHook(std::sync::OnceLock<fn(Pid) -> ActorExtras>);

/// Install, for the current runtime, the function introspection calls for
/// each actor's [`ActorExtras`] (what a layer above knows about it: the
/// registry installs one on its first use in a runtime). The first hook
/// installed in a runtime stays; later calls are ignored. The hook runs in
/// the actor that asked for the snapshot, with no runtime lock held.
///
/// # Panics
///
/// Outside a runtime (an actor, or a callback on a scheduler).
pub fn set_extras_hook(hook: fn(Pid) -> ActorExtras) {
    let installed = scheduler::with_worker(|_, shared| {
        let _ = shared.locals.get_or_default::<ExtrasHook>().0.set(hook);
    });
    if installed.is_none() {
        scheduler::outside_actor("set_extras_hook");
    }
}

/// Fill names and mailbox depth from the runtime's extras hook (I2: no
/// lock held while it runs).
fn with_extras(mut info: ActorInfo) -> ActorInfo {
    let hook = scheduler::with_worker(|_, shared| {
        shared
            .locals
            .get_or_default::<ExtrasHook>()
            .0
            .get()
            .copied()
    })
    .flatten();
    if let Some(hook) = hook {
        let extras = hook(info.pid);
        info.names = extras.names;
        info.mailbox_depth = extras.mailbox_depth;
        info.messages_received = extras.messages_received;
    }
    info
}
