//! What deterministic simulation finds: three seeded concurrency bugs
//! (`examples/sim_bugs.rs`), each found within 10,000 seeds and replayed
//! from the seed that found it; an ordering bug of depth two that PCT
//! finds and uniform picks do not; and a `HashMap`'s random order, which
//! the determinism check names.
#![cfg(feature = "sim")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

#[path = "../examples/sim_bugs.rs"]
mod bugs;

use smarm::sim::{Sim, SimError, Strategy};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

#[test]
fn each_seeded_bug_is_found_within_ten_thousand_seeds_replays_and_shrinks() {
    smarm::report::set_handler(|_| {}); // the bugs' crashes are expected
    for (name, bug) in bugs::BUGS {
        let sim = Sim::new(0).schedulers(3);
        let check = move || assert!(!bug(), "the bug showed");
        let found = sim.check(0..10_000, check).expect_err(name);
        match &found {
            SimError::Panicked { message, .. } => {
                assert!(message.contains("the bug showed"), "{name}: {found}")
            }
            // A lost wake-up or a mutual wait: nobody left to run.
            SimError::Deadlock { report, .. } => assert!(report.actors.len() >= 2, "{found}"),
            other => panic!("{name}: {other}"),
        }
        let seed = found.seed().unwrap();
        assert!(
            found.to_string().contains(&format!("Sim::new({seed})")),
            "{found}"
        );
        // The printed seed replays the failure exactly.
        let sim = sim.seed(seed);
        let again = sim.run(check).unwrap_err();
        assert_eq!(again.to_string(), found.to_string(), "{name}");
        // Shrunk: still failing the same way, with no more schedulers.
        let shrunk = sim.shrink(check).expect(name);
        eprintln!("{name}: seed {seed}: {} -> {}", shrunk.before, shrunk.after);
        assert_eq!(
            std::mem::discriminant(&shrunk.error),
            std::mem::discriminant(&found),
            "{shrunk}"
        );
        assert!(shrunk.after.schedulers <= 3);
        let replayed = shrunk.sim.run(check).unwrap_err();
        assert_eq!(replayed.to_string(), shrunk.error.to_string());
    }
}

/// A bug of depth two: B reads A's progress once before A starts and
/// once after A has finished all `STEPS` of its steps, each a yield. B
/// must run first, then wait through every one of A's steps, then run:
/// uniform picks starve B that long with probability 2^-STEPS; PCT needs
/// only its one change point to fall on B's first yield.
fn depth_two_bug() -> bool {
    const STEPS: u32 = 24;
    let progress = Arc::new(AtomicU32::new(0));
    let p = progress.clone();
    let a = smarm::spawn(move || {
        for i in 1..=STEPS {
            p.store(i, Ordering::Relaxed);
            smarm::yield_now();
        }
    });
    let p = progress;
    let b = smarm::spawn(move || {
        let before = p.load(Ordering::Relaxed);
        smarm::yield_now();
        let after = p.load(Ordering::Relaxed);
        before == 0 && after == STEPS
    });
    a.join().unwrap();
    b.join().unwrap()
}

#[test]
fn pct_finds_a_depth_two_ordering_bug_that_uniform_picks_miss() {
    let hits = |sim: Sim| {
        (0..2_000)
            .filter(|&seed| sim.clone().seed(seed).run(depth_two_bug).unwrap().value)
            .count()
    };
    let random = hits(Sim::new(0).schedulers(1));
    let pct = hits(Sim::new(0).schedulers(1).strategy(Strategy::Pct {
        depth: 2,
        steps: 32,
    }));
    eprintln!("depth-two bug in 2,000 seeds: PCT {pct}, uniform {random}");
    assert!(pct >= 10, "PCT found it in {pct} of 2,000 seeds");
    assert!(pct >= 10 * random.max(1), "PCT {pct}, uniform {random}");
}

#[test]
fn a_hashmaps_random_order_is_named_by_the_determinism_check() {
    let err = Sim::new(4)
        .check_determinism(|| {
            let (done_tx, done_rx) = smarm::channel::<u32>();
            let workers: HashMap<u32, smarm::Sender<u32>> = (0..64)
                .map(|i| {
                    let (tx, rx) = smarm::channel::<u32>();
                    let done = done_tx.clone();
                    smarm::spawn(move || done.send(rx.recv().unwrap()).unwrap());
                    (i, tx)
                })
                .collect();
            // Every worker waits; the map's order (a per-process random
            // seed) decides which is woken first.
            smarm::sleep(Duration::from_millis(1));
            for (k, tx) in &workers {
                tx.send(*k).unwrap();
            }
            (0..64).map(|_| done_rx.recv().unwrap()).sum::<u32>()
        })
        .unwrap_err();
    let SimError::Diverged {
        seed,
        first,
        second,
        ..
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!(*seed, 4);
    assert_ne!(first, second);
    assert!(first.contains("ran actor"), "{err}");
    assert!(err.to_string().contains("HashMap"), "{err}");
}

#[test]
fn the_same_program_without_the_map_is_deterministic() {
    Sim::new(4)
        .check_determinism(|| {
            let (done_tx, done_rx) = smarm::channel::<u32>();
            let workers: Vec<smarm::Sender<u32>> = (0..64)
                .map(|_| {
                    let (tx, rx) = smarm::channel::<u32>();
                    let done = done_tx.clone();
                    smarm::spawn(move || done.send(rx.recv().unwrap()).unwrap());
                    tx
                })
                .collect();
            smarm::sleep(Duration::from_millis(1));
            for (k, tx) in workers.iter().enumerate() {
                tx.send(k as u32).unwrap();
            }
            (0..64).map(|_| done_rx.recv().unwrap()).sum::<u32>()
        })
        .unwrap();
}
