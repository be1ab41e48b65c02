//! The typed registry: names, typed addresses, pruning, message timers.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use smarm::registry::SendError;
use smarm::{
    Addressable, Name, RegisterError, channel, register, send, send_after, send_after_named,
    send_dyn, send_to, spawn_addr, unregister, whereis,
};
use std::time::Duration;
use support::run_with;

const SERVICE: Name<u32> = Name::new("service");
const SERVICE_ADMIN: Name<String> = Name::new("service-admin");
/// The same text as `SERVICE`, for another type: refused.
const SERVICE_AS_TEXT: Name<String> = Name::new("service");

struct Worker;
impl Addressable for Worker {
    type Msg = u32;
}

/// A service that registers `name`, signals ready, and forwards what it
/// receives to `out` until it receives 0.
fn service(name: Name<u32>, out: smarm::Sender<(u32, u32)>, tag: u32) -> smarm::JoinHandle {
    let (ready_tx, ready_rx) = channel::<()>();
    let h = smarm::spawn(move || {
        let (tx, rx) = channel::<u32>();
        register(name, tx).unwrap();
        ready_tx.send(()).unwrap();
        while let Ok(n) = rx.recv() {
            if n == 0 {
                return;
            }
            out.send((tag, n)).unwrap();
        }
    });
    ready_rx.recv().unwrap();
    h
}

#[test]
fn a_name_re_resolves_to_a_restarted_holder() {
    run_with(2, || {
        let (out, got) = channel();
        let first = service(SERVICE, out.clone(), 1);
        send(SERVICE, 5).unwrap();
        assert_eq!(got.recv().unwrap(), (1, 5));
        send(SERVICE, 0).unwrap();
        first.join().unwrap();
        assert!(matches!(send(SERVICE, 6), Err(SendError::Unresolved(6))));
        let second = service(SERVICE, out, 2);
        send(SERVICE, 7).unwrap();
        assert_eq!(got.recv().unwrap(), (2, 7), "the new holder is reached");
        send(SERVICE, 0).unwrap();
        second.join().unwrap();
    });
}

#[test]
fn send_to_a_dead_incarnation_is_dead_even_after_slot_reuse() {
    run_with(1, || {
        let (out, got) = channel::<u32>();
        let o = out.clone();
        let old = spawn_addr::<Worker>(move |rx| o.send(rx.recv().unwrap()).unwrap());
        send_to(old, 1).unwrap();
        assert_eq!(got.recv().unwrap(), 1);
        smarm::sleep(Duration::from_millis(1)); // `old` finishes
        let new = spawn_addr::<Worker>(move |rx| out.send(rx.recv().unwrap()).unwrap());
        assert_eq!(
            new.index(),
            old.index(),
            "the slot was reused by a same-typed actor"
        );
        assert!(
            matches!(send_to(old, 2), Err(SendError::Dead(2))),
            "never redirected"
        );
        send_to(new, 3).unwrap();
        assert_eq!(got.recv().unwrap(), 3);
    });
}

#[test]
fn register_takes_over_a_dead_holders_name_but_not_a_live_ones() {
    run_with(2, || {
        let (out, _got) = channel();
        let live = service(SERVICE, out.clone(), 1);
        let (tx, _rx) = channel::<u32>();
        let err = register(SERVICE, tx).unwrap_err();
        assert_eq!(
            err,
            RegisterError::NameTaken {
                name: "service",
                holder: live.pid()
            }
        );
        assert!(err.to_string().contains("held by the live actor"));
        send(SERVICE, 0).unwrap();
        live.join().unwrap();
        let (tx, rx) = channel::<u32>();
        register(SERVICE, tx).unwrap(); // the holder is dead: taken over
        assert_eq!(whereis("service"), Some(smarm::self_pid()));
        send(SERVICE, 9).unwrap();
        assert_eq!(rx.recv().unwrap(), 9);
        assert_eq!(unregister("service"), Some(smarm::self_pid()));
        assert_eq!(whereis("service"), None);
    });
}

