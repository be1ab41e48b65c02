//! Where a simulation's choices come from: seeded generators, one stream
//! per kind of choice, and the strategy that picks the next actor.
//!
//! # Invariants
//!
//! - (C1) Every choice is a function of the seed and of the choices made
//!   before it in the run: nothing else (no clock, no address, no hash
//!   seed) reaches a stream.
//! - (C2) Each kind of choice draws from a stream of its own, so turning
//!   one kind off (preemptions, when a failure is shrunk) leaves the
//!   others' draws where they were.

use super::Strategy;
use crate::slot::Pid;
use std::collections::BTreeMap;

/// SplitMix64: small, fast and well mixed; a stream per seed.
#[derive(Clone)]
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64, stream: u64) -> Rng {
        let mut rng = Rng(seed ^ stream.wrapping_mul(0xA076_1D64_78BD_642F));
        rng.next();
        rng
    }

    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform below `n` (`n` > 0), by Lemire's multiply-shift.
    pub(super) fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }

    /// `true` once in `n` draws on average (never for `n` = 0).
    pub(super) fn one_in(&mut self, n: u32) -> bool {
        n > 0 && self.below(u64::from(n)) == 0
    }
}

/// The streams (C2).
const PICK: u64 = 1;
const SCHEDULER: u64 = 2;
const PREEMPT: u64 = 3;
const ORDER: u64 = 4;
const TIME: u64 = 5;
const PCT: u64 = 6;
const FAULT: u64 = 7;
/// A swarm simulation's settings (`Sim::resolved`).
pub(super) const SWARM: u64 = 8;
const KILL: u64 = 9;
const RUNTIME_FAULT: u64 = 10;

/// A run's choices.
pub(super) struct Chooser {
    pick: Rng,
    scheduler: Rng,
    preempt: Rng,
    order: Rng,
    time: Rng,
    fault: Rng,
    kill: Rng,
    runtime_fault: Rng,
    /// Fault sites seen, the program's and smarm's own, and whether this
    /// run turned each on (looked up only, C1).
    sites: BTreeMap<&'static str, bool>,
    runtime_sites: BTreeMap<&'static str, bool>,
    pct: Option<Pct>,
    /// Actor picks so far.
    picks: u64,
}

/// Probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010):
/// every actor gets a random priority when first seen, the highest
/// runnable one runs, and at `depth - 1` random picks the actor picked
/// drops below every other. A bug that needs `d` orderings is found with
/// probability at least 1/(n k^(d-1)) per run, for n actors and k picks.
struct Pct {
    rng: Rng,
    /// Pick numbers at which the picked actor's priority drops, ascending.
    change_points: Vec<u64>,
    /// Priorities by pid bits (looked up only, never iterated for a
    /// choice, C1).
    priorities: BTreeMap<u64, u64>,
}

impl Chooser {
    pub(super) fn new(seed: u64, strategy: Strategy) -> Chooser {
        let pct = match strategy {
            Strategy::Random => None,
            Strategy::Pct { depth, steps } => {
                let mut rng = Rng::new(seed, PCT);
                let mut change_points: Vec<u64> = (1..depth.max(1))
                    .map(|_| 1 + rng.below(steps.max(1)))
                    .collect();
                change_points.sort_unstable();
                Some(Pct {
                    rng,
                    change_points,
                    priorities: BTreeMap::new(),
                })
            }
        };
        Chooser {
            pick: Rng::new(seed, PICK),
            scheduler: Rng::new(seed, SCHEDULER),
            preempt: Rng::new(seed, PREEMPT),
            order: Rng::new(seed, ORDER),
            time: Rng::new(seed, TIME),
            fault: Rng::new(seed, FAULT),
            kill: Rng::new(seed, KILL),
            runtime_fault: Rng::new(seed, RUNTIME_FAULT),
            sites: BTreeMap::new(),
            runtime_sites: BTreeMap::new(),
            pct,
            picks: 0,
        }
    }

    /// Which of `candidates` (never empty) runs next.
    pub(super) fn pick(&mut self, candidates: &[Pid]) -> usize {
        self.picks += 1;
        let Some(pct) = &mut self.pct else {
            return self.pick.below(candidates.len() as u64) as usize;
        };
        let low = pct.change_points.len() as u64;
        let mut best = (0, 0);
        for (i, pid) in candidates.iter().enumerate() {
            let rng = &mut pct.rng;
            // Initial priorities sit above every lowered one (`low`).
            let priority = *pct
                .priorities
                .entry(pid.to_bits())
                .or_insert_with(|| low + 1 + (rng.next() >> 1));
            if i == 0 || priority > best.1 {
                best = (i, priority);
            }
        }
        if let Some(k) = pct.change_points.iter().position(|&p| p == self.picks) {
            // The k-th change point: below every initial priority, and
            // below the ones lowered before it.
            pct.priorities
                .insert(candidates[best.0].to_bits(), low - k as u64);
        }
        best.0
    }

