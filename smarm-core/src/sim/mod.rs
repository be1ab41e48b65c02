//! Deterministic simulation (feature `sim`): run actors on a runtime whose
//! schedulers share one OS thread and whose every choice (which scheduler
//! goes on, which runnable actor it takes, whether an actor is preempted
//! at a safepoint, the order of timers due together, how long a step
//! takes) is drawn from a seed, on a simulated clock. A seed replays its
//! run exactly: the same actors run in the same order and see the same
//! times, so a bug found once in ten thousand runs is found again at once,
//! under a debugger if need be.
//!
//! ```
//! use smarm::sim::Sim;
//! use std::time::Duration;
//!
//! let run = Sim::new(7).run(|| {
//!     let child = smarm::spawn(|| {
//!         smarm::time::sleep(Duration::from_secs(3600)); // an hour, simulated
//!         6 * 7
//!     });
//!     child.join().unwrap()
//! })
//! .unwrap();
//! assert_eq!(run.value, 42);
//! assert!(run.elapsed >= Duration::from_secs(3600));
//! // The same seed, the same run.
//! assert_eq!(Sim::new(7).run(|| ()).unwrap().digest, Sim::new(7).run(|| ()).unwrap().digest);
//! ```
//!
//! Time: [`smarm::time::now`](crate::time::now) and every timeout, sleep
//! and timer of the runtime and of the layers above read the simulated
//! clock, which moves only by the small step a scheduler's turn takes
//! and, when every actor waits, straight to the earliest timer: an hour of
//! timeouts passes in milliseconds. Code that reads `std::time::Instant`
//! itself sees real time.
//!
//! What a simulation finds: a root that panics (a failed assertion), a
//! deadlock (every actor waits and no timer is armed: the error names
//! each actor and what it waits on), a livelock (a step budget spent),
//! and, with [`Sim::check_determinism`], a run that a seed does not
//! replay (the first decision that differs). Faults, from the seed too:
//! actors killed at random ([`Sim::kill_one_in`]) and smarm's own fault
//! sites ([`Sim::runtime_faults`]), beside the program's own
//! (`smarm::buggify!()`, [`random`]).
//!
//! # Invariants
//!
//! - (M1) A simulation runs on the calling thread, outside any runtime,
//!   one at a time per thread; it starts no thread (runtime simulated (R1)).
//! - (M2) A run's choices come from its seed only (chooser (C1)); the
//!   decision log and digest record each (driver (D2)).
//! - (M3) Simulated time never goes back, and is the time every clock
//!   read of the runtime sees on the simulation's thread (clock (I2)).

mod chooser;
mod driver;
mod explore;
mod faults;
mod report;

pub use explore::{RunSize, Shrunk};
pub use report::DeadlockReport;

use crate::actor::Outcome;
use crate::config::{Config, ConfigError};
use crate::runtime::Runtime;
use crate::slot::Pid;
use std::sync::Arc;
use std::time::Duration;

/// How the next actor to run is chosen among the runnable ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Uniformly at random, at every pick.
    Random,
    /// Probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010):
    /// actors run by random priority, and at `depth - 1` random picks
    /// among the first `steps` the running actor drops to the lowest.
    /// Finds a bug that needs `depth` particular orderings far sooner than
    /// uniform picks do.
    Pct {
        /// Orderings the bug needs (1 or more).
        depth: u32,
        /// The picks a run is expected to take (where the change points
        /// are placed).
        steps: u64,
    },
}

/// A configured simulation: [`run`](Sim::run) it with a root closure.
///
/// ```
/// use smarm::sim::{Sim, Strategy};
///
/// let sim = Sim::new(42)
///     .schedulers(3)
///     .strategy(Strategy::Pct { depth: 2, steps: 200 })
///     .preempt_one_in(50);
/// let run = sim.run(|| smarm::spawn(|| 1).join().unwrap()).unwrap();
/// assert_eq!(run.value, 1);
/// assert_eq!(run.seed, 42);
/// ```
#[derive(Clone, Debug)]
pub struct Sim {
    seed: u64,
    schedulers: usize,
    strategy: Strategy,
    settings: Settings,
    config: Config,
    /// Each seed draws the settings above (swarm testing).
    swarm: bool,
    invariants: Vec<Invariant>,
}

