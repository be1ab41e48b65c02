//! What a simulation says of a deadlock: each actor still alive and what
//! it waits on, as introspection sees it.

use crate::introspect::ActorInfo;
use crate::scheduler::Shared;
use std::fmt;
use std::time::Duration;

/// The actors of a deadlocked run, when every scheduler was idle and no
/// timer armed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadlockReport {
    /// Simulated time at the deadlock.
    pub elapsed: Duration,
    /// Every actor still alive then.
    pub actors: Vec<ActorInfo>,
}

impl fmt::Display for DeadlockReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} actor(s) waiting:", self.actors.len())?;
        for a in &self.actors {
            let on = a
                .waiting_on
                .map_or_else(|| format!("{:?}", a.state), |w| format!("waits on {w:?}"));
            write!(
                f,
                " [{}{} {on}]",
                a.pid,
                crate::introspect::display::known_as(a)
            )?;
        }
        Ok(())
    }
}

/// The report of `shared`'s deadlock (every loop idle in the driver).
pub(super) fn deadlock(shared: &Shared) -> DeadlockReport {
    DeadlockReport {
        elapsed: super::elapsed(),
        actors: crate::introspect::live_actors(shared),
    }
}
