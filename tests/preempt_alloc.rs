//! The allocation safepoint: with `PreemptingAlloc` as the global allocator,
//! an actor that allocates is timesliced without `check!()` in its loop,
//! resumes on its own thread, and never migrates mid-borrow.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

#[global_allocator]
static ALLOC: smarm::PreemptingAlloc = smarm::PreemptingAlloc::system();

mod support;

use smarm::runtime::{self, Config};
use std::cell::RefCell;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One heap allocation the optimiser cannot remove.
fn allocate(i: u64) -> u64 {
    let b = black_box(Box::new(i));
    *b
}

#[test]
fn allocating_and_check_spinners_do_not_starve_a_sleeper_on_one_thread() {
    // A preemption that never comes leaves the sleeper parked for good:
    // fail with a message rather than hang.
    let _guard =
        support::HangGuard::new(Duration::from_secs(120), "the spinners starved the sleeper");
    let out = Arc::new(Mutex::new(None));
    let o = out.clone();
    // No spares: the monitor would otherwise start a second thread when a
    // loaded machine stalls this one, and that thread could serve the
    // sleeper while a spinner holds the first.
    runtime::init(Config::exact(1).spare_threads(0)).run(move || {
        let stop = Arc::new(AtomicBool::new(false));
        // Released however the root ends, so a failed step cannot leave
        // the spinners (which only stop when told) running for ever.
        let _release = SetOnDrop(stop.clone());
        let s = stop.clone();
        let allocating = smarm::spawn(move || {
            let mut x = 0u64;
            while !s.load(Ordering::Relaxed) {
                x = x.wrapping_add(allocate(x));
            }
            black_box(x);
        });
        let s = stop.clone();
        let checking = smarm::spawn(move || {
            let mut x = 0u64;
            while !s.load(Ordering::Relaxed) {
                x = black_box(x.wrapping_add(1));
                smarm::check!();
            }
        });
        let worst = support::heartbeat_worst_lateness(50);
        let me = smarm::actor_info(smarm::self_pid()).unwrap().overruns;
        let a = smarm::actor_info(allocating.pid()).unwrap().overruns;
        let c = smarm::actor_info(checking.pid()).unwrap().overruns;
        stop.store(true, Ordering::Relaxed);
        allocating.join().unwrap();
        checking.join().unwrap();
        *o.lock().unwrap() = Some((worst, me, a, c));
    });
    let (worst, sleeper, allocating, checking) = out.lock().unwrap().take().unwrap();
    // One thread: a spinner never parks, so it leaves the thread only when
    // its slice is spent at a safepoint (counted as an overrun); the
    // sleeper got its 50 wakes, so whichever spinner ran was switched out.
    // Both run: each is queued ahead of the one preempted before it. (On a
    // quiet machine each overruns about 25 times; under load a stalled
    // thread can find several heartbeats due at once, so only one each is
    // certain.)
    assert!(
        allocating >= 1,
        "the allocating spinner was never preempted ({allocating} overruns)"
    );
    assert!(
        checking >= 1,
        "the check!() spinner was never preempted ({checking} overruns)"
    );
    assert!(worst < Duration::from_secs(1), "sleeper was {worst:?} late");
    assert_eq!(sleeper, 0, "the sleeper never ran past a slice");
}

