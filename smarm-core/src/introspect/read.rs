//! Reading a running system: [`snapshot`], [`actor_info`], [`tree`], and
//! the extras a layer above adds ([`set_extras_hook`](crate::introspect::set_extras_hook)).

use super::info::*;
use crate::scheduler;
use crate::slot::Pid;
use crate::slot::Slot;
use crate::slot::word::State;
use std::sync::atomic::Ordering;

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
            .scheduler_counters()
            .enumerate()
            // The regular schedulers, and the spares that have run: a
            // runtime provides for dozens it may never start.
            .filter(|(id, (_, b, _))| {
                !shared.is_spare(*id) || shared.is_present(*id) || b.starts() > 0
            })
            .map(|(id, (c, b, run_queue))| {
                let blocked = b.blocked();
                let now = shared.coord.now_nanos();
                SchedulerStats {
                    id,
                    actors_run: c.actors_run.load(Ordering::Relaxed),
                    parks: c.parks.load(Ordering::Relaxed),
                    wakes: c.wakes.load(Ordering::Relaxed),
                    steals: c.steals.load(Ordering::Relaxed),
                    run_queue,
                    idle: std::time::Duration::from_nanos(crate::clock::nanos_for(
                        c.idle_ticks.load(Ordering::Relaxed),
                    )),
                    blocked_in: blocked.map(|(pid, _)| pid),
                    blocked_for: blocked.map_or(std::time::Duration::ZERO, |(_, since)| {
                        std::time::Duration::from_nanos(now.saturating_sub(since))
                    }),
                    moved_off: b.moved(),
                    spare: shared.is_spare(id),
                    active: shared.is_present(id),
                    spare_starts: b.starts(),
                }
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

/// Every actor of `shared` that has not finished, from outside any actor:
/// a simulation's deadlock report (its schedulers all idle, simulated
/// (S1)).
#[cfg(feature = "sim")]
pub(crate) fn live_actors(shared: &crate::scheduler::Shared) -> Vec<ActorInfo> {
    (0..shared.slots.high_water())
        .filter_map(|i| {
            shared
                .slots
                .get(i as u32)
                .and_then(|slot| read(shared, slot, i as u32, None))
        })
        .filter(|info| !matches!(info.state, ActorState::Done))
        .map(with_extras)
        .collect()
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

/// Whether actors' heaps are accounted: the global allocator is
/// [`PreemptingAlloc::with_heap_accounting`](crate::PreemptingAlloc::with_heap_accounting),
/// so [`ActorInfo::heap_bytes`] is filled in and heap limits can be set.
pub fn heap_accounting() -> bool {
    crate::heap::installed()
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
    let (trap_exit, monitors, links, joiners, label) = {
        let cold = slot.cold.lock();
        if slot.word.load().generation() != pid.generation() {
            return None; // recycled meanwhile (I1)
        }
        let sig = crate::signal::signals_of(&cold);
        (
            sig.is_some_and(|s| s.trap.is_some()),
            sig.map_or(0, |s| s.monitors.len() as u32),
            sig.map_or(0, |s| s.links.len() as u32),
            u32::from(match &cold.joiner {
                Some(crate::slot::Joiner::Wait(j)) => is_waiting(shared, j.pid, j.epoch),
                Some(crate::slot::Joiner::Task(_)) => true,
                None => false,
            }),
            sig.and_then(|s| s.label.clone()),
        )
    };
    let supervisor = match slot.parent.load(Ordering::Relaxed) {
        0 => pid,
        bits => Pid::from_bits(bits),
    };
    let waiting_on = if state == ActorState::Parked {
        WaitingOn::from_u8(slot.waiting_on.load(Ordering::Relaxed))
    } else {
        None
    };
    let account = shared.accounts.as_ref().and_then(|a| a.cell(index));
    Some(ActorInfo {
        pid,
        label,
        names: Vec::new(),
        state,
        waiting_on,
        supervisor,
        trap_exit,
        monitors,
        links,
        joiners,
        mailbox_depth: 0,
        overruns: slot.overruns.load(Ordering::Relaxed),
        messages_received: 0,
        restarts: 0,
        next_restart: None,
        budget_cycles: cfg!(feature = "budget-accounting")
            .then(|| slot.budget.load(Ordering::Relaxed)),
        stack_bytes: cfg!(feature = "budget-accounting")
            .then(|| u64::from(slot.stack_depth.load(Ordering::Relaxed))),
        heap_bytes: account.map(|a| a.bytes()),
        heap_limit: account.and_then(|a| a.limit()),
        stack_pages: match (account, waiting_on) {
            (Some(_), _) if state == ActorState::Done => None,
            (Some(_), Some(WaitingOn::Hibernating)) => Some(0),
            (Some(a), _) => a.stack_pages(),
            (None, _) => None,
        },
    })
}

/// Whether the joiner registered as `(pid, epoch)` is still in that wait.
fn is_waiting(shared: &crate::scheduler::Shared, pid: Pid, epoch: u32) -> bool {
    shared.slots.get(pid.index()).is_some_and(|s| {
        let w = s.word.load();
        w.generation() == pid.generation() && w.epoch() == epoch && w.state() == State::Parked
    })
}

/// Fill names and mailbox depth from the runtime's extras hook (I2: no
/// lock held while it runs).
fn with_extras(mut info: ActorInfo) -> ActorInfo {
    if let Some(hook) = crate::actor::extras::extras_hook() {
        let extras = hook(info.pid);
        info.names = extras.names;
        info.mailbox_depth = extras.mailbox_depth;
        info.messages_received = extras.messages_received;
        info.restarts = extras.restarts;
        info.next_restart = extras.next_restart;
    }
    info
}
