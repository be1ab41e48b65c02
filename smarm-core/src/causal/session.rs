//! A profiling session: Coz's experiment loop, run against one runtime's
//! [`Delays`].
//!
//! The first window only discovers which regions run. Then, until the
//! session's time is up: pick a region that was entered during the last
//! window (uniformly) and a virtual speedup (0% about a quarter of the
//! time, else 5% to 100% in 5% steps), run the window, record what every
//! progress point did and the window's effective length (wall time minus
//! the delay inserted), and cool off with nothing selected so the debts
//! of one experiment never reach the next. A window starts at
//! `Settings::window` and doubles (up to 16 times that) while some point
//! it saw move counted fewer than `MIN_VISITS` in it; it halves back once
//! every point counts well over that.
//!
//! The loop is given its sleep and its clock: the profiler's windows are
//! on the wall clock (an actor's `sleep_wall`, or a thread's sleep), never
//! on the virtual clock the experiments shift.

use super::delay::Delays;
use super::profile::{Delta, Experiment, MIN_VISITS, PointDelta, Profile};
use super::progress::{ProgressCount, progress_points};
use super::region;
use crate::lock::lock_std;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// How a profiling session runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// How long the whole session runs (wall time).
    pub duration: Duration,
    /// The shortest experiment window (Coz's is 500 ms).
    pub window: Duration,
    /// The pause between experiments, with nothing sped up.
    pub cool_off: Duration,
    /// Only regions whose names contain one of these (all when empty).
    pub regions: Vec<String>,
}

impl Settings {
    /// A session of `duration` with Coz's window (500 ms) and a 10 ms
    /// cool-off, over every region.
    pub fn new(duration: Duration) -> Self {
        Settings {
            duration,
            window: Duration::from_millis(500),
            cool_off: Duration::from_millis(10),
            regions: Vec::new(),
        }
    }

    /// Experiment windows of at least `window` instead of 500 ms.
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// Only the regions whose names contain `part` (repeatable; all
    /// regions when never called).
    pub fn only(mut self, part: impl Into<String>) -> Self {
        self.regions.push(part.into());
        self
    }

    fn admits(&self, name: &str) -> bool {
        self.regions.is_empty() || self.regions.iter().any(|p| name.contains(p.as_str()))
    }
}

/// The latest finished session's profile in this process (for the
/// observer).
static LATEST: Mutex<Option<Profile>> = Mutex::new(None);

/// The profile of the latest profiling session to finish in this
/// process, if any.
///
/// ```
/// let _latest: Option<smarm_core::causal::Profile> = smarm_core::causal::latest_profile();
/// ```
pub fn latest_profile() -> Option<Profile> {
    lock_std(&LATEST).clone()
}

/// Speedups in 5% steps, with `ZERO_WEIGHT` draws of 0% among
/// `ZERO_WEIGHT + 20` (Coz's weights: about a quarter of experiments are
/// baselines).
const ZERO_WEIGHT: u64 = 7;
const STEPS: u64 = 20;

/// A small xorshift generator (no dependency for a choice of regions).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// A speedup in percent.
    fn speedup(&mut self) -> u32 {
        match self.below(ZERO_WEIGHT + STEPS) {
            r if r < ZERO_WEIGHT => 0,
            r => ((r - ZERO_WEIGHT + 1) * 100 / STEPS) as u32,
        }
    }
}

/// What a session is given: the runtime's delays, how to wait out a
/// window on the wall clock, the wall clock in nanos, and whether to end
/// early.
pub(crate) struct Runner<'a> {
    pub(crate) delays: &'a Delays,
    pub(crate) sleep: &'a dyn Fn(Duration),
    pub(crate) now: &'a dyn Fn() -> u64,
    pub(crate) stop: &'a dyn Fn() -> bool,
}

/// Run a session as `settings` say, on delays whose session the caller
/// began (`Delays::try_begin`); the profile is also kept as the latest
/// one.
pub(crate) fn run(runner: &Runner<'_>, settings: &Settings) -> Profile {
    let Runner {
        delays,
        sleep,
        now,
        stop,
    } = *runner;
    let start = now();
    let end = start.saturating_add(nanos(settings.duration));
    let mut rng = Rng(start | 1);
    let mut experiments = Vec::new();
    let mut window = settings.window;
    let _ = delays.take_entered();
    sleep(window.min(Duration::from_nanos(end.saturating_sub(now()))));
    while now() < end && !stop() {
        let candidates: Vec<u32> = delays
            .take_entered()
            .into_iter()
            .filter(|id| region::info(*id).is_some_and(|r| settings.admits(r.name)))
            .collect();
        let left = Duration::from_nanos(end.saturating_sub(now()));
        if candidates.is_empty() {
            sleep(window.min(left));
            continue;
        }
        if left < settings.window {
            break; // too short for a window: no half experiments
        }
        let region = candidates[rng.below(candidates.len() as u64) as usize];
        let speedup = rng.speedup();
        let experiment = run_one(runner, region, speedup, window.min(left));
        window = next_window(window, settings.window, &experiment);
        experiments.push(experiment);
        delays.select(None, 0);
        sleep(settings.cool_off);
    }
    delays.set_active(false);
    let profile = Profile::new(experiments);
    *lock_std(&LATEST) = Some(profile.clone());
    profile
}

