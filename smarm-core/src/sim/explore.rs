//! Many seeds, and what to do with a failing one: [`Sim::check`] runs a
//! range of seeds, [`Sim::shrink`] reduces a failure to the fewest
//! perturbations that still show it, and [`Sim::test`] (what
//! `#[smarm::sim::test]` calls) does both, after checking the first
//! seed's determinism.

use super::{Sim, SimError, Strategy};
use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

/// How big a run was: what shrinking makes smaller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunSize {
    /// Scheduler turns.
    pub steps: u64,
    /// Actors preempted at a safepoint.
    pub preemptions: u64,
    /// Simulated schedulers.
    pub schedulers: usize,
}

impl fmt::Display for RunSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} scheduler turns, {} preemptions, {} schedulers",
            self.steps, self.preemptions, self.schedulers
        )
    }
}

/// A failure, and the smallest simulation found that still fails so.
#[derive(Debug)]
pub struct Shrunk {
    /// The reduced simulation (its `Display` is the code that replays it).
    pub sim: Sim,
    /// How the reduced run failed.
    pub error: SimError,
    /// The failing run before shrinking.
    pub before: RunSize,
    /// The reduced run.
    pub after: RunSize,
}

impl fmt::Display for Shrunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}\nshrunk from {} to {}; replay: {}",
            self.error, self.before, self.after, self.sim
        )
    }
}

/// The code that builds this simulation (its non-default settings; a
/// custom [`Config`](crate::runtime::Config) is not shown).
impl fmt::Display for Sim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let default = Sim::new(self.seed);
        write!(f, "Sim::new({})", self.seed)?;
        let (s, d) = (&self.settings, &default.settings);
        if s.runtime_faults {
            write!(f, ".runtime_faults(true)")?;
        }
        if s.kill_one_in != d.kill_one_in {
            write!(f, ".kill_one_in({})", s.kill_one_in)?;
        }
        if s.killable.is_some() {
            write!(f, ".killable(/* the test's */)")?;
        }
        if let Some(l) = &s.liveness {
            write!(
                f,
                ".liveness({:?}, Duration::from_nanos({}), Duration::from_nanos({}), /* the test's */)",
                l.name, l.quiet_at, l.within
            )?;
        }
        if self.swarm {
            // Replays as drawn; `resolved` shows the settings.
            return write!(f, ".swarm()");
        }
        if self.schedulers != default.schedulers {
            write!(f, ".schedulers({})", self.schedulers)?;
        }
        if let Strategy::Pct { depth, steps } = self.strategy {
            write!(
                f,
                ".strategy(Strategy::Pct {{ depth: {depth}, steps: {steps} }})"
            )?;
        }
        if s.preempt_one_in != d.preempt_one_in {
            write!(f, ".preempt_one_in({})", s.preempt_one_in)?;
        }
        if s.step_time_nanos != d.step_time_nanos {
            write!(f, ".step_time(Duration::from_nanos({}))", s.step_time_nanos)?;
        }
        if s.timer_lateness_nanos != d.timer_lateness_nanos {
            write!(
                f,
                ".timer_lateness(Duration::from_nanos({}))",
                s.timer_lateness_nanos
            )?;
        }
        if s.max_steps != d.max_steps {
            write!(f, ".max_steps({})", s.max_steps)?;
        }
        Ok(())
    }
}

/// The seeds to run: `seeds`, or the one in `SMARM_SIM_SEED`.
fn seeds_from_env(seeds: Range<u64>, caller: &str) -> Vec<u64> {
    match std::env::var("SMARM_SIM_SEED") {
        Ok(seed) => match seed.trim().parse() {
            Ok(seed) => vec![seed],
            Err(_) => panic!("smarm::sim::{caller}: SMARM_SIM_SEED={seed:?} is not a seed (a u64)"),
        },
        Err(_) => seeds.collect(),
    }
}

impl Sim {
    /// Run `f` once per seed in `seeds` (or only the seed in the
    /// environment variable `SMARM_SIM_SEED`, to replay a failure), the
    /// other settings as configured: the runs' digests, or the first
    /// failure, which names its seed.
    ///
    /// ```
    /// use smarm::sim::Sim;
    ///
    /// let checked = Sim::new(0).check(0..20, || {
    ///     let (tx, rx) = smarm::channel::channel();
    ///     for i in 0..3 {
    ///         let tx = tx.clone();
    ///         smarm::spawn(move || tx.send(i).unwrap());
    ///     }
    ///     let total: i32 = (0..3).map(|_| rx.recv().unwrap()).sum();
    ///     assert_eq!(total, 3);
    /// });
    /// assert_eq!(checked.unwrap().len(), 20);
    /// ```
    ///
    /// # Panics
    ///
    /// As [`run`](Sim::run), and if `SMARM_SIM_SEED` is set but not a
    /// number.
    pub fn check(
        &self,
        seeds: Range<u64>,
        f: impl Fn() + Send + Sync + 'static,
    ) -> Result<Vec<u64>, SimError> {
        let f = Arc::new(f);
        let seeds = seeds_from_env(seeds, "Sim::check");
        let mut digests = Vec::with_capacity(seeds.len());
        for seed in seeds {
            let g = f.clone();
            let run = self.clone().seed(seed).run(move || g())?;
            digests.push(run.digest);
        }
        Ok(digests)
    }

