//! Sleep: never early, sleepers in parallel, timers under saturation.
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::{Rng, THREADS, run_with};

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

#[test]
fn send_after_to_delivers_late_and_cancel_prevents_it() {
    for threads in THREADS {
        run_with(threads, || {
            let (tx, rx) = smarm::channel::<u32>();
            let t0 = Instant::now();
            let keep = smarm::time::send_after_to(Duration::from_millis(20), &tx, 1);
            let cancelled = smarm::time::send_after_to(Duration::from_millis(10), &tx, 2);
            assert!(smarm::time::cancel_timer(cancelled));
            assert!(!smarm::time::cancel_timer(cancelled), "cancel is once");
            assert_eq!(rx.recv().unwrap(), 1);
            assert!(t0.elapsed() >= Duration::from_millis(20), "delivered early");
            assert!(
                !smarm::time::cancel_timer(keep),
                "a fired timer cannot be cancelled"
            );
            assert_eq!(
                rx.try_recv(),
                Ok(None),
                "the cancelled message never arrives"
            );
        });
    }
}

/// A timer lives in the shard of the scheduler that armed it; when that
/// scheduler's thread is stuck (here in `std::thread::sleep`, beside a
/// sibling kept busy by a yielding actor), another scheduler fires it: the
/// message arrives while the armer is still blocked, not after.
#[test]
fn a_timer_armed_on_a_blocked_scheduler_is_fired_by_another() {
    for threads in [2, 4] {
        run_with(threads, move || {
            let (tx, rx) = smarm::channel::<()>();
            let blocked = Arc::new(AtomicUsize::new(1));
            let spinning = Arc::new(AtomicUsize::new(1));
            let spin = spinning.clone();
            let spinner = smarm::spawn(move || {
                while spin.load(Ordering::SeqCst) == 1 {
                    smarm::yield_now();
                }
            });
            let b = blocked.clone();
            let blocker = smarm::spawn(move || {
                // Armed in this scheduler's shard; no safepoint before the
                // block, so the actor cannot have moved in between.
                smarm::time::send_after_to(Duration::from_millis(10), &tx, ());
                std::thread::sleep(Duration::from_millis(600));
                b.store(0, Ordering::SeqCst);
            });
            let got = rx.recv_timeout(Duration::from_secs(10));
            let still_blocked = blocked.load(Ordering::SeqCst) == 1;
            // Release the spinner before asserting: a failed assertion must
            // not leave an actor spinning under the runtime.
            spinning.store(0, Ordering::SeqCst);
            blocker.join().unwrap();
            spinner.join().unwrap();
            assert_eq!(got, Ok(()), "the timer never fired (threads={threads})");
            assert!(
                still_blocked,
                "the timer waited for its blocked scheduler (threads={threads})"
            );
        });
    }
}

/// A timer armed on one scheduler is cancelled from wherever the canceller
/// runs: its id names its shard. Every cancel of a pending timer succeeds
/// once and its message never arrives.
#[test]
fn timers_are_cancelled_from_any_scheduler() {
    for threads in THREADS {
        run_with(threads, move || {
            let (tx, rx) = smarm::channel::<u32>();
            let (ids_tx, ids_rx) = smarm::channel::<smarm::time::TimerId>();
            let armers: Vec<_> = (0..100)
                .map(|i| {
                    let (tx, ids_tx) = (tx.clone(), ids_tx.clone());
                    smarm::spawn(move || {
                        smarm::yield_now(); // spread over the schedulers
                        let id = smarm::time::send_after_to(Duration::from_millis(200), &tx, i);
                        ids_tx.send(id).unwrap();
                    })
                })
                .collect();
            drop(ids_tx);
            let canceller = smarm::spawn(move || {
                let mut cancelled = 0;
                while let Ok(id) = ids_rx.recv() {
                    assert!(
                        smarm::time::cancel_timer(id),
                        "a pending timer was not found"
                    );
                    assert!(!smarm::time::cancel_timer(id), "cancel is once");
                    cancelled += 1;
                }
                cancelled
            });
            for a in armers {
                a.join().unwrap();
            }
            assert_eq!(canceller.join().unwrap(), 100);
            assert_eq!(
                rx.recv_timeout(Duration::from_millis(400)),
                Err(smarm::RecvTimeoutError::Timeout),
                "a cancelled timer's message arrived (threads={threads})"
            );
        });
    }
}

#[test]
fn send_after_to_a_dead_receiver_is_dropped_at_fire_time() {
    run_with(2, || {
        let (tx, rx) = smarm::channel::<String>();
        smarm::time::send_after_to(Duration::from_millis(5), &tx, "late".to_string());
        drop(rx);
        smarm::sleep(Duration::from_millis(20)); // the timer fires into a closed channel
        assert!(tx.is_closed());
    });
}

#[test]
fn a_pending_message_timer_keeps_the_root_exit_sweep_away() {
    // The root returns while a child waits for a message that a timer will
    // deliver: the child is not parked forever, so it must not be swept.
    let got = Arc::new(AtomicUsize::new(0));
    let g = got.clone();
    run_with(2, move || {
        let (tx, rx) = smarm::channel::<usize>();
        smarm::time::send_after_to(Duration::from_millis(30), &tx, 7);
        drop(smarm::spawn(move || {
            let _keep_open = tx;
            g.store(rx.recv().unwrap(), Ordering::SeqCst);
        }));
    });
    assert_eq!(got.load(Ordering::SeqCst), 7);
}

#[test]
#[should_panic(expected = "`sleep` must be called from inside an actor")]
fn sleep_outside_an_actor_names_sleep() {
    smarm::sleep(Duration::from_millis(1));
}