/// One experiment: `region` sped up by `speedup` percent for `window`.
fn run_one(runner: &Runner<'_>, region: u32, speedup: u32, window: Duration) -> Experiment {
    let before = counts();
    let inserted = runner.delays.global();
    let t0 = (runner.now)();
    runner.delays.select(Some(region), speedup);
    (runner.sleep)(window);
    let t1 = (runner.now)();
    let inserted = runner.delays.global() - inserted;
    let region_time = runner.delays.region_nanos();
    runner.delays.select(None, 0);
    let after = counts();
    Experiment {
        region: region::info(region).map_or_else(String::new, |r| r.name.to_owned()),
        speedup: f64::from(speedup) / 100.0,
        duration: Duration::from_nanos((t1 - t0).saturating_sub(inserted)),
        region_time: Duration::from_nanos(region_time),
        points: after
            .iter()
            .map(|(name, count)| PointDelta {
                name: (*name).to_owned(),
                delta: delta(before.get(name).copied(), *count),
            })
            .collect(),
    }
}

/// Every progress point's counts, by name.
fn counts() -> HashMap<&'static str, ProgressCount> {
    progress_points().into_iter().collect()
}

/// A point's counts over a window, from its counts before (`None`: not yet
/// visited) and after.
fn delta(before: Option<ProgressCount>, after: ProgressCount) -> Delta {
    match after {
        ProgressCount::Throughput { visits } => {
            let was = match before {
                Some(ProgressCount::Throughput { visits }) => visits,
                _ => 0,
            };
            Delta::Throughput {
                visits: visits.saturating_sub(was),
            }
        }
        ProgressCount::Latency { begins, ends } => {
            let (b0, e0) = match before {
                Some(ProgressCount::Latency { begins, ends }) => (begins, ends),
                _ => (0, 0),
            };
            Delta::Latency {
                arrivals: begins.saturating_sub(b0),
                departures: ends.saturating_sub(e0),
                in_flight: begins.saturating_sub(ends),
            }
        }
    }
}

/// The next window: doubled (up to 16 times the shortest) while some point
/// that moved saw fewer than `MIN_VISITS`, halved (down to the shortest)
/// once every one saw four times that.
fn next_window(window: Duration, shortest: Duration, experiment: &Experiment) -> Duration {
    let counted = experiment.points.iter().filter_map(|p| match p.delta {
        Delta::Throughput { visits } => (visits > 0).then_some(visits),
        Delta::Latency { departures, .. } => (departures > 0).then_some(departures),
    });
    match counted.min() {
        Some(fewest) if fewest < MIN_VISITS => (window * 2).min(shortest * 16),
        Some(fewest) if fewest >= 4 * MIN_VISITS => (window / 2).max(shortest),
        _ => window,
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn about_a_quarter_of_speedups_are_baselines_and_the_rest_in_five_percent_steps() {
        let mut rng = Rng(12345);
        let draws: Vec<u32> = (0..27_000).map(|_| rng.speedup()).collect();
        let zeros = draws.iter().filter(|s| **s == 0).count();
        assert!(
            (6_000..8_000).contains(&zeros),
            "{zeros} baselines in 27,000"
        );
        assert!(draws.iter().all(|s| *s <= 100 && s % 5 == 0));
        assert!(draws.contains(&5) && draws.contains(&100));
    }

    #[test]
    fn a_window_doubles_while_a_point_counts_too_few_and_halves_back() {
        let ms = Duration::from_millis;
        let with = |visits: u64| Experiment {
            region: "r".into(),
            speedup: 0.0,
            duration: ms(500),
            region_time: ms(1),
            points: vec![
                PointDelta {
                    name: "quiet".into(),
                    delta: Delta::Throughput { visits: 0 },
                },
                PointDelta {
                    name: "p".into(),
                    delta: Delta::Throughput { visits },
                },
            ],
        };
        assert_eq!(next_window(ms(500), ms(500), &with(3)), ms(1000));
        assert_eq!(next_window(ms(8000), ms(500), &with(3)), ms(8000));
        assert_eq!(next_window(ms(1000), ms(500), &with(100)), ms(500));
        assert_eq!(next_window(ms(500), ms(500), &with(100)), ms(500));
        assert_eq!(next_window(ms(1000), ms(500), &with(10)), ms(1000));
    }

    #[test]
    fn a_latency_delta_counts_the_window_and_what_is_still_in_flight() {
        let before = Some(ProgressCount::Latency {
            begins: 10,
            ends: 8,
        });
        let after = ProgressCount::Latency {
            begins: 25,
            ends: 20,
        };
        assert_eq!(
            delta(before, after),
            Delta::Latency {
                arrivals: 15,
                departures: 12,
                in_flight: 5
            }
        );
        assert_eq!(
            delta(None, ProgressCount::Throughput { visits: 4 }),
            Delta::Throughput { visits: 4 }
        );
    }
}