/// A named check that holds after every scheduler turn.
#[derive(Clone)]
pub(crate) struct Invariant {
    pub(crate) name: &'static str,
    pub(crate) holds: Arc<dyn Fn() -> bool + Send + Sync>,
}

impl std::fmt::Debug for Invariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// The driver's part of a simulation's configuration.
#[derive(Clone, Debug)]
struct Settings {
    max_steps: u64,
    preempt_one_in: u32,
    step_time_nanos: u64,
    timer_lateness_nanos: u64,
    keep_decisions: bool,
    /// smarm's own fault sites on (`faults.rs`).
    runtime_faults: bool,
    kill_one_in: u32,
    killable: Option<faults::Killable>,
    liveness: Option<faults::Liveness>,
}

/// A run that ended well: the root's value and what the run was.
#[derive(Debug)]
pub struct SimRun<R> {
    /// What the root returned.
    pub value: R,
    /// The seed it ran from.
    pub seed: u64,
    /// A digest of every decision the run took: equal for two runs of one
    /// seed, and (almost always) different between seeds.
    pub digest: u64,
    /// Scheduler turns the run took.
    pub steps: u64,
    /// Simulated time from the run's start to its end.
    pub elapsed: Duration,
    /// Where the actors the schedulers ran came from.
    pub schedule: Schedule,
    /// The actors [`Sim::kill_one_in`] killed, in order.
    pub killed: Vec<Pid>,
    /// How many times smarm's own fault sites fired
    /// ([`Sim::runtime_faults`]).
    pub faults_fired: u64,
}

/// Where the actors a run's schedulers took came from: the scheduler's
/// own next slot, a sibling's queue, the injector; and how often an actor
/// ran on another scheduler than the one it ran on before.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Schedule {
    /// Actors taken, in all.
    pub picks: u64,
    /// Taken from the taking scheduler's next slot (the actor it woke or
    /// spawned last).
    pub next_slot: u64,
    /// Taken from a sibling scheduler's local queue.
    pub stolen: u64,
    /// Taken from the injector (woken from outside a scheduler).
    pub injector: u64,
    /// Run by another scheduler than the one that ran it last.
    pub migrations: u64,
}

impl Schedule {
    fn note(&mut self, from: crate::scheduler::simulated::Source, migrated: bool) {
        use crate::scheduler::simulated::Source;
        self.picks += 1;
        match from {
            Source::NextSlot => self.next_slot += 1,
            Source::Sibling => self.stolen += 1,
            Source::Injector => self.injector += 1,
            Source::Local | Source::Pinned => {}
        }
        self.migrations += u64::from(migrated);
    }
}

