//! Mutex: FIFO grants, bounded waits, no poisoning, stops, threads.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::{LockTimeout, Mutex};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::{THREADS, run_with};

fn wait_until(mut cond: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "condition never held"
        );
        smarm::sleep(Duration::from_micros(100));
    }
}

/// `wait_until` for plain threads (outside the runtime).
fn wait_on_thread_until(mut cond: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "condition never held"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn grants_are_fifo_under_contention_of_100_actors() {
    for threads in THREADS {
        run_with(threads, || {
            let m = Mutex::new(Vec::new());
            let held = m.lock().unwrap();
            let waiters: Vec<_> = (0..100)
                .map(|i| {
                    let m2 = m.clone();
                    let h = smarm::spawn(move || m2.lock().unwrap().push(i));
                    // Arrival order: each is queued before the next starts.
                    wait_until(|| m.waiting() == i + 1);
                    h
                })
                .collect();
            drop(held);
            for w in waiters {
                w.join().unwrap();
            }
            assert_eq!(*m.lock().unwrap(), (0..100).collect::<Vec<_>>());
        });
    }
}

#[test]
fn counter_under_contention_is_exact() {
    for threads in THREADS {
        run_with(threads, || {
            let m = Mutex::new(0u64);
            let hs: Vec<_> = (0..50)
                .map(|_| {
                    let m = m.clone();
                    smarm::spawn(move || {
                        for _ in 0..200 {
                            let mut g = m.lock().unwrap();
                            let v = *g;
                            smarm::yield_now(); // hold it across a switch
                            *g = v + 1;
                        }
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
            assert_eq!(*m.lock().unwrap(), 10_000);
        });
    }
}

#[test]
fn a_timed_out_waiter_never_holds_the_lock() {
    for threads in THREADS {
        run_with(threads, || {
            let m = Mutex::new(0u32);
            let timeouts = Arc::new(AtomicUsize::new(0));
            for round in 0..20u64 {
                let held = m.lock().unwrap();
                let hs: Vec<_> = (0..10)
                    .map(|_| {
                        let (m, t) = (m.clone(), timeouts.clone());
                        smarm::spawn(move || match m.lock_timeout(Duration::from_micros(300)) {
                            Ok(mut g) => *g += 1,
                            Err(LockTimeout { .. }) => {
                                t.fetch_add(1, Ordering::Relaxed);
                            }
                        })
                    })
                    .collect();
                // Release near the waiters' deadline.
                smarm::sleep(Duration::from_micros(200 + round * 10));
                drop(held);
                for h in hs {
                    h.join().unwrap();
                }
                // Nobody who gave up still owns the lock.
                assert!(m.try_lock().is_some(), "a timed-out waiter kept the lock");
                assert_eq!(m.waiting(), 0, "a timed-out waiter stayed queued");
            }
            let got = *m.lock().unwrap() as usize;
            assert_eq!(got + timeouts.load(Ordering::Relaxed), 200);
        });
    }
}

#[test]
fn a_panicking_holder_releases_the_lock_without_poisoning() {
    run_with(2, || {
        let m = Mutex::new(1u32);
        let m2 = m.clone();
        let h = smarm::spawn(move || {
            let mut g = m2.lock().unwrap();
            *g = 2;
            panic!("while holding the lock");
        });
        assert!(h.join().is_err());
        assert_eq!(*m.lock().unwrap(), 2);
    });
}

#[test]
fn a_stopped_waiter_leaves_the_queue_and_the_lock_moves_on() {
    run_with(2, || {
        let m = Mutex::new(0u32);
        let held = m.lock().unwrap();
        let m2 = m.clone();
        let stopped = smarm::spawn(move || {
            let _g = m2.lock().unwrap();
            unreachable!("stopped while waiting");
        });
        let m3 = m.clone();
        let next = smarm::spawn(move || *m3.lock().unwrap() += 1);
        wait_until(|| m.waiting() == 2);
        smarm::request_stop(stopped.pid());
        assert_eq!(
            stopped.join().unwrap_err().reason(),
            smarm::DownReason::Stopped
        );
        assert_eq!(m.waiting(), 1);
        drop(held);
        next.join().unwrap();
        assert_eq!(*m.lock().unwrap(), 1);
    });
}

#[test]
fn set_default_timeout_bounds_lock() {
    run_with(2, || {
        let m = Mutex::new(());
        m.set_default_timeout(Duration::from_millis(5));
        let held = m.lock().unwrap();
        let m2 = m.clone();
        let t0 = Instant::now();
        smarm::spawn(move || {
            assert_eq!(
                m2.lock().unwrap_err(),
                LockTimeout {
                    waited: Duration::from_millis(5)
                }
            )
        })
        .join()
        .unwrap();
        assert!(t0.elapsed() >= Duration::from_millis(5));
        drop(held);
    });
}

#[test]
#[should_panic(expected = "would deadlock")]
fn relocking_from_the_holder_panics() {
    run_with(1, || {
        let m = Mutex::new(());
        let _g = m.lock().unwrap();
        let _again = m.lock();
    });
}

#[test]
fn works_outside_the_runtime_and_between_threads_and_actors() {
    let m = Mutex::new(0u32);
    *m.lock().unwrap() += 1; // no runtime at all
    let held = m.lock().unwrap();
    let m2 = m.clone();
    let thread = std::thread::spawn(move || *m2.lock().unwrap() += 10); // blocks the thread
    wait_on_thread_until(|| m.waiting() == 1);
    let m3 = m.clone();
    let rt = std::thread::spawn(move || run_with(1, move || *m3.lock().unwrap() += 100));
    wait_on_thread_until(|| m.waiting() == 2);
    drop(held);
    thread.join().unwrap();
    rt.join().unwrap();
    assert_eq!(*m.lock().unwrap(), 111);
    assert!(m.lock_timeout(Duration::ZERO).is_ok());
}

/// Pids are per runtime: the roots of two runtimes are both `<0.0.1>`.
/// A mutex shared between them must tell them apart, or the second root's
/// `lock` would be taken for its holder's and panic (seen with two
/// distribution tests' nodes in one process).
#[test]
fn roots_of_two_runtimes_are_two_owners_of_one_mutex() {
    let shared = Arc::new(Mutex::new(0u32));
    let (held_tx, held_rx) = std::sync::mpsc::channel::<()>();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let first = {
        let shared = shared.clone();
        std::thread::spawn(move || {
            support::run_with(1, move || {
                let mut guard = shared.lock().unwrap();
                *guard += 1;
                held_tx.send(()).unwrap();
                // Hold it until the other root is waiting for it.
                smarm::io::block_on_io(move || release_rx.recv().unwrap());
                drop(guard);
            })
        })
    };
    held_rx.recv().unwrap();
    let second = {
        let shared = shared.clone();
        std::thread::spawn(move || {
            support::run_with(1, move || {
                let mut guard = shared.lock().unwrap(); // waits: another owner holds it
                *guard += 1;
            })
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    release_tx.send(()).unwrap();
    first.join().unwrap();
    second.join().unwrap();
    assert_eq!(*shared.try_lock().unwrap(), 2);
}

#[test]
fn a_stop_that_lands_as_a_waiter_takes_a_freed_lock_leaves_it_free() {
    // A waiter that finds the lock freed just as it queues takes it; a
    // stop already requested must not then unwind it with the lock taken
    // and no guard to release it (its own destructors relock it here, as
    // a mailbox's drop does: that would be a panic during the unwind).
    run_with(2, || {
        let m = Mutex::new(0u64);
        let taken = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let churn: Vec<_> = (0..2)
            .map(|_| {
                let (m, done) = (m.clone(), done.clone());
                smarm::spawn(move || {
                    while !done.load(Ordering::Relaxed) {
                        let mut held = m.lock().unwrap();
                        *held += 1;
                        if *held % 3 == 0 {
                            smarm::yield_now(); // holding it: waiters queue
                        }
                    }
                })
            })
            .collect();
        for _ in 0..3_000 {
            struct Relock(Mutex<u64>, Arc<AtomicUsize>);
            impl Drop for Relock {
                fn drop(&mut self) {
                    if let Ok(mut v) = self.0.lock_timeout(Duration::from_secs(5)) {
                        *v += 1;
                        self.1.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            let (m2, taken2) = (m.clone(), taken.clone());
            let victim = smarm::spawn(move || {
                let _relock = Relock(m2.clone(), taken2);
                loop {
                    *m2.lock().unwrap() += 1;
                }
            });
            smarm::yield_now();
            smarm::request_stop(victim.pid());
            let _ = victim.join();
        }
        done.store(true, Ordering::Relaxed);
        for c in churn {
            c.join().unwrap();
        }
        assert!(m.try_lock().is_some(), "no stopped waiter kept the lock");
        assert_eq!(
            taken.load(Ordering::Relaxed),
            3_000,
            "every unwind relocked"
        );
    });
}
