//! Restart backoff: a child that keeps failing is restarted after delays
//! that double up to a cap (with jitter), start over after a quiet
//! period, still count toward the restart intensity when they happen,
//! show in `which_children` while they wait, and are called off by a
//! shutdown.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::supervisor::{self, Backoff, ChildSpec, Strategy, SupFlags};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use support::run_with;

/// A child that reports each start, stays up `hold` ms, then panics.
fn failing(id: &str, hold_ms: Arc<AtomicU64>, starts: smarm::Sender<Instant>) -> ChildSpec {
    ChildSpec::actor(id, move || {
        let _ = starts.send(Instant::now());
        let hold = hold_ms.load(Ordering::SeqCst);
        if hold > 0 {
            smarm::sleep(Duration::from_millis(hold));
        }
        panic!("fails on purpose");
    })
}

fn quiet_reports() {
    smarm::report::set_handler(|_| {});
}

#[test]
fn five_restarts_wait_doubling_delays_within_the_cap() {
    quiet_reports();
    run_with(2, || {
        let (tx, starts) = smarm::channel();
        let jitter = 0.1;
        let backoff = Backoff::new(Duration::from_millis(100), Duration::from_millis(800))
            .jitter(jitter)
            .reset_after(Duration::from_secs(10));
        let sup = supervisor::start(
            SupFlags::new(Strategy::OneForOne).intensity(10, Duration::from_secs(60)),
            vec![failing("flaky", Arc::new(AtomicU64::new(0)), tx).backoff(backoff)],
        )
        .unwrap();
        let mut last = starts.recv().unwrap();
        // While a restart waits, which_children says when it is due.
        smarm::sleep(Duration::from_millis(20));
        let child = sup.which_children().unwrap().remove(0);
        assert!(child.pid.is_none());
        let due = child.restarting_at.expect("a restart is pending");
        assert!(due > Instant::now() && due < Instant::now() + Duration::from_millis(200));
        // And introspection (the observer's actor detail) shows it too.
        let next = smarm::actor_info(sup.pid()).unwrap().next_restart;
        assert!(
            next.is_some_and(|d| d <= Duration::from_millis(200)),
            "{next:?}"
        );
        for expected_ms in [100u64, 200, 400, 800, 800] {
            let next = starts.recv_timeout(Duration::from_secs(10)).unwrap();
            support::assert_backoff_gap(next - last, expected_ms, jitter);
            last = next;
        }
        sup.shutdown().unwrap();
    });
}

#[test]
fn a_child_that_stayed_up_for_the_quiet_period_starts_over_at_the_first_delay() {
    quiet_reports();
    run_with(2, || {
        let (tx, starts) = smarm::channel();
        let hold = Arc::new(AtomicU64::new(0));
        let backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(5))
            .jitter(0.1)
            .reset_after(Duration::from_millis(200));
        let sup = supervisor::start(
            SupFlags::new(Strategy::OneForOne).intensity(10, Duration::from_secs(60)),
            vec![failing("flaky", hold.clone(), tx).backoff(backoff)],
        )
        .unwrap();
        let s1 = starts.recv().unwrap();
        let s2 = starts.recv_timeout(Duration::from_secs(10)).unwrap(); // after ~50 ms
        hold.store(300, Ordering::SeqCst); // the next run stays up 300 ms
        let s3 = starts.recv_timeout(Duration::from_secs(10)).unwrap(); // after ~100 ms
        let s4 = starts.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(
            s2 - s1 < s3 - s2,
            "the delays grew: {:?} then {:?}",
            s2 - s1,
            s3 - s2
        );
        // Without the reset the next delay would be ~200 ms.
        let after_quiet = (s4 - s3).saturating_sub(Duration::from_millis(300));
        assert!(
            after_quiet < Duration::from_millis(120),
            "after a quiet run the delay starts over: {after_quiet:?}"
        );
        sup.shutdown().unwrap();
    });
}

#[test]
fn the_intensity_limit_still_escalates_with_backoff() {
    quiet_reports();
    run_with(2, || {
        let (tx, starts) = smarm::channel();
        let backoff = Backoff::new(Duration::from_millis(10), Duration::from_millis(40));
        let sup = supervisor::start(
            SupFlags::new(Strategy::OneForOne).intensity(3, Duration::from_secs(30)),
            vec![failing("flaky", Arc::new(AtomicU64::new(0)), tx).backoff(backoff)],
        )
        .unwrap();
        let down = smarm::monitor(sup.pid());
        let d = down.rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(d.reason.is_abnormal(), "gave up: {:?}", d.reason);
        let mut count = 0;
        while starts.try_recv().unwrap_or(None).is_some() {
            count += 1;
        }
        assert_eq!(
            count, 4,
            "the first start and three restarts, then the fourth failure gives up"
        );
    });
}

#[test]
fn a_shutdown_or_terminate_child_calls_off_a_pending_restart() {
    quiet_reports();
    run_with(2, || {
        for terminate_child in [false, true] {
            let (tx, starts) = smarm::channel();
            let backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(1));
            let sup = supervisor::start(
                SupFlags::new(Strategy::OneForOne).intensity(10, Duration::from_secs(60)),
                vec![failing("flaky", Arc::new(AtomicU64::new(0)), tx).backoff(backoff)],
            )
            .unwrap();
            starts.recv().unwrap();
            smarm::sleep(Duration::from_millis(20));
            assert!(sup.which_children().unwrap()[0].restarting_at.is_some());
            if terminate_child {
                assert!(sup.terminate_child("flaky").unwrap());
                assert!(sup.which_children().unwrap().is_empty());
            } else {
                sup.shutdown().unwrap();
            }
            smarm::sleep(Duration::from_millis(500));
            assert!(
                matches!(starts.try_recv(), Ok(None) | Err(_)),
                "never restarted"
            );
            if terminate_child {
                sup.shutdown().unwrap();
            }
        }
    });
}

#[test]
fn with_one_for_all_the_others_wait_for_the_delayed_restart_too() {
    quiet_reports();
    run_with(2, || {
        let (tx, starts) = smarm::channel();
        let hold = Arc::new(AtomicU64::new(50));
        let backoff = Backoff::new(Duration::from_millis(150), Duration::from_secs(1));
        let sup = supervisor::start(
            SupFlags::new(Strategy::OneForAll).intensity(10, Duration::from_secs(60)),
            vec![
                ChildSpec::actor("steady", || {
                    loop {
                        smarm::sleep(Duration::from_secs(3600));
                    }
                }),
                failing("flaky", hold, tx).backoff(backoff),
            ],
        )
        .unwrap();
        let steady = sup.which_children().unwrap()[0].pid.unwrap();
        let first = starts.recv().unwrap();
        smarm::sleep(Duration::from_millis(100)); // flaky failed at 50 ms
        let children = sup.which_children().unwrap();
        assert!(children.iter().all(|c| c.pid.is_none()), "both wait");
        let again = starts.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(again - first >= Duration::from_millis(150));
        let restarted = sup.which_children().unwrap()[0].pid.unwrap();
        assert_ne!(restarted, steady, "steady was restarted with it");
        sup.shutdown().unwrap();
    });
}
