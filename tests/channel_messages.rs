//! Channels: order, closure, selective receive, timeouts, and the races.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::{RecvError, RecvTimeoutError, SendError, channel};
use std::time::{Duration, Instant};
use support::{THREADS, run_with};

#[test]
fn messages_arrive_in_order_and_close_after_the_last_sender() {
    for threads in THREADS {
        run_with(threads, || {
            let (tx, rx) = channel::<u32>();
            let consumer = smarm::spawn(move || {
                let got: Vec<u32> = std::iter::from_fn(|| rx.recv().ok()).collect();
                assert_eq!(got, (0..1000).collect::<Vec<_>>());
            });
            for i in 0..1000 {
                tx.send(i).unwrap();
                if i % 100 == 0 {
                    smarm::yield_now();
                }
            }
            drop(tx);
            consumer.join().unwrap();
        });
    }
}

#[test]
fn send_to_a_dropped_receiver_returns_the_message() {
    let (tx, rx) = channel::<String>();
    drop(rx);
    assert_eq!(tx.send("hello".into()), Err(SendError("hello".to_string())));
    assert!(tx.is_closed());
}

#[test]
fn try_recv_works_outside_actors() {
    let (tx, rx) = channel::<u8>();
    assert_eq!(rx.try_recv(), Ok(None));
    tx.send(3).unwrap();
    assert_eq!(rx.try_recv(), Ok(Some(3)));
    drop(tx);
    assert_eq!(rx.try_recv(), Err(RecvError));
}

#[test]
fn receiver_drop_drops_queued_messages_outside_the_lock() {
    struct Notify(smarm::Sender<u8>);
    impl Drop for Notify {
        fn drop(&mut self) {
            let _ = self.0.send(1); // touches another channel from a destructor
        }
    }
    let (tx, rx) = channel::<Notify>();
    let (ntx, nrx) = channel::<u8>();
    assert!(tx.send(Notify(ntx.clone())).is_ok());
    assert!(tx.send(Notify(ntx)).is_ok());
    drop(rx);
    assert_eq!(nrx.try_recv(), Ok(Some(1)));
    assert_eq!(nrx.try_recv(), Ok(Some(1)));
}

#[test]
fn recv_match_takes_the_first_match_and_keeps_the_rest_in_order() {
    run_with(2, || {
        let (tx, rx) = channel::<u32>();
        for i in 0..10 {
            tx.send(i).unwrap();
        }
        assert_eq!(rx.recv_match(|m| m % 3 == 2).unwrap(), 2);
        assert_eq!(rx.try_recv_match(|m| *m > 7).unwrap(), Some(8));
        assert_eq!(rx.try_recv_match(|m| *m > 100).unwrap(), None);
        let rest: Vec<u32> = (0..7).map(|_| rx.recv().unwrap()).collect();
        assert_eq!(rest, [0, 1, 3, 4, 5, 6, 7]);
        assert_eq!(rx.recv().unwrap(), 9);
    });
}

#[test]
fn recv_match_parked_on_a_non_matching_queue_sees_the_close() {
    run_with(2, || {
        let (tx, rx) = channel::<u32>();
        tx.send(1).unwrap();
        let waiter = smarm::spawn(move || {
            assert_eq!(rx.recv_match(|m| *m == 99), Err(RecvError));
        });
        smarm::sleep(Duration::from_millis(5)); // let it park
        drop(tx);
        waiter.join().unwrap();
    });
}

#[test]
fn recv_match_wakes_for_a_later_match() {
    run_with(2, || {
        let (tx, rx) = channel::<u32>();
        let waiter = smarm::spawn(move || {
            assert_eq!(rx.recv_match(|m| *m == 5), Ok(5));
            assert_eq!(
                rx.try_recv(),
                Ok(Some(0)),
                "non-matching messages stay queued"
            );
        });
        for i in 0..=5 {
            tx.send(i).unwrap();
            smarm::yield_now();
        }
        waiter.join().unwrap();
    });
}

#[test]
fn recv_timeout_times_out_and_zero_is_valid() {
    run_with(2, || {
        let (tx, rx) = channel::<u32>();
        let t0 = Instant::now();
        assert_eq!(
            rx.recv_timeout(Duration::from_millis(20)),
            Err(RecvTimeoutError::Timeout)
        );
        assert!(t0.elapsed() >= Duration::from_millis(20), "timed out early");
        assert_eq!(
            rx.recv_timeout(Duration::ZERO),
            Err(RecvTimeoutError::Timeout)
        );
        tx.send(1).unwrap();
        assert_eq!(rx.recv_timeout(Duration::ZERO), Ok(1));
    });
}