#[test]
fn two_typed_channels_on_one_actor_are_addressed_independently() {
    run_with(2, || {
        let (tx_n, rx_n) = channel::<u32>();
        let (tx_s, rx_s) = channel::<String>();
        register(SERVICE, tx_n).unwrap();
        register(SERVICE_ADMIN, tx_s).unwrap();
        send(SERVICE_ADMIN, "reload".to_string()).unwrap();
        send(SERVICE, 1).unwrap();
        assert_eq!(rx_n.recv().unwrap(), 1);
        assert_eq!(rx_s.recv().unwrap(), "reload");
        // A type nobody published is NoChannel, with the message handed back.
        let me = smarm::self_pid();
        match send_dyn(me, 2.5f64) {
            Err(SendError::NoChannel(v)) => assert_eq!(v, 2.5),
            other => panic!("expected NoChannel, got {other:?}"),
        }
        drop(rx_n);
        assert!(matches!(send(SERVICE, 3), Err(SendError::Closed(3))));
    });
}

#[test]
fn send_after_named_reaches_whoever_holds_the_name_at_fire_time() {
    run_with(2, || {
        let (out, got) = channel();
        let first = service(SERVICE, out.clone(), 1);
        send_after_named(Duration::from_millis(30), SERVICE, 42);
        send(SERVICE, 0).unwrap(); // the first holder exits before the timer fires
        first.join().unwrap();
        let second = service(SERVICE, out, 2);
        assert_eq!(got.recv().unwrap(), (2, 42));
        send(SERVICE, 0).unwrap();
        second.join().unwrap();
    });
}

#[test]
fn send_after_to_a_pid_delivers_and_drops_for_a_dead_target() {
    run_with(2, || {
        let (out, got) = channel::<u32>();
        let o = out.clone();
        let live = spawn_addr::<Worker>(move |rx| o.send(rx.recv().unwrap()).unwrap());
        send_after(Duration::from_millis(5), live, 11);
        assert_eq!(got.recv().unwrap(), 11);
        let doomed = spawn_addr::<Worker>(drop); // exits at once
        let id = send_after(Duration::from_millis(5), doomed, 12);
        let cancelled = send_after(Duration::from_millis(5), live, 13);
        assert!(smarm::time::cancel_timer(cancelled));
        smarm::sleep(Duration::from_millis(20));
        assert!(
            !smarm::time::cancel_timer(id),
            "fired (and dropped: its target was gone)"
        );
        drop(out);
        assert!(got.try_recv().is_err(), "nothing else arrived");
    });
}

#[test]
fn separate_runtimes_have_separate_names() {
    let a = std::thread::spawn(|| {
        run_with(1, || {
            let (tx, _rx) = channel::<u32>();
            register(SERVICE, tx).unwrap();
            smarm::sleep(Duration::from_millis(20));
        })
    });
    std::thread::sleep(Duration::from_millis(5));
    run_with(1, || {
        let (tx, _rx) = channel::<u32>();
        register(SERVICE, tx).unwrap(); // not taken: another runtime's name
    });
    a.join().unwrap();
}

