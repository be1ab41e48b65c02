//! Bounded channels: backpressure, `try_send` / `send_timeout`, senders
//! parked for room (no lost wake, FIFO, giving up cleanly), and memory
//! that stays flat under a producer faster than its consumer.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::channel::bounded;
use smarm::{RecvTimeoutError, SendError, SendTimeoutError, TrySendError, WaitingOn};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{THREADS, parked_on, proc_status_kib, rerun_in_child, run_with};

#[test]
fn try_send_hands_the_message_back_when_full_or_closed() {
    let (tx, rx) = bounded::<String>(2);
    assert_eq!(tx.capacity(), Some(2));
    tx.try_send("a".into()).unwrap();
    tx.try_send("b".into()).unwrap();
    assert_eq!(tx.try_send("c".into()), Err(TrySendError::Full("c".into())));
    assert_eq!(rx.len(), 2);
    assert_eq!(rx.try_recv(), Ok(Some("a".into())));
    tx.try_send("c".into()).unwrap();
    drop(rx);
    let err = tx.try_send("d".into()).unwrap_err();
    assert_eq!(err, TrySendError::Disconnected("d".into()));
    assert_eq!(err.into_inner(), "d");
}

#[test]
fn unbounded_channels_have_no_capacity_and_never_fill() {
    let (tx, rx) = smarm::channel::<u32>();
    assert_eq!(tx.capacity(), None);
    for i in 0..10_000 {
        tx.try_send(i).unwrap();
    }
    assert_eq!(rx.len(), 10_000);
}

#[test]
#[should_panic(expected = "channel::bounded(0)")]
fn a_zero_capacity_is_refused_with_a_clear_message() {
    let _ = bounded::<u8>(0);
}

#[test]
fn a_parked_sender_resumes_when_the_receiver_takes_a_message() {
    for threads in THREADS {
        run_with(threads, || {
            let (tx, rx) = bounded::<u32>(1);
            tx.send(1).unwrap();
            let sender = smarm::spawn(move || tx.send(2).unwrap());
            assert_eq!(parked_on(sender.pid()), Some(WaitingOn::Room));
            assert_eq!(rx.recv(), Ok(1));
            sender.join().unwrap();
            assert_eq!(rx.recv(), Ok(2));
            assert_eq!(rx.recv(), Err(smarm::RecvError), "the sender is gone");
        });
    }
}

/// Many producers on a tiny channel across schedulers: every message
/// arrives once, in each producer's order, and nobody is left parked while
/// there is room (a lost wake would stall the receiver's timed receive).
#[test]
fn many_producers_on_a_tiny_channel_lose_no_wake_and_no_message() {
    const PRODUCERS: u64 = 8;
    const EACH: u64 = 20_000;
    for threads in THREADS {
        for cap in [1, 3] {
            run_with(threads, move || {
                let (tx, rx) = bounded::<(u64, u64)>(cap);
                let producers: Vec<_> = (0..PRODUCERS)
                    .map(|p| {
                        let tx = tx.clone();
                        smarm::spawn(move || {
                            for i in 0..EACH {
                                tx.send((p, i)).unwrap();
                            }
                        })
                    })
                    .collect();
                drop(tx);
                let mut next = [0u64; PRODUCERS as usize];
                let mut total = 0;
                loop {
                    match rx.recv_timeout(Duration::from_secs(10)) {
                        Ok((p, i)) => {
                            assert_eq!(next[p as usize], i, "producer {p} out of order");
                            next[p as usize] += 1;
                            total += 1;
                            assert!(rx.len() <= cap, "the channel went past its capacity");
                        }
                        Err(RecvTimeoutError::Disconnected) => break,
                        Err(RecvTimeoutError::Timeout) => {
                            panic!("stalled after {total} messages: a sender was never woken")
                        }
                    }
                }
                assert_eq!(total, PRODUCERS * EACH);
                for p in producers {
                    p.join().unwrap();
                }
            });
        }
    }
}

#[test]
fn senders_waiting_for_room_are_served_in_arrival_order() {
    run_with(1, || {
        let (tx, rx) = bounded::<u32>(1);
        tx.send(0).unwrap();
        let mut senders = Vec::new();
        for n in 1..=5 {
            let tx = tx.clone();
            let h = smarm::spawn(move || tx.send(n).unwrap());
            assert_eq!(parked_on(h.pid()), Some(WaitingOn::Room));
            senders.push(h);
        }
        drop(tx);
        let got: Vec<u32> = std::iter::from_fn(|| rx.recv().ok()).collect();
        assert_eq!(got, [0, 1, 2, 3, 4, 5]);
        for h in senders {
            h.join().unwrap();
        }
    });
}