/// Senders aim at the receiver's deadline: whatever the interleaving, a
/// sent message is received (by this call or the next), never lost.
#[test]
fn a_message_racing_the_recv_timeout_deadline_is_never_lost() {
    for threads in THREADS {
        run_with(threads, || {
            let (tx, rx) = channel::<u32>();
            let rounds = 300u32;
            let sender = smarm::spawn(move || {
                for i in 0..rounds {
                    smarm::sleep(Duration::from_micros(200 + u64::from(i % 7) * 20));
                    tx.send(i).unwrap();
                }
            });
            let mut received = Vec::new();
            while received.len() < rounds as usize {
                match rx.recv_timeout(Duration::from_micros(250)) {
                    Ok(v) => received.push(v),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
            sender.join().unwrap();
            while let Ok(Some(v)) = rx.try_recv() {
                received.push(v);
            }
            assert_eq!(
                received,
                (0..rounds).collect::<Vec<_>>(),
                "lost or reordered a message"
            );
        });
    }
}

#[test]
fn no_message_lost_or_duplicated_8_producers_100k_each_4_threads() {
    const PRODUCERS: u64 = 8;
    const EACH: u64 = 100_000;
    run_with(4, || {
        let (tx, rx) = channel::<(u64, u64)>();
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let tx = tx.clone();
                smarm::spawn(move || {
                    for i in 0..EACH {
                        tx.send((p, i)).unwrap();
                        if i % 1000 == 0 {
                            smarm::yield_now();
                        }
                    }
                })
            })
            .collect();
        drop(tx);
        let mut next = [0u64; PRODUCERS as usize];
        let mut count = 0u64;
        while let Ok((p, i)) = rx.recv() {
            assert_eq!(
                i, next[p as usize],
                "producer {p}: out of order, lost or duplicated"
            );
            next[p as usize] += 1;
            count += 1;
        }
        assert_eq!(count, PRODUCERS * EACH);
        for p in producers {
            p.join().unwrap();
        }
    });
}

#[test]
fn a_send_from_a_plain_thread_wakes_a_parked_receiver() {
    run_with(2, || {
        let (tx, rx) = channel::<u32>();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            tx.send(77).unwrap();
        });
        assert_eq!(rx.recv(), Ok(77));
        t.join().unwrap();
    });
}

/// Plain threads wait through one thread wait (lock::thread_wait (T1)):
/// two threads play ping-pong, so every receive of each kind (`recv`,
/// `recv_match`, `recv_timeout`) finds its channel empty and parks, racing
/// the other thread's send; no wake is lost, and a dropped sender ends
/// each kind of wait.
#[test]
fn plain_threads_wait_for_each_other_with_every_kind_of_receive() {
    const ROUNDS: u32 = 3000;
    let (ping_tx, ping_rx) = channel::<u32>();
    let (pong_tx, pong_rx) = channel::<u32>();
    let receive = |rx: &smarm::Receiver<u32>, i: u32| match i % 3 {
        0 => rx.recv().unwrap(),
        1 => rx.recv_match(|_| true).unwrap(),
        _ => rx.recv_timeout(Duration::from_secs(60)).unwrap(),
    };
    let other = std::thread::spawn(move || {
        for i in 0..ROUNDS {
            assert_eq!(receive(&ping_rx, i), i);
            pong_tx.send(i).unwrap();
        }
        ping_rx
    });
    for i in 0..ROUNDS {
        ping_tx.send(i).unwrap();
        assert_eq!(receive(&pong_rx, i), i);
    }
    let ping_rx = other.join().unwrap();
    drop(ping_tx);
    assert_eq!(ping_rx.recv(), Err(RecvError));
    assert_eq!(ping_rx.recv_match(|_| true), Err(RecvError));
    assert_eq!(
        ping_rx.recv_timeout(Duration::from_secs(60)),
        Err(RecvTimeoutError::Disconnected)
    );
    // A timed wait on an empty, open channel times out.
    let (_keep, idle) = channel::<u32>();
    let t0 = Instant::now();
    assert_eq!(
        idle.recv_timeout(Duration::from_millis(20)),
        Err(RecvTimeoutError::Timeout)
    );
    assert!(t0.elapsed() >= Duration::from_millis(20));
}

