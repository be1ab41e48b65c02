//! A runtime's experiment state and the delay accounting of virtual
//! speedups: who owes how much delay, who pays it, who is credited.
//!
//! A virtual speedup of a region by `s` makes every other actor owe `s·t`
//! of delay whenever the region runs for `t` (Coz's method): the region's
//! own actor is credited with its own contribution, the others pay it,
//! and the experiment's effective duration is its wall time minus the
//! delay inserted. Levels are nanoseconds of delay on one runtime-wide
//! scale, `global` being the delay inserted so far:
//!
//! - an actor's *local* level is the delay it has paid or been credited
//!   with; it owes `global − level`;
//! - a scheduler's *paid* level is where its own pauses have brought it:
//!   an actor queued on it while it paused was delayed by that pause too,
//!   so an actor resumed there owes only from the higher of the two;
//! - the *floor* is set to `global` as each experiment starts: debts of
//!   an earlier experiment are forgiven, never carried into the next.
//!
//! The scheduler calls in at three places (`scheduler/causal.rs`): before
//! it resumes an actor (pay what is owed, or take the scheduler's level),
//! when the actor switches back (add the time it ran inside the selected
//! region), and at every wake (the woken actor inherits its waker's
//! level, so a delay already paid upstream is not paid again: Coz's
//! post-block rule).
//!
//! # Invariants
//!
//! - (D1) `global` only grows, and only by `speedup · t / 100` for a time
//!   `t` that an actor ran inside the selected region while `speedup` was
//!   the experiment's; the same amount is added to that actor's level.
//! - (D2) A level is only raised (`fetch_max`, or a store by the actor's
//!   exclusive runner), so a credit never turns into a debt.
//! - (D3) Outside a profiling session nothing is owed, credited or added:
//!   every hook first reads `active` and returns.
//!
//! No ordering is relied on: every access is relaxed. The levels are an
//! accounting, not a synchronisation: a race between a credit and a pause
//! can only move one payment by one increment (a debt paid at the next
//! resume instead of this one, or forgiven at the experiment's end), and
//! the wake that hands an actor to its scheduler already orders what the
//! waker wrote before it.

use crate::loom::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use crossbeam_utils::CachePadded;

/// Debts below this are left owing until they grow (paying costs a clock
/// read and a pause of its own; Coz likewise pays in batches).
pub(crate) const MIN_PAY_NANOS: u64 = 20_000;

/// The largest single pause (a scheduler paying one debt): a debt larger
/// than this is paid over several resumes, so a scheduler is never away
/// for longer than a fraction of the system monitor's threshold.
pub(crate) const MAX_PAUSE_NANOS: u64 = 2_000_000;

/// Profiling sessions running in this process, in any runtime: every
/// hook's first look, one load of a static, so that a build with the
/// feature pays only that while nothing is profiled (D3). A std atomic:
/// no loom model covers sessions.
static SESSIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Whether any runtime in this process is being profiled.
#[inline(always)]
pub(crate) fn any_session() -> bool {
    SESSIONS.load(std::sync::atomic::Ordering::Relaxed) != 0
}

/// One runtime's experiment state, beside its coordinator's clock.
pub(crate) struct Delays {
    /// A profiling session is on: regions register, resumes pay, wakes
    /// credit (D3).
    active: AtomicBool,
    /// The region being sped up, as its id + 1; 0 for none (a baseline, or
    /// between experiments).
    selected: AtomicU32,
    /// The selected region's virtual speedup, in percent (0..=100).
    speedup: AtomicU32,
    /// The delay inserted so far, in nanoseconds (D1). Read at every
    /// resume and wake of a session: a line of its own.
    global: CachePadded<AtomicU64>,
    /// Every level below this counts as this (set as experiments start).
    floor: AtomicU64,
    /// Nanoseconds actors ran inside the selected region since the
    /// current experiment started.
    region_nanos: AtomicU64,
    /// Nanoseconds schedulers spent paying debts in the current
    /// experiment, and in how many pauses.
    paused_nanos: AtomicU64,
    pauses: AtomicU64,
    /// The regions entered in this runtime since the session last looked
    /// (what it picks experiments from).
    entered: std::sync::Mutex<std::collections::BTreeSet<u32>>,
}

impl Default for Delays {
    fn default() -> Self {
        Delays {
            active: AtomicBool::new(false),
            selected: AtomicU32::new(0),
            speedup: AtomicU32::new(0),
            global: CachePadded::new(AtomicU64::new(0)),
            floor: AtomicU64::new(0),
            region_nanos: AtomicU64::new(0),
            paused_nanos: AtomicU64::new(0),
            pauses: AtomicU64::new(0),
            entered: std::sync::Mutex::new(std::collections::BTreeSet::new()),
        }
    }
}

/// What a resume owes: the pause to take first, and the level the actor
/// has once it is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Owed {
    /// Nanoseconds to pause before resuming (0: nothing to pay now).
    pub(crate) pause: u64,
    /// The actor's level once the pause is taken (and the scheduler's,
    /// if it pauses).
    pub(crate) level: u64,
}

