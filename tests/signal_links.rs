//! Monitors and links: Down messages, exit propagation, trapping.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use smarm::{DownReason, Ended, channel, demonitor, link, monitor, spawn_link, trap_exit};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use support::{CountDrop, THREADS, run_with};

#[test]
fn a_monitor_gets_exactly_one_down_with_the_reason() {
    run_with(2, || {
        // Each waits for the go, so the monitors are set before any exits
        // (a monitor set after the exit is NoProc, tested below).
        let (go_ok, wait_ok) = channel::<()>();
        let (go_bad, wait_bad) = channel::<()>();
        let ok = smarm::spawn(move || wait_ok.recv().unwrap());
        let bad = smarm::spawn(move || {
            wait_bad.recv().unwrap();
            panic!("x")
        });
        let stopped = smarm::spawn(|| smarm::sleep(Duration::from_secs(60)));
        let (m_ok, m_bad, m_stop) = (
            monitor(ok.pid()),
            monitor(bad.pid()),
            monitor(stopped.pid()),
        );
        go_ok.send(()).unwrap();
        go_bad.send(()).unwrap();
        smarm::request_stop(stopped.pid());
        assert_eq!(m_ok.rx.recv().unwrap().reason, DownReason::Exit);
        assert_eq!(m_bad.rx.recv().unwrap().reason, DownReason::Panic);
        assert_eq!(m_stop.rx.recv().unwrap().reason, DownReason::Stopped);
        for m in [&m_ok, &m_bad, &m_stop] {
            assert!(m.rx.recv().is_err(), "one Down, then the channel closes");
        }
        let _ = (ok.join(), bad.join(), stopped.join());
    });
}

#[test]
fn monitoring_a_gone_actor_is_noproc_at_once() {
    run_with(1, || {
        let h = smarm::spawn(|| {});
        let pid = h.pid();
        h.join().unwrap();
        let m = monitor(pid);
        assert_eq!(m.rx.try_recv().unwrap().unwrap().reason, DownReason::NoProc);
    });
}

#[test]
fn many_monitors_racing_the_targets_exit_each_get_one_down() {
    for threads in THREADS {
        run_with(threads, || {
            for _ in 0..200 {
                let target = smarm::spawn(smarm::yield_now);
                let pid = target.pid();
                let watchers: Vec<_> = (0..4)
                    .map(|_| {
                        smarm::spawn(move || {
                            let m = monitor(pid);
                            let down = m.rx.recv().unwrap();
                            assert_eq!(down.pid, pid);
                            assert!(matches!(down.reason, DownReason::Exit | DownReason::NoProc));
                            assert!(m.rx.recv().is_err());
                        })
                    })
                    .collect();
                target.join().unwrap();
                for w in watchers {
                    w.join().unwrap();
                }
            }
        });
    }
}

#[test]
fn demonitor_after_the_target_died_and_its_slot_was_reused_leaves_the_new_tenant_alone() {
    run_with(1, || {
        let old = smarm::spawn(|| {});
        let m = monitor(old.pid());
        old.join().unwrap(); // the slot is free again
        assert_eq!(m.rx.recv().unwrap().reason, DownReason::Exit);
        let (tx, rx) = channel::<()>();
        let new = smarm::spawn(move || {
            let _ = rx.recv();
        });
        assert_eq!(new.pid().index(), m.target.index(), "the slot was reused");
        let m_new = monitor(new.pid());
        assert_eq!(demonitor(&m), None, "nothing left to cancel");
        tx.send(()).unwrap();
        assert_eq!(
            m_new.rx.recv().unwrap().reason,
            DownReason::Exit,
            "the new tenant's monitor fired"
        );
        new.join().unwrap();
    });
}

