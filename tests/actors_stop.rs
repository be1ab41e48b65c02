//! Cooperative stop and the root-exit sweep.
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{CountDrop, HangGuard, THREADS, run_with};

#[test]
fn request_stop_unwinds_a_parked_actor_running_its_destructors() {
    for threads in THREADS {
        let dropped = Arc::new(AtomicUsize::new(0));
        let after = Arc::new(AtomicBool::new(false));
        let (d, a) = (dropped.clone(), after.clone());
        run_with(threads, move || {
            let h = smarm::spawn(move || {
                let _guard = CountDrop(d);
                smarm::sleep(Duration::from_secs(3600));
                a.store(true, Ordering::SeqCst); // never reached
            });
            smarm::sleep(Duration::from_millis(5)); // let it park
            let t0 = Instant::now();
            smarm::request_stop(h.pid());
            assert!(h.join().is_ok(), "a stopped actor joins Ok");
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "stop did not wake the sleeper"
            );
        });
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            1,
            "destructor ran (threads={threads})"
        );
        assert!(
            !after.load(Ordering::SeqCst),
            "code after the blocking call did not run"
        );
    }
}

#[test]
fn request_stop_ends_a_yielding_loop() {
    for threads in THREADS {
        run_with(threads, || {
            let spins = Arc::new(AtomicUsize::new(0));
            let s = spins.clone();
            let h = smarm::spawn(move || {
                loop {
                    s.fetch_add(1, Ordering::Relaxed);
                    smarm::yield_now();
                }
            });
            while spins.load(Ordering::Relaxed) < 10 {
                smarm::yield_now();
            }
            smarm::request_stop(h.pid());
            // A closure that never returns (`!`) joins with how it ended.
            assert_eq!(h.join().unwrap_err().reason(), smarm::DownReason::Stopped);
        });
    }
}

#[test]
fn stop_requested_before_the_actor_first_runs() {
    run_with(1, || {
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        let h = smarm::spawn(move || {
            smarm::sleep(Duration::from_millis(1));
            r.store(true, Ordering::SeqCst);
        });
        smarm::request_stop(h.pid());
        h.join().unwrap();
        assert!(
            !ran.load(Ordering::SeqCst),
            "the actor stopped at its first safepoint"
        );
    });
}

#[test]
fn stopping_yourself_unwinds_at_the_next_safepoint() {
    run_with(2, || {
        let h = smarm::spawn(|| {
            smarm::request_stop(smarm::self_pid());
            smarm::yield_now();
            unreachable!("the yield is a safepoint");
        });
        assert_eq!(h.join().unwrap_err().reason(), smarm::DownReason::Stopped);
    });
}

#[test]
fn stop_of_a_finished_actor_is_a_no_op() {
    run_with(1, || {
        let h = smarm::spawn(|| {});
        let pid = h.pid();
        h.join().unwrap();
        smarm::request_stop(pid);
        smarm::request_stop(smarm::Pid::<()>::clone(&pid));
    });
}

#[test]
fn stop_while_joining_leaves_the_joined_actor_running() {
    run_with(2, || {
        let finished = Arc::new(AtomicBool::new(false));
        let f = finished.clone();
        let waiter = smarm::spawn(move || {
            let slow = smarm::spawn(move || {
                smarm::sleep(Duration::from_millis(30));
                f.store(true, Ordering::SeqCst);
            });
            let _ = slow.join();
        });
        smarm::sleep(Duration::from_millis(5));
        smarm::request_stop(waiter.pid());
        waiter.join().unwrap();
        smarm::sleep(Duration::from_millis(60));
        assert!(
            finished.load(Ordering::SeqCst),
            "the joined child ran to completion"
        );
    });
}

/// Two actors joining each other: parked forever with no timer or IO that
/// could wake them. The root returns; the sweep must stop both.
#[test]
fn root_returning_while_children_are_parked_forever_lets_run_return() {
    for threads in THREADS {
        let dropped = Arc::new(AtomicUsize::new(0));
        let d = dropped.clone();
        let t0 = Instant::now();
        run_with(threads, move || {
            let slot: Arc<Mutex<Option<smarm::JoinHandle>>> = Arc::new(Mutex::new(None));
            let (s, d1) = (slot.clone(), d.clone());
            let a = smarm::spawn(move || {
                let _g = CountDrop(d1);
                smarm::sleep(Duration::from_millis(10)); // until B is published
                let b = s.lock().unwrap().take().unwrap();
                let _ = b.join();
            });
            let d2 = d.clone();
            let b = smarm::spawn(move || {
                let _g = CountDrop(d2);
                let _ = a.join();
            });
            *slot.lock().unwrap() = Some(b);
        });
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "run hung (threads={threads})"
        );
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            2,
            "both were unwound (threads={threads})"
        );
    }
}

#[test]
fn root_exit_does_not_sweep_a_sleeping_child() {
    for threads in THREADS {
        let woke = Arc::new(AtomicBool::new(false));
        let w = woke.clone();
        run_with(threads, move || {
            drop(smarm::spawn(move || {
                smarm::sleep(Duration::from_millis(50));
                w.store(true, Ordering::SeqCst);
            }));
        });
        assert!(
            woke.load(Ordering::SeqCst),
            "a sleeper will wake, so it is not swept"
        );
    }
}

/// A root that panics while another actor ticks a periodic timer forever
/// (as a distribution connection does): `run` re-raises the panic after
/// stopping the ticker, rather than waiting for a timer that never stops
/// being armed (runtime (I4)).
#[test]
fn a_root_that_panics_stops_actors_that_tick_forever() {
    for threads in THREADS {
        let _guard = HangGuard::new(Duration::from_secs(60), "a panicked root's run did not end");
        let dropped = Arc::new(AtomicUsize::new(0));
        let d = dropped.clone();
        let run = std::panic::catch_unwind(move || {
            run_with(threads, move || {
                drop(smarm::spawn(move || {
                    let _g = CountDrop(d);
                    loop {
                        smarm::sleep(Duration::from_millis(1));
                    }
                }));
                smarm::sleep(Duration::from_millis(5));
                panic!("the root fails");
            })
        });
        let payload = run.expect_err("the root's panic is re-raised");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"the root fails"));
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            1,
            "the ticker was unwound (threads={threads})"
        );
    }
}
