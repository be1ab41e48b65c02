//! Sleep: never early, sleepers in parallel, timers under saturation.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{run_with, Rng, THREADS};

#[test]
fn thousand_sleepers_with_random_deadlines_never_wake_early() {
    for threads in THREADS {
        let early = Arc::new(AtomicUsize::new(0));
        let e = early.clone();
        let t0 = Instant::now();
        run_with(threads, move || {
            let mut rng = Rng::new(0x5eed + threads as u64);
            let handles: Vec<_> = (0..1_000)
                .map(|_| {
                    let d = Duration::from_micros(rng.below(50_000));
                    let e = e.clone();
                    smarm::spawn(move || {
                        let start = Instant::now();
                        smarm::sleep(d);
                        if start.elapsed() < d {
                            e.fetch_add(1, Ordering::Relaxed);
                        }
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
        });
        assert_eq!(
            early.load(Ordering::Relaxed),
            0,
            "a sleeper woke early (threads={threads})"
        );
        // Sleeps overlap: 1,000 sleeps of up to 50 ms take ~50 ms, not 25 s.
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "sleeps did not overlap: {:?}",
            t0.elapsed()
        );
    }
}

#[test]
fn sleep_zero_returns() {
    run_with(1, || smarm::sleep(Duration::ZERO));
}

#[test]
fn sleepers_wake_in_deadline_order() {
    run_with(1, || {
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let handles: Vec<_> = [30u64, 10, 20]
            .into_iter()
            .map(|ms| {
                let order = order.clone();
                smarm::spawn(move || {
                    smarm::sleep(Duration::from_millis(ms));
                    order.lock().unwrap().push(ms);
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec![10, 20, 30]);
    });
}
