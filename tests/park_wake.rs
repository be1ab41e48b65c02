//! Scheduler park/wake: the observable timer-latency properties, at 1, 2
//! and 4 scheduler threads.
//!
//! - `sleep_fires_under_saturation`: due timers fire even when every
//!   scheduler is busy (nobody parked, so no timekeeper): the busy-path
//!   due-check.
//! - `submillisecond_sleep_is_prompt`: a sub-ms sleep completes promptly
//!   (the futex timeout carries nanoseconds).
//! - `a_short_backlog_behind_a_busy_actor_is_stolen`: an idle scheduler
//!   waits a little before stealing a short backlog, but does steal it.
//! - `yielding_crunchers_spread_over_the_schedulers`: a short backlog that
//!   its scheduler serves only now and then is spread.
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use support::{THREADS, run_with};

fn sleep_fires_under_saturation(threads: usize) {
    run_with(threads, move || {
        let stop = Arc::new(AtomicBool::new(false));
        // Twice as many spinners as schedulers: the run queues never empty,
        // so no scheduler ever parks and no timekeeper exists.
        let spinners: Vec<_> = (0..2 * threads)
            .map(|_| {
                let stop = stop.clone();
                smarm::spawn(move || {
                    let t0 = Instant::now();
                    while !stop.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(5) {
                        smarm::yield_now();
                    }
                })
            })
            .collect();
        let t0 = Instant::now();
        smarm::sleep(Duration::from_millis(10));
        let dt = t0.elapsed();
        stop.store(true, Ordering::Relaxed);
        for s in spinners {
            let _ = s.join();
        }
        assert!(
            dt < Duration::from_millis(500),
            "10ms sleep took {dt:?} under saturation at {threads} threads: busy-path timer firing is broken"
        );
    });
}

fn submillisecond_sleep_is_prompt(threads: usize) {
    run_with(threads, move || {
        smarm::sleep(Duration::from_micros(500));
        let t0 = Instant::now();
        smarm::sleep(Duration::from_micros(500));
        let dt = t0.elapsed();
        assert!(dt >= Duration::from_micros(500), "woke early: {dt:?}");
        assert!(
            dt < Duration::from_millis(100),
            "500µs sleep took {dt:?} at {threads} threads"
        );
    });
}

#[test]
fn sleep_fires_under_saturation_at_1_2_4_threads() {
    for threads in THREADS {
        sleep_fires_under_saturation(threads);
    }
}

#[test]
fn submillisecond_sleep_is_prompt_at_1_2_4_threads() {
    for threads in THREADS {
        submillisecond_sleep_is_prompt(threads);
    }
}

/// One actor queued behind another that spins without a safepoint: the
/// idle sibling scheduler steals it (after its short wait for the busy one
/// to get there first), instead of leaving it until the spinner ends.
#[test]
fn a_short_backlog_behind_a_busy_actor_is_stolen() {
    for threads in [2, 4] {
        run_with(threads, || {
            let spinner = smarm::spawn(|| {
                let ran = Arc::new(AtomicBool::new(false));
                let r = ran.clone();
                // The first child is displaced from the next slot into the
                // stealable local queue by the second: a backlog of one.
                let stolen = smarm::spawn(move || r.store(true, Ordering::Release));
                let blocked = smarm::spawn(|| {});
                let t0 = Instant::now();
                while !ran.load(Ordering::Acquire) && t0.elapsed() < Duration::from_secs(5) {
                    std::hint::spin_loop(); // no safepoint: this thread is held
                }
                assert!(
                    ran.load(Ordering::Acquire),
                    "the queued actor never ran while its scheduler was held"
                );
                assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
                stolen.join().unwrap();
                blocked.join().unwrap();
            });
            spinner.join().unwrap();
        });
    }
}

/// Two crunchers that yield now and then, started on one scheduler: the
/// idle sibling takes one (its short backlog is not being served
/// briskly), so at some moment both compute at once.
#[test]
fn yielding_crunchers_spread_over_the_schedulers() {
    use std::sync::atomic::AtomicU32;
    run_with(2, || {
        let running = Arc::new(AtomicU32::new(0));
        let most = Arc::new(AtomicU32::new(0));
        let crunchers: Vec<_> = (0..2)
            .map(|_| {
                let (running, most) = (running.clone(), most.clone());
                smarm::spawn(move || {
                    let t0 = Instant::now();
                    while t0.elapsed() < Duration::from_millis(300)
                        && most.load(Ordering::Relaxed) < 2
                    {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        let chunk = Instant::now();
                        while chunk.elapsed() < Duration::from_micros(500) {
                            std::hint::spin_loop();
                        }
                        running.fetch_sub(1, Ordering::SeqCst);
                        smarm::yield_now();
                    }
                })
            })
            .collect();
        for c in crunchers {
            c.join().unwrap();
        }
        assert_eq!(
            most.load(Ordering::SeqCst),
            2,
            "the two crunchers never ran at the same time"
        );
    });
}