/// A losing select arm leaves a stale registration behind; once the
/// receiver moves to another actor, that actor receives normally.
#[test]
fn a_receiver_moved_after_a_select_keeps_working() {
    run_with(2, || {
        let (tx, rx) = channel::<u32>();
        let (wake_tx, wake_rx) = channel::<()>();
        let (hand_tx, hand_rx) = channel::<smarm::Receiver<u32>>();
        let a = smarm::spawn(move || {
            assert_eq!(smarm::select(&[&wake_rx, &rx]), 0); // both armed, arm 0 wins
            hand_tx.send(rx).unwrap();
            smarm::sleep(Duration::from_millis(30)); // alive while B receives
        });
        smarm::sleep(Duration::from_millis(5));
        wake_tx.send(()).unwrap();
        let b = smarm::spawn(move || {
            let rx = hand_rx.recv().unwrap();
            assert_eq!(rx.recv().unwrap(), 9);
        });
        smarm::sleep(Duration::from_millis(5));
        tx.send(9).unwrap();
        b.join().unwrap();
        a.join().unwrap();
    });
}

/// The receiver takes queued messages in batches; order and selective
/// receive must hold across the batch boundary.
#[test]
fn order_and_selective_receive_hold_across_receive_batches() {
    run_with(1, || {
        let (tx, rx) = channel::<u32>();
        for i in 0..5 {
            tx.send(i).unwrap();
        }
        assert_eq!(rx.recv().unwrap(), 0); // takes the batch 0..5
        for i in 5..10 {
            tx.send(i).unwrap();
        }
        assert_eq!(rx.len(), 9);
        assert_eq!(tx.queued_len(), 9);
        assert_eq!(
            rx.recv_match(|m| *m >= 3).unwrap(),
            3,
            "the batch is older than the rest"
        );
        assert_eq!(rx.try_recv_match(|m| *m == 7).unwrap(), Some(7));
        let rest: Vec<u32> = std::iter::from_fn(|| rx.try_recv().unwrap()).collect();
        assert_eq!(rest, [1, 2, 4, 5, 6, 8, 9]);
    });
}

/// Many queued messages, in the receiver's own queue and in the shared
/// one: lengths count them all, a selective receive finds one deep in the
/// queue, and the rest keep their order.
#[test]
fn lengths_and_selective_receive_span_many_queued_messages() {
    run_with(1, || {
        let (tx, rx) = channel::<u32>();
        for i in 0..100 {
            tx.send(i).unwrap();
        }
        assert_eq!((rx.len(), tx.queued_len()), (100, 100));
        assert_eq!(rx.recv_match(|m| *m == 97).unwrap(), 97);
        assert_eq!((rx.len(), tx.queued_len()), (99, 99));
        for i in 100..130 {
            tx.send(i).unwrap();
        }
        assert_eq!(rx.try_recv_match(|m| *m >= 98).unwrap(), Some(98));
        let rest: Vec<u32> = std::iter::from_fn(|| rx.try_recv().unwrap()).collect();
        let expected: Vec<u32> = (0..130).filter(|m| ![97, 98].contains(m)).collect();
        assert_eq!(rest, expected);
        assert_eq!((rx.len(), tx.queued_len()), (0, 0));
    });
}

/// Senders on plain threads (which sleep on a contended channel lock
/// rather than yield to a scheduler) and actors on two schedulers, all
/// into one actor: every message arrives once, each sender's in order.
#[test]
fn plain_thread_and_actor_senders_fan_in_without_loss_or_reorder() {
    const EACH: u64 = 50_000;
    run_with(2, || {
        let (tx, rx) = channel::<(u64, u64)>();
        let threads: Vec<_> = (0..2)
            .map(|p| {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    for i in 0..EACH {
                        tx.send((p, i)).unwrap();
                    }
                })
            })
            .collect();
        let actors: Vec<_> = (2..4)
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
        let mut next = [0u64; 4];
        while let Ok((p, i)) = rx.recv() {
            assert_eq!(
                i, next[p as usize],
                "sender {p}: out of order, lost or doubled"
            );
            next[p as usize] += 1;
        }
        assert_eq!(next, [EACH; 4]);
        for a in actors {
            a.join().unwrap();
        }
        for t in threads {
            t.join().unwrap();
        }
    });
}

#[test]
#[should_panic(expected = "predicate used its own channel")]
fn a_recv_match_predicate_that_reenters_its_channel_panics() {
    let (tx, rx) = channel::<u32>();
    tx.send(1).unwrap();
    let _ = rx.try_recv(); // moves the batch into the receiver's own queue
    tx.send(2).unwrap();
    let _ = rx.try_recv_match(|_| rx.try_recv().is_ok());
}

