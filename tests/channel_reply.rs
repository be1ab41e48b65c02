//! Call replies (`await_reply`): one value straight into the caller's
//! frame, and never into a call it does not belong to.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::channel::{ReplyError, ReplySender, await_reply};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::{CountDrop, Rng, THREADS, run_with};

const LONG: Duration = Duration::from_secs(10);

#[test]
fn replies_arrive_across_schedulers_without_a_lost_wake() {
    for threads in THREADS {
        run_with(threads, || {
            for i in 0..5_000u64 {
                let reply = await_reply(
                    |tx: ReplySender<u64>| {
                        drop(smarm::spawn(move || {
                            if i % 3 == 0 {
                                smarm::yield_now(); // sometimes after the caller parks
                            }
                            tx.send(i).unwrap();
                        }))
                    },
                    LONG,
                );
                assert_eq!(reply, Ok(i));
            }
        });
    }
}

#[test]
fn a_dropped_sender_fails_the_wait_at_once_and_a_timeout_is_a_timeout() {
    run_with(2, || {
        let t0 = Instant::now();
        let reply = await_reply(
            |tx: ReplySender<u64>| {
                drop(smarm::spawn(move || {
                    smarm::sleep(Duration::from_millis(5));
                    drop(tx);
                }))
            },
            LONG,
        );
        assert_eq!(reply, Err(ReplyError::Closed));
        assert!(t0.elapsed() < Duration::from_secs(1));

        let mut kept = None;
        let t0 = Instant::now();
        let reply = await_reply::<u64>(|tx| kept = Some(tx), Duration::from_millis(10));
        assert_eq!(reply, Err(ReplyError::Timeout));
        assert!(t0.elapsed() >= Duration::from_millis(10));
        assert!(!kept.unwrap().is_waited_on());
    });
}

#[test]
fn a_late_reply_is_handed_back_and_never_reaches_a_later_call() {
    run_with(2, || {
        let drops = Arc::new(AtomicUsize::new(0));
        let mut late = None;
        let reply = await_reply::<CountDrop>(|tx| late = Some(tx), Duration::from_millis(1));
        assert!(matches!(reply, Err(ReplyError::Timeout)));
        let late = late.unwrap();

        // The next call of the same actor (same reply cell) gets its own
        // value, even with the stale sender answering while it waits.
        let d = drops.clone();
        let reply = await_reply(
            |tx: ReplySender<CountDrop>| {
                drop(smarm::spawn(move || {
                    let Err(back) = late.send(CountDrop(d.clone())) else {
                        panic!("a stale sender delivered into a later call")
                    };
                    drop(back);
                    assert!(tx.is_waited_on());
                    assert!(tx.send(CountDrop(d)).is_ok());
                }))
            },
            LONG,
        );
        assert!(reply.is_ok());
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "the stale value was dropped"
        );
        drop(reply);
        assert_eq!(drops.load(Ordering::SeqCst), 2);
    });
}

#[test]
fn a_stopped_caller_leaves_no_call_open() {
    run_with(2, || {
        let drops = Arc::new(AtomicUsize::new(0));
        let (keep_tx, keep_rx) = smarm::channel::<ReplySender<CountDrop>>();
        let caller = smarm::spawn(move || {
            let _ = await_reply(|tx| keep_tx.send(tx).unwrap(), LONG);
            unreachable!("stopped while waiting");
        });
        let sender = keep_rx.recv().unwrap();
        assert!(sender.is_waited_on());
        smarm::request_stop(caller.pid());
        // Stopped, not past the wait into `unreachable!`.
        assert_eq!(
            caller.join().unwrap_err().reason(),
            smarm::DownReason::Stopped
        );
        assert!(!sender.is_waited_on());
        let Err(back) = sender.send(CountDrop(drops.clone())) else {
            panic!("a reply reached a caller that is gone")
        };
        drop(back);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn a_deferred_reply_from_an_os_thread_wakes_the_caller() {
    run_with(2, || {
        let t0 = Instant::now();
        let reply = await_reply(
            |tx: ReplySender<&'static str>| {
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(10));
                    tx.send("from a plain thread").unwrap();
                });
            },
            LONG,
        );
        assert_eq!(reply, Ok("from a plain thread"));
        assert!(t0.elapsed() < Duration::from_secs(5));
    });
}

/// Timeouts racing replies on four schedulers: every value is either
/// received by its caller or handed back to its sender, exactly once, and
/// dropped exactly once.
#[test]
fn timeouts_racing_replies_settle_each_value_exactly_once() {
    const CALLERS: u64 = 64;
    const CALLS: u64 = 300;
    let drops = Arc::new(AtomicUsize::new(0));
    let received = Arc::new(AtomicUsize::new(0));
    let handed_back = Arc::new(AtomicUsize::new(0));
    let sent = Arc::new(AtomicUsize::new(0));
    let (d, r, h, s) = (
        drops.clone(),
        received.clone(),
        handed_back.clone(),
        sent.clone(),
    );
    run_with(4, move || {
        let (work_tx, work_rx) = smarm::channel::<(u64, ReplySender<CountDrop>)>();
        let server = {
            let (d, h, s) = (d.clone(), h.clone(), s.clone());
            smarm::spawn(move || {
                let mut rng = Rng::new(7);
                while let Ok((spin, tx)) = work_rx.recv() {
                    for _ in 0..spin {
                        smarm::yield_now();
                    }
                    if rng.below(8) == 0 {
                        drop(tx); // sometimes no answer at all
                        continue;
                    }
                    match tx.send(CountDrop(d.clone())) {
                        Ok(()) => drop(s.fetch_add(1, Ordering::SeqCst)),
                        Err(back) => {
                            h.fetch_add(1, Ordering::SeqCst);
                            drop(back);
                        }
                    }
                }
            })
        };
        let callers: Vec<_> = (0..CALLERS)
            .map(|c| {
                let (work, r) = (work_tx.clone(), r.clone());
                smarm::spawn(move || {
                    let mut rng = Rng::new(c + 1);
                    for _ in 0..CALLS {
                        // Half race the reply, half surely get it.
                        let timeout = match rng.below(2) {
                            0 => Duration::from_micros(rng.below(40)),
                            _ => LONG,
                        };
                        let spin = rng.below(3);
                        match await_reply(|tx| work.send((spin, tx)).unwrap(), timeout) {
                            Ok(value) => {
                                r.fetch_add(1, Ordering::SeqCst);
                                drop(value);
                            }
                            Err(ReplyError::Timeout | ReplyError::Closed) => {}
                        }
                    }
                })
            })
            .collect();
        for c in callers {
            c.join().unwrap();
        }
        drop(work_tx);
        server.join().unwrap();
    });
    let (drops, received, handed_back, sent) = (
        drops.load(Ordering::SeqCst),
        received.load(Ordering::SeqCst),
        handed_back.load(Ordering::SeqCst),
        sent.load(Ordering::SeqCst),
    );
    assert_eq!(
        sent, received,
        "a reply sent Ok was not received by its call"
    );
    assert_eq!(
        drops,
        received + handed_back,
        "every value made was either received or handed back, and dropped once"
    );
    assert!(
        received > 0,
        "no call got its reply: the race was not exercised"
    );
    assert!(
        handed_back > 0,
        "no reply came late: the race was not exercised"
    );
}