/// Why a simulated run failed. Each says its seed: run
/// [`Sim::new(seed)`](Sim::new) with the same settings (or set
/// `SMARM_SIM_SEED` for [`Sim::check`]) to replay it.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The root actor panicked (an assertion failed).
    #[error("seed {seed}: the root actor panicked at {elapsed:?} of simulated time: {message}{}", replay(*seed))]
    Panicked {
        /// The run's seed.
        seed: u64,
        /// The panic's message.
        message: String,
        /// When, in simulated time.
        elapsed: Duration,
    },
    /// The root actor was ended by another's exit (a link).
    #[error("seed {seed}: the root actor ended at {elapsed:?} of simulated time: {reason}{}", replay(*seed))]
    RootEnded {
        /// The run's seed.
        seed: u64,
        /// Why it ended.
        reason: String,
        /// When, in simulated time.
        elapsed: Duration,
    },
    /// Every actor waited, with no timer armed to wake one.
    #[error("seed {seed}: deadlock at {:?} of simulated time: {report}{}", report.elapsed, replay(*seed))]
    Deadlock {
        /// The run's seed.
        seed: u64,
        /// The actors that were waiting, and on what.
        report: DeadlockReport,
    },
    /// The run took more scheduler turns than [`Sim::max_steps`] allows
    /// (actors that keep each other busy forever, or a run too long for
    /// the budget).
    #[error("seed {seed}: still running after {steps} scheduler turns (a livelock, or raise Sim::max_steps){}", replay(*seed))]
    Livelock {
        /// The run's seed.
        seed: u64,
        /// The budget it spent.
        steps: u64,
    },
    /// A check given to [`Sim::invariant`] did not hold after a turn.
    #[error("seed {seed}: invariant \"{name}\" broken after scheduler turn {step}, at {elapsed:?} of simulated time{}", replay(*seed))]
    Invariant {
        /// The run's seed.
        seed: u64,
        /// The invariant's name.
        name: &'static str,
        /// The turn after which it did not hold.
        step: u64,
        /// When, in simulated time.
        elapsed: Duration,
    },
    /// The condition of [`Sim::liveness`] did not come to hold within its
    /// deadline after the faults stopped (or by the end of the run).
    #[error("seed {seed}: liveness \"{name}\" did not hold within {within:?} of the faults stopping at {quiet_at:?} of simulated time{}", replay(*seed))]
    Liveness {
        /// The run's seed.
        seed: u64,
        /// The condition's name.
        name: &'static str,
        /// When the faults stopped, in simulated time.
        quiet_at: Duration,
        /// How long after that it had to hold.
        within: Duration,
    },
    /// Two runs of one seed took different decisions: something the
    /// actors read is not part of the simulation (a `HashMap`'s random
    /// order, `std::time`, a thread, the OS's randomness).
    #[error(
        "seed {seed}: not deterministic: decision {step} differs between two runs of the seed \
         (first: {first}; second: {second}): look for HashMap/HashSet iteration, \
         std::time, threads or OS randomness in what the actors do before it{}", replay(*seed)
    )]
    Diverged {
        /// The run's seed.
        seed: u64,
        /// The index of the first differing decision.
        step: usize,
        /// That decision in the first run.
        first: String,
        /// That decision in the second run (or "the run ended").
        second: String,
    },
    /// The runtime configuration was out of range.
    #[error("smarm::sim: {0}")]
    Config(#[from] ConfigError),
}

fn replay(seed: u64) -> String {
    format!(
        "; replay with Sim::new({seed}) and the same settings (SMARM_SIM_SEED={seed} for \
         Sim::check and #[smarm::sim::test])"
    )
}

impl SimError {
    /// The seed of the failed run (`None` for a configuration error).
    pub fn seed(&self) -> Option<u64> {
        match self {
            SimError::Panicked { seed, .. }
            | SimError::RootEnded { seed, .. }
            | SimError::Deadlock { seed, .. }
            | SimError::Livelock { seed, .. }
            | SimError::Invariant { seed, .. }
            | SimError::Liveness { seed, .. }
            | SimError::Diverged { seed, .. } => Some(*seed),
            SimError::Config(_) => None,
        }
    }
}

/// One decision of a run (driver (D2)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decision {
    /// A scheduler loop went on.
    Resume { at: u64, scheduler: usize },
    /// A scheduler took `pid`, one of `of` candidates.
    Pick {
        at: u64,
        scheduler: usize,
        pid: Pid,
        of: usize,
    },
    /// Simulated time jumped to the next timer.
    Time { at: u64 },
    /// The fault plan killed `pid`.
    Kill { at: u64, pid: Pid },
}

impl Decision {
    fn words(&self) -> [u64; 4] {
        match *self {
            Decision::Resume { at, scheduler } => [1, at, scheduler as u64, 0],
            Decision::Pick {
                at,
                scheduler,
                pid,
                of,
            } => [2, at, pid.to_bits(), (scheduler as u64) << 32 | of as u64],
            Decision::Time { at } => [3, at, 0, 0],
            Decision::Kill { at, pid } => [4, at, pid.to_bits(), 0],
        }
    }
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Decision::Resume { at, scheduler } => write!(
                f,
                "scheduler {scheduler} went on at {:?}",
                Duration::from_nanos(at)
            ),
            Decision::Pick {
                at,
                scheduler,
                pid,
                of,
            } => write!(
                f,
                "scheduler {scheduler} ran actor {pid} (one of {of} runnable) at {:?}",
                Duration::from_nanos(at)
            ),
            Decision::Time { at } => {
                write!(f, "time jumped to {:?}", Duration::from_nanos(at))
            }
            Decision::Kill { at, pid } => {
                write!(
                    f,
                    "actor {pid} was killed at {:?}",
                    Duration::from_nanos(at)
                )
            }
        }
    }
}

