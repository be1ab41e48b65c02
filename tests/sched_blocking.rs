//! An actor that blocks its scheduler's thread (a std lock, a blocking
//! system call) does not stop the other schedulers: timers keep firing, the
//! actor it woke last runs elsewhere (the system monitor moves it), and a
//! snapshot names the blocked scheduler and actor. When every scheduler is
//! blocked, a spare scheduler thread keeps timers and wakes served, and
//! leaves once it is not needed.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
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
fn a_std_mutex_held_across_a_sleep_completes_with_one_two_and_four_schedulers() {
    for threads in [1, 2, 4] {
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
    // With one scheduler, the heartbeat runs on a spare.
    for threads in [4, 1] {
        within(
            Duration::from_secs(60),
            threads,
            heartbeat_beside_a_blocked_scheduler,
        );
    }
}

/// The one scheduler blocks for 300 ms; meanwhile a sleeper's timer must
/// fire, on a spare, which the snapshot reports; once the scheduler is
/// back and the spare idles, the spare leaves.
fn a_spare_serves_while_the_only_scheduler_is_blocked() {
    let (tx, rx) = smarm::channel::<smarm::RuntimeSnapshot>();
    let sleeper = smarm::spawn(move || {
        smarm::sleep(Duration::from_millis(100));
        tx.send(smarm::snapshot()).unwrap();
    });
    let blocker = smarm::spawn(|| std::thread::sleep(Duration::from_millis(300)));
    let during = rx.recv().unwrap();
    let spare = during
        .schedulers
        .iter()
        .find(|s| s.spare && s.active)
        .unwrap_or_else(|| panic!("no running spare while the scheduler blocked:\n{during}"));
    assert!(spare.spare_starts >= 1, "{during}");
    let regular = &during.schedulers[0];
    assert!(!regular.spare && regular.active);
    assert_eq!(regular.blocked_in, Some(blocker.pid()), "{during}");
    assert!(during.to_string().contains("spare running"), "{during}");
    sleeper.join().unwrap();
    blocker.join().unwrap();
    // Back to one scheduler: the spare leaves once it has nothing to do.
    let t0 = Instant::now();
    while smarm::snapshot()
        .schedulers
        .iter()
        .any(|s| s.spare && s.active)
    {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the spare stayed:\n{}",
            smarm::snapshot()
        );
        smarm::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_spare_serves_timers_while_the_only_scheduler_is_blocked_then_leaves() {
    for _ in 0..3 {
        within(
            Duration::from_secs(60),
            1,
            a_spare_serves_while_the_only_scheduler_is_blocked,
        );
    }
}

#[test]
fn spare_threads_zero_starts_no_spare() {
    use smarm::runtime::{self, Config};
    runtime::init(Config::exact(1).spare_threads(0)).run(|| {
        let blocker = smarm::spawn(|| std::thread::sleep(Duration::from_millis(100)));
        blocker.join().unwrap();
        let snap = smarm::snapshot();
        assert!(snap.schedulers.iter().all(|s| !s.spare), "{snap}");
        assert_eq!(snap.schedulers.len(), 1);
    });
    // By default a snapshot lists only the spares that have run: none
    // here, though up to 63 are provided for.
    runtime::init(Config::exact(1)).run(|| {
        assert_eq!(smarm::snapshot().schedulers.len(), 1);
    });
}

/// The blocker wakes the root just before blocking, so the root waits in
/// the blocked scheduler's next slot, where no other scheduler looks: the
/// system monitor must move it. The root then sees the blocked scheduler in
/// a snapshot, and its heartbeat keeps time.
fn woken_just_before_its_scheduler_blocks() {
    let blocking = Arc::new(AtomicBool::new(true));
    let (started_tx, started) = smarm::channel::<()>();
    let blocker = {
        let blocking = blocking.clone();
        smarm::spawn(move || {
            started_tx.send(()).unwrap(); // the root lands in our next slot
            std::thread::sleep(Duration::from_secs(2));
            blocking.store(false, Ordering::SeqCst);
        })
    };
    started.recv().unwrap();
    assert!(
        blocking.load(Ordering::SeqCst),
        "the root ran only after the blocker's 2 s call returned"
    );
    // The monitor reports the blocked scheduler and its actor.
    let give_up = Instant::now() + Duration::from_secs(1);
    let blocked = loop {
        let snap = smarm::snapshot();
        if let Some(s) = snap.schedulers.iter().find(|s| s.blocked_in.is_some()) {
            break *s;
        }
        assert!(
            Instant::now() < give_up,
            "no scheduler reported blocked: {snap}"
        );
        smarm::sleep(Duration::from_millis(5));
    };
    assert_eq!(blocked.blocked_in, Some(blocker.pid()));
    assert!(
        blocked.blocked_for >= Duration::from_millis(10),
        "{blocked:?}"
    );
    assert!(
        blocked.moved_off >= 1,
        "the root was moved off: {blocked:?}"
    );
    let text = smarm::snapshot().to_string();
    assert!(text.contains("BLOCKED"), "{text}");
    // Timers keep firing meanwhile.
    let t0 = Instant::now();
    smarm::sleep(Duration::from_millis(10));
    assert!(
        blocking.load(Ordering::SeqCst) && t0.elapsed() < Duration::from_secs(1),
        "a 10 ms sleep took {:?} beside the blocked scheduler",
        t0.elapsed()
    );
    blocker.join().unwrap();
    // Unblocked: the record clears once the scheduler resumes anything.
    let give_up = Instant::now() + Duration::from_secs(5);
    while smarm::snapshot()
        .schedulers
        .iter()
        .any(|s| s.blocked_in.is_some())
    {
        assert!(Instant::now() < give_up, "the blocked record never cleared");
        smarm::sleep(Duration::from_millis(5));
    }
}

#[test]
fn an_actor_woken_just_before_its_scheduler_blocks_runs_elsewhere() {
    for threads in [2, 4] {
        within(
            Duration::from_secs(60),
            threads,
            woken_just_before_its_scheduler_blocks,
        );
    }
}

/// A blocker holds the regular scheduler and a sleeper holds the first
/// spare, so a second spare starts and parks. The blocker returns first
/// and its scheduler parks; then the sleeper arms a timer. The insert's
/// wake goes to the highest idle scheduler, the second spare, which finds
/// it may leave; the first spare leaves once the sleeper parks. Unless a
/// leaving spare passes the insert's call on, the regular scheduler stays
/// parked with no timekeeper and the run never ends.
fn a_timer_armed_as_the_spares_leave() {
    let until = Instant::now() + Duration::from_millis(100);
    // Spawned first: it waits in the local queue, which a spare takes.
    let sleeper = smarm::spawn(move || {
        std::thread::sleep(
            (until + Duration::from_micros(300)).saturating_duration_since(Instant::now()),
        );
        smarm::sleep(Duration::from_millis(2));
    });
    // Spawned last: it runs first, here, and blocks this scheduler.
    let blocker = smarm::spawn(move || {
        std::thread::sleep(until.saturating_duration_since(Instant::now()));
    });
    blocker.join().unwrap();
    sleeper.join().unwrap();
}

#[test]
fn a_timer_armed_while_spares_leave_still_fires() {
    for _ in 0..20 {
        within(
            Duration::from_secs(10),
            1,
            a_timer_armed_as_the_spares_leave,
        );
    }
}

/// The ureq case: actors call, with a blocking std socket, an HTTP-like
/// server that runs in the same runtime. Each blocked call holds a
/// scheduler thread; the server's actors run only if spares keep coming,
/// one per blocked thread. At 2 schedulers, 8 such calls at once all
/// complete.
#[test]
fn eight_sync_calls_to_a_server_in_the_same_runtime_all_complete_at_two_schedulers() {
    within(Duration::from_secs(120), 2, || {
        let listener = smarm::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = smarm::spawn(move || {
            for _ in 0..8 {
                let (mut conn, _) = listener.accept().unwrap();
                smarm::spawn(move || {
                    use std::io::{Read, Write};
                    let mut req = [0u8; 4];
                    conn.read_exact(&mut req).unwrap();
                    smarm::sleep(Duration::from_millis(20)); // the server's work
                    conn.write_all(&req).unwrap();
                });
            }
        });
        let clients: Vec<_> = (0..8u8)
            .map(|i| {
                smarm::spawn(move || {
                    use std::io::{Read, Write};
                    // A sync client: blocks this scheduler's thread.
                    let mut s = std::net::TcpStream::connect(addr).unwrap();
                    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
                    s.write_all(&[i; 4]).unwrap();
                    let mut back = [0u8; 4];
                    s.read_exact(&mut back).unwrap();
                    back
                })
            })
            .collect();
        for (i, c) in clients.into_iter().enumerate() {
            assert_eq!(c.join().unwrap(), [i as u8; 4]);
        }
        server.join().unwrap();
    });
}