#[test]
fn send_timeout_gives_the_message_back_or_sends_when_room_appears() {
    for threads in THREADS {
        run_with(threads, || {
            let (tx, rx) = bounded::<u32>(1);
            tx.send(1).unwrap();
            let t0 = Instant::now();
            assert_eq!(
                tx.send_timeout(2, Duration::from_millis(20)),
                Err(SendTimeoutError::Timeout(2))
            );
            assert!(t0.elapsed() >= Duration::from_millis(20));
            assert_eq!(
                tx.send_timeout(3, Duration::ZERO),
                Err(SendTimeoutError::Timeout(3))
            );
            // A timed-out sender left nothing behind: the next in line is
            // the one that gets the room.
            let tx2 = tx.clone();
            let waiting = smarm::spawn(move || tx2.send_timeout(4, Duration::from_secs(30)));
            assert_eq!(parked_on(waiting.pid()), Some(WaitingOn::Room));
            assert_eq!(rx.recv(), Ok(1));
            assert_eq!(waiting.join().unwrap(), Ok(()));
            assert_eq!(rx.recv(), Ok(4));
            assert_eq!(rx.try_recv(), Ok(None));
        });
    }
}

#[test]
fn dropping_the_receiver_fails_every_waiting_sender_with_its_message() {
    run_with(2, || {
        let (tx, rx) = bounded::<String>(1);
        tx.send("queued".into()).unwrap();
        let senders: Vec<_> = (0..3)
            .map(|i| {
                let tx = tx.clone();
                smarm::spawn(move || tx.send(format!("m{i}")))
            })
            .collect();
        for h in &senders {
            assert_eq!(parked_on(h.pid()), Some(WaitingOn::Room));
        }
        drop(rx);
        for (i, h) in senders.into_iter().enumerate() {
            assert_eq!(h.join().unwrap(), Err(SendError(format!("m{i}"))));
        }
        assert_eq!(tx.send("late".into()), Err(SendError("late".into())));
    });
}

#[test]
fn a_sender_stopped_while_waiting_takes_its_message_out_of_line() {
    run_with(2, || {
        let (tx, rx) = bounded::<u32>(1);
        tx.send(0).unwrap();
        let tx1 = tx.clone();
        let stopped = smarm::spawn(move || {
            tx1.send(1).unwrap();
            "sent"
        });
        assert_eq!(parked_on(stopped.pid()), Some(WaitingOn::Room));
        let tx2 = tx.clone();
        let kept = smarm::spawn(move || tx2.send(2).unwrap());
        assert_eq!(parked_on(kept.pid()), Some(WaitingOn::Room));
        smarm::request_stop(stopped.pid());
        let ended = stopped.join().unwrap_err();
        assert_eq!(ended.reason(), smarm::DownReason::Stopped);
        drop(tx);
        let got: Vec<u32> = std::iter::from_fn(|| rx.recv().ok()).collect();
        assert_eq!(
            got,
            [0, 2],
            "the stopped sender's message was not delivered"
        );
        kept.join().unwrap();
    });
}

#[test]
fn a_thread_outside_the_runtime_blocks_until_there_is_room() {
    let (tx, rx) = bounded::<u32>(2);
    let producer = std::thread::spawn(move || {
        for i in 0..1000 {
            tx.send(i).unwrap();
        }
        tx.send_timeout(1000, Duration::from_secs(30)).unwrap();
    });
    run_with(2, move || {
        for i in 0..=1000 {
            assert_eq!(rx.recv(), Ok(i));
            assert!(rx.len() <= 2);
        }
    });
    producer.join().unwrap();
}

#[test]
fn a_thread_send_timeout_gives_the_message_back() {
    let (tx, _rx) = bounded::<u32>(1);
    tx.send(1).unwrap();
    assert_eq!(
        tx.send_timeout(2, Duration::from_millis(10)),
        Err(SendTimeoutError::Timeout(2))
    );
}

#[test]
fn send_past_capacity_never_waits_and_keeps_the_order() {
    run_with(1, || {
        let (tx, rx) = bounded::<u32>(1);
        tx.send(1).unwrap();
        tx.send_past_capacity(2).unwrap();
        assert_eq!(rx.len(), 2);
        assert_eq!(tx.try_send(3), Err(TrySendError::Full(3)));
        // A timer's message goes in past capacity too.
        smarm::time::send_after_to(Duration::from_millis(1), &tx, 4);
        smarm::sleep(Duration::from_millis(20));
        assert_eq!(rx.len(), 3);
        let got: Vec<u32> = (0..3).map(|_| rx.recv().unwrap()).collect();
        assert_eq!(got, [1, 2, 4]);
    });
}