impl Sim {
    /// A simulation of seed `seed`: two schedulers, [`Strategy::Random`],
    /// no preemption at safepoints, steps of up to 10 µs of simulated
    /// time, timers late by up to 1 ms, and a budget of ten million
    /// scheduler turns.
    pub fn new(seed: u64) -> Sim {
        Sim {
            seed,
            schedulers: 2,
            strategy: Strategy::Random,
            settings: Settings {
                max_steps: 10_000_000,
                preempt_one_in: 0,
                step_time_nanos: 10_000,
                timer_lateness_nanos: 1_000_000,
                keep_decisions: false,
                runtime_faults: false,
                kill_one_in: 0,
                killable: None,
                liveness: None,
            },
            config: Config::exact(2),
            swarm: false,
            invariants: Vec::new(),
        }
    }

    /// Simulate `n` schedulers (1..=64): actors migrate between them, as
    /// on threads.
    pub fn schedulers(mut self, n: usize) -> Sim {
        self.schedulers = n;
        self
    }

    /// How the next actor is chosen.
    pub fn strategy(mut self, strategy: Strategy) -> Sim {
        self.strategy = strategy;
        self
    }

    /// The most scheduler turns a run may take before it is reported as
    /// a [`SimError::Livelock`].
    pub fn max_steps(mut self, steps: u64) -> Sim {
        self.settings.max_steps = steps;
        self
    }

    /// Preempt an actor at a safepoint (`check!()`, a preempting
    /// allocation) once in `n` safepoints on average (0: never, the
    /// default), as an expired timeslice does on threads.
    pub fn preempt_one_in(mut self, n: u32) -> Sim {
        self.settings.preempt_one_in = n;
        self
    }