impl Delays {
    /// Whether a profiling session is on (D3). One relaxed load: the
    /// hooks' whole cost outside a session.
    #[inline(always)]
    pub(crate) fn active(&self) -> bool {
        any_session() && self.active.load(Ordering::Relaxed)
    }

    /// Start a profiling session, unless one is on already: whether it
    /// started.
    pub(crate) fn try_begin(&self) -> bool {
        let began = self
            .active
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        if began {
            SESSIONS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        began
    }

    /// Start or end a profiling session. Ending one deselects its region.
    pub(crate) fn set_active(&self, on: bool) {
        if !on {
            self.select(None, 0);
        }
        if self.active.swap(on, Ordering::SeqCst) != on {
            if on {
                SESSIONS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            } else {
                SESSIONS.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
    }

    /// Start an experiment: speed `region` (an id, `None` for a baseline
    /// with no region) up by `speedup` percent, forgiving every debt so
    /// far and zeroing the experiment's counters.
    pub(crate) fn select(&self, region: Option<u32>, speedup: u32) {
        self.selected.store(0, Ordering::SeqCst);
        self.speedup.store(speedup.min(100), Ordering::SeqCst);
        self.floor
            .store(self.global.load(Ordering::SeqCst), Ordering::SeqCst);
        self.region_nanos.store(0, Ordering::SeqCst);
        self.paused_nanos.store(0, Ordering::SeqCst);
        self.pauses.store(0, Ordering::SeqCst);
        self.selected
            .store(region.map_or(0, |r| r + 1), Ordering::SeqCst);
    }

    /// The selected region's id + 1, or 0.
    #[inline]
    pub(crate) fn selected(&self) -> u32 {
        self.selected.load(Ordering::Relaxed)
    }

    /// The delay inserted so far (nanoseconds).
    #[inline]
    pub(crate) fn global(&self) -> u64 {
        self.global.load(Ordering::Relaxed)
    }

    /// Nanoseconds the selected region ran since the experiment started.
    pub(crate) fn region_nanos(&self) -> u64 {
        self.region_nanos.load(Ordering::Relaxed)
    }

    /// Nanoseconds schedulers paused since the experiment started.
    #[cfg(test)]
    pub(crate) fn paused_nanos(&self) -> u64 {
        self.paused_nanos.load(Ordering::Relaxed)
    }

    /// An actor of level `local` is about to be resumed by a scheduler of
    /// level `paid`: what it owes. Debts under [`MIN_PAY_NANOS`] wait;
    /// one pause is at most [`MAX_PAUSE_NANOS`].
    #[inline]
    pub(crate) fn owed(&self, local: u64, paid: u64) -> Owed {
        let level = local.max(paid).max(self.floor.load(Ordering::Relaxed));
        let debt = self.global().saturating_sub(level);
        if debt < MIN_PAY_NANOS {
            return Owed { pause: 0, level };
        }
        let pause = debt.min(MAX_PAUSE_NANOS);
        Owed {
            pause,
            level: level + pause,
        }
    }

    /// Region `id` was entered in this runtime.
    pub(crate) fn entered(&self, id: u32) {
        crate::lock::lock_std(&self.entered).insert(id);
    }

    /// The regions entered since the last call, by id.
    pub(crate) fn take_entered(&self) -> Vec<u32> {
        std::mem::take(&mut *crate::lock::lock_std(&self.entered))
            .into_iter()
            .collect()
    }

    /// A scheduler paused for `nanos` to pay a debt.
    pub(crate) fn paused(&self, nanos: u64) {
        self.paused_nanos.fetch_add(nanos, Ordering::Relaxed);
        self.pauses.fetch_add(1, Ordering::Relaxed);
    }

    /// Pauses taken since the experiment started.
    #[cfg(test)]
    pub(crate) fn pauses(&self) -> u64 {
        self.pauses.load(Ordering::Relaxed)
    }

    /// An actor ran `nanos` inside region `region` (id + 1, or 0 for none)
    /// and `actor_region` (its own, as an actor, id + 1 or 0): if either is
    /// the selected region, add the delay that time inserts (D1) and
    /// return it, for the actor's own level.
    #[inline]
    pub(crate) fn ran(&self, region: u32, actor_region: u32, nanos: u64) -> u64 {
        let selected = self.selected();
        if selected == 0 || (region != selected && actor_region != selected) {
            return 0;
        }
        self.region_nanos.fetch_add(nanos, Ordering::Relaxed);
        let delay = nanos * u64::from(self.speedup.load(Ordering::Relaxed)) / 100;
        if delay > 0 {
            self.global.fetch_add(delay, Ordering::Relaxed);
        }
        delay
    }

    /// The level a wake passes on when no actor is the waker (a timer, an
    /// IO event, a thread outside the runtime): everything inserted so
    /// far, since a shifted timer already waited it out and the outside
    /// world is not slowed down.
    #[inline]
    pub(crate) fn outside_level(&self) -> u64 {
        self.global()
    }
}

/// The level of an actor woken with level `level`, having opened its wait
/// when `waited_at` was inserted, now that `global` is, by a waker of
/// level `waker` (Coz's rule after a blocking call): the delay inserted
/// while it waited is skipped, as far as the waker has paid it (a waker
/// that still owes passes its debt on, as if it had paid before waking);
/// what it owed before it waited stays owed. Never lower than `level`
/// (D2).
#[inline]
pub(crate) fn woken_level(level: u64, waited_at: u64, global: u64, waker: u64) -> u64 {
    let skipped = level.saturating_add(global.saturating_sub(waited_at));
    level.max(skipped.min(waker))
}

/// Raise `local` to `level` (D2).
#[inline]
pub(crate) fn credit(local: &AtomicU64, level: u64) {
    local.fetch_max(level, Ordering::Relaxed);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A session with region 3 selected at `speedup` percent.
    fn experiment(speedup: u32) -> Delays {
        let d = Delays::default();
        d.set_active(true);
        d.select(Some(3), speedup);
        d
    }

    #[test]
    fn the_selected_region_inserts_its_speedup_of_its_time() {
        let d = experiment(50); // region 3 is selected: 4 as id + 1
        assert_eq!(d.ran(5, 0, 1_000_000), 0, "another region inserts nothing");
        assert_eq!(d.ran(0, 0, 1_000_000), 0, "no region inserts nothing");
        assert_eq!(d.global(), 0);
        assert_eq!(d.ran(4, 0, 1_000_000), 500_000, "a user region");
        assert_eq!(d.ran(0, 4, 1_000), 500, "the actor as a region");
        assert_eq!(d.ran(4, 4, 1_000), 500, "both at once count once");
        assert_eq!(d.global(), 501_000);
        assert_eq!(d.region_nanos(), 1_002_000);
    }

    #[test]
    fn a_zero_speedup_times_the_region_and_inserts_nothing() {
        let d = experiment(0);
        assert_eq!(d.ran(4, 0, 1_000_000), 0);
        assert_eq!(d.global(), 0);
        assert_eq!(d.region_nanos(), 1_000_000);
    }

    #[test]
    fn an_actor_owes_what_was_inserted_past_its_level() {
        let d = experiment(100);
        d.ran(4, 0, 500_000);
        assert_eq!(
            d.owed(0, 0),
            Owed {
                pause: 500_000,
                level: 500_000
            },
            "a fresh actor pays it all"
        );
        assert_eq!(
            d.owed(0, 500_000),
            Owed {
                pause: 0,
                level: 500_000
            },
            "a scheduler that paid it covers the actors it resumes"
        );
        assert_eq!(
            d.owed(500_000, 0),
            Owed {
                pause: 0,
                level: 500_000
            },
            "the region's own actor was credited as it ran"
        );
        assert_eq!(
            d.owed(500_000 - MIN_PAY_NANOS + 1, 0),
            Owed {
                pause: 0,
                level: 500_000 - MIN_PAY_NANOS + 1
            },
            "a small debt waits"
        );
        d.ran(4, 0, 5 * MAX_PAUSE_NANOS);
        assert_eq!(
            d.owed(0, 0),
            Owed {
                pause: MAX_PAUSE_NANOS,
                level: MAX_PAUSE_NANOS
            },
            "a large debt is paid a bounded pause at a time"
        );
    }

    #[test]
    fn a_new_experiment_forgives_every_debt() {
        let d = experiment(100);
        d.ran(4, 0, 300_000);
        assert_eq!(d.owed(0, 0).pause, 300_000);
        d.select(Some(7), 30);
        assert_eq!(
            d.owed(0, 0),
            Owed {
                pause: 0,
                level: 300_000
            }
        );
        assert_eq!(d.region_nanos(), 0);
        assert_eq!(
            d.ran(4, 0, 1_000),
            0,
            "the old region is no longer selected"
        );
        assert_eq!(d.ran(8, 0, 1_000), 300);
    }

    #[test]
    fn outside_a_session_nothing_is_inserted() {
        let d = experiment(100);
        d.set_active(false);
        assert!(!d.active());
        assert_eq!(d.ran(4, 4, 1_000_000), 0);
        assert_eq!(d.global(), 0);
    }

    #[test]
    fn a_wake_skips_the_delay_inserted_while_waiting_as_far_as_the_waker_paid() {
        // Owed 30 before waiting at 100; 50 inserted meanwhile.
        let (level, waited_at, global) = (70, 100, 150);
        assert_eq!(
            woken_level(level, waited_at, global, 150),
            120,
            "a waker that paid everything: the 50 skipped, the 30 still owed"
        );
        assert_eq!(
            woken_level(level, waited_at, global, 110),
            110,
            "a waker that owes 40 passes that on"
        );
        assert_eq!(
            woken_level(level, waited_at, global, 60),
            70,
            "a waker further behind takes nothing away"
        );
        assert_eq!(woken_level(150, 150, 150, 150), 150, "nothing inserted");
    }

    #[test]
    fn a_credit_only_raises_a_level() {
        let local = AtomicU64::new(0);
        credit(&local, 10);
        credit(&local, 5);
        assert_eq!(local.load(Ordering::Relaxed), 10);
    }
}