#[test]
fn an_interrupt_comes_after_the_messages_sent_before_it() {
    run_with(2, || {
        let (tx, rx) = channel::<u32>();
        let (seen_tx, seen_rx) = channel::<(Option<u32>, u32)>();
        let receiver = smarm::spawn(move || {
            for _ in 0..5 {
                let got = rx.recv_or_interrupt().unwrap();
                seen_tx.send((got, rx.interrupts_seen())).unwrap();
            }
            rx
        });
        support::parked_on(receiver.pid());
        // Interrupts raised before it looks are seen once, as the newest.
        assert_eq!(
            (tx.interrupt(), tx.interrupt(), tx.interrupt()),
            (Some(1), Some(2), Some(3))
        );
        assert_eq!(seen_rx.recv(), Ok((None, 3)));
        tx.send(7).unwrap();
        assert_eq!(seen_rx.recv(), Ok((Some(7), 3)));
        // Messages sent before an interrupt are received before it.
        tx.send(1).unwrap();
        tx.send(2).unwrap();
        assert_eq!(tx.interrupt(), Some(4));
        let got: Vec<_> = (0..3).map(|_| seen_rx.recv().unwrap()).collect();
        assert_eq!(got, [(Some(1), 3), (Some(2), 3), (None, 4)]);
        let rx = receiver.join().unwrap();
        // A plain recv leaves an interrupt for the next recv_or_interrupt.
        tx.interrupt();
        tx.send(8).unwrap();
        assert_eq!(rx.recv(), Ok(8));
        assert_eq!(rx.recv_or_interrupt(), Ok(None));
        assert_eq!(rx.interrupts_seen(), 5);
        drop(tx);
        assert_eq!(rx.recv_or_interrupt(), Err(RecvError));
        let (tx, rx) = channel::<u32>();
        drop(rx);
        assert_eq!(tx.interrupt(), None, "no receiver to interrupt");
    });
}

#[test]
fn interrupts_racing_a_receiver_are_never_lost_nor_early() {
    use std::sync::{Arc, Mutex};
    const ROUNDS: u64 = 5_000;
    let _guard = support::HangGuard::new(Duration::from_secs(120), "a lost interrupt");
    for threads in THREADS {
        run_with(threads, move || {
            let (tx, rx) = channel::<(usize, u64)>();
            // An actor and a plain thread each send a message, interrupt,
            // and wait until the receiver has seen it; the receiver is
            // often parked when the interrupt comes, so a lost wake is a
            // hang. Each publishes its interrupt's number under a lock held
            // across the interrupt (as a request kept beside a channel is).
            // Per interrupter: its last round and that round's interrupt.
            type Raised = Mutex<Option<(u64, u32)>>;
            let raised: Arc<[Raised; 2]> = Arc::new([Mutex::new(None), Mutex::new(None)]);
            let mut acks = Vec::new();
            let mut interrupters: Vec<Box<dyn FnOnce()>> = Vec::new();
            for i in 0..2 {
                let (ack_tx, ack_rx) = channel::<()>();
                acks.push(ack_tx);
                let (tx, raised) = (tx.clone(), raised.clone());
                let body = move || {
                    for r in 0..ROUNDS {
                        tx.send((i, r)).unwrap();
                        {
                            let _gate = smarm::NoPreempt::new();
                            let mut slot = raised[i].lock().unwrap();
                            *slot = Some((r, tx.interrupt().unwrap()));
                        }
                        ack_rx.recv().unwrap();
                    }
                };
                if i == 0 {
                    let a = smarm::spawn(body);
                    interrupters.push(Box::new(move || a.join().unwrap()));
                } else {
                    let t = std::thread::spawn(body);
                    interrupters.push(Box::new(move || t.join().unwrap()));
                }
            }
            let sender = smarm::spawn(move || {
                for r in 0..ROUNDS {
                    tx.send((2, r)).unwrap();
                }
            });
            let (mut next, mut acked) = ([0u64; 3], [0u64; 2]);
            while next[2] < ROUNDS || acked != [ROUNDS; 2] {
                match rx.recv_or_interrupt() {
                    Ok(Some((i, r))) => {
                        assert_eq!(r, next[i], "out of order, lost or doubled");
                        next[i] += 1;
                    }
                    Ok(None) => {
                        let seen = rx.interrupts_seen();
                        for (i, ack) in acks.iter().enumerate() {
                            let _gate = smarm::NoPreempt::new();
                            let slot = raised[i].lock().unwrap();
                            if let Some((r, n)) = *slot
                                && n <= seen
                                && r + 1 > acked[i]
                            {
                                assert!(
                                    next[i] > r,
                                    "an interrupt seen before a message sent before it"
                                );
                                acked[i] = r + 1;
                                ack.send(()).unwrap();
                            }
                        }
                    }
                    Err(RecvError) => panic!("closed early"),
                }
            }
            for join in interrupters {
                join();
            }
            sender.join().unwrap();
        });
    }
}