    /// Each scheduler turn takes up to `max` of simulated time, drawn
    /// from the seed (default 10 µs): timeouts race the work around them.
    pub fn step_time(mut self, max: Duration) -> Sim {
        self.settings.step_time_nanos = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX);
        self
    }

    /// A timer that simulated time jumps to (every actor waiting) fires
    /// late by up to `max`, drawn from the seed (default 1 ms), as on a
    /// loaded machine: a timeout that races a slightly earlier event is
    /// sometimes lost to it. Timers are never early.
    pub fn timer_lateness(mut self, max: Duration) -> Sim {
        self.settings.timer_lateness_nanos = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX);
        self
    }

    /// The runtime's configuration (its scheduler count is
    /// [`schedulers`](Sim::schedulers)'; the system monitor and spares
    /// are off in a simulation).
    pub fn config(mut self, config: Config) -> Sim {
        self.config = config;
        self
    }

    /// Swarm testing: each seed also draws the simulation's settings
    /// (schedulers 1 to 4, the strategy, how often safepoints preempt,
    /// step times and timer lateness), so a range of seeds covers
    /// configurations too; a failure prints the configuration it drew
    /// ([`resolved`](Sim::resolved)).
    ///
    /// ```
    /// use smarm::sim::Sim;
    ///
    /// let sim = Sim::new(8).swarm();
    /// println!("seed 8 runs as {}", sim.resolved()); // the drawn settings
    /// assert_eq!(sim.run(|| 1).unwrap().value, 1);
    /// ```
    pub fn swarm(mut self) -> Sim {
        self.swarm = true;
        self
    }

    /// Check `holds` after every scheduler turn; the first turn after
    /// which it does not fails the run with [`SimError::Invariant`]. It
    /// runs between actors, outside any: it reads state the test shares
    /// with them (an `Arc<Mutex<..>>`, atomics), and calls no actor API.
    ///
    /// ```
    /// use smarm::sim::{Sim, SimError};
    /// use std::sync::atomic::{AtomicI64, Ordering};
    /// use std::sync::Arc;
    ///
    /// let balance = Arc::new(AtomicI64::new(100));
    /// let b = balance.clone();
    /// let sim = Sim::new(1).invariant("the balance is never negative", move || {
    ///     b.load(Ordering::Relaxed) >= 0
    /// });
    /// let err = sim
    ///     .run(move || {
    ///         balance.fetch_sub(150, Ordering::Relaxed);
    ///         smarm::yield_now();
    ///     })
    ///     .unwrap_err();
    /// assert!(matches!(err, SimError::Invariant { .. }), "{err}");
    /// ```
    pub fn invariant(
        mut self,
        name: &'static str,
        holds: impl Fn() -> bool + Send + Sync + 'static,
    ) -> Sim {
        self.invariants.push(Invariant {
            name,
            holds: Arc::new(holds),
        });
        self
    }

    /// The settings this simulation runs with: itself, or for a
    /// [`swarm`](Sim::swarm) simulation the ones its seed draws (its
    /// `Display` is the code that builds it).
    pub fn resolved(&self) -> Sim {
        if !self.swarm {
            return self.clone();
        }
        let mut draw = chooser::Rng::new(self.seed, chooser::SWARM);
        let mut sim = self.clone();
        sim.swarm = false;
        sim.schedulers = 1 + draw.below(4) as usize;
        sim.strategy = match draw.below(3) {
            0 => Strategy::Pct {
                depth: 2 + draw.below(2) as u32,
                steps: 1_000,
            },
            _ => Strategy::Random,
        };
        sim.settings.preempt_one_in = [0, 0, 3, 20][draw.below(4) as usize];
        sim.settings.step_time_nanos = [0, 1_000, 10_000, 100_000][draw.below(4) as usize];
        sim.settings.timer_lateness_nanos =
            [0, 100_000, 1_000_000, 10_000_000][draw.below(4) as usize];
        // Faults stay the test's choice; a seed draws how hard they come.
        if sim.settings.runtime_faults {
            sim.settings.runtime_faults = draw.below(2) == 0;
        }
        let n = sim.settings.kill_one_in;
        if n > 0 {
            sim.settings.kill_one_in =
                [0, n, n.saturating_mul(4), (n / 4).max(1)][draw.below(4) as usize];
        }
        sim
    }

    /// This simulation with seed `seed`.
    pub fn seed(mut self, seed: u64) -> Sim {
        self.seed = seed;
        self
    }

    /// Run `f` as the root actor under the simulation; its value, or why
    /// the run failed.
    ///
    /// # Panics
    ///
    /// If called from inside an actor or a simulation (M1), or if a
    /// scheduler loop itself panics (a bug of the runtime's).
    pub fn run<R: Send + 'static>(
        &self,
        f: impl FnOnce() -> R + Send + 'static,
    ) -> Result<SimRun<R>, SimError> {
        self.run_logged(f).0.map(|(run, _)| run)
    }

    /// Run `f` twice from this seed and compare every decision: the first
    /// run's result, or [`SimError::Diverged`] naming the first decision
    /// that differs.
    ///
    /// ```
    /// use smarm::sim::Sim;
    ///
    /// let run = Sim::new(3).check_determinism(|| {
    ///     let kids: Vec<_> = (0..4).map(|i| smarm::spawn(move || i)).collect();
    ///     kids.into_iter().map(|k| k.join().unwrap()).sum::<i32>()
    /// });
    /// assert_eq!(run.unwrap().value, 6);
    /// ```
    ///
    /// # Panics
    ///
    /// As [`run`](Sim::run).
    pub fn check_determinism<R: Send + 'static>(
        &self,
        f: impl Fn() -> R + Send + Sync + 'static,
    ) -> Result<SimRun<R>, SimError> {
        let f = Arc::new(f);
        let mut sim = self.clone();
        sim.settings.keep_decisions = true;
        let g = f.clone();
        let first = sim.run_logged(move || g()).0;
        let g = f;
        let second = sim.run_logged(move || g()).0;
        let (first_log, second_log): (&[Decision], &[Decision]) = match (&first, &second) {
            (Ok((_, a)), Ok((_, b))) => (a, b),
            _ => (&[], &[]),
        };
        if let Some(step) = (0..first_log.len().max(second_log.len()))
            .find(|&i| first_log.get(i) != second_log.get(i))
        {
            let say =
                |d: Option<&Decision>| d.map_or("the run ended".to_string(), |d| d.to_string());
            return Err(SimError::Diverged {
                seed: self.seed,
                step,
                first: say(first_log.get(step)),
                second: say(second_log.get(step)),
            });
        }
        match (first, second) {
            (Ok((run, _)), Ok(_)) => Ok(run),
            (Err(e), _) => Err(e),
            (Ok(_), Err(e)) => Err(SimError::Diverged {
                seed: self.seed,
                step: 0,
                first: "the run succeeded".to_string(),
                second: format!("the run failed: {e}"),
            }),
        }
    }

    /// [`run`](Sim::run), with the decision log when it is kept, and the
    /// run's size however it ended.
    fn run_logged<R: Send + 'static>(
        &self,
        f: impl FnOnce() -> R + Send + 'static,
    ) -> (Logged<R>, RunSize) {
        let mut size = RunSize {
            steps: 0,
            preemptions: 0,
            schedulers: self.schedulers,
        };
        let result = self.run_sized(f, &mut size);
        (result, size)
    }

    fn run_sized<R: Send + 'static>(
        &self,
        f: impl FnOnce() -> R + Send + 'static,
        size: &mut RunSize,
    ) -> Logged<R> {
        if !crate::scheduler::current_worker().is_null() {
            panic!(
                "smarm::sim::Sim::run called from inside an actor: run simulations from a \
                 test's own thread"
            );
        }
        if crate::scheduler::simulated::active() {
            panic!("smarm::sim::Sim::run called inside a simulation: simulations do not nest");
        }
        if self.swarm {
            return self.resolved().run_sized(f, size);
        }
        let config = self.config.clone().threads(self.schedulers);
        crate::clock::simulated::start();
        let _clock = ClockGuard;
        let rt = Runtime::new_simulated(config)?;
        let chooser = chooser::Chooser::new(self.seed, self.strategy);
        let mut driven = None;
        let (value, outcome) = rt.run_simulated(f, |shared| {
            let d = driver::drive(shared, &self.settings, &self.invariants, chooser);
            let finished = d.finished;
            driven = Some(d);
            finished
        });
        let Some(driven) = driven else {
            unreachable!("run_simulated always drives")
        };
        if !driven.finished {
            // Its actors' frames are suspended for good (driver (D3)).
            std::mem::forget(rt);
        }
        if let Some(payload) = driven.panic {
            std::panic::resume_unwind(payload);
        }
        size.steps = driven.log.steps;
        size.preemptions = driven.log.preemptions;
        let elapsed = elapsed();
        let seed = self.seed;
        let root_failed = matches!(outcome, Some(Outcome::Panic(_) | Outcome::Ended(_)));
        let stuck = driven.stuck.filter(|s| !(root_failed && s.at_end()));
        if let Some(stuck) = stuck {
            return Err(match stuck {
                Stuck::Deadlock(report) => SimError::Deadlock { seed, report },
                Stuck::Livelock { steps } => SimError::Livelock { seed, steps },
                Stuck::Invariant { name, step, at } => SimError::Invariant {
                    seed,
                    name,
                    step,
                    elapsed: at,
                },
                Stuck::Liveness {
                    name,
                    quiet_at,
                    within,
                    ..
                } => SimError::Liveness {
                    seed,
                    name,
                    quiet_at: Duration::from_nanos(quiet_at),
                    within: Duration::from_nanos(within),
                },
            });
        }
        match outcome {
            Some(Outcome::Panic(payload)) => {
                return Err(SimError::Panicked {
                    seed,
                    message: crate::actor::outcome::panic_message(&*payload),
                    elapsed,
                });
            }
            Some(Outcome::Ended(reason)) => {
                return Err(SimError::RootEnded {
                    seed,
                    reason: reason.to_string(),
                    elapsed,
                });
            }
            _ => {}
        }
        let Some(value) = value else {
            return Err(SimError::RootEnded {
                seed,
                reason: "it was stopped before returning a value".to_string(),
                elapsed,
            });
        };
        Ok((
            SimRun {
                value,
                seed,
                digest: driven.log.digest.0,
                steps: driven.log.steps,
                elapsed,
                schedule: driven.log.schedule,
                killed: driven.log.killed,
                faults_fired: driven.log.faults_fired,
            },
            driven.log.decisions,
        ))
    }
}

