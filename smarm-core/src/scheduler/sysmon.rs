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
//! Each tick also runs the stack scavenger (stack (I3)), which returns the
//! pages of stacks that have stayed free beyond the pools' warm sets.
//!
//! Timers need nothing from it while some scheduler is idle: an idle
//! scheduler keeps them (park (I5)). Actors pinned to the blocked
//! scheduler still wait for it.
//!
//! When *every* running scheduler is blocked (one scheduler stuck in a
//! blocking call; an actor holding a std lock across a `smarm::sleep`
//! while the others wait on that lock), nothing would fire the timer or
//! take the IO wake that unblocks them. The monitor then starts a *spare*
//! scheduler thread, up to `Config::spare_threads`: a spare has its own id
//! past the regular schedulers (queues, parker, reclaimer and live-count
//! shard were made for it at start), runs the ordinary worker loop, and
//! leaves when it goes idle while some regular scheduler is not blocked
//! and no actor is pinned to it. A spare that blocks in turn may be
//! followed by another.
//!
//! # Invariants
//!
//! - (M1) The monitor moves only actors in a blocked scheduler's next slot,
//!   through the slot's own protocol (next slot (N1), (N2)); it never runs
//!   actors or touches their state.
//! - (M2) A scheduler's blocked record is written only by the monitor, and
//!   cleared once the scheduler resumes anything.
//! - (M3) A spare's bit in `Schedulers::present` is set by the monitor before
//!   its thread starts and cleared by that thread as its last act, after
//!   its queues are empty, it is offline to the reclaimer, and no actor is
//!   pinned to it. While the bit is clear no wake targets the spare (its
//!   idle bit is clear too) and nothing enqueues to it, and the monitor
//!   joins the old thread before starting one on the same id. The
//!   termination verdict counts only present schedulers.
//! - (M4) When every present scheduler is blocked and no spare can start
//!   (every one the configuration provides runs), the monitor reports it
//!   once per run through the function the runtime gave it, naming the
//!   blocked actors; not when spares are turned off.

use super::Shared;
use crate::loom::Ordering;
use crate::slot::Pid;
use std::sync::Arc;
use std::time::Duration;

impl Shared {
    /// Whether scheduler `id` is a spare (started only while every
    /// scheduler is blocked).
    pub(crate) fn is_spare(&self, id: usize) -> bool {
        id >= self.config().threads
    }

    /// Whether scheduler `id`'s thread is running (always, for a regular
    /// one).
    pub(crate) fn is_present(&self, id: usize) -> bool {
        self.sched.present.load(Ordering::Acquire) & (1u64 << id) != 0
    }

    /// Whether scheduler `id` is, right now, still inside the actor run
    /// the monitor last found it blocked in.
    fn still_blocked(&self, id: usize) -> bool {
        let q = &self.sched.queues[id];
        let actor = q.blocked.actor.load(Ordering::Relaxed);
        actor != 0
            && q.stats.running.load(Ordering::Relaxed) == actor
            && q.stats.actors_run.load(Ordering::Relaxed)
                == q.blocked.resumes.load(Ordering::Relaxed)
    }

    /// An idle spare may leave once some regular scheduler is not blocked
    /// (it will keep timers and take wakes) and no actor is pinned to the
    /// spare: one that parked while unwinding on it must resume on it
    /// (M3). Actors pin to a scheduler only while running on it, so an
    /// idle spare sees every pin it made.
    pub(crate) fn spare_may_leave(&self, id: usize) -> bool {
        let regular = self.config().threads;
        if (0..regular).all(|r| self.still_blocked(r)) {
            return false;
        }
        let pin = id as u32 + 1;
        !(0..self.slots.high_water() as u32).any(|i| {
            self.slots.get(i).is_some_and(|s| {
                crate::slot::table::pinned_scheduler(s.pinned.load(Ordering::Relaxed)) == pin
            })
        })
    }

    /// The spare thread of scheduler `id` is leaving: its last act (M3).
    pub(crate) fn spare_left(&self, id: usize) {
        self.sched
            .present
            .fetch_and(!(1u64 << id), Ordering::AcqRel);
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
pub(crate) fn monitor(
    shared: &Arc<Shared>,
    threshold: Duration,
    stop: impl Fn() -> bool,
    exhausted: impl Fn(usize, Vec<(Pid, Duration)>),
) {
    let mut reported = false;
    let tick = threshold / 2;
    let threshold = threshold.as_nanos() as u64;
    let mut seen = vec![Seen::default(); shared.sched.queues.len()];
    let mut spares: Vec<Option<std::thread::JoinHandle<()>>> =
        (0..shared.sched.queues.len()).map(|_| None).collect();
    while !stop() {
        std::thread::park_timeout(tick);
        crate::stack::scavenge();
        // IO readiness, for schedulers all stuck in blocking calls.
        shared.netpoll.poll_now(shared, tick);
        let now = shared.coord.now_nanos();
        for (q, seen) in shared.sched.queues.iter().zip(seen.iter_mut()) {
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
            q.blocked.resumes.store(resumes, Ordering::Relaxed);
            q.blocked.actor.store(running, Ordering::Relaxed);
            let moved = q.next.steal();
            if let Some(pid) = moved {
                shared.sched.injector.push_back(pid);
                q.blocked.moved.fetch_add(1, Ordering::Relaxed);
            }
            if moved.is_some() || q.local.len() > 0 {
                shared.coord.wake_one_if_idle();
            }
        }
        let everyone_blocked = (0..shared.sched.queues.len())
            .filter(|&id| shared.is_present(id))
            .all(|id| {
                shared.sched.queues[id]
                    .blocked
                    .actor
                    .load(Ordering::Relaxed)
                    != 0
            });
        let may_report = !reported && shared.config().spares() > 0; // 0: turned off
        if everyone_blocked && !start_spare(shared, &mut spares) && may_report {
            // No spare left: say so once per run, naming who blocks (M4).
            reported = true;
            let blocked: Vec<(Pid, Duration)> = (0..shared.sched.queues.len())
                .filter(|&id| shared.is_present(id))
                .filter_map(|id| shared.sched.queues[id].blocked.blocked())
                .map(|(pid, since)| (pid, Duration::from_nanos(now.saturating_sub(since))))
                .collect();
            exhausted(blocked.len(), blocked);
        }
    }
    for spare in spares.into_iter().flatten() {
        // A spare leaves at the end of the run like any scheduler.
        let _ = spare.join();
    }
}

/// Start a thread for the first spare scheduler not running, if any is
/// left (M3); `false` if none is.
fn start_spare(shared: &Arc<Shared>, spares: &mut [Option<std::thread::JoinHandle<()>>]) -> bool {
    let Some(id) =
        (shared.config().threads..shared.sched.queues.len()).find(|&id| !shared.is_present(id))
    else {
        return false;
    };
    if let Some(old) = spares[id].take() {
        let _ = old.join(); // it cleared its bit as its last act
    }
    shared.sched.present.fetch_or(1u64 << id, Ordering::AcqRel);
    let s = shared.clone();
    match std::thread::Builder::new()
        .name(format!("smarm-spare-{id}"))
        .spawn(move || super::worker::run_worker(&s, id))
    {
        Ok(handle) => {
            shared.sched.queues[id]
                .blocked
                .starts
                .fetch_add(1, Ordering::Relaxed);
            spares[id] = Some(handle);
            true
        }
        // No thread to be had: the runtime goes on as without spares.
        Err(_) => {
            shared.spare_left(id);
            false
        }
    }
}
