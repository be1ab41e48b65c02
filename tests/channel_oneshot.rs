//! One-shot channels: one value to the actor that made the channel.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::channel::{OneshotError, oneshot};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::{CountDrop, THREADS, run_with};

const LONG: Duration = Duration::from_secs(10);

#[test]
fn values_arrive_across_schedulers_without_a_lost_wake() {
    for threads in THREADS {
        run_with(threads, || {
            for i in 0..5_000u64 {
                let (tx, rx) = oneshot::<u64>();
                drop(smarm::spawn(move || {
                    if i % 3 == 0 {
                        smarm::yield_now(); // sometimes after the receiver parks
                    }
                    tx.send(i).unwrap();
                }));
                assert_eq!(rx.recv_timeout(LONG), Ok(i));
            }
        });
    }
}

#[test]
fn a_dropped_sender_closes_at_once_and_a_timeout_is_a_timeout() {
    run_with(2, || {
        let (tx, rx) = oneshot::<u64>();
        drop(smarm::spawn(move || {
            smarm::sleep(Duration::from_millis(5));
            drop(tx);
        }));
        let t0 = Instant::now();
        assert_eq!(rx.recv_timeout(LONG), Err(OneshotError::Closed));
        assert!(t0.elapsed() < Duration::from_secs(1));

        let (_tx, rx) = oneshot::<u64>();
        let t0 = Instant::now();
        assert_eq!(
            rx.recv_timeout(Duration::from_millis(10)),
            Err(OneshotError::Timeout)
        );
        assert!(t0.elapsed() >= Duration::from_millis(10));
    });
}

#[test]
fn a_send_to_a_dropped_receiver_hands_the_value_back_and_nothing_leaks() {
    run_with(2, || {
        let drops = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = oneshot::<CountDrop>();
        assert!(!tx.is_closed());
        drop(rx);
        assert!(tx.is_closed());
        let Err(back) = tx.send(CountDrop(drops.clone())) else {
            panic!("the receiver is gone")
        };
        assert_eq!(drops.load(Ordering::SeqCst), 0, "handed back, not dropped");
        drop(back);
        assert_eq!(drops.load(Ordering::SeqCst), 1);

        // Sent but never received: dropped once, with the receiver.
        let (tx, rx) = oneshot::<CountDrop>();
        assert!(tx.send(CountDrop(drops.clone())).is_ok());
        drop(rx);
        assert_eq!(drops.load(Ordering::SeqCst), 2);
    });
}

#[test]
fn only_the_actor_that_made_it_receives() {
    run_with(2, || {
        let (_tx, rx) = oneshot::<u64>();
        let other = smarm::spawn(move || {
            let _ = rx.recv_timeout(LONG);
        });
        let err = other.join().unwrap_err();
        assert!(
            err.to_string()
                .contains("received by the actor that made it"),
            "{err}"
        );
    });
}
