//! An actor that blocks its scheduler's thread (a std lock, a blocking
//! system call) does not stop the other schedulers from serving timers.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use support::run_with;

/// Run `f` on a fresh runtime with `threads` schedulers, from a plain
/// thread, and fail (instead of hanging) if it has not returned within
/// `limit`: the bug these tests pin is a runtime that never returns.
fn within(limit: Duration, threads: usize, f: fn()) {
    let (done_tx, done) = mpsc::channel();
    let runtime = std::thread::spawn(move || {
        run_with(threads, f);
        let _ = done_tx.send(());
    });
    match done.recv_timeout(limit) {
        Ok(()) => {}
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(panic) = runtime.join() {
                std::panic::resume_unwind(panic); // the test body failed
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("the runtime with {threads} schedulers did not finish within {limit:?}")
        }
    }
}

/// A holds a std mutex across a `smarm::sleep`; B, next on A's
/// scheduler, blocks that thread on the same mutex. A's timer must still
/// fire on another scheduler, or both wait forever. Before A sleeps, the
/// other schedulers have had time to park with no timer to keep: the
/// insert itself must wake one.
fn std_mutex_held_across_a_sleep() {
    let lock = Arc::new(std::sync::Mutex::new(0u32));
    let a = {
        let lock = lock.clone();
        smarm::spawn(move || {
            let mut g = lock.lock().unwrap();
            std::thread::sleep(Duration::from_millis(20)); // the others park
            let b = {
                let lock = lock.clone();
                smarm::spawn(move || *lock.lock().unwrap() += 10) // runs next, here
            };
            smarm::sleep(Duration::from_millis(20));
            *g += 1;
            drop(g);
            b.join().unwrap();
        })
    };
    a.join().unwrap();
    assert_eq!(*lock.lock().unwrap(), 11);
}

#[test]
fn a_std_mutex_held_across_a_sleep_completes_with_two_and_four_schedulers() {
    for threads in [2, 4] {
        for _ in 0..10 {
            within(
                Duration::from_secs(30),
                threads,
                std_mutex_held_across_a_sleep,
            );
        }
    }
}

/// A heartbeat sleeping 10 ms in a loop keeps its beat while another actor
/// blocks its scheduler's thread in `std::thread::sleep` for 2 s: its
/// timers fire on the other schedulers. (The blocker wakes nobody before
/// blocking: work already queued on a blocked scheduler waits for it.)
fn heartbeat_beside_a_blocked_scheduler() {
    let blocking = Arc::new(AtomicBool::new(true));
    let (result_tx, result) = smarm::channel::<(u32, Duration)>();
    let (beating_tx, beating) = smarm::channel::<()>();
    let heartbeat = {
        let blocking = blocking.clone();
        smarm::spawn(move || {
            beating_tx.send(()).unwrap();
            let (mut beats, mut worst) = (0u32, Duration::ZERO);
            while blocking.load(Ordering::SeqCst) {
                let t0 = Instant::now();
                smarm::sleep(Duration::from_millis(10));
                let late = t0.elapsed().saturating_sub(Duration::from_millis(10));
                if blocking.load(Ordering::SeqCst) {
                    beats += 1;
                    worst = worst.max(late);
                }
            }
            result_tx.send((beats, worst)).unwrap();
        })
    };
    beating.recv().unwrap();
    let blocker = {
        let blocking = blocking.clone();
        smarm::spawn(move || {
            std::thread::sleep(Duration::from_secs(2));
            blocking.store(false, Ordering::SeqCst);
        })
    };
    blocker.join().unwrap();
    heartbeat.join().unwrap();
    let (beats, worst) = result.recv().unwrap();
    assert!(
        beats >= 2,
        "the heartbeat beat {beats} times while the blocker slept 2 s"
    );
    assert!(
        worst < Duration::from_secs(1),
        "a beat was {worst:?} late while another scheduler was blocked"
    );
}

#[test]
fn a_heartbeat_keeps_beating_beside_a_blocked_scheduler() {
    within(
        Duration::from_secs(60),
        4,
        heartbeat_beside_a_blocked_scheduler,
    );
}