/// Sets its flag when dropped: on a normal return and on a panic.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A global allocator must not unwind, so an allocation cannot observe a
/// stop: the spinner runs on, and the stop unwinds it (destructors and
/// all) at its next blocking call.
#[test]
fn a_stop_reaches_an_allocating_spinner_at_its_next_blocking_call() {
    let dropped = Arc::new(AtomicBool::new(false));
    let after = Arc::new(AtomicBool::new(false));
    let (d, a) = (dropped.clone(), after.clone());
    runtime::init(Config::exact(1)).run(move || {
        let spins = Arc::new(AtomicU64::new(0));
        let done_spinning = Arc::new(AtomicBool::new(false));
        // However the root ends: a failed step must not leave the spinner,
        // which ignores the stop while it only allocates, spinning for ever.
        let _release = SetOnDrop(done_spinning.clone());
        let (s, ds) = (spins.clone(), done_spinning.clone());
        let h = smarm::spawn(move || {
            let _flag = SetOnDrop(d);
            while !ds.load(Ordering::Relaxed) {
                s.fetch_add(allocate(1), Ordering::Relaxed);
            }
            smarm::sleep(Duration::from_secs(3600)); // the stop unwinds here
            a.store(true, Ordering::SeqCst);
        });
        smarm::sleep(Duration::from_millis(5));
        smarm::request_stop(h.pid());
        let seen = spins.load(Ordering::Relaxed);
        // The spinner runs whenever the root sleeps, but a loaded machine
        // may stall the thread past one short sleep: look until it moved.
        let give_up = std::time::Instant::now() + Duration::from_secs(10);
        while spins.load(Ordering::Relaxed) == seen && std::time::Instant::now() < give_up {
            smarm::sleep(Duration::from_millis(1));
        }
        assert!(smarm::is_alive(h.pid()), "allocations do not unwind");
        assert!(spins.load(Ordering::Relaxed) > seen, "still spinning");
        done_spinning.store(true, Ordering::Relaxed);
        h.join().unwrap();
    });
    assert!(
        dropped.load(Ordering::SeqCst),
        "the stop ran the destructors"
    );
    assert!(
        !after.load(Ordering::SeqCst),
        "the stop unwound at the sleep"
    );
}

thread_local! {
    /// The thread that owns this copy, and scratch data borrowed across
    /// allocations.
    static SCRATCH: RefCell<(Option<std::thread::ThreadId>, Vec<u64>)> =
        const { RefCell::new((None, Vec::new())) };
}

/// Borrow this thread's `SCRATCH` (if no other actor on the thread holds
/// it) across `n` allocating pushes, checking after each that the actor is
/// still on the same thread and the data is its own. Returns the overruns
/// the actor took while holding the borrow, or `None` if it was busy. Not
/// inlined: a function that touches a thread-local must not also make a
/// call that can migrate the actor (its callers yield and block).
#[inline(never)]
fn borrow_across_allocations(tag: u64, n: u64) -> Option<u64> {
    SCRATCH.with(|s| {
        let mut s = s.try_borrow_mut().ok()?;
        let thread = std::thread::current().id();
        assert_eq!(*s.0.get_or_insert(thread), thread, "another thread's copy");
        let me = smarm::self_pid();
        let before = smarm::actor_info(me).unwrap().overruns;
        s.1.clear();
        for i in 0..n {
            s.1.push(tag ^ i); // allocates as it grows
            black_box(Box::new(i));
            assert_eq!(std::thread::current().id(), thread, "migrated mid-borrow");
        }
        for (i, v) in s.1.iter().enumerate() {
            assert_eq!(*v, tag ^ i as u64, "thread-local data corrupted");
        }
        s.1.clear();
        Some(smarm::actor_info(me).unwrap().overruns - before)
    })
}