    /// Which of `n` runnable schedulers goes on.
    pub(super) fn scheduler(&mut self, n: usize) -> usize {
        self.scheduler.below(n as u64) as usize
    }

    /// Preempt at this safepoint (once in `one_in`)?
    pub(super) fn preempt(&mut self, one_in: u32) -> bool {
        self.preempt.one_in(one_in)
    }

    /// A number below `n`, for an order the runtime leaves open.
    pub(super) fn order(&mut self, n: usize) -> usize {
        self.order.below(n.max(1) as u64) as usize
    }

    /// A random number for the program's own faults.
    pub(super) fn random(&mut self) -> u64 {
        self.fault.next()
    }

    /// Whether fault site `site` fires: a run turns each site on with
    /// probability 1/4 when first reached, and an enabled site fires once
    /// in 20 times (FoundationDB's BUGGIFY).
    pub(super) fn buggify(&mut self, site: &'static str) -> bool {
        let fault = &mut self.fault;
        let on = *self.sites.entry(site).or_insert_with(|| fault.one_in(4));
        on && self.fault.one_in(20)
    }

    /// [`buggify`](Self::buggify) for one of smarm's own fault sites,
    /// from a stream of its own (C2).
    pub(super) fn runtime_fault(&mut self, site: &'static str) -> bool {
        let fault = &mut self.runtime_fault;
        let on = *self
            .runtime_sites
            .entry(site)
            .or_insert_with(|| fault.one_in(4));
        on && self.runtime_fault.one_in(20)
    }

    /// Kill an actor after this turn (once in `one_in` turns)?
    pub(super) fn kill(&mut self, one_in: u32) -> bool {
        self.kill.one_in(one_in)
    }

    /// Which of `n` (> 0) killable actors.
    pub(super) fn victim(&mut self, n: usize) -> usize {
        self.kill.below(n as u64) as usize
    }

    /// Simulated time a step takes, or a timer's lateness: up to `max`
    /// nanoseconds.
    pub(super) fn step_time(&mut self, max: u64) -> u64 {
        if max == 0 {
            0
        } else {
            self.time.below(max + 1)
        }
    }
}

/// The running digest of a run's decisions (FNV-1a over 64-bit words).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Digest(pub(super) u64);

impl Digest {
    pub(super) fn new() -> Digest {
        Digest(0xCBF2_9CE4_8422_2325)
    }

    pub(super) fn add(&mut self, word: u64) {
        for byte in word.to_le_bytes() {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01B3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_repeat_for_a_seed_and_differ_between_seeds_and_kinds() {
        let draw = |seed, stream| {
            let mut rng = Rng::new(seed, stream);
            (0..8).map(|_| rng.next()).collect::<Vec<_>>()
        };
        assert_eq!(draw(7, PICK), draw(7, PICK));
        assert_ne!(draw(7, PICK), draw(8, PICK));
        assert_ne!(draw(7, PICK), draw(7, PREEMPT));
    }

    #[test]
    fn below_is_uniform_enough() {
        let mut rng = Rng::new(1, PICK);
        let mut counts = [0u32; 5];
        for _ in 0..50_000 {
            counts[rng.below(5) as usize] += 1;
        }
        // 10,000 expected each; 5 sigma is about 450.
        assert!(
            counts.iter().all(|&c| (9_500..10_500).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn pct_runs_the_highest_priority_until_a_change_point_lowers_it() {
        let pids: Vec<Pid> = (1..=3).map(|i| Pid::from_bits(i << 32 | 1)).collect();
        let mut chooser = Chooser::new(3, Strategy::Pct { depth: 2, steps: 4 });
        let change = chooser.pct.as_ref().unwrap().change_points[0];
        let first = chooser.pick(&pids);
        let mut picked = vec![first];
        for _ in 1..6 {
            picked.push(chooser.pick(&pids));
        }
        // The same actor until the change point's pick, another after it.
        let at = change as usize;
        assert!(
            picked[..at].iter().all(|&p| p == first),
            "{picked:?} {change}"
        );
        assert!(
            picked[at..].iter().all(|&p| p != first),
            "{picked:?} {change}"
        );
    }
}
