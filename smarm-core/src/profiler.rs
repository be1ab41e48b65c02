//! Causal profiling of a running runtime (feature `smarm-causal`): the
//! regions a profile can speed up, and the profiling session that runs
//! the experiments (`causal` has progress points, the profile and its
//! exports; `causal::delay` the accounting; `scheduler::causal` where
//! the scheduler pays and credits delays).
//!
//! A region is code whose speedup a profile predicts the effect of:
//! marked with [`region`] or a [`Region`] guard, every behaviour
//! callback (named by its server's type and the callback, automatically),
//! and every actor with a label or a registered name (`actor <name>`). Regions are only timed
//! while a session runs; outside one, opening a region is one load.
//!
//! # Invariants
//!
//! - (P1) One session at a time per runtime: a second `profile` panics,
//!   naming the call.
//! - (P2) A session's windows are on the wall clock (`sleep_wall`), so the
//!   delay its experiments insert never stretches them.

use crate::causal::Profile;
use crate::causal::Settings;
use crate::causal::session::{self, Runner};
use crate::scheduler;
use std::marker::PhantomData;
use std::time::Duration;

/// An open region: from [`Region::enter`] until it is dropped, the actor's
/// running time counts toward the region (the innermost one open). Not
/// `Send`: it belongs to the actor that opened it.
///
/// ```
/// smarm::run(|| {
///     let parsed = {
///         let _parse = smarm::causal::Region::enter("parse");
///         "42".parse::<u32>()
///     };
///     assert_eq!(parsed, Ok(42));
/// });
/// ```
#[must_use = "a region is open until the guard is dropped"]
pub struct Region {
    /// The region it replaced (id + 1), if it opened one.
    outer: Option<u32>,
    _actor: PhantomData<*const ()>,
}

impl Region {
    /// Open the region `name` for the running actor (outside an actor, or
    /// outside a profiling session, nothing is timed).
    #[inline]
    pub fn enter(name: &str) -> Region {
        Region {
            outer: scheduler::causal::open_region(|| crate::causal::region::enter_named(name)),
            _actor: PhantomData,
        }
    }
}

impl Drop for Region {
    #[inline]
    fn drop(&mut self) {
        if let Some(outer) = self.outer {
            scheduler::causal::close_region(outer);
        }
    }
}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region")
            .field("timed", &self.outer.is_some())
            .finish()
    }
}

/// Run `f` as the region `name`: what a causal profile predicts is the
/// effect of making `f` faster.
///
/// ```
/// smarm::run(|| {
///     let sum = smarm::causal::region("sum", || (1..=10u32).sum::<u32>());
///     assert_eq!(sum, 55);
/// });
/// ```
pub fn region<R>(name: &str, f: impl FnOnce() -> R) -> R {
    let _region = Region::enter(name);
    f()
}

/// The region of behaviour callback `callback` of `owner` (its server's
/// type name), named `owner::callback`: opened by the behaviours.
#[doc(hidden)]
#[inline]
pub fn callback_region(owner: &'static str, callback: &'static str) -> Region {
    Region {
        outer: scheduler::causal::open_region(|| {
            crate::causal::region::enter_callback(owner, callback)
        }),
        _actor: PhantomData,
    }
}

/// Make the calling actor the region `actor <name>`, unless it is one by
/// its label already: the registry calls this as an actor registers a
/// name.
#[doc(hidden)]
pub fn name_actor_region(name: &str) {
    scheduler::causal::name_running_actor(|| crate::causal::region::actor_region(name));
}

/// Profile the calling actor's runtime for `duration` (wall time) and
/// return the causal profile: Coz's experiments, with 500 ms windows
/// (see [`Settings`]). Blocks only the calling actor.
///
/// ```no_run
/// smarm::run(|| {
///     let worker = smarm::spawn(|| loop {
///         smarm::causal::region("work", || std::hint::black_box((0..1000u64).sum::<u64>()));
///         smarm::progress!("work done");
///     });
///     let profile = smarm::causal::profile(std::time::Duration::from_secs(30));
///     println!("{profile}");
///     smarm::request_stop(worker.pid());
/// });
/// ```
///
/// # Panics
///
/// Outside an actor, or while another session profiles the same runtime.
pub fn profile(duration: Duration) -> Profile {
    profile_with(Settings::new(duration))
}

