//! An actor's signal record ([`Signals`]: its monitors, links, exit
//! trapping and exit callbacks, and its label), how the slot holds it, and
//! the signals its exit sends.

use super::{Down, DownReason, Exit, MonitorId, deliver_exit};
use crate::hash::BuildWordHasher;
use crate::scheduler::Shared;
use crate::slot::Cold;
use crate::slot::Pid;
use crate::slot::word::State;
use std::collections::HashSet;

/// What a slot records about who watches and links to its actor, and the
/// actor's label: the slot's one record of rarely-set facts, allocated
/// only for an actor that has one.
#[derive(Default)]
pub(crate) struct Signals {
    pub(crate) monitors: Vec<(MonitorId, DownSink)>,
    pub(crate) links: Links,
    /// Where trapped exits go, while the actor traps them.
    pub(crate) trap: Option<ExitSink>,
    /// Why a link stopped this actor (its exit reason then).
    pub(crate) kill_reason: Option<DownReason>,
    /// Callbacks registered through [`on_exit`].
    pub(crate) exit_hooks: Vec<ExitHook>,
    /// The label it was spawned with (`Builder::name`), for introspection
    /// and reports.
    pub(crate) label: Option<String>,
    /// What the actor was handling when it crashed, as the behaviour
    /// running it noted ([`note_last_message`](crate::report::note_last_message)).
    pub(crate) last_message: Option<String>,
}

/// An actor's links: a short list, or a set once it grows past
/// [`Links::SMALL`], so a supervisor of 100,000 connections adds and
/// removes a link (one per child exit) in constant time, not a scan.
#[derive(Default)]
pub(crate) enum Links {
    #[default]
    None,
    Small(Vec<Pid>),
    Large(HashSet<Pid, BuildWordHasher>),
}

impl Links {
    /// Past this many links, a set.
    const SMALL: usize = 16;

    /// One link to `pid`.
    pub(crate) fn one(pid: Pid) -> Links {
        Links::Small(vec![pid])
    }

    /// Link to `pid` (once: a second insert is a no-op).
    pub(crate) fn insert(&mut self, pid: Pid) {
        match self {
            Links::None => *self = Links::one(pid),
            Links::Small(v) if v.contains(&pid) => {}
            Links::Small(v) if v.len() < Self::SMALL => v.push(pid),
            Links::Small(v) => {
                let mut set: HashSet<Pid, BuildWordHasher> = v.drain(..).collect();
                set.insert(pid);
                *self = Links::Large(set);
            }
            Links::Large(set) => {
                set.insert(pid);
            }
        }
    }

    /// Unlink `pid`, if linked.
    pub(crate) fn remove(&mut self, pid: Pid) {
        match self {
            Links::None => {}
            Links::Small(v) => {
                if let Some(i) = v.iter().position(|p| *p == pid) {
                    v.swap_remove(i);
                }
            }
            Links::Large(set) => {
                set.remove(&pid);
            }
        }
    }

    /// How many links.
    pub(crate) fn len(&self) -> usize {
        match self {
            Links::None => 0,
            Links::Small(v) => v.len(),
            Links::Large(set) => set.len(),
        }
    }

    /// Every linked pid, consuming the record (at exit).
    pub(crate) fn drain(self) -> Box<dyn Iterator<Item = Pid>> {
        match self {
            Links::None => Box::new(std::iter::empty()),
            Links::Small(v) => Box::new(v.into_iter()),
            Links::Large(set) => Box::new(set.into_iter()),
        }
    }
}

/// A callback run on a scheduler when an actor exits (see [`on_exit`]).
pub(crate) type ExitHook = Box<dyn FnOnce(Pid, DownReason) + Send>;

/// Where one monitor's `Down` goes: its channel, or a caller's function
/// (see [`monitor_with`](super::monitor_with)). Dropping it unsent closes
/// a channel monitor.
pub(crate) type DownSink = Box<dyn FnOnce(Down) + Send>;

/// Where a trapping actor's exits go: its channel, or its own function
/// (see [`trap_exit_with`](super::trap_exit_with)). Shared, so a delivery
/// clones it under the cold lock and calls it outside (I3).
pub(crate) type ExitSink = std::sync::Arc<dyn Fn(Exit) + Send + Sync>;

/// Run `f` on `pid`'s cold data and signal record if `pid` is still that
/// incarnation and has not finished; `None` otherwise (I2).
pub(crate) fn with_live_signals<R>(
    shared: &Shared,
    pid: Pid,
    f: impl FnOnce(&mut Signals, &mut Cold) -> R,
) -> Option<R> {
    let slot = shared.slots.get(pid.index())?;
    let mut cold = slot.cold.lock();
    let s = slot.word.load();
    if s.generation() != pid.generation() || matches!(s.state(), State::Vacant | State::Done) {
        return None;
    }
    // Taken out (not reallocated) so `f` can have the cold data too.
    let mut erased = cold
        .signals
        .take()
        .unwrap_or_else(|| erase_signals(Box::default()));
    let r = match (**erased).downcast_mut::<Signals>() {
        Some(signals) => f(signals, &mut cold),
        None => unreachable!("a slot's signal record is always a Signals"),
    };
    cold.signals = Some(erased);
    Some(r)
}

/// The slot's signal record, if it has one (the slot holds it
/// type-erased; it is always a `Signals`).
pub(crate) fn signals_of(cold: &Cold) -> Option<&Signals> {
    cold.signals.as_deref()?.downcast_ref()
}

/// Box a signal record the way the slot holds it.
pub(crate) fn erase_signals(signals: Box<Signals>) -> Box<Box<dyn std::any::Any + Send>> {
    Box::new(signals)
}

/// Take the slot's signal record (at finalisation, or to update it).
pub(crate) fn take_signals(cold: &mut Cold) -> Option<Box<Signals>> {
    (*cold.signals.take()?).downcast().ok()
}

/// Tell `pid`'s monitors and links that it exited with `reason` (called by
/// finalisation, outside the cold lock).
pub(crate) fn notify_exit(shared: &Shared, pid: Pid, reason: DownReason, signals: Signals) {
    for (_, deliver) in signals.monitors {
        let reason = reason.clone();
        contain(|| deliver(Down { pid, reason }));
    }
    for linked in signals.links.drain() {
        deliver_exit(shared, pid, reason.clone(), linked);
    }
    for hook in signals.exit_hooks {
        let reason = reason.clone();
        contain(|| hook(pid, reason));
    }
}

/// Run a user's sink or exit callback where its panic must go no further:
/// on a scheduler, during another actor's finalisation, an unwind would
/// take the scheduler down. The panic hook has reported it already; the
/// payload is dropped.
pub(crate) fn contain(f: impl FnOnce()) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn links_stay_a_set_across_the_switch_to_a_hash_set() {
        let pid = |i: u32| Pid::from_parts(i, 1);
        let mut links = Links::default();
        for round in 0..2 {
            for i in 0..100 {
                links.insert(pid(i));
            }
            assert_eq!(links.len(), 100, "round {round}: inserts are idempotent");
        }
        assert!(matches!(links, Links::Large(_)));
        for i in (0..100).step_by(2) {
            links.remove(pid(i));
        }
        links.remove(pid(1000)); // not linked: nothing happens
        let mut left: Vec<u32> = links.drain().map(|p| p.index()).collect();
        left.sort_unstable();
        assert_eq!(left, (1..100).step_by(2).collect::<Vec<_>>());
        let mut small = Links::one(pid(7));
        small.insert(pid(7));
        small.remove(pid(8));
        assert_eq!(small.len(), 1);
    }
}
