//! Bounded waits keep one cached timer per actor: a wait never ends early
//! or late past its own deadline, and a cached timer left pending by a
//! finished wait does not delay shutdown.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use std::time::{Duration, Instant};
use support::{Rng, THREADS, run_with};

/// Long-timeout waits that end at once leave a cached timer far in the
/// future; a short wait after them must still time out on time.
#[test]
fn a_short_timeout_after_long_ones_fires_on_time() {
    for threads in THREADS {
        run_with(threads, || {
            let (tx, rx) = smarm::channel::<u32>();
            for i in 0..10 {
                let t = tx.clone();
                drop(smarm::spawn(move || t.send(i).unwrap()));
                assert!(rx.recv_timeout(Duration::from_secs(30)).is_ok());
            }
            let t0 = Instant::now();
            assert_eq!(
                rx.recv_timeout(Duration::from_millis(20)),
                Err(smarm::RecvTimeoutError::Timeout)
            );
            let waited = t0.elapsed();
            assert!(waited >= Duration::from_millis(20), "early: {waited:?}");
            assert!(waited < Duration::from_millis(500), "late: {waited:?}");
        });
    }
}

/// Random timeouts, some shorter and some longer than the cached timer:
/// every one waits at least its timeout.
#[test]
fn bounded_waits_never_end_early() {
    run_with(2, || {
        let (_tx, rx) = smarm::channel::<u32>();
        let (_tx2, rx2) = smarm::channel::<u32>();
        let mut rng = Rng::new(7);
        for i in 0..200 {
            let timeout = Duration::from_micros(rng.below(3_000));
            let t0 = Instant::now();
            if i % 2 == 0 {
                assert!(rx.recv_timeout(timeout).is_err());
            } else {
                assert_eq!(smarm::select_timeout(&[&rx, &rx2], timeout), None);
            }
            assert!(t0.elapsed() >= timeout, "wait {i} ended early");
        }
    });
}

/// An actor whose bounded waits all finished (its cached timer is due in
/// a minute) and that then blocks for good does not keep `run` from
/// returning: the root-exit sweep ignores a cached timer once its actor is
/// not in a bounded wait.
#[test]
fn a_pending_cached_timer_does_not_delay_the_root_exit_sweep() {
    let t0 = Instant::now();
    run_with(2, || {
        let (ready_tx, ready_rx) = smarm::channel::<()>();
        drop(smarm::spawn(move || {
            let (tx, rx) = smarm::channel::<u32>();
            tx.send(1).unwrap();
            rx.recv_timeout(Duration::from_secs(60)).unwrap(); // arms, ends at once
            let (_never_tx, never) = smarm::channel::<u32>();
            ready_tx.send(()).unwrap();
            let _ = never.recv(); // blocked for good
        }));
        ready_rx.recv().unwrap();
    });
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "run waited {:?} for a cached timer",
        t0.elapsed()
    );
}

/// Timers that are due the moment they are armed fire at once, often on
/// another scheduler before the waiter has even parked. Each such timer
/// must be forgotten as the actor's cached timer when it fires; a later
/// wait that reused it would never be woken. 200 actors x 200 waits of a
/// few microseconds on 4 schedulers all finish.
#[test]
fn timers_that_fire_at_once_are_never_reused() {
    run_with(4, || {
        let (done_tx, done_rx) = smarm::channel::<()>();
        for i in 0..200u64 {
            let done = done_tx.clone();
            drop(smarm::spawn(move || {
                let (_keep, empty) = smarm::channel::<()>();
                for j in 0..200u64 {
                    if (i + j) % 2 == 0 {
                        smarm::sleep(Duration::from_micros(j % 3));
                    } else {
                        assert!(empty.recv_timeout(Duration::from_micros(j % 5)).is_err());
                    }
                }
                done.send(()).unwrap();
            }));
        }
        for n in 0..200 {
            assert!(
                done_rx.recv_timeout(Duration::from_secs(30)).is_ok(),
                "only {n} of 200 actors finished: a wait was never woken"
            );
        }
    });
}
