//! `smarm::hibernate`: an actor waits holding no stack, then continues on
//! a fresh one with its state intact; destructors run at the hibernation;
//! stops, closes, ready messages, other schedulers and other stack sizes.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use smarm::{Receiver, WaitingOn, channel, hibernate};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use support::{CountDrop, THREADS, parked_on, proc_status_kib, rerun_in_child, run_with};

/// Sum what arrives, hibernating between messages, until a 0 or the close.
fn summer(total: u64, rx: Receiver<u64>) -> u64 {
    match rx.recv() {
        Ok(0) | Err(_) => total,
        Ok(n) => hibernate(rx, move |rx| summer(total + n, rx)),
    }
}

#[test]
fn a_hibernating_actor_keeps_its_state_across_wakes() {
    for threads in THREADS {
        run_with(threads, || {
            let (tx, rx) = channel::<u64>();
            let actor = smarm::spawn(move || summer(0, rx));
            for n in 1..=100 {
                tx.send(n).unwrap();
                if n % 10 == 0 {
                    assert_eq!(parked_on(actor.pid()), Some(WaitingOn::Hibernating));
                }
            }
            tx.send(0).unwrap();
            assert_eq!(actor.join().unwrap(), 5050);
        });
    }
}

#[test]
fn many_actors_hibernate_and_wake_across_schedulers() {
    for threads in [2, 4] {
        run_with(threads, || {
            let actors: Vec<_> = (0..200)
                .map(|_| {
                    let (tx, rx) = channel::<u64>();
                    (tx, smarm::spawn(move || summer(0, rx)))
                })
                .collect();
            for round in 1..=20 {
                for (tx, _) in &actors {
                    tx.send(round).unwrap();
                }
                smarm::yield_now();
            }
            for (tx, actor) in actors {
                drop(tx); // the close wakes it; its recv sees it
                assert_eq!(actor.join().unwrap(), 210);
            }
        });
    }
}

#[test]
fn hibernating_drops_what_was_on_the_stack() {
    run_with(1, || {
        let drops = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = channel::<u32>();
        let counted = drops.clone();
        let actor = smarm::spawn(move || {
            let _on_stack = CountDrop(counted.clone());
            hibernate(rx, move |rx| {
                let before = counted.load(Ordering::SeqCst);
                (before, rx.recv().unwrap())
            })
        });
        assert_eq!(parked_on(actor.pid()), Some(WaitingOn::Hibernating));
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "dropped at the hibernation"
        );
        tx.send(7).unwrap();
        assert_eq!(actor.join().unwrap(), (1, 7));
    });
}

#[test]
fn a_message_already_queued_continues_without_waiting() {
    run_with(1, || {
        let (tx, rx) = channel::<u32>();
        tx.send(1).unwrap();
        let actor = smarm::spawn(move || hibernate(rx, |rx| rx.recv().unwrap() + 1));
        assert_eq!(actor.join().unwrap(), 2);
    });
}

#[test]
fn a_hibernated_actor_can_be_stopped_and_monitored() {
    run_with(2, || {
        let (_tx, rx) = channel::<u32>();
        let actor = smarm::spawn(move || hibernate(rx, |rx| rx.recv().unwrap()));
        let monitor = smarm::monitor(actor.pid());
        assert_eq!(parked_on(actor.pid()), Some(WaitingOn::Hibernating));
        smarm::request_stop(actor.pid());
        let err = actor.join().unwrap_err();
        assert_eq!(err.reason(), smarm::DownReason::Stopped);
        assert_eq!(
            monitor.rx.recv().unwrap().reason,
            smarm::DownReason::Stopped
        );
    });
}

#[test]
fn a_close_wakes_a_hibernated_actor() {
    run_with(1, || {
        let (tx, rx) = channel::<u32>();
        let actor = smarm::spawn(move || hibernate(rx, |rx| rx.recv().is_err()));
        assert_eq!(parked_on(actor.pid()), Some(WaitingOn::Hibernating));
        drop(tx);
        assert!(actor.join().unwrap(), "the continuation saw the close");
    });
}