/// An actor preempted at an allocation while it holds a thread-local borrow
/// resumes on its own thread: 3 actors on 4 threads, so idle siblings are
/// always ready to steal a switched-out actor (without pinning this fails
/// within a few rounds), are preempted mid-borrow and never migrate.
#[test]
fn a_thread_local_borrow_across_allocations_stays_on_its_thread() {
    let preempted_mid_borrow = Arc::new(AtomicU64::new(0));
    let p = preempted_mid_borrow.clone();
    runtime::init(Config::exact(4).timeslice(Duration::from_micros(50))).run(move || {
        let hs: Vec<_> = (0..6u64)
            .map(|k| {
                let p = p.clone();
                smarm::spawn(move || {
                    let mut rounds = 0;
                    while rounds < 20 {
                        if let Some(overruns) = borrow_across_allocations(k << 32, 20_000) {
                            p.fetch_add(overruns, Ordering::Relaxed);
                            rounds += 1;
                        }
                        smarm::yield_now(); // a normal switch point: may migrate
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    });
    assert!(
        preempted_mid_borrow.load(Ordering::Relaxed) > 0,
        "no actor was preempted while holding the borrow: the test proved nothing"
    );
}

const CHILD_ENV: &str = "SMARM_PREEMPT_PRINT_CHILD";
const SPINNERS: usize = 64;
const LINES: usize = 100;

/// A `Display` that allocates while the stdout lock is held, so `println!`
/// itself is a preemption point.
struct Allocating(u64);
impl std::fmt::Display for Allocating {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = format!("{:?}", vec![self.0; 4]);
        f.write_str(&s)
    }
}

/// 64 allocating spinners that `println!` formatted lines: preemption
/// inside `println!` lets another actor on the same thread re-enter std's
/// (per-thread re-entrant) stdout lock, so lines may interleave, but
/// nothing panics and no line is lost. Run in a child process so the
/// output can be counted.
#[test]
fn allocating_spinners_that_print_run_to_completion() {
    if std::env::var_os(CHILD_ENV).is_some() {
        runtime::init(Config::exact(4).timeslice(Duration::from_micros(20))).run(|| {
            let hs: Vec<_> = (0..SPINNERS as u64)
                .map(|k| {
                    smarm::spawn(move || {
                        for i in 0..LINES as u64 {
                            let mut x = 0;
                            for j in 0..200 {
                                x += allocate(j);
                            }
                            println!("spinner {k} line {i}: {} {x}", Allocating(i));
                        }
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
        });
        return;
    }
    let out = support::rerun_in_child(
        "allocating_spinners_that_print_run_to_completion",
        CHILD_ENV,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed: {stderr}");
    assert!(!stderr.contains("panicked"), "child panicked: {stderr}");
    assert_eq!(
        stdout.matches("spinner ").count(),
        SPINNERS * LINES,
        "lines lost"
    );
}

/// Thousands of actors mixing preemption (allocations under a thread-local
/// borrow and under a smarm `Mutex`) with blocking (channels, sleeps,
/// yields) across 4 threads, with debug assertions on in test builds: no
/// panic, no lost message, no corrupted thread-local.
#[test]
fn thousands_of_actors_mix_preemption_and_blocking() {
    const PAIRS: u64 = 1_000;
    const ROUNDS: u64 = 10;
    let exchanged = Arc::new(AtomicUsize::new(0));
    let e = exchanged.clone();
    runtime::init(Config::exact(4).timeslice(Duration::from_micros(30))).run(move || {
        let shared = Arc::new(smarm::Mutex::new(Vec::<u64>::new()));
        let mut hs = Vec::new();
        for k in 0..PAIRS {
            let (to_b, from_a) = smarm::channel::<Vec<u64>>();
            let (to_a, from_b) = smarm::channel::<Vec<u64>>();
            let (m, e) = (shared.clone(), e.clone());
            hs.push(smarm::spawn(move || {
                for r in 0..ROUNDS {
                    borrow_across_allocations(k, 200);
                    to_b.send((0..(r + k % 7)).collect()).unwrap();
                    let back = from_b.recv().unwrap();
                    assert_eq!(back, (0..(r + k % 7)).rev().collect::<Vec<_>>());
                    e.fetch_add(1, Ordering::Relaxed);
                    {
                        let mut v = m.lock().unwrap();
                        for i in 0..50 {
                            v.push(allocate(i)); // preemptible under the lock
                        }
                        v.clear();
                    }
                    smarm::sleep(Duration::from_micros(50 * (k % 3)));
                }
            }));
            hs.push(smarm::spawn(move || {
                while let Ok(mut v) = from_a.recv() {
                    borrow_across_allocations(!k, 100);
                    v.reverse();
                    if to_a.send(v).is_err() {
                        break;
                    }
                    smarm::yield_now();
                }
            }));
        }
        for h in hs {
            h.join().unwrap();
        }
    });
    assert_eq!(exchanged.load(Ordering::Relaxed), (PAIRS * ROUNDS) as usize);
}