/// A run and its decision log, or its failure.
type Logged<R> = Result<(SimRun<R>, Vec<Decision>), SimError>;

/// Why a run was stopped before its end.
enum Stuck {
    Deadlock(DeadlockReport),
    Livelock {
        steps: u64,
    },
    Invariant {
        name: &'static str,
        step: u64,
        at: Duration,
    },
    Liveness {
        name: &'static str,
        quiet_at: u64,
        within: u64,
        /// Found unmet when the run ended, before its deadline.
        at_end: bool,
    },
}

impl Stuck {
    /// Whether this was found only as the run ended (a root that failed
    /// is the better report then).
    fn at_end(&self) -> bool {
        matches!(self, Stuck::Liveness { at_end: true, .. })
    }
}

/// Real time again when the simulation ends, however it ends.
struct ClockGuard;

impl Drop for ClockGuard {
    fn drop(&mut self) {
        crate::clock::simulated::stop();
    }
}

/// Simulated time since this thread's simulation began.
///
/// ```
/// let run = smarm::sim::Sim::new(1).run(|| {
///     smarm::time::sleep(std::time::Duration::from_secs(5));
///     smarm::sim::elapsed()
/// });
/// assert!(run.unwrap().value >= std::time::Duration::from_secs(5));
/// ```
///
/// # Panics
///
/// Outside a simulation.
pub fn elapsed() -> Duration {
    match crate::clock::simulated::get() {
        Some(clock) => clock.elapsed(),
        None => panic!(
            "smarm::sim::elapsed called outside a simulation: use smarm::time::now outside one"
        ),
    }
}