/// [`profile`] with the session's settings given.
///
/// # Panics
///
/// Outside an actor, while another session profiles the same runtime, or
/// if `settings.window` is zero.
pub fn profile_with(settings: Settings) -> Profile {
    assert!(
        !settings.window.is_zero(),
        "smarm::causal::profile_with: Settings::window is zero; give experiments a window \
         (Coz's is 500 ms, the default)"
    );
    let shared =
        scheduler::with_current_actor("smarm::causal::profile", |_, shared| shared.to_arc());
    let delays = &shared.coord.causal;
    assert!(
        delays.try_begin(),
        "smarm::causal::profile: a profiling session already runs on this runtime; \
         wait for it to return (one session at a time)"
    );
    // Ends the session on an unwind too (a stop of the profiling actor).
    let _session = EndSession(delays);
    let runner = Runner {
        delays,
        sleep: &crate::time::sleep_wall,
        now: &|| shared.coord.now_nanos(),
        stop: &|| false,
    };
    session::run(&runner, &settings)
}

/// Ends a runtime's profiling session when dropped.
struct EndSession<'a>(&'a crate::causal::delay::Delays);

impl Drop for EndSession<'_> {
    fn drop(&mut self) {
        self.0.set_active(false);
    }
}

#[cfg(all(test, not(loom)))]
#[allow(clippy::disallowed_methods)] // real time: the delays are waited out on the OS clock
mod tests {
    //! The delay accounting on a live runtime, with the delay inserted by
    //! hand (region 0 selected at 100%, `Delays::ran`) instead of by a
    //! profile's random experiments, so every figure is determined.
    use crate::runtime::{Config, init};
    use crate::scheduler::Shared;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    const INSERTED: Duration = Duration::from_millis(600);

    fn shared() -> Arc<Shared> {
        crate::scheduler::with_current_actor("test", |_, shared| shared.to_arc())
    }

    /// Begin a session on the running actor's runtime with region 0
    /// selected at 100%.
    fn session() -> Arc<Shared> {
        let shared = shared();
        assert!(shared.coord.causal.try_begin());
        shared.coord.causal.select(Some(0), 100);
        shared
    }

    /// Insert `d` of delay, as region 0 running for `d` would.
    fn insert(shared: &Shared, d: Duration) {
        let nanos = d.as_nanos() as u64;
        assert_eq!(shared.coord.causal.ran(1, 0, nanos), nanos);
    }

    /// The running actor's level.
    fn my_level(shared: &Shared) -> u64 {
        let pid = crate::self_pid();
        shared.slots.get(pid.index()).map_or(0, |s| {
            s.causal.level.load(std::sync::atomic::Ordering::Relaxed)
        })
    }

    #[test]
    fn timers_wait_out_the_inserted_delay_and_wall_timers_do_not() {
        init(Config::exact(2)).run(|| {
            let shared = session();
            let t0 = Instant::now();
            let sleeper = crate::spawn(move || {
                crate::time::sleep(Duration::from_millis(20));
                t0.elapsed()
            });
            let wall_sleeper = crate::spawn(move || {
                crate::time::sleep_wall(Duration::from_millis(20));
                t0.elapsed()
            });
            let (tx, rx) = crate::channel::<&str>();
            crate::time::send_after_to(Duration::from_millis(20), &tx, "virtual");
            crate::time::send_after_to_wall(Duration::from_millis(20), &tx, "wall");
            let timeout = crate::spawn(move || {
                let (_keep, never) = crate::channel::<()>();
                let timed_out = never.recv_timeout(Duration::from_millis(20)).is_err();
                (timed_out, t0.elapsed())
            });
            crate::time::sleep_wall(Duration::from_millis(5)); // all of them waiting
            insert(&shared, INSERTED);
            assert_eq!(rx.recv().ok(), Some("wall"), "the wall timer fires first");
            assert!(t0.elapsed() < INSERTED, "the wall timer kept real time");
            assert_eq!(rx.recv().ok(), Some("virtual"));
            assert!(t0.elapsed() >= INSERTED + Duration::from_millis(20));
            let wall = wall_sleeper.join();
            assert!(
                wall.is_ok_and(|d| d < INSERTED),
                "sleep_wall kept real time"
            );
            let slept = sleeper.join().ok();
            assert!(
                slept.is_some_and(|d| d >= INSERTED + Duration::from_millis(20)),
                "sleep waited the delay out: {slept:?}"
            );
            let waited = timeout.join().ok();
            assert!(
                waited.is_some_and(|(out, d)| out && d >= INSERTED + Duration::from_millis(20)),
                "a bounded wait's timeout waited the delay out: {waited:?}"
            );
            shared.coord.causal.set_active(false);
        });
    }

