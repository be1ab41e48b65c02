//! The check!() safepoint: timeslices for loops that never block.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::runtime::{self, Config};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Outcome {
    /// The sleeper's worst lateness over 50 sleeps of 1 ms.
    worst: Duration,
    spinner_overruns: u64,
    sleeper_overruns: u64,
}

/// One scheduler thread; a sleeper waking every 1 ms beside a spinner that
/// runs for `spin_for`, calling `check!()` in its loop or not.
fn sleeper_beside_spinner(use_check: bool, spin_for: Duration) -> Outcome {
    sleeper_beside_spinner_on(Config::exact(1), use_check, spin_for)
}

fn sleeper_beside_spinner_on(config: Config, use_check: bool, spin_for: Duration) -> Outcome {
    let out = Arc::new(Mutex::new(None));
    let o = out.clone();
    runtime::init(config).run(move || {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let spinner = smarm::spawn(move || {
            let t0 = Instant::now();
            let mut x = 0u64;
            while t0.elapsed() < spin_for && !s.load(Ordering::Relaxed) {
                x = x.wrapping_add(1);
                if use_check {
                    smarm::check!();
                }
            }
            std::hint::black_box(x);
        });
        let (tx, rx) = smarm::channel();
        let sleeper = smarm::spawn(move || {
            let worst = support::heartbeat_worst_lateness(50);
            let overruns = smarm::actor_info(smarm::self_pid()).unwrap().overruns;
            tx.send((worst, overruns)).unwrap();
        });
        let (worst, sleeper_overruns) = rx.recv().unwrap();
        let spinner_overruns = smarm::actor_info(spinner.pid()).map_or(0, |i| i.overruns);
        sleeper.join().unwrap();
        stop.store(true, Ordering::Relaxed);
        spinner.join().unwrap();
        *o.lock().unwrap() = Some(Outcome {
            worst,
            spinner_overruns,
            sleeper_overruns,
        });
    });

    out.lock().unwrap().take().unwrap()
}

#[test]
fn a_check_loop_does_not_starve_a_sleeper_on_one_thread() {
    let o = sleeper_beside_spinner(true, Duration::from_secs(10));
    // One thread: the sleeper runs only when the spinner is switched out,
    // so each of its 50 wakes took a preemption of the spinner. (Timeslice
    // 1 ms: on a quiet machine a wake waits about one slice; the bound is
    // far above that, for a loaded one, and far below the 10 s spin.)
    assert!(
        o.spinner_overruns >= 49,
        "the spinner overran {} times for 50 wakes of the sleeper",
        o.spinner_overruns
    );
    assert!(
        o.worst < Duration::from_secs(1),
        "sleeper was {:?} late",
        o.worst
    );
    assert_eq!(o.sleeper_overruns, 0, "the sleeper never ran past a slice");
}

/// Scheduling is cooperative: a loop with no blocking call and no
/// `check!()` keeps its thread until it ends; without spare schedulers,
/// nothing else runs meanwhile on a one-scheduler runtime.
#[test]
fn without_a_safepoint_or_a_spare_a_spinner_keeps_its_thread() {
    let config = Config::exact(1).spare_threads(0);
    let o = sleeper_beside_spinner_on(config, false, Duration::from_millis(100));
    assert!(
        o.worst >= Duration::from_millis(50),
        "the sleeper ran during the spin ({:?})",
        o.worst
    );
}

/// The spinner still keeps its thread (it is never preempted), but the
/// system monitor finds that scheduler blocked and a spare runs the
/// sleeper: it keeps its beat within the monitor's threshold, not the
/// 10 s spin.
#[test]
fn without_a_safepoint_a_spinner_keeps_its_thread_and_a_spare_runs_the_rest() {
    let o = sleeper_beside_spinner(false, Duration::from_secs(10));
    assert_eq!(
        o.spinner_overruns, 0,
        "nothing preempts a loop without check!()"
    );
    assert!(
        o.worst < Duration::from_secs(1),
        "the sleeper was {:?} late with a spare to run on",
        o.worst
    );
}

#[test]
fn request_stop_ends_a_check_loop() {
    runtime::init(Config::exact(1)).run(|| {
        let spinner = smarm::spawn(|| {
            loop {
                smarm::check!();
            }
        });
        smarm::sleep(Duration::from_millis(5));
        smarm::request_stop(spinner.pid());
        assert_eq!(
            spinner.join().unwrap_err().reason(),
            smarm::DownReason::Stopped
        );
    });
}

thread_local! {
    static SCRATCH: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// Borrow this thread's `SCRATCH` (if free) across 20,000 `check!()`s,
/// asserting the actor never leaves the thread meanwhile. Not inlined: the
/// compiler computes a thread-local's address once per function, so a
/// function that touches one must not also make a call that can migrate
/// the actor (here the caller's `yield_now`).
#[inline(never)]
fn borrow_across_checks(k: u64) -> bool {
    SCRATCH.with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else {
            return false;
        };
        // Held across the safepoints below.
        let thread = std::thread::current().id();
        for i in 0..20_000 {
            s.push(k + i);
            smarm::check!();
            assert_eq!(std::thread::current().id(), thread, "migrated mid-borrow");
        }
        s.clear();
        true
    })
}

/// A thread-local borrow held across `check!()` stays on its thread: a
/// switched-out actor resumes where it was, never migrating mid-borrow
/// (3 actors on 4 threads: idle siblings are always ready to steal).
/// (Pinning prevents the data race, not re-entrancy: another actor on the
/// same thread finds the `RefCell` borrowed, so it uses `try_borrow_mut`.)
#[test]
fn a_thread_local_borrow_across_check_stays_on_its_thread() {
    runtime::init(Config::exact(4).timeslice(Duration::from_micros(50))).run(|| {
        let hs: Vec<_> = (0..3u64)
            .map(|k| {
                smarm::spawn(move || {
                    let mut rounds = 0;
                    while rounds < 20 {
                        rounds += u64::from(borrow_across_checks(k));
                        smarm::yield_now(); // a normal switch point: may migrate
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    });
}