#[test]
fn a_chain_of_1000_linked_actors_all_stop_when_one_panics_and_a_trapper_survives() {
    for threads in THREADS {
        run_with(threads, || {
            let stopped = Arc::new(AtomicUsize::new(0));
            let (trapped_tx, trapped_rx) = channel::<smarm::Exit>();
            let (ready_tx, ready_rx) = channel::<smarm::Pid>();
            // Actor i links to actor i-1; actor 0, at the far end, traps exits.
            let mut prev: Option<smarm::Pid> = None;
            let mut handles = Vec::new();
            for i in 0..1000 {
                let (stopped, trapped_tx, ready_tx) =
                    (stopped.clone(), trapped_tx.clone(), ready_tx.clone());
                let h = smarm::spawn(move || {
                    let exits = if i == 0 { trap_exit(true) } else { None };
                    if let Some(p) = prev {
                        link(p);
                    }
                    ready_tx.send(smarm::self_pid()).unwrap();
                    match exits {
                        Some(exits) => {
                            // Survives: the exit arrives as a message.
                            trapped_tx.send(exits.recv().unwrap()).unwrap();
                        }
                        None => {
                            let _count = CountDrop(stopped);
                            if i == 999 {
                                panic!("the end of the chain fails");
                            }
                            smarm::sleep(Duration::from_secs(3600));
                        }
                    }
                });
                prev = Some(ready_rx.recv().unwrap());
                handles.push(h);
            }
            let results: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
            // 999 counted actors unwound (998 stopped by links + the panicker).
            assert_eq!(stopped.load(Ordering::SeqCst), 999);
            assert!(results[0].is_ok(), "the trapping actor survived");
            for (i, r) in results.iter().enumerate().take(999).skip(1) {
                let e = r.as_ref().unwrap_err();
                let killed = e
                    .payload
                    .downcast_ref::<Ended>()
                    .unwrap_or_else(|| panic!("actor {i} not killed"));
                assert!(matches!(killed.reason, DownReason::Linked(_)));
            }
            let exit = trapped_rx.recv().unwrap();
            assert!(matches!(exit.reason, DownReason::Linked(_)), "{exit:?}");
        });
    }
}

#[test]
fn a_normal_exit_does_not_stop_linked_actors() {
    run_with(2, || {
        let (tx, rx) = channel::<u32>();
        let survivor = smarm::spawn(move || {
            let child = spawn_link(|| {});
            child.join().unwrap();
            smarm::sleep(Duration::from_millis(5));
            tx.send(1).unwrap();
        });
        assert_eq!(rx.recv().unwrap(), 1);
        survivor.join().unwrap();
    });
}

#[test]
fn linking_to_a_dead_pid_delivers_noproc_at_once() {
    run_with(2, || {
        let dead = smarm::spawn(|| {});
        let pid = dead.pid();
        dead.join().unwrap();
        // A trapping actor receives it as a message...
        let trapper = smarm::spawn(move || {
            let exits = trap_exit(true).unwrap();
            link(pid);
            let exit = exits.try_recv().unwrap().unwrap();
            assert_eq!((exit.from, exit.reason), (pid, DownReason::NoProc));
        });
        trapper.join().unwrap();
        // ...a non-trapping one is stopped right there.
        let plain = smarm::spawn(move || {
            link(pid);
            unreachable!("link to a dead pid stops a non-trapping caller");
        });
        let err = plain.join().unwrap_err();
        assert_eq!(
            err.payload.downcast_ref::<Ended>().unwrap().reason,
            DownReason::NoProc
        );
    });
}

#[test]
fn unlink_prevents_propagation() {
    run_with(2, || {
        let (tx, rx) = channel::<()>();
        let survivor = smarm::spawn(move || {
            let child = spawn_link(|| {
                smarm::sleep(Duration::from_millis(5));
                panic!("child fails after the unlink");
            });
            smarm::unlink(child.pid());
            assert!(child.join().is_err());
            tx.send(()).unwrap();
        });
        rx.recv().unwrap();
        survivor.join().unwrap();
    });
}

/// A `Down` sink or exit callback that panics runs during another actor's
/// finalisation, on a scheduler: its panic must go no further. The other
/// sinks of the same exit still run, and the runtime carries on.
#[test]
fn a_panicking_sink_does_not_take_the_scheduler_down() {
    for threads in THREADS {
        let (done_tx, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            run_with(threads, || {
                let (gate_tx, gate) = channel::<()>();
                let target = smarm::spawn(move || gate.recv().unwrap());
                smarm::monitor_with(target.pid(), |_| panic!("sink failed on purpose"));
                smarm_core::signal::on_exit(target.pid(), |_, _| panic!("hook failed on purpose"));
                let (tx, rx) = channel();
                smarm::monitor_with(target.pid(), move |down| {
                    let _ = tx.send(down.reason);
                });
                let (exits_tx, exits) = channel();
                let trapper = smarm::spawn(move || {
                    assert!(smarm::trap_exit_with(|_| panic!(
                        "trap sink failed on purpose"
                    )));
                    let partner = spawn_link(|| {});
                    let _ = partner.join();
                    exits_tx.send(()).unwrap();
                });
                gate_tx.send(()).unwrap();
                target.join().unwrap();
                assert_eq!(rx.recv().unwrap(), DownReason::Exit);
                exits.recv().unwrap();
                trapper.join().unwrap();
                // The schedulers still run actors.
                let after = smarm::spawn(|| smarm::sleep(Duration::from_millis(1)));
                after.join().unwrap();
            });
            let _ = done_tx.send(());
        });
        done.recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("the runtime with {threads} schedulers failed or hung"));
    }
}