#[test]
fn any_select_arm_can_wake_it_and_a_custom_stack_size_survives() {
    run_with(2, || {
        let (tx, rx) = smarm::channel::bounded::<u32>(4);
        let actor = smarm::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                hibernate(rx, |rx| {
                    // Deep enough to need more than the default's first pages.
                    let big = [7u8; 128 * 1024];
                    std::hint::black_box(&big);
                    rx.recv().unwrap() + u32::from(big[1000])
                })
            })
            .unwrap();
        assert_eq!(parked_on(actor.pid()), Some(WaitingOn::Hibernating));
        tx.send(1).unwrap();
        assert_eq!(actor.join().unwrap(), 8);
    });
}

#[test]
fn a_continuation_of_another_type_fails_a_typed_join_and_fits_a_unit_one() {
    run_with(1, || {
        let (tx, rx) = channel::<u32>();
        let typed = smarm::spawn(move || -> u64 {
            let _: &str = hibernate(rx, |_rx| "not a u64");
            unreachable!("hibernate never returns")
        });
        tx.send(1).unwrap();
        let err = typed.join().unwrap_err();
        assert!(err.to_string().contains("another type"), "{err}");
        let (tx, rx) = channel::<u32>();
        let unit = smarm::spawn(move || {
            let _: u8 = hibernate(rx, |_rx| 5u8);
        });
        tx.send(1).unwrap();
        unit.join().unwrap();
    });
}

/// 20,000 hibernated actors cost far less than a stack page each, once the
/// pool has given their stacks' pages back (measured alone, in a child).
#[test]
fn hibernated_actors_hold_no_stack_pages() {
    const CHILD: &str = "SMARM_HIBERNATE_RSS_CHILD";
    if std::env::var_os(CHILD).is_some() {
        return rss_child();
    }
    let out = rerun_in_child("hibernated_actors_hold_no_stack_pages", CHILD);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("bytes_per_actor "))
        .expect("the child reports its figures");
    let v: Vec<f64> = line.split(' ').map(|v| v.parse().unwrap()).collect();
    let (parked, hibernated) = (v[0], v[1]);
    assert!(
        parked >= 4096.0,
        "a parked actor touches a stack page: {parked}"
    );
    assert!(
        hibernated < parked / 2.0,
        "hibernated {hibernated} B/actor vs parked {parked}"
    );
}

fn rss_child() {
    const N: usize = 20_000;
    let report = Arc::new(std::sync::Mutex::new((0.0, 0.0)));
    let out = report.clone();
    run_with(2, move || {
        let rss = || proc_status_kib("VmRSS") as f64 * 1024.0;
        let mut figures = [0.0; 2];
        for (i, hibernating) in [false, true].into_iter().enumerate() {
            let before = rss();
            let (ready_tx, ready_rx) = channel::<()>();
            let actors: Vec<_> = (0..N)
                .map(|_| {
                    let (tx, rx) = channel::<u64>();
                    let ready = ready_tx.clone();
                    let h = smarm::spawn(move || {
                        ready.send(()).unwrap();
                        if hibernating {
                            hibernate(rx, |rx| rx.recv().unwrap())
                        } else {
                            rx.recv().unwrap()
                        }
                    });
                    (tx, h)
                })
                .collect();
            for _ in 0..N {
                ready_rx.recv().unwrap();
            }
            // Let every actor reach its wait, and the pool give back the
            // pages of the stacks beyond its warm set (stack (I3)).
            smarm::sleep(Duration::from_millis(1500));
            figures[i] = (rss() - before) / N as f64;
            for (tx, h) in actors {
                tx.send(1).unwrap();
                assert_eq!(h.join().unwrap(), 1);
            }
            smarm::sleep(Duration::from_millis(1500)); // the first round's stacks go back
        }
        *out.lock().unwrap() = (figures[0], figures[1]);
    });
    let (parked, hibernated) = *report.lock().unwrap();
    println!("bytes_per_actor {parked} {hibernated}");
}