#[test]
fn selective_receive_on_a_bounded_channel_makes_room() {
    run_with(1, || {
        let (tx, rx) = bounded::<u32>(2);
        tx.send(1).unwrap();
        tx.send(2).unwrap();
        let tx2 = tx.clone();
        let sender = smarm::spawn(move || tx2.send(3).unwrap());
        assert_eq!(parked_on(sender.pid()), Some(WaitingOn::Room));
        assert_eq!(rx.recv_match(|m| *m == 2), Ok(2));
        sender.join().unwrap();
        assert_eq!(rx.try_recv(), Ok(Some(1)));
        assert_eq!(rx.try_recv(), Ok(Some(3)));
    });
}

#[test]
#[should_panic(expected = "would wait for itself")]
fn an_actor_filling_its_own_channel_panics_instead_of_hanging() {
    run_with(1, || {
        let (tx, rx) = bounded::<u32>(1);
        // Park once as the receiver, so the channel knows who receives.
        let tx2 = tx.clone();
        smarm::spawn(move || tx2.send(0).unwrap());
        assert_eq!(rx.recv(), Ok(0));
        tx.send(1).unwrap();
        let _ = tx.send(2); // full, and this actor is the receiver
    });
}

#[test]
fn a_bounded_receiver_is_a_select_arm_and_works_on_a_plain_thread() {
    run_with(2, || {
        let (tx, rx) = bounded::<u32>(1);
        let (_other_tx, other) = smarm::channel::<u32>();
        let sender = smarm::spawn(move || {
            tx.send(1).unwrap();
            tx.send(2).unwrap(); // waits until the select below takes 1
        });
        let arms: [&dyn smarm::Selectable; 2] = [&other, &rx];
        assert_eq!(smarm::select(&arms), 1);
        assert_eq!(rx.recv(), Ok(1));
        sender.join().unwrap();
        assert_eq!(rx.recv(), Ok(2));
    });
    let (tx, rx) = bounded::<u32>(1);
    let consumer = std::thread::spawn(move || {
        let got: Vec<u32> = std::iter::from_fn(|| rx.recv().ok()).collect();
        got
    });
    run_with(1, move || {
        for n in 0..100 {
            tx.send(n).unwrap();
        }
    });
    assert_eq!(consumer.join().unwrap(), (0..100).collect::<Vec<_>>());
}

#[test]
fn the_receiver_itself_may_wait_out_a_send_timeout_on_its_full_channel() {
    run_with(1, || {
        let (tx, rx) = bounded::<u32>(1);
        tx.send(1).unwrap();
        assert_eq!(rx.recv(), Ok(1)); // this actor is the receiver
        tx.send(2).unwrap();
        assert_eq!(
            tx.send_timeout(3, Duration::from_millis(5)),
            Err(SendTimeoutError::Timeout(3))
        );
        assert_eq!(rx.try_recv(), Ok(Some(2)));
    });
}

/// The producer outruns the consumer 10 million times over; with the
/// channel bounded, the peak RSS after the first million messages is the
/// peak after all of them. Measured in a child process, alone.
#[test]
fn a_fast_producer_keeps_memory_flat_over_ten_million_messages() {
    const CHILD: &str = "SMARM_BOUNDED_RSS_CHILD";
    if std::env::var_os(CHILD).is_some() {
        return rss_child();
    }
    let out = rerun_in_child(
        "a_fast_producer_keeps_memory_flat_over_ten_million_messages",
        CHILD,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("peak_kib "))
        .expect("the child reports its peaks");
    let peaks: Vec<u64> = line.split(' ').map(|v| v.parse().unwrap()).collect();
    let (after_first_million, after_all) = (peaks[0], peaks[1]);
    assert!(
        after_all <= after_first_million + 4 * 1024,
        "peak RSS grew from {after_first_million} KiB to {after_all} KiB"
    );
}

fn rss_child() {
    const MESSAGES: u64 = 10_000_000;
    const CAP: usize = 1024;
    let peaks = Arc::new(std::sync::Mutex::new(Vec::new()));
    let report = peaks.clone();
    run_with(2, move || {
        let (tx, rx) = bounded::<[u64; 4]>(CAP);
        let producer = smarm::spawn(move || {
            for i in 0..MESSAGES {
                tx.send([i; 4]).unwrap();
            }
        });
        let mut sum = 0u64;
        for i in 0..MESSAGES {
            let m = rx.recv().unwrap();
            assert_eq!(m[0], i);
            // The consumer does more per message than the producer.
            sum = sum.wrapping_add(m.iter().map(|v| v.wrapping_mul(0x9e37)).sum::<u64>());
            if i + 1 == 1_000_000 || i + 1 == MESSAGES {
                peaks.lock().unwrap().push(proc_status_kib("VmHWM"));
            }
        }
        assert_ne!(sum, 1);
        producer.join().unwrap();
    });
    let peaks = report.lock().unwrap();
    println!("peak_kib {} {}", peaks[0], peaks[1]);
}