    /// Reduce this simulation's failure of `f`: turn preemptions down and
    /// then off, smarm's fault sites off, kills down and then off, run on
    /// one scheduler, take the jitter out of steps and timers, keeping
    /// each change under which the seed still fails the same way. `None`
    /// if this simulation does not fail.
    ///
    /// ```
    /// use smarm::sim::Sim;
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use std::sync::Arc;
    ///
    /// // A racy read-modify-write: two actors, a yield between the read
    /// // and the write.
    /// let racy = || {
    ///     let n = Arc::new(AtomicU32::new(0));
    ///     let kids: Vec<_> = (0..2)
    ///         .map(|_| {
    ///             let n = n.clone();
    ///             smarm::spawn(move || {
    ///                 let v = n.load(Ordering::Relaxed);
    ///                 smarm::yield_now();
    ///                 n.store(v + 1, Ordering::Relaxed);
    ///             })
    ///         })
    ///         .collect();
    ///     kids.into_iter().for_each(|k| k.join().unwrap());
    ///     assert_eq!(n.load(Ordering::Relaxed), 2, "an update was lost");
    /// };
    /// let sim = Sim::new(0).schedulers(4).preempt_one_in(2);
    /// let seed = sim.check(0..100, racy).unwrap_err().seed().unwrap();
    /// let shrunk = sim.seed(seed).shrink(racy).unwrap();
    /// assert!(shrunk.after.steps <= shrunk.before.steps);
    /// println!("{shrunk}");
    /// ```
    pub fn shrink(&self, f: impl Fn() + Send + Sync + 'static) -> Option<Shrunk> {
        let f = Arc::new(f);
        let attempt = |sim: &Sim| {
            let g = f.clone();
            let (result, size) = sim.run_logged(move || g());
            (result.err(), size)
        };
        // A swarm simulation shrinks from the settings its seed drew.
        let this = self.resolved();
        let (Some(error), before) = attempt(&this) else {
            return None;
        };
        let kind = std::mem::discriminant(&error);
        let mut best = (this, error, before);
        let keep_if_fails = |candidate: Sim, best: &mut (Sim, SimError, RunSize)| {
            if let (Some(error), size) = attempt(&candidate)
                && std::mem::discriminant(&error) == kind
            {
                *best = (candidate, error, size);
                true
            } else {
                false
            }
        };
        // A rate of `one in n` made a quarter as frequent while that still
        // fails, then zero.
        let rarer = |best: &mut (Sim, SimError, RunSize),
                     rate: fn(&Sim) -> u32,
                     set: fn(Sim, u32) -> Sim| {
            while (1..=1 << 20).contains(&rate(&best.0)) {
                let fewer = rate(&best.0) * 4;
                if !keep_if_fails(set(best.0.clone(), fewer), best) {
                    break;
                }
            }
            if rate(&best.0) > 0 {
                keep_if_fails(set(best.0.clone(), 0), best);
            }
        };
        rarer(
            &mut best,
            |s| s.settings.preempt_one_in,
            Sim::preempt_one_in,
        );
        // Fewer faults: smarm's sites off, then fewer kills.
        if best.0.settings.runtime_faults {
            keep_if_fails(best.0.clone().runtime_faults(false), &mut best);
        }
        rarer(&mut best, |s| s.settings.kill_one_in, Sim::kill_one_in);
        if best.0.schedulers > 1 {
            keep_if_fails(best.0.clone().schedulers(1), &mut best);
        }
        if best.0.settings.timer_lateness_nanos > 0 {
            keep_if_fails(best.0.clone().timer_lateness(Duration::ZERO), &mut best);
        }
        if best.0.settings.step_time_nanos > 0 {
            keep_if_fails(best.0.clone().step_time(Duration::ZERO), &mut best);
        }
        let (sim, error, after) = best;
        Some(Shrunk {
            sim,
            error,
            before,
            after,
        })
    }

    /// What `#[smarm::sim::test]` runs: check that the first seed replays
    /// exactly, run every seed (or `SMARM_SIM_SEED`'s), and on a failure
    /// shrink it and panic with the failure, its sizes and the line that
    /// replays it.
    ///
    /// ```
    /// smarm::sim::Sim::new(0).test(0..50, || {
    ///     let child = smarm::spawn(|| 2 + 2);
    ///     assert_eq!(child.join().unwrap(), 4);
    /// });
    /// ```
    ///
    /// # Panics
    ///
    /// On the first failing seed, as above.
    pub fn test(&self, seeds: Range<u64>, f: impl Fn() + Send + Sync + 'static) {
        let f = Arc::new(f);
        let seeds = seeds_from_env(seeds, "Sim::test");
        let fail = |sim: &Sim, e: SimError| -> ! {
            let g = f.clone();
            match sim.shrink(move || g()) {
                Some(shrunk) => panic!("{shrunk}"),
                None => panic!("{e}\nreplay: {} (drawn: {})", sim, sim.resolved()),
            }
        };
        if let Some(&first) = seeds.first() {
            let sim = self.clone().seed(first);
            let g = f.clone();
            if let Err(e) = sim.check_determinism(move || g()) {
                if matches!(e, SimError::Diverged { .. }) {
                    panic!("{e}");
                }
                fail(&sim, e);
            }
        }
        for seed in seeds {
            let sim = self.clone().seed(seed);
            let g = f.clone();
            if let Err(e) = sim.run(move || g()) {
                fail(&sim, e);
            }
        }
    }
}
