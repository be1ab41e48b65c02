//! Deterministic simulation: replay, seeds, simulated time, deadlocks.
#![cfg(feature = "sim")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

use smarm::sim::{Sim, SimError};
use std::time::Duration;

#[test]
fn a_root_runs_and_returns_its_value() {
    let run = Sim::new(1)
        .run(|| smarm::spawn(|| 40 + 2).join().unwrap())
        .unwrap();
    assert_eq!(run.value, 42);
}

#[test]
fn an_hour_of_timers_passes_in_simulated_time() {
    let run = Sim::new(5)
        .run(|| {
            let kids: Vec<_> = (0..10)
                .map(|i| {
                    smarm::spawn(move || smarm::time::sleep(Duration::from_secs(360 * (i + 1))))
                })
                .collect();
            for k in kids {
                k.join().unwrap();
            }
        })
        .unwrap();
    assert!(
        run.elapsed >= Duration::from_secs(3600),
        "{:?}",
        run.elapsed
    );
}

#[test]
fn a_deadlock_names_the_waiting_actors() {
    let err = Sim::new(9)
        .run(|| {
            let (_tx, rx) = smarm::channel::channel::<u32>();
            rx.recv().unwrap();
        })
        .unwrap_err();
    assert!(matches!(err, SimError::Deadlock { seed: 9, .. }), "{err}");
    eprintln!("{err}");
}

#[test]
fn four_simulated_schedulers_steal_migrate_and_take_their_next_slots() {
    let run = Sim::new(3)
        .schedulers(4)
        .run(|| {
            // Ping-pong pairs (next-slot handoffs) and a fan-out of
            // workers that queue up behind one scheduler (steals).
            let pairs: Vec<_> = (0..4)
                .map(|_| {
                    let (ping_tx, ping_rx) = smarm::channel::channel::<u32>();
                    let (pong_tx, pong_rx) = smarm::channel::channel::<u32>();
                    let echo = smarm::spawn(move || {
                        while let Ok(n) = ping_rx.recv() {
                            pong_tx.send(n).unwrap();
                        }
                    });
                    smarm::spawn(move || {
                        for n in 0..50 {
                            ping_tx.send(n).unwrap();
                            assert_eq!(pong_rx.recv().unwrap(), n);
                        }
                        drop(ping_tx);
                        echo.join().unwrap();
                    })
                })
                .collect();
            let workers: Vec<_> = (0..32).map(|i| smarm::spawn(move || i * 2)).collect();
            let sum: u32 = workers.into_iter().map(|w| w.join().unwrap()).sum();
            for p in pairs {
                p.join().unwrap();
            }
            sum
        })
        .unwrap();
    assert_eq!(run.value, 992);
    let s = run.schedule;
    assert!(s.next_slot > 0 && s.stolen > 0 && s.migrations > 0, "{s:?}");
}

#[test]
fn what_cannot_be_simulated_is_refused_with_a_message_that_says_so() {
    let err = Sim::new(1)
        .run(|| smarm::io::block_on_io(|| 1))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("block_on_io called inside a simulation"),
        "{err}"
    );
    let signals = Sim::new(1)
        .run(|| smarm::io::OsSignals::new(&[libc::SIGUSR1]).map(|_| ()))
        .unwrap()
        .value
        .unwrap_err();
    assert_eq!(signals.kind(), std::io::ErrorKind::Unsupported);
    assert!(
        signals.to_string().contains("inside a simulation"),
        "{signals}"
    );
}

#[test]
fn a_simulation_refuses_to_start_inside_an_actor() {
    let nested = Sim::new(1)
        .run(|| std::panic::catch_unwind(|| Sim::new(2).run(|| ()).map(|_| ())).is_err())
        .unwrap();
    assert!(nested.value);
}

#[test]
fn a_replayed_seed_gives_the_same_digest_and_the_same_times() {
    let scenario = || {
        let kids: Vec<_> = (0..8)
            .map(|i| {
                smarm::spawn(move || {
                    smarm::time::sleep(Duration::from_millis(i % 3));
                    smarm::sim::elapsed()
                })
            })
            .collect();
        kids.into_iter()
            .map(|k| k.join().unwrap())
            .collect::<Vec<_>>()
    };
    let a = Sim::new(12).run(scenario).unwrap();
    let b = Sim::new(12).run(scenario).unwrap();
    let c = Sim::new(13).run(scenario).unwrap();
    assert_eq!(
        (a.digest, &a.value, a.elapsed),
        (b.digest, &b.value, b.elapsed)
    );
    assert_ne!(a.digest, c.digest);
}

