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