/// Name- and pid-addressed sends read the registry without its lock, from
/// snapshots that writers replace: racing 4 senders on 4 schedulers,
/// for as long as the churn lasts, against 300 short-lived holders that bind the name, publish a second
/// channel type and die, every send that returned `Ok` is received exactly
/// once (the holders' receivers are kept, so nothing is dropped unread).
#[test]
fn lock_free_sends_race_rebinding_and_death_without_loss() {
    const CHURN: Name<u64> = Name::new("churn");
    const CHURN_ALT: Name<String> = Name::new("churn-alt");
    const HOLDERS: u64 = 300;
    run_with(4, || {
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (store_tx, store_rx) = channel::<(smarm::Receiver<u64>, smarm::Receiver<String>)>();
        let (pid_tx, pid_rx) = channel::<smarm::Pid>();
        let binding = done.clone();
        let binder = smarm::spawn(move || {
            for _ in 0..HOLDERS {
                let store = store_tx.clone();
                let pids = pid_tx.clone();
                let h = smarm::spawn(move || {
                    let (tx, rx) = channel::<u64>();
                    let (alt_tx, alt_rx) = channel::<String>();
                    register(CHURN, tx).unwrap();
                    register(CHURN_ALT, alt_tx).unwrap(); // republishes the inbox
                    let _ = pids.send(smarm::self_pid());
                    store.send((rx, alt_rx)).unwrap();
                    smarm::sleep(Duration::from_micros(100));
                });
                h.join().unwrap();
            }
            binding.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        let (count_tx, count_rx) = channel::<u64>();
        let senders: Vec<_> = (0..4u64)
            .map(|k| {
                let counts = count_tx.clone();
                let done = done.clone();
                smarm::spawn(move || {
                    let mut ok = 0u64;
                    let mut i = 0u64;
                    while !done.load(std::sync::atomic::Ordering::Relaxed) {
                        i += 1;
                        let sent = if i.is_multiple_of(2) {
                            send(CHURN, i).is_ok()
                        } else {
                            send(CHURN_ALT, format!("{k}:{i}")).is_ok()
                        };
                        ok += u64::from(sent);
                        if i.is_multiple_of(64) {
                            smarm::yield_now();
                        }
                    }
                    counts.send(ok).unwrap();
                })
            })
            .collect();
        // Pid-addressed sends to the incarnations as they come and go.
        let by_pid = smarm::spawn(move || {
            let mut ok = 0u64;
            while let Ok(pid) = pid_rx.recv() {
                for i in 0..10 {
                    ok += u64::from(send_dyn(pid, i).is_ok());
                }
            }
            count_tx.send(ok).unwrap();
        });
        for s in senders {
            s.join().unwrap();
        }
        binder.join().unwrap();
        by_pid.join().unwrap();
        let sent: u64 = std::iter::from_fn(|| count_rx.recv().ok()).sum();
        let mut received = 0u64;
        while let Ok((rx, alt)) = store_rx.recv() {
            while let Ok(Some(_)) = rx.try_recv() {
                received += 1;
            }
            while let Ok(Some(_)) = alt.try_recv() {
                received += 1;
            }
        }
        assert!(sent > 0, "no send ever resolved: the test proved nothing");
        assert_eq!(received, sent, "messages lost or duplicated");
    });
}

/// The name table grows as names are bound (each change is O(1)): 2,000
/// actors each bind a name of their own and are reached by it; once half
/// of them have exited, their names resolve no more and the rest still do.
#[test]
fn thousands_of_names_bind_resolve_and_die() {
    const N: usize = 2_000;
    run_with(2, || {
        let names: Vec<Name<u32>> = (0..N)
            .map(|i| Name::new(Box::leak(format!("worker-{i}").into_boxed_str())))
            .collect();
        let (ready_tx, ready_rx) = channel::<()>();
        let (out_tx, out_rx) = channel::<(usize, u32)>();
        let holders: Vec<_> = names
            .iter()
            .enumerate()
            .map(|(i, &name)| {
                let (ready, out) = (ready_tx.clone(), out_tx.clone());
                smarm::spawn(move || {
                    let (tx, rx) = channel::<u32>();
                    register(name, tx).unwrap();
                    ready.send(()).unwrap();
                    while let Ok(n) = rx.recv() {
                        out.send((i, n)).unwrap();
                        if n == 0 {
                            break; // told to exit
                        }
                    }
                })
            })
            .collect();
        for _ in 0..N {
            ready_rx.recv().unwrap();
        }
        for (i, &name) in names.iter().enumerate() {
            send(name, i as u32 + 1).unwrap();
        }
        let mut seen = vec![false; N];
        for _ in 0..N {
            let (i, n) = out_rx.recv().unwrap();
            assert_eq!(n, i as u32 + 1, "a name reached the wrong holder");
            seen[i] = true;
        }
        assert!(seen.iter().all(|s| *s));
        for &name in names.iter().step_by(2) {
            send(name, 0).unwrap(); // exit
        }
        for (i, h) in holders.into_iter().enumerate() {
            if i % 2 == 0 {
                h.join().unwrap();
            } else {
                drop(h);
            }
        }
        for _ in 0..N / 2 {
            out_rx.recv().unwrap(); // the exits' acknowledgements
        }
        for (i, &name) in names.iter().enumerate() {
            let sent = send(name, 7);
            if i % 2 == 0 {
                assert!(matches!(sent, Err(SendError::Unresolved(7))), "name {i}");
                assert_eq!(whereis(name.as_str()), None);
            } else {
                assert!(sent.is_ok(), "name {i}");
            }
        }
        for _ in 0..N / 2 {
            out_rx.recv().unwrap();
        }
        for &name in names.iter().skip(1).step_by(2) {
            send(name, 0).unwrap();
        }
    });
}

#[test]
fn one_name_per_type_one_type_per_name_one_channel_per_type() {
    run_with(2, || {
        let (tx, rx) = channel::<u32>();
        register(SERVICE, tx.clone()).unwrap();
        // The same name, type and channel again: nothing changes.
        register(SERVICE, tx.clone()).unwrap();
        // A second name for the same message type.
        let second: Name<u32> = Name::intern("service-2");
        let err = register(second, tx.clone()).unwrap_err();
        assert!(
            matches!(
                err,
                RegisterError::AlreadyNamed {
                    name: "service-2",
                    held: "service",
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(
            err.to_string().contains("unregister \"service\" first"),
            "{err}"
        );
        assert_eq!(whereis("service-2"), None);
        // The same name with another channel.
        let (other_tx, _other_rx) = channel::<u32>();
        let err = register(SERVICE, other_tx).unwrap_err();
        assert!(
            matches!(
                err,
                RegisterError::OtherChannel {
                    name: "service",
                    ..
                }
            ),
            "{err:?}"
        );
        // The same name text for another message type.
        let (text_tx, _text_rx) = channel::<String>();
        let err = register(SERVICE_AS_TEXT, text_tx.clone()).unwrap_err();
        assert!(
            matches!(
                err,
                RegisterError::OtherType {
                    name: "service",
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("u32"), "{err}");
        // Names for other message types stay allowed.
        register(SERVICE_ADMIN, text_tx).unwrap();
        // Nothing was redirected: the first channel still gets the sends.
        send(SERVICE, 5).unwrap();
        assert_eq!(rx.recv().unwrap(), 5);
        // After unregistering, the second name is free for this type.
        assert_eq!(unregister("service"), Some(smarm::self_pid()));
        register(second, tx).unwrap();
        send(second, 6).unwrap();
        assert_eq!(rx.recv().unwrap(), 6);
        // Another actor may not take the text for another type either.
        let taken = smarm::spawn(move || {
            let (tx, _rx) = channel::<String>();
            let err = register(Name::<String>::intern("service-2"), tx).unwrap_err();
            assert!(matches!(err, RegisterError::NameTaken { .. }), "{err:?}");
        });
        taken.join().unwrap();
    });
}

#[test]
fn register_refuses_to_redirect_an_installed_channel() {
    run_with(1, || {
        let (tx, rx) = channel::<u32>();
        let me = smarm::install::<Worker>(tx);
        let (other, _other_rx) = channel::<u32>();
        let err = register(SERVICE, other).unwrap_err();
        assert!(matches!(err, RegisterError::OtherChannel { .. }), "{err:?}");
        send_to(me, 9).unwrap();
        assert_eq!(rx.recv().unwrap(), 9);
    });
}

#[test]
fn names_built_at_run_time_address_eight_shards() {
    run_with(2, || {
        let (out, got) = channel::<(u32, u32)>();
        let shards: Vec<_> = (0..8)
            .map(|i| service(Name::intern(&format!("shard-{i}")), out.clone(), i))
            .collect();
        for i in 0..8u32 {
            send(Name::<u32>::intern(&format!("shard-{i}")), 100 + i).unwrap();
        }
        let mut seen: Vec<(u32, u32)> = (0..8).map(|_| got.recv().unwrap()).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..8).map(|i| (i, 100 + i)).collect::<Vec<_>>());
        for i in 0..8u32 {
            send(Name::<u32>::intern(&format!("shard-{i}")), 0).unwrap();
        }
        for s in shards {
            s.join().unwrap();
        }
    });
}
