//! select: priority order, closed arms, timeouts, wakes.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::{channel, select, select_timeout};
use std::time::{Duration, Instant};
use support::{THREADS, run_with};

#[test]
fn ready_arms_are_reported_in_priority_order() {
    run_with(1, || {
        let (a_tx, a_rx) = channel::<u32>();
        let (b_tx, b_rx) = channel::<u32>();
        b_tx.send(2).unwrap();
        assert_eq!(select(&[&a_rx, &b_rx]), 1);
        a_tx.send(1).unwrap();
        assert_eq!(select(&[&a_rx, &b_rx]), 0, "arm 0 wins when both are ready");
        assert_eq!(a_rx.try_recv().unwrap(), Some(1));
        assert_eq!(select(&[&a_rx, &b_rx]), 1);
    });
}

#[test]
fn a_closed_arm_is_ready() {
    run_with(1, || {
        let (a_tx, a_rx) = channel::<u32>();
        let (_b_tx, b_rx) = channel::<u32>();
        drop(a_tx);
        assert_eq!(select(&[&b_rx, &a_rx]), 1);
        assert!(a_rx.try_recv().is_err());
    });
}

#[test]
fn select_parks_until_a_send_on_any_arm() {
    for threads in THREADS {
        run_with(threads, || {
            let (a_tx, a_rx) = channel::<u32>();
            let (b_tx, b_rx) = channel::<u32>();
            let waiter = smarm::spawn(move || {
                let mut got = Vec::new();
                while got.len() < 100 {
                    match select(&[&a_rx, &b_rx]) {
                        0 => got.push(a_rx.try_recv().unwrap().unwrap()),
                        _ => got.push(b_rx.try_recv().unwrap().unwrap()),
                    }
                }
                got.sort();
                assert_eq!(got, (0..100).collect::<Vec<_>>());
            });
            for i in 0..100 {
                if i % 2 == 0 {
                    a_tx.send(i).unwrap()
                } else {
                    b_tx.send(i).unwrap()
                }
                smarm::yield_now();
            }
            waiter.join().unwrap();
        });
    }
}

#[test]
fn select_timeout_times_out_and_a_racing_message_wins() {
    run_with(2, || {
        let (tx, rx) = channel::<u32>();
        let t0 = Instant::now();
        assert_eq!(select_timeout(&[&rx], Duration::from_millis(10)), None);
        assert!(t0.elapsed() >= Duration::from_millis(10));
        assert_eq!(select_timeout(&[&rx], Duration::ZERO), None);
        tx.send(5).unwrap();
        assert_eq!(select_timeout(&[&rx], Duration::ZERO), Some(0));
        assert_eq!(rx.try_recv().unwrap(), Some(5));
        // A sender aiming at the deadline: the message is never lost.
        let sender = smarm::spawn(move || {
            for i in 0..200u32 {
                smarm::sleep(Duration::from_micros(150));
                tx.send(i).unwrap();
            }
        });
        let mut seen = Vec::new();
        while seen.len() < 200 {
            if select_timeout(&[&rx], Duration::from_micros(150)).is_some() {
                seen.push(rx.try_recv().unwrap().unwrap());
            }
        }
        sender.join().unwrap();
        assert_eq!(seen, (0..200).collect::<Vec<_>>());
    });
}

#[test]
fn a_stop_unwinds_a_select() {
    run_with(2, || {
        let (_tx, rx) = channel::<u32>();
        let waiter = smarm::spawn(move || {
            let _ = select(&[&rx]);
            unreachable!("stopped while selecting");
        });
        smarm::sleep(Duration::from_millis(5));
        smarm::request_stop(waiter.pid());
        assert_eq!(
            waiter.join().unwrap_err().reason(),
            smarm::DownReason::Stopped
        );
    });
}

#[test]
#[should_panic(expected = "at least one arm")]
fn select_with_no_arms_panics() {
    run_with(1, || {
        let _ = select(&[]);
    });
}