/// A random number from the simulation's seed, for a test's own fault
/// injection (which actor a chaos actor kills, and when): replayed with
/// the seed, like every other choice of the run.
///
/// ```
/// use smarm::sim::Sim;
///
/// let draw = || (0..3).map(|_| smarm::sim::random() % 100).collect::<Vec<_>>();
/// assert_eq!(Sim::new(5).run(draw).unwrap().value, Sim::new(5).run(draw).unwrap().value);
/// ```
///
/// # Panics
///
/// Outside a simulation (a test's chaos has no place outside one; for a
/// fault site in code that also ships, use `smarm::buggify!()`).
pub fn random() -> u64 {
    match crate::scheduler::simulated::random() {
        Some(n) => n,
        None => panic!(
            "smarm::sim::random called outside a simulation: run the test under \
             smarm::sim::Sim or #[smarm::sim::test]"
        ),
    }
}

/// Whether the fault site `site` fires now: always `false` outside a
/// simulation; inside one, the run turns each site on or off when it is
/// first reached (one in four on), and an enabled site fires once in 20
/// times (FoundationDB's BUGGIFY). Use it through `smarm::buggify!()`,
/// which names the site by its place in the source.
pub fn buggify_at(site: &'static str) -> bool {
    crate::scheduler::simulated::buggify(site).unwrap_or(false)
}

/// Whether this code runs inside a simulation (on its thread).
pub fn is_simulated() -> bool {
    crate::clock::simulated::get().is_some()
}

fn elapsed_nanos() -> u64 {
    crate::clock::simulated::get().map_or(0, |c| c.elapsed().as_nanos() as u64)
}

/// Move simulated time `by` forward (M3).
fn advance(by: Duration) {
    if let Some(clock) = crate::clock::simulated::get() {
        crate::clock::simulated::advance_to(clock.elapsed() + by);
    }
}
