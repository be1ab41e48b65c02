//! Panics: caught at the actor's base frame, reported by join, contained.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use support::{CountDrop, THREADS, run_with};

#[test]
fn panicking_actor_join_returns_payload_and_others_are_unaffected() {
    for threads in THREADS {
        let survivors = Arc::new(AtomicUsize::new(0));
        let s = survivors.clone();
        run_with(threads, move || {
            let handles: Vec<_> = (0..200u32)
                .map(|i| {
                    let s = s.clone();
                    smarm::spawn(move || {
                        smarm::yield_now();
                        if i % 10 == 0 {
                            panic!("actor {i} failed");
                        }
                        s.fetch_add(1, Ordering::Relaxed);
                    })
                })
                .collect();
            for (i, h) in handles.into_iter().enumerate() {
                match h.join() {
                    Ok(()) => assert_ne!(i % 10, 0, "actor {i} should have panicked"),
                    Err(e) => {
                        assert_eq!(i % 10, 0, "actor {i} should not have panicked");
                        let msg = e.payload.downcast_ref::<String>().unwrap();
                        assert_eq!(msg, &format!("actor {i} failed"));
                        assert_eq!(
                            e.to_string(),
                            format!("the actor panicked: actor {i} failed")
                        );
                    }
                }
            }
        });
        assert_eq!(survivors.load(Ordering::Relaxed), 180, "threads={threads}");
    }
}

#[test]
fn non_string_payload_is_preserved() {
    run_with(1, || {
        let err = smarm::spawn(|| std::panic::panic_any(42u32))
            .join()
            .unwrap_err();
        assert_eq!(err.payload.downcast_ref::<u32>(), Some(&42));
        assert!(err.to_string().contains("non-string"));
    });
}

#[test]
fn a_panic_in_the_root_is_reraised_by_run() {
    let r = std::panic::catch_unwind(|| run_with(2, || panic!("root failed")));
    let payload = r.unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"root failed"));
}

#[test]
fn a_detached_panicking_actor_does_not_fail_run() {
    run_with(2, || {
        drop(smarm::spawn(|| panic!("nobody joins me")));
        smarm::yield_now();
    });
}

#[test]
fn destructors_run_when_an_actor_panics() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let d = dropped.clone();
    run_with(2, move || {
        let h = smarm::spawn(move || {
            let _flag = CountDrop(d);
            smarm::yield_now();
            panic!("unwind me");
        });
        assert!(h.join().is_err());
    });
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
}

/// A destructor that blocks while its actor unwinds a panic: the actor is
/// pinned to its OS thread until the unwind finishes (std keeps the panic
/// count per thread), and the process neither aborts nor corrupts that
/// count for the actors that run afterwards.
#[test]
fn blocking_in_a_destructor_during_a_panic_resumes_on_the_same_thread() {
    struct SlowDrop(Arc<AtomicUsize>);
    impl Drop for SlowDrop {
        fn drop(&mut self) {
            let before = std::thread::current().id();
            assert!(std::thread::panicking());
            smarm::sleep(std::time::Duration::from_millis(1));
            smarm::yield_now();
            assert_eq!(
                std::thread::current().id(),
                before,
                "an unwinding actor migrated"
            );
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    for threads in THREADS {
        let dropped = Arc::new(AtomicUsize::new(0));
        let d = dropped.clone();
        run_with(threads, move || {
            // Busy neighbours so idle schedulers try to steal.
            let busy: Vec<_> = (0..8)
                .map(|_| {
                    smarm::spawn(|| {
                        for _ in 0..200 {
                            smarm::yield_now();
                        }
                    })
                })
                .collect();
            let failing: Vec<_> = (0..50)
                .map(|_| {
                    let d = d.clone();
                    smarm::spawn(move || {
                        let _slow = SlowDrop(d);
                        smarm::yield_now();
                        panic!("unwinding through a blocking destructor");
                    })
                })
                .collect();
            for f in failing {
                assert!(f.join().is_err());
            }
            for b in busy {
                b.join().unwrap();
            }
            // Afterwards no scheduler thread believes it is still panicking.
            let checks: Vec<_> = (0..64)
                .map(|_| smarm::spawn(|| assert!(!std::thread::panicking())))
                .collect();
            for c in checks {
                c.join().unwrap();
            }
        });
        assert_eq!(dropped.load(Ordering::SeqCst), 50, "threads={threads}");
    }
}