#[smarm::sim::test(seeds = 50, schedulers = 3)]
fn the_test_attribute_runs_each_seed() {
    let (tx, rx) = smarm::channel::channel();
    for i in 0..4u32 {
        let tx = tx.clone();
        smarm::spawn(move || tx.send(i).unwrap());
    }
    let mut got: Vec<u32> = (0..4).map(|_| rx.recv().unwrap()).collect();
    got.sort_unstable();
    assert_eq!(got, [0, 1, 2, 3]);
}

#[test]
fn a_failing_seed_is_shrunk_and_reported_with_the_line_that_replays_it() {
    let racy = || {
        let n = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let kids: Vec<_> = (0..2)
            .map(|_| {
                let n = n.clone();
                smarm::spawn(move || {
                    let v = n.load(std::sync::atomic::Ordering::Relaxed);
                    smarm::yield_now();
                    n.store(v + 1, std::sync::atomic::Ordering::Relaxed);
                })
            })
            .collect();
        kids.into_iter().for_each(|k| k.join().unwrap());
        assert_eq!(
            n.load(std::sync::atomic::Ordering::Relaxed),
            2,
            "an update was lost"
        );
    };
    let failure = std::panic::catch_unwind(|| Sim::new(0).schedulers(4).test(0..100, racy))
        .expect_err("the race is found");
    let text = failure
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(text.contains("an update was lost"), "{text}");
    assert!(text.contains("shrunk from"), "{text}");
    assert!(text.contains("replay: Sim::new("), "{text}");
    eprintln!("{text}");
}

#[test]
fn random_draws_replay_with_the_seed() {
    let draw = || (0..4).map(|_| smarm::sim::random()).collect::<Vec<_>>();
    let a = Sim::new(21).run(draw).unwrap().value;
    assert_eq!(a, Sim::new(21).run(draw).unwrap().value);
    assert_ne!(a, Sim::new(22).run(draw).unwrap().value);
    assert!(
        std::panic::catch_unwind(smarm::sim::random).is_err(),
        "outside a simulation"
    );
}

#[test]
fn buggify_sites_fire_in_some_runs_and_never_outside_a_simulation() {
    let fired_in = (0..400)
        .filter(|&seed| {
            Sim::new(seed)
                .run(|| (0..100).filter(|_| smarm::buggify!()).count())
                .unwrap()
                .value
                > 0
        })
        .count();
    // A run turns the site on one time in four; on, it fires one time in 20.
    assert!(
        (60..140).contains(&fired_in),
        "fired in {fired_in} of 400 runs"
    );
    assert!((0..1000).all(|_| !smarm::buggify!()));
}

#[test]
fn swarm_seeds_draw_their_configurations_and_replay() {
    let configs: std::collections::BTreeSet<String> = (0..40)
        .map(|seed| Sim::new(seed).swarm().resolved().to_string())
        .collect();
    assert!(configs.len() > 20, "{configs:?}");
    assert!(
        configs.iter().any(|c| c.contains(".schedulers(4)")),
        "{configs:?}"
    );
    let run = || {
        let kids: Vec<_> = (0..6).map(|i| smarm::spawn(move || i)).collect();
        kids.into_iter().map(|k| k.join().unwrap()).sum::<i32>()
    };
    for seed in 0..20 {
        let sim = Sim::new(seed).swarm();
        let a = sim.run(run).unwrap();
        assert_eq!(a.digest, sim.run(run).unwrap().digest);
        assert_eq!(
            a.digest,
            sim.resolved().run(run).unwrap().digest,
            "{}",
            sim.resolved()
        );
    }
}

#[test]
fn an_invariant_is_checked_after_every_turn() {
    use std::sync::atomic::{AtomicI64, Ordering};
    let balance = std::sync::Arc::new(AtomicI64::new(100));
    let b = balance.clone();
    let sim = Sim::new(3)
        .schedulers(2)
        .invariant("never overdrawn", move || b.load(Ordering::Relaxed) >= 0);
    // Two withdrawals of 60 that check the balance first, with a yield
    // between the check and the withdrawal: overdrawn in some orders.
    let found = sim
        .check(0..200, move || {
            let kids: Vec<_> = (0..2)
                .map(|_| {
                    let balance = balance.clone();
                    smarm::spawn(move || {
                        if balance.load(Ordering::Relaxed) >= 60 {
                            smarm::yield_now();
                            balance.fetch_sub(60, Ordering::Relaxed);
                        }
                    })
                })
                .collect();
            kids.into_iter().for_each(|k| k.join().unwrap());
            balance.store(100, Ordering::Relaxed); // for the next seed
        })
        .unwrap_err();
    let SimError::Invariant { name, .. } = &found else {
        panic!("{found}");
    };
    assert_eq!(*name, "never overdrawn");
}

#[smarm::sim::test(seeds = 30, swarm = true)]
fn the_test_attribute_takes_swarm_mode() {
    let child = smarm::spawn(|| {
        smarm::time::sleep(Duration::from_millis(3));
        5
    });
    assert_eq!(child.join().unwrap(), 5);
}
