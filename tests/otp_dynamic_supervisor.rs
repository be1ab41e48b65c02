//! The dynamic supervisor: per-child arguments, 100,000 children,
//! `max_children`, restarts of restartable children within the intensity
//! (at once or backing off),
//! a shutdown that stops every child, and nesting under a supervisor.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::supervisor::{
    self, Backoff, ChildSpec, DynamicName, DynamicSpec, DynamicSupervisor, Restart, Shutdown,
    StartChildError, Strategy, SupFlags,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::{CountDrop, run_with};

#[test]
fn a_hundred_thousand_children_start_with_their_arguments_and_all_stop_on_shutdown() {
    let n: usize = 100_000;
    let sum = Arc::new(AtomicUsize::new(0));
    let dropped = Arc::new(AtomicUsize::new(0));
    let (s, d) = (sum.clone(), dropped.clone());
    run_with(2, move || {
        let sup = DynamicSupervisor::start(DynamicSpec::actor(move |i: usize| {
            let _guard = CountDrop(d.clone());
            s.fetch_add(i, Ordering::SeqCst);
            loop {
                smarm::sleep(Duration::from_secs(3600)); // until stopped
            }
        }))
        .unwrap();
        for i in 0..n {
            sup.start_child(i).unwrap();
        }
        assert_eq!(sup.count_children().unwrap(), n);
        assert_eq!(sup.which_children().unwrap().len(), n);
        sup.shutdown().unwrap();
        assert!(!sup.is_alive());
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            n,
            "shutdown returned after every child ended"
        );
    });
    assert_eq!(sum.load(Ordering::SeqCst), (0..n).sum::<usize>());
}

#[test]
fn max_children_refuses_a_start_and_hands_the_argument_back() {
    run_with(2, || {
        let (release_tx, release) = smarm::channel::<()>();
        let release = Arc::new(smarm::Mutex::new(release));
        let sup = DynamicSupervisor::start(
            DynamicSpec::actor(move |_: String| {
                let _ = release.lock().unwrap().recv();
            })
            .max_children(3),
        )
        .unwrap();
        for i in 0..3 {
            sup.start_child(format!("c{i}")).unwrap();
        }
        match sup.start_child("c3".to_string()) {
            Err(StartChildError::MaxChildren { max: 3, arg }) => assert_eq!(arg, "c3"),
            other => panic!("expected MaxChildren, got {other:?}"),
        }
        let err = sup.start_child("c4".to_string()).unwrap_err();
        assert!(err.to_string().contains("max_children (3)"), "{err}");
        assert_eq!(err.into_arg().as_deref(), Some("c4"));
        // One child ends: there is room again.
        release_tx.send(()).unwrap();
        while sup.count_children().unwrap() == 3 {
            smarm::sleep(Duration::from_millis(1));
        }
        sup.start_child("c5".to_string()).unwrap();
        assert_eq!(sup.count_children().unwrap(), 3);
        sup.shutdown().unwrap();
        assert!(matches!(
            sup.start_child("late".to_string()),
            Err(StartChildError::SupervisorDown)
        ));
    });
}

#[test]
fn temporary_children_are_forgotten_and_transient_ones_restart_with_their_argument() {
    run_with(2, || {
        // Temporary (the default): a crash is not restarted.
        let starts = Arc::new(AtomicUsize::new(0));
        let s = starts.clone();
        let temp = DynamicSupervisor::start(DynamicSpec::actor(move |_: u8| {
            s.fetch_add(1, Ordering::SeqCst);
            panic!("connection handler failed");
        }))
        .unwrap();
        temp.start_child(1).unwrap();
        while temp.count_children().unwrap() > 0 {
            smarm::sleep(Duration::from_millis(1));
        }
        smarm::sleep(Duration::from_millis(20));
        assert_eq!(starts.load(Ordering::SeqCst), 1);
        assert!(temp.is_alive());

        // Transient: a failure restarts it with a clone of its argument; a
        // normal exit does not.
        let (seen_tx, seen) = smarm::channel::<(u32, usize)>();
        let runs = Arc::new(AtomicUsize::new(0));
        let r = runs.clone();
        let trans = DynamicSupervisor::start(
            DynamicSpec::actor(move |arg: u32| {
                let run = r.fetch_add(1, Ordering::SeqCst);
                seen_tx.send((arg, run)).unwrap();
                if run < 2 {
                    panic!("fails twice");
                }
            })
            .restart(Restart::Transient)
            .intensity(5, Duration::from_secs(10)),
        )
        .unwrap();
        trans.start_child(42).unwrap();
        for expected_run in 0..3 {
            assert_eq!(seen.recv().unwrap(), (42, expected_run));
        }
        while trans.count_children().unwrap() > 0 {
            smarm::sleep(Duration::from_millis(1));
        }
        assert_eq!(
            runs.load(Ordering::SeqCst),
            3,
            "a normal exit is not restarted"
        );
        trans.shutdown().unwrap();
        temp.shutdown().unwrap();
    });
}

#[test]
fn a_permanent_child_crashing_past_the_intensity_takes_the_supervisor_down() {
    run_with(2, || {
        let sup = DynamicSupervisor::start(
            DynamicSpec::actor(|_: ()| panic!("always fails"))
                .restart(Restart::Permanent)
                .intensity(3, Duration::from_secs(10)),
        )
        .unwrap();
        let m = smarm::monitor(sup.pid());
        sup.start_child(()).unwrap();
        let down = m.rx.recv_timeout(Duration::from_secs(30)).unwrap();
        assert!(
            matches!(down.reason, smarm::DownReason::Shutdown),
            "gave up with shutdown, as OTP's supervisor: {:?}",
            down.reason
        );
    });
}