    #[test]
    fn an_actor_that_owes_is_paused_before_it_resumes_and_then_is_level() {
        init(Config::exact(1)).run(|| {
            let shared = session();
            let delay = Duration::from_millis(1);
            insert(&shared, delay);
            // The test actor owes 1 ms; its next resume pays it.
            crate::yield_now();
            let paid = shared.coord.causal.paused_nanos();
            assert!(paid >= 1_000_000, "paid {paid} ns of a 1 ms debt");
            assert!(my_level(&shared) >= shared.coord.causal.global());
            // Level now: the next resume pays nothing.
            crate::yield_now();
            assert_eq!(shared.coord.causal.paused_nanos(), paid);
            // A new actor starts level: it owes nothing from before it.
            crate::spawn(|| ()).join().ok();
            assert_eq!(shared.coord.causal.paused_nanos(), paid);
            shared.coord.causal.set_active(false);
        });
    }

    #[test]
    fn actors_queued_behind_a_pause_were_delayed_by_it_and_pay_nothing_more() {
        init(Config::exact(1)).run(|| {
            let shared = session();
            let others: Vec<_> = (0..3).map(|_| crate::spawn(|| ())).collect();
            insert(&shared, Duration::from_millis(1)); // all four owe 1 ms
            // Queued behind them; the first one resumed pays, for all.
            crate::yield_now();
            for other in others {
                other.join().ok();
            }
            assert_eq!(
                shared.coord.causal.pauses(),
                1,
                "one pause paid the debt of every actor queued behind it"
            );
            shared.coord.causal.set_active(false);
        });
    }

    #[test]
    fn a_wake_credits_the_delay_inserted_during_the_wait_as_far_as_the_waker_paid() {
        init(Config::exact(1)).run(|| {
            let shared = session();
            let delay = Duration::from_millis(1);
            // Woken by a waker that has paid: nothing to pay.
            let (tx, rx) = crate::channel::<()>();
            let waiter = crate::spawn(move || rx.recv().ok());
            crate::yield_now(); // it waits
            insert(&shared, delay);
            crate::yield_now(); // the test actor pays its own debt
            let paid = shared.coord.causal.paused_nanos();
            assert!(paid >= 1_000_000);
            tx.send(()).ok();
            waiter.join().ok();
            assert_eq!(
                shared.coord.causal.paused_nanos(),
                paid,
                "a waiter woken by a waker that paid skips what was inserted while it waited"
            );
            // Woken by a waker that still owes: the debt passes on.
            let (tx, rx) = crate::channel::<()>();
            let waiter = crate::spawn(move || rx.recv().ok());
            crate::yield_now(); // it waits
            // The test actor owes 20 ms (more than any overshoot of its
            // earlier pause) and sends at once.
            insert(&shared, 20 * delay);
            tx.send(()).ok();
            let before = shared.coord.causal.paused_nanos();
            waiter.join().ok(); // the join parks us: the waiter resumes first
            assert!(
                shared.coord.causal.paused_nanos()
                    >= before + crate::causal::delay::MAX_PAUSE_NANOS,
                "the waiter paid (a pause's worth of) the debt its waker passed on"
            );
            shared.coord.causal.set_active(false);
        });
    }

    #[test]
    fn time_in_a_region_is_counted_only_while_it_is_selected() {
        init(Config::exact(1)).run(|| {
            let shared = shared();
            assert!(shared.coord.causal.try_begin());
            let id = crate::causal::region::enter_named("profiler-test work");
            shared.coord.causal.select(Some(id), 50);
            let level0 = my_level(&shared);
            super::region("profiler-test work", || {
                std::thread::sleep(Duration::from_millis(4));
            });
            super::region("profiler-test other", || {
                std::thread::sleep(Duration::from_millis(4));
            });
            let ran = shared.coord.causal.region_nanos();
            assert!(
                (4_000_000..40_000_000).contains(&ran),
                "region ran {ran} ns"
            );
            assert_eq!(
                shared.coord.causal.global(),
                ran / 2,
                "50% of its time inserted"
            );
            assert_eq!(
                my_level(&shared) - level0,
                ran / 2,
                "the region's own actor is credited its contribution"
            );
            shared.coord.causal.set_active(false);
        });
    }
}
