//! `LiveCount`: how many actors are alive, counted without a shared
//! contended counter.
//!
//! Each scheduler counts the actors spawned and finished on its own thread
//! in its own cache line (single writer: a load and a Release store); spawns
//! made off the schedulers (the root, by `run`) use a shared RMW counter.
//! Both counts only grow.
//!
//! # Why "finished first, then spawned" reads are exact enough (runtime (I2))
//!
//! [`LiveCount::is_zero`] reads every `finished` counter, then every
//! `spawned` counter, and reports zero iff the sums are equal. Claim: if it
//! reports zero, every actor ever spawned had finished when the `finished`
//! counters were read. Proof sketch: an actor's spawn happens-before its
//! finish (the spawn enqueues it; its scheduler pops it under the queue
//! lock), and the finish's Release store is what the Acquire read of
//! `finished` sees, so the later read of the spawner's `spawned` counter
//! sees the spawn (coherence). Hence every finished actor counted is also
//! counted as spawned, and equal sums mean the spawned set read equals the
//! finished set read. An actor spawned after the reads needs a live
//! ancestor; the first ancestor of its chain not counted as spawned has a
//! parent that was counted, hence finished, and that parent's spawn of it
//! happened before its finish, so it was counted: a contradiction. The loom
//! model below checks the interleavings of that argument.

use crate::loom::{AtomicU64, Ordering};
use crossbeam_utils::CachePadded;

/// One scheduler's pair (kept in a `CachePadded`: a pair per two cache
/// lines, which the adjacent-line prefetcher pairs).
struct Counters {
    spawned: AtomicU64,
    finished: AtomicU64,
}

impl Counters {
    fn new() -> Self {
        Counters {
            spawned: AtomicU64::new(0),
            finished: AtomicU64::new(0),
        }
    }
}

pub(crate) struct LiveCount {
    per_scheduler: Box<[CachePadded<Counters>]>,
    /// Spawns made off the scheduler threads, and the spawns and finishes
    /// of spare schedulers (multi-writer: RMW). Spares share it: a runtime
    /// provides for dozens, and the verdict sums every pair.
    external: CachePadded<Counters>,
}

impl LiveCount {
    pub(crate) fn new(schedulers: usize) -> Self {
        LiveCount {
            per_scheduler: (0..schedulers)
                .map(|_| CachePadded::new(Counters::new()))
                .collect(),
            external: CachePadded::new(Counters::new()),
        }
    }

    /// Count a spawn made on regular scheduler `id` (its own thread), or
    /// off the regular schedulers (`None`, or a spare's id).
    #[inline]
    pub(crate) fn spawned(&self, id: Option<usize>) {
        match id.and_then(|id| self.per_scheduler.get(id)) {
            Some(c) => bump(&c.spawned),
            None => {
                self.external.spawned.fetch_add(1, Ordering::AcqRel);
            }
        }
    }

    /// Count a finish on scheduler `id` (its own thread): its own pair, or
    /// the shared one for a spare.
    #[inline]
    pub(crate) fn finished(&self, id: usize) {
        match self.per_scheduler.get(id) {
            Some(c) => bump(&c.finished),
            None => {
                self.external.finished.fetch_add(1, Ordering::AcqRel);
            }
        }
    }

    /// Whether no actor is alive (see the module docs for why the read
    /// order makes a `true` reliable).
    pub(crate) fn is_zero(&self) -> bool {
        let finished: u64 = self.external.finished.load(Ordering::Acquire)
            + self
                .per_scheduler
                .iter()
                .map(|c| c.finished.load(Ordering::Acquire))
                .sum::<u64>();
        let spawned: u64 = self.external.spawned.load(Ordering::Acquire)
            + self
                .per_scheduler
                .iter()
                .map(|c| c.spawned.load(Ordering::Acquire))
                .sum::<u64>();
        debug_assert!(spawned >= finished, "more actors finished than spawned");
        spawned == finished
    }
}

/// Single-writer increment: only the owning scheduler thread writes.
#[inline]
fn bump(counter: &AtomicU64) {
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Release);
}

#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::sync::Arc;
    use loom::sync::atomic::AtomicBool;
    use loom::thread;

    /// Root P (spawned off-scheduler) runs on scheduler 0, spawns C and
    /// finishes; C runs on scheduler 1 and finishes. A verdict taken
    /// concurrently on a third thread that reports zero must see C
    /// finished.
    #[test]
    fn zero_is_never_reported_while_an_actor_lives() {
        loom::model(|| {
            let live = Arc::new(LiveCount::new(2));
            let handoff = Arc::new(AtomicBool::new(false)); // the run queue
            let c_done = Arc::new(AtomicBool::new(false));
            live.spawned(None); // P
            let observer = {
                let (live, c_done) = (live.clone(), c_done.clone());
                thread::spawn(move || {
                    if live.is_zero() {
                        assert!(
                            c_done.load(Ordering::Acquire),
                            "zero reported while C was alive"
                        );
                    }
                })
            };
            let s1 = {
                let (live, handoff, c_done) = (live.clone(), handoff.clone(), c_done.clone());
                thread::spawn(move || {
                    if handoff.load(Ordering::Acquire) {
                        c_done.store(true, Ordering::Release);
                        live.finished(1); // C finishes
                    }
                })
            };
            live.spawned(Some(0)); // P, on scheduler 0 (this thread), spawns C
            handoff.store(true, Ordering::Release);
            live.finished(0); // P finishes
            observer.join().unwrap();
            s1.join().unwrap();
        });
    }
}
