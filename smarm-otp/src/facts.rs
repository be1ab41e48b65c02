//! What supervisors publish about themselves for introspection: the
//! restarts each has made and when its next delayed restart is due, per
//! supervisor pid, per runtime. Supervisors write it (`supervisor::restart`);
//! the registry's introspection hook reads it into `ActorInfo`. A leaf, so
//! neither of the two imports the other.

use smarm_core::Pid;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// What introspection shows of each supervisor of a runtime: restarts
/// made (`ActorInfo::restarts`) and the first delayed restart due
/// (`ActorInfo::next_restart`); an entry goes when its supervisor exits.
#[derive(Default)]
struct RestartCounts(std::sync::Mutex<HashMap<Pid, (u64, Option<Instant>)>>);

fn with_counts<R>(f: impl FnOnce(&mut HashMap<Pid, (u64, Option<Instant>)>) -> R) -> R {
    smarm_core::runtime::with_runtime_local::<RestartCounts, R>(|counts, _| {
        f(&mut counts.0.lock().unwrap_or_else(|e| e.into_inner()))
    })
}

/// Supervisor `me` restarted a child.
pub(crate) fn count_restart(me: Pid) {
    with_counts(|counts| counts.entry(me).or_default().0 += 1);
}

/// Restarts supervisor `pid` has made (0 for any other actor).
pub(crate) fn restarts_of(pid: Pid) -> u64 {
    with_counts(|counts| counts.get(&pid).map_or(0, |c| c.0))
}

/// How long until supervisor `pid`'s first delayed restart is due.
pub(crate) fn next_restart_of(pid: Pid) -> Option<Duration> {
    with_counts(|counts| counts.get(&pid).and_then(|c| c.1))
        .map(|at| at.saturating_duration_since(smarm_core::time::now()))
}

/// Supervisor `me`'s next delayed restart is due at `next` (or none is
/// waiting).
pub(crate) fn next_restart_at(me: Pid, next: Option<Instant>) {
    with_counts(|counts| match (counts.get_mut(&me), next) {
        (Some(entry), next) => entry.1 = next,
        (None, Some(next)) => {
            counts.insert(me, (0, Some(next)));
        }
        (None, None) => {}
    });
}

/// Supervisor `me` exited: its entry goes.
pub(crate) fn forget(me: Pid) {
    with_counts(|counts| counts.remove(&me));
}