#[test]
fn terminate_child_stops_one_and_a_stuck_child_does_not_hang_shutdown() {
    run_with(2, || {
        let sup = DynamicSupervisor::start(
            DynamicSpec::actor(|stuck: bool| {
                if stuck {
                    // Ignores the supervisor's stop request (catches and
                    // clears it), then waits with no waker: the run's final
                    // sweep ends it.
                    let r = std::panic::catch_unwind(|| smarm::sleep(Duration::from_secs(3600)));
                    assert!(r.is_err(), "woken by the stop");
                    smarm::stop::clear_stop();
                    let (_keep, never) = smarm::channel::<()>();
                    let _ = never.recv();
                }
                loop {
                    smarm::sleep(Duration::from_secs(3600));
                }
            })
            .shutdown(Shutdown::Timeout(Duration::from_millis(100))),
        )
        .unwrap();
        let a = sup.start_child(false).unwrap();
        let b = sup.start_child(false).unwrap();
        assert!(sup.terminate_child(a).unwrap());
        assert!(!smarm::is_alive(a));
        assert!(!sup.terminate_child(a).unwrap(), "already gone");
        assert_eq!(sup.which_children().unwrap(), vec![b]);
        sup.start_child(true).unwrap();
        let started = std::time::Instant::now();
        sup.shutdown().unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "one shutdown timeout for all children, not one per child"
        );
        assert!(!smarm::is_alive(b));
    });
}

#[test]
fn a_named_dynamic_supervisor_nests_under_a_supervisor() {
    const CONNS: DynamicName<u64> = DynamicName::new("conns");
    run_with(2, || {
        let (got_tx, got) = smarm::channel::<u64>();
        let top = supervisor::start(
            SupFlags::new(Strategy::OneForOne),
            vec![ChildSpec::dynamic_supervisor("conns", move || {
                let got_tx = got_tx.clone();
                DynamicSpec::actor(move |n: u64| got_tx.send(n).unwrap()).name(CONNS)
            })],
        )
        .unwrap();
        let conns = DynamicSupervisor::whereis(CONNS).unwrap();
        conns.start_child(7).unwrap();
        assert_eq!(got.recv().unwrap(), 7);
        let children = top.which_children().unwrap();
        assert_eq!(children[0].kind, supervisor::ChildKind::Supervisor);
        top.shutdown().unwrap();
        assert!(!conns.is_alive());
        assert!(DynamicSupervisor::whereis(CONNS).is_none());
    });
}

/// A dynamic child that reports each start (with its argument), stays up
/// its argument's ms, then panics.
fn failing_children(starts: smarm::Sender<(u64, Instant)>) -> DynamicSpec<u64> {
    DynamicSpec::actor(move |hold_ms: u64| {
        let _ = starts.send((hold_ms, Instant::now()));
        smarm::sleep(Duration::from_millis(hold_ms));
        panic!("fails on purpose");
    })
    .restart(Restart::Permanent)
}

#[test]
fn a_failing_dynamic_child_restarts_after_doubling_delays_within_the_cap() {
    smarm::report::set_handler(|_| {});
    run_with(2, || {
        let (tx, starts) = smarm::channel();
        let jitter = 0.1;
        let sup = DynamicSupervisor::start(
            failing_children(tx)
                .intensity(20, Duration::from_secs(60))
                .max_children(2)
                .backoff(
                    Backoff::new(Duration::from_millis(100), Duration::from_millis(400))
                        .jitter(jitter)
                        .reset_after(Duration::from_secs(10)),
                ),
        )
        .unwrap();
        sup.start_child(0).unwrap();
        let (arg, mut last) = starts.recv().unwrap();
        assert_eq!(arg, 0);
        // While it waits: not running, but holding its place under
        // max_children, and its due time shows in introspection.
        smarm::sleep(Duration::from_millis(20));
        assert_eq!(sup.count_children().unwrap(), 0);
        let next = smarm::actor_info(sup.pid()).unwrap().next_restart;
        assert!(
            next.is_some_and(|d| d <= Duration::from_millis(100)),
            "{next:?}"
        );
        sup.start_child(1_000_000).unwrap(); // the second place
        assert!(matches!(
            sup.start_child(7),
            Err(StartChildError::MaxChildren { max: 2, arg: 7 })
        ));
        assert_eq!(starts.recv().unwrap().0, 1_000_000);
        for expected_ms in [100u64, 200, 400, 400] {
            let (arg, next) = starts.recv_timeout(Duration::from_secs(10)).unwrap();
            assert_eq!(arg, 0, "restarted with its own argument");
            support::assert_backoff_gap(next - last, expected_ms, jitter);
            last = next;
        }
        // A shutdown calls the waiting restart off.
        sup.shutdown().unwrap();
        assert!(
            starts.recv_timeout(Duration::from_millis(600)).is_err(),
            "a restart after the shutdown"
        );
    });
}

#[test]
fn a_backing_off_dynamic_child_still_counts_toward_the_intensity() {
    smarm::report::set_handler(|_| {});
    run_with(2, || {
        let (tx, starts) = smarm::channel();
        let sup = DynamicSupervisor::start(
            failing_children(tx)
                .intensity(3, Duration::from_secs(60))
                .backoff(Backoff::new(
                    Duration::from_millis(10),
                    Duration::from_millis(20),
                )),
        )
        .unwrap();
        let watch = smarm::monitor(sup.pid());
        sup.start_child(0).unwrap();
        // The first start and 3 restarts; the 4th failure escalates.
        let down = watch.rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(
            matches!(down.reason, smarm::DownReason::Shutdown),
            "gave up with shutdown, as OTP's supervisor: {:?}",
            down.reason
        );
        let mut started = 0;
        while starts.try_recv().unwrap_or(None).is_some() {
            started += 1;
        }
        assert_eq!(started, 4);
    });
}
