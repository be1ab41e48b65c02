//! The system monitor: one thread per runtime that notices a scheduler
//! stuck inside one actor's run (a blocking system call, a std lock, a
//! loop with no safepoint) and keeps the rest of the runtime going, as Go's
//! sysmon and the BEAM's scheduler watchdog do.
//!
//! # Design
//!
//! Every half threshold it reads each scheduler's resume counter and the
//! actor it runs. A scheduler that has run the same actor, with no resume
//! since, for at least the threshold (`Config::blocked_after`) is
//! *blocked*. Then the monitor:
//!
//! - takes the actor in its next slot (the one the blocked actor last woke
//!   or spawned, which no other scheduler can reach) and queues it on the
//!   injector ([`NextSlot::steal`](super::next_slot::NextSlot::steal));
//! - wakes an idle scheduler if it moved something or the blocked
//!   scheduler's local queue holds actors (an idle scheduler steals them);
//! - records the blocked actor and since when, for
//!   [`snapshot`](crate::snapshot).
//!
//! Timers need nothing from it: an idle scheduler keeps them (park (I5)).
//! Actors pinned to the blocked scheduler still wait for it, and with a
//! single scheduler nothing else can run the moved work.
//!
//! # Invariants
//!
//! - (M1) The monitor moves only actors in a blocked scheduler's next slot,
//!   through the slot's own protocol (next slot (N1), (N2)); it never runs
//!   actors or touches their state.
//! - (M2) A scheduler's blocked record is written only by the monitor, and
//!   cleared once the scheduler resumes anything.

use super::Shared;
use crate::loom::{AtomicU64, Ordering};
use crate::slot::Pid;
use std::time::Duration;

/// What the monitor has seen of one scheduler (written by the monitor,
/// read by introspection, M2).
#[derive(Default)]
pub(crate) struct BlockedRecord {
    /// Pid bits of the actor the scheduler is blocked in; 0 if not blocked.
    actor: AtomicU64,
    /// Since when it has been running that actor (coordinator nanos).
    since: AtomicU64,
    /// Actors moved off this scheduler by the monitor.
    moved: AtomicU64,
}

impl BlockedRecord {
    /// The actor this scheduler is blocked in, and since when (coordinator
    /// nanos); `None` if it is not blocked.
    pub(crate) fn blocked(&self) -> Option<(Pid, u64)> {
        match self.actor.load(Ordering::Relaxed) {
            0 => None,
            bits => Some((Pid::from_bits(bits), self.since.load(Ordering::Relaxed))),
        }
    }

    /// Actors moved off this scheduler so far.
    pub(crate) fn moved(&self) -> u64 {
        self.moved.load(Ordering::Relaxed)
    }
}

/// The monitor's last reading of one scheduler.
#[derive(Clone, Copy, Default)]
struct Seen {
    resumes: u64,
    running: u64,
    /// When `running` was first seen with `resumes` (coordinator nanos).
    since: u64,
}

/// Run the monitor until `stop` says the runtime is done; `stop` is
/// checked at every tick, and the runtime unparks this thread to end it
/// promptly.
pub(crate) fn monitor(shared: &Shared, threshold: Duration, stop: impl Fn() -> bool) {
    let tick = threshold / 2;
    let threshold = threshold.as_nanos() as u64;
    let mut seen = vec![Seen::default(); shared.queues.len()];
    while !stop() {
        std::thread::park_timeout(tick);
        let now = shared.coord.now_nanos();
        for (q, seen) in shared.queues.iter().zip(seen.iter_mut()) {
            let resumes = q.stats.actors_run.load(Ordering::Relaxed);
            let running = q.stats.running.load(Ordering::Relaxed);
            if running == 0 || resumes != seen.resumes || running != seen.running {
                *seen = Seen {
                    resumes,
                    running,
                    since: now,
                };
                q.blocked.actor.store(0, Ordering::Relaxed);
                continue;
            }
            if now.saturating_sub(seen.since) < threshold {
                continue;
            }
            q.blocked.since.store(seen.since, Ordering::Relaxed);
            q.blocked.actor.store(running, Ordering::Relaxed);
            let moved = q.next.steal();
            if let Some(pid) = moved {
                shared.injector.push_back(pid);
                q.blocked.moved.fetch_add(1, Ordering::Relaxed);
            }
            if moved.is_some() || q.local.len() > 0 {
                shared.coord.wake_one_if_idle();
            }
        }
    }
}
